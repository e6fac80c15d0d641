//! The status controllers: Work status collected from members, and binding status aggregated from Works onto
//! bindings and resource templates.
pub mod binding_status;
pub mod work_status;
