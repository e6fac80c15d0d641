//! End-to-end suites against a real `karmada apiserver` process: the installed kubectl, the
//! Python `kubernetes` client, and `karmadactl`. One test binary (link time matters on 2 cores).

// Test code: a panic is the failure report, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod all_in_one;
mod cluster_proxy;
mod clusters;
mod crash;
mod cronfederatedhpa;
mod custom_metrics;
mod dashboard;
mod failover;
mod federatedhpa;
mod federatedresourcequota;
mod ha;
mod harness;
mod interpreter;
mod interpreter_webhook;
mod karmadactl;
mod karmadactl_plan;
mod kubectl_apply;
mod kubectl_errors;
mod kubectl_fixtures;
mod kubectl_kinds;
mod kubectl_read;
mod kubectl_write;
mod leader;
mod local_up;
mod mcs;
mod member_sim;
mod metrics_adapter;
mod monitoring;
mod plane;
mod propagation;
mod pull;
mod python_client;
mod scheduling;
mod service_account_tokens;
mod status_aggregation;
