//! `autoscaling.karmada.io/v1alpha1`: FederatedHPA (one HPA over the replicas of all member clusters) and
//! CronFederatedHPA (scheduled changes to a workload's or a FederatedHPA's replicas).

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscalerBehavior, HorizontalPodAutoscalerStatus,
    MetricSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of this module's kinds.
pub const GROUP: &str = "autoscaling.karmada.io";
/// API version of this module's kinds.
pub const VERSION: &str = "v1alpha1";

/// Scales a workload across clusters from aggregated metrics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedHPA {
    /// API version of this object: `autoscaling.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `FederatedHPA`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Target, bounds and metrics.
    #[serde(default)]
    pub spec: FederatedHPASpec,
    /// Current and desired replicas, as an HPA reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<HorizontalPodAutoscalerStatus>,
}

/// Desired scaling behaviour of a FederatedHPA.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedHPASpec {
    /// The workload to scale.
    pub scale_target_ref: CrossVersionObjectReference,
    /// Lower bound of replicas; defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// Upper bound of replicas; at least minReplicas.
    pub max_replicas: i32,
    /// Metrics driving the replica count; defaults to 80% average CPU utilisation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricSpec>,
    /// Scale-up and scale-down policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<HorizontalPodAutoscalerBehavior>,
}

/// Changes replicas (or a FederatedHPA's bounds) on cron schedules.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronFederatedHPA {
    /// API version of this object: `autoscaling.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `CronFederatedHPA`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Target and rules.
    #[serde(default)]
    pub spec: CronFederatedHPASpec,
    /// Execution history per rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CronFederatedHPAStatus>,
}

/// Desired schedule of a CronFederatedHPA.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronFederatedHPASpec {
    /// A FederatedHPA (its bounds change) or a workload (its replicas change).
    pub scale_target_ref: CrossVersionObjectReference,
    /// Scheduled actions.
    #[serde(default)]
    pub rules: Vec<CronFederatedHPARule>,
}

/// One scheduled action.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronFederatedHPARule {
    /// Rule name, 1 to 32 characters, unique in the object.
    pub name: String,
    /// Cron expression, e.g. `0 8 * * 1-5`.
    pub schedule: String,
    /// Replicas to set on a workload target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_replicas: Option<i32>,
    /// minReplicas to set on a FederatedHPA target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_min_replicas: Option<i32>,
    /// maxReplicas to set on a FederatedHPA target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_max_replicas: Option<i32>,
    /// Pause this rule; defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Time zone of the schedule, e.g. `Asia/Shanghai`; the controller's local zone when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Successful executions kept in status; defaults to 3, 1 to 32.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_history_limit: Option<i32>,
    /// Failed executions kept in status; defaults to 3, 0 to 32.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_history_limit: Option<i32>,
}

/// Observed state of a CronFederatedHPA.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronFederatedHPAStatus {
    /// History of each rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub execution_histories: Vec<ExecutionHistory>,
}

/// Runs of one rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionHistory {
    /// Rule name.
    pub rule_name: String,
    /// Next planned run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_execution_time: Option<Time>,
    /// Recent successful runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub successful_executions: Vec<SuccessfulExecution>,
    /// Recent failed runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_executions: Vec<FailedExecution>,
}

/// One successful run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuccessfulExecution {
    /// When the run was due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_time: Option<Time>,
    /// When it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_time: Option<Time>,
    /// Replicas set on a workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_replicas: Option<i32>,
    /// minReplicas set on a FederatedHPA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_min_replicas: Option<i32>,
    /// maxReplicas set on a FederatedHPA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_max_replicas: Option<i32>,
}

/// One failed run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedExecution {
    /// When the run was due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_time: Option<Time>,
    /// When it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_time: Option<Time>,
    /// Why it failed.
    #[serde(default)]
    pub message: String,
}
