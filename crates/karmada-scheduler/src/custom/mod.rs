//! Plugins written the way a user writes one: only through the crate's public API (`karmada_scheduler::framework`
//! and `karmada_scheduler::snapshot`), registered with [`crate::framework::Registry::register_with_args`].

pub mod clusterlatency;
