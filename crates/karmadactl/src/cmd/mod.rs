//! One module per subcommand, named as Karmada's karmadactl names them.

pub mod api_resources;
pub mod deinit;
pub mod init;
pub mod plan;
pub mod version;
