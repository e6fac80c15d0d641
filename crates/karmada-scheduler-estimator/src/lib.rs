//! Karmada's scheduler estimator (karmada-scheduler-estimator): one per member cluster, answering the
//! scheduler's `MaxAvailableReplicas` (how many more replicas fit, from the member's Nodes and Pods) and the
//! descheduler's `GetUnschedulableReplicas` over Karmada's gRPC service, so a Karmada scheduler can use ours and
//! ours can use Karmada's.
//!
//! [`pb`] holds the generated protobuf code (`proto/`, Karmada's package, message and field names and numbers)
//! and the conversions to and from the API types; [`state`] the member cache the server answers from; [`server`]
//! the gRPC service; [`client`] what the scheduler and descheduler call, finding each cluster's estimator as
//! Karmada does (an ExternalName Service `karmada-scheduler-estimator-<cluster>` in `karmada-system`), with
//! [`cache`] reusing answers for a moment; [`workload`] the pure part of `GetUnschedulableReplicas`. The estimate itself is the pure
//! `karmada_scheduler::accurate`.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod cache;
pub mod client;
pub mod metrics;
pub mod pb;
pub mod server;
pub mod state;
pub mod workload;

pub use client::{EstimatorClientConfig, EstimatorClients};
pub use server::{EstimatorService, serve};
pub use state::MemberState;

/// Karmada's default gRPC port of an estimator (`--server-port`, the scheduler's `--scheduler-estimator-port`).
pub const DEFAULT_PORT: u16 = 10352;
/// Karmada's service name prefix (`--scheduler-estimator-service-prefix`).
pub const DEFAULT_SERVICE_PREFIX: &str = "karmada-scheduler-estimator";
/// Where the estimators' Services live (`--scheduler-estimator-service-namespace`).
pub const DEFAULT_SERVICE_NAMESPACE: &str = "karmada-system";
/// What Karmada's client reads as "no answer".
pub const UNAUTHENTIC_REPLICA: i32 = -1;
