//! The scheduler runner: Karmada's karmada-scheduler as a watch-driven controller over the pure core in
//! `karmada_scheduler`. [`runner::run`] is the entry point; [`decision`] holds what it writes, decided purely;
//! [`metrics`] the Prometheus metrics with Karmada's names; [`view`] reads a binding without its aggregated status;
//! [`profiles`] the live SchedulerProfiles; [`queue`] the priority scheduling queue; [`ask_ahead`] which
//! estimator rounds are asked before a decision needs them.

pub mod ask_ahead;
pub mod decision;
pub mod metrics;
pub mod profiles;
pub mod queue;
pub mod runner;
pub mod view;

pub use metrics::SchedulerMetrics;
pub use runner::{BindingKey, SchedulerConfig, StartError, run};
