//! The binding status controller (Karmada's `bindingStatus`; docs/karmada.md, "Status collection and aggregation"):
//! Works' status → binding `status.aggregatedStatus` and the FullyApplied condition → the resource template's own
//! `.status`, plus the `karmada_binding_replicas` gauge.
//!
//! - [`aggregate`]: what to write (pure, table-tested).
//! - [`controller`]: the watch-driven runtime; entry point [`run`].
//! - [`metrics`]: the gauge.
//! - [`reuse`]: aggregating a binding again without decoding the Works that did not change.

pub mod aggregate;
pub mod controller;
pub mod metrics;
mod reuse;

pub use controller::{BindingStatusConfig, run};
pub use metrics::BindingMetrics;
