//! One module per subcommand, named as Karmada's karmadactl names them.

pub mod api_resources;
pub mod apply;
pub mod backup;
pub mod completion;
pub mod cordon;
pub mod deinit;
pub mod describe;
pub mod estimators;
pub mod get;
pub mod init;
pub mod init_ha;
pub mod interpret;
pub mod join;
pub mod local_up;
pub mod local_up_dashboard;
pub mod local_up_pull;
pub mod plan;
pub mod promote;
pub mod register;
pub mod restore;
pub mod taint;
pub mod token;
pub mod top;
pub mod unjoin;
pub mod unregister;
pub mod version;
