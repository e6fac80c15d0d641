//! The WorkloadRebalancer controller (Karmada's `workloadRebalancer`; docs/karmada.md, "Workload rebalancer"): asks the
//! scheduler for a fresh assignment of the named workloads by stamping their bindings'
//! `spec.rescheduleTriggeredAt`, reports the outcome per workload and deletes the rebalancer
//! `ttlSecondsAfterFinished` after it finished. [`plan`] is the pure core, [`controller`] the runtime.

pub mod controller;
pub mod plan;

pub use controller::{RebalancerConfig, run};
