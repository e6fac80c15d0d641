//! One module per subcommand, named as Karmada's karmadactl names them.

pub mod api_resources;
pub mod cordon;
pub mod deinit;
pub mod get;
pub mod init;
pub mod join;
pub mod plan;
pub mod taint;
pub mod unjoin;
pub mod version;
