//! member-sim's pure core: a kubelet-less simulated Kubernetes member cluster, in the spirit of
//! KWOK. Simulated nodes, a scheduler, a kubelet and the workload controllers produce exactly the
//! status fields Kubernetes reports, so Karmada's propagation, status aggregation, capacity
//! estimation and failover can be exercised against member clusters that behave like real ones.
//!
//! Shape. Every controller is a pure function from the observed objects ([`Objects`], JSON as the
//! API returns it), the time `now`, and where needed a [`Randomness`] source, to an [`Outcome`]:
//! the [`Write`]s to make, the time to look again, and per-object errors. Nothing here does I/O,
//! spawns tasks or reads a clock; a thin async loop (not in this crate) feeds watch events into
//! [`Objects`], calls [`sim::reconcile_all`] and turns the writes into API requests. Controllers
//! are level-triggered and idempotent: applying a pass's writes and running again converges to a
//! pass that writes nothing (checked by property tests), and [`Objects::apply`] mimics the API
//! server's side of each write so tests drive whole clusters through time without a server.
//!
//! Modeled, with Kubernetes' semantics:
//! - [`nodes`]: Node objects (capacity = allocatable, topology and provider labels, addresses,
//!   `nodeInfo.kubeletVersion`), their four kubelet conditions, heartbeat Leases in
//!   `kube-node-lease`, and the `node-notready` fault (Ready=False plus not-ready taints).
//! - [`scheduler`]: binding by requests, nodeSelector, required node affinity, taints and
//!   tolerations, cordoned nodes; least-allocated choice; kube-scheduler's Unschedulable message.
//! - [`kubelet`]: startup delay, pod IPs, conditions, container statuses, QoS class, Job pods
//!   succeeding, crash-looping pods of crashed workloads, Ready=False on NotReady nodes.
//! - [`deployment`] + [`replicaset`] (+ [`rollout`] arithmetic): revisions, RollingUpdate with
//!   maxSurge/maxUnavailable, Recreate, history cleanup, full status and conditions.
//! - [`statefulset`] (+ [`volumes`] binding PVCs), [`daemonset`], [`job`], [`services`]
//!   (clusterIP allocation, EndpointSlices).
//! - [`scale_mode`]: workload status from node capacity without Pod objects; its
//!   [`scale_mode::reconcile`] stands in for the scheduler, kubelet and workload controllers.
//! - [`faults`]: the fault commands and the persisted fault state.
//! - [`resource_metrics`]: `metrics.k8s.io` PodMetrics and NodeMetrics from the load a test sets;
//!   [`custom_metrics`]: `custom.metrics.k8s.io` pod metrics from the same loads.
//! - [`container`], [`shell`], [`container_logs`]: what `pods/exec` and `pods/log` show: a
//!   container's environment and mounted files, its small set of programs, the lines it printed.
//!
//! Not modeled: the API server itself (defaulting, validation, namespaces, garbage collection),
//! graceful termination (deletes are immediate), probes and restarts over time, preemption and
//! eviction (NoExecute taints never evict), PreferNoSchedule and preferred affinities, pod
//! (anti-)affinity and topology spread, init containers running in sequence, ControllerRevision
//! and PersistentVolume objects, proportional scaling of several live ReplicaSets, Indexed Jobs,
//! Job failure policies and suspension, DaemonSet maxSurge, EndpointSlices beyond one per
//! Service. The network-level faults (`notready`, `unreachable`, `latency`, `error-rate`) are
//! enacted by the server loop; [`Faults::request_effect`] decides, per request, what it does.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod api;
pub mod config;
pub mod container;
pub mod container_logs;
pub mod custom_metrics;
pub mod daemonset;
pub mod deployment;
pub mod dns;
pub mod faults;
pub mod job;
pub mod kubelet;
pub mod mcs;
pub mod meta;
pub mod naming;
pub mod nodes;
pub mod objects;
pub mod outcome;
pub mod pods;
pub mod predicates;
pub mod quantity;
pub mod replicaset;
pub mod resource_metrics;
pub mod resources;
pub mod rollout;
pub mod runtime;
pub mod scale_mode;
pub mod scheduler;
pub mod services;
pub mod shell;
pub mod sim;
pub mod statefulset;
pub mod volumes;

pub use config::SimConfig;
pub use faults::{Fault, FaultParseError, Faults, RequestEffect};
pub use naming::{Randomness, SplitMix64};
pub use objects::{ApplyError, ObjectKey, Objects, Write};
pub use outcome::Outcome;
