//! `policy.karmada.io/v1alpha1`: where resources go (PropagationPolicy, ClusterPropagationPolicy and their
//! Placement), how they change per cluster (OverridePolicy, ClusterOverridePolicy), quotas across clusters
//! (FederatedResourceQuota) and condition-driven cluster taints (ClusterTaintPolicy).
//!
//! The types here are the wire shape only; defaulting and validation live in [`crate::admission`].

mod override_policy;
mod placement;
mod propagation;
mod quota;
pub mod quota_usage;
mod taint_policy;

pub use override_policy::*;
pub use placement::*;
pub use propagation::*;
pub use quota::*;
pub use taint_policy::*;

/// API group of every kind in this module.
pub const GROUP: &str = "policy.karmada.io";
/// API version of every kind in this module.
pub const VERSION: &str = "v1alpha1";
