//! Karmada's API types for every group it serves, as serde structs with JSON schemas, plus resource definitions
//! and admission (defaulting and validation) as pure functions over JSON.
//!
//! Invariants: no I/O; time and fresh ids come in as arguments; wire names are Karmada's (camelCase JSON).
//!
//! - One module per API group holds its kinds ([`cluster`], [`policy`], [`work`], [`networking`], [`mcs`],
//!   [`autoscaling`], [`apps`], [`config`], [`remedy`], [`scheduling`]), with the group's label, annotation,
//!   finalizer, condition and reason constants. Doc comments on fields are the `kubectl explain` text.
//! - [`resource_defs`] describes every kind for the API server; [`openapi`] turns the types into
//!   self-contained OpenAPI v3 schemas.
//! - [`admit`] is karmada-webhook: mutating defaults, then validation, returning warnings or field errors.
//!   It must see the object before unknown fields are pruned, so that misplaced Karmada fields (e.g.
//!   `spec.placement.failover`) are rejected rather than silently dropped.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod admission;
pub mod apps;
pub mod autoscaling;
pub mod cluster;
pub mod config;
pub mod cron_schedule;
pub mod defs;
pub mod mcs;
pub mod networking;
pub mod openapi;
pub mod policy;
pub mod remedy;
pub mod scheduling;
pub mod work;

mod schema;

pub use admission::{AdmissionContext, Operation, admit};
pub use defs::resource_defs;

pub use cluster::{
    Cluster, ClusterSpec, ClusterStatus, ClusterSyncMode, ResourceList, ResourceModel,
};
pub use policy::{
    ClusterAffinity, ClusterAffinityTerm, ClusterOverridePolicy, ClusterPropagationPolicy,
    ConflictResolution, FailoverBehavior, OverridePolicy, Placement, PropagationPolicy,
    PropagationSpec, PurgeMode, ReplicaDivisionPreference, ReplicaSchedulingStrategy,
    ReplicaSchedulingType, ResourceSelector, SpreadByField, SpreadConstraint, StaticClusterWeight,
};
pub use work::{
    ClusterResourceBinding, GracefulEvictionTask, ReplicaRequirements, ResourceBinding,
    ResourceBindingSpec, ResourceBindingStatus, TargetCluster, Work,
};
