//! `apps.karmada.io/v1alpha1` `WorkloadRebalancer` (cluster-scoped): asks the scheduler to reassign the named
//! workloads from scratch, as if they were new.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of this module's kinds.
pub const GROUP: &str = "apps.karmada.io";
/// API version of this module's kinds.
pub const VERSION: &str = "v1alpha1";
/// Reason recorded when a workload has no binding.
pub const REASON_REFERENCED_BINDING_NOT_FOUND: &str = "ReferencedBindingNotFound";

/// Triggers a fresh rescheduling of workloads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRebalancer {
    /// API version of this object: `apps.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `WorkloadRebalancer`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Workloads to rebalance.
    #[serde(default)]
    pub spec: WorkloadRebalancerSpec,
    /// Outcome per workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkloadRebalancerStatus>,
}

/// Desired rebalancing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRebalancerSpec {
    /// Workloads to reschedule; at least one.
    #[serde(default)]
    pub workloads: Vec<ObjectReference>,
    /// Delete this object this many seconds after every workload finished; kept forever when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// Names one workload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version of the workload.
    pub api_version: String,
    /// Kind of the workload.
    pub kind: String,
    /// Name of the workload.
    pub name: String,
    /// Namespace; empty for cluster-scoped workloads.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// Observed state of a rebalancer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRebalancerStatus {
    /// Outcome per workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_workloads: Vec<ObservedWorkload>,
    /// Generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When every workload finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_time: Option<Time>,
}

/// Result of one rebalancing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RebalanceResult {
    /// The binding was marked for fresh rescheduling.
    #[default]
    Successful,
    /// It could not be.
    Failed,
}

/// Outcome for one workload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObservedWorkload {
    /// The workload.
    pub workload: ObjectReference,
    /// Successful or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RebalanceResult>,
    /// Why it failed, e.g. ReferencedBindingNotFound.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}
