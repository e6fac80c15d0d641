//! The dependencies distributor (Karmada's PropagateDeps feature; docs/karmada.md, "Dependencies distributor"): the
//! ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims a workload refers to follow it to its clusters,
//! through "attached" ResourceBindings whose `spec.requiredBy` lists the independent bindings that need them.
//!
//! - [`attached`]: the attached binding, merging a requirement in and releasing one (pure, table-tested).
//! - [`index`]: which bindings depend on which objects, so dependency changes wake them.
//! - [`controller`]: the watch-driven runtime; entry point [`run`].
//!
//! Only ResourceBindings distribute dependencies (dependencies are namespaced, like their workloads).

pub mod attached;
pub mod controller;
pub mod index;

pub use controller::{DistributorConfig, run};
