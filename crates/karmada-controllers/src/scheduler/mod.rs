//! The scheduler runner: Karmada's karmada-scheduler as a watch-driven controller over the pure core in
//! `karmada_scheduler`. [`runner::run`] is the entry point; [`decision`] holds what it writes, decided purely;
//! [`metrics`] the Prometheus metrics with Karmada's names.

pub mod decision;
pub mod metrics;
pub mod runner;

pub use metrics::SchedulerMetrics;
pub use runner::{BindingKey, SchedulerConfig, StartError, run};
