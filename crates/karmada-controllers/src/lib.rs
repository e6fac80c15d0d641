//! Karmada's controllers. For now only their pure cores: the desired-state functions the controllers will call
//! once they run against an API server.
//!
//! - [`names`]: generated names (bindings, execution namespaces, Works, promote policies).
//! - [`promote`]: the resource template and policy that promote writes (karmadactl and the dashboard).
//! - [`keys`]: label and annotation keys the controllers write that `karmada-api` does not define.
//! - [`reserved`]: namespaces and API groups Karmada never propagates.
//! - [`detector`]: which (Cluster)PropagationPolicy claims a resource template, the claim metadata and the
//!   desired (Cluster)ResourceBinding.
//! - [`binding`]: override policies per cluster, manifest pruning and the desired Works of a scheduled binding.
//! - [`namespace`]: which namespaces auto-propagate to every member.
//! - [`cluster`]: the cluster controller and cluster status controller (the crate's first runtime code: tokio
//!   and kube live only there, beside their own pure cores).
//!
//! Invariants (all but the runtime parts of [`cluster`]): pure — no I/O, no async, no clock or randomness (callers pass them in); inputs are never
//! mutated; bad input gives an error value the caller turns into a condition, never a panic.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod binding;
pub mod certificate;
pub mod cluster;
pub mod cronfederatedhpa;
pub mod dependencies_distributor;
pub mod descheduler;
pub mod detector;
pub mod execution;
pub mod failover;
pub mod federatedhpa;
pub mod federatedresourcequota;
pub mod keys;
pub mod mcs;
pub mod metrics;
pub mod multiclusterservice;
pub mod names;
pub mod namespace;
pub mod promote;
pub mod reserved;
pub mod resourceinterpreter;
pub mod runtime;
pub mod scheduler;
pub mod status;
pub mod workload_rebalancer;
