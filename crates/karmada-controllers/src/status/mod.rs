//! The status controllers: Work status collected from members, and binding status aggregated from Works onto
//! bindings and resource templates. Both gather their wake-ups in fixed windows ([`coalesce`]) so a burst of
//! member changes becomes one status write.
pub mod binding_status;
pub mod coalesce;
pub mod member_observation;
pub mod work_status;
