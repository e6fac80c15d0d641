//! `ClusterTaintPolicy` (cluster-scoped): add or remove cluster taints when cluster conditions match.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ClusterAffinity;

/// Taints clusters automatically based on their status conditions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTaintPolicy {
    /// API version of this object: `policy.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ClusterTaintPolicy`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Which clusters, when, and which taints.
    #[serde(default)]
    pub spec: ClusterTaintPolicySpec,
}

/// Rules of a ClusterTaintPolicy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTaintPolicySpec {
    /// Clusters the policy watches; absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_clusters: Option<ClusterAffinity>,
    /// Add the taints when all of these match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_on_conditions: Vec<MatchCondition>,
    /// Remove the taints when all of these match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_on_conditions: Vec<MatchCondition>,
    /// Taints to add or remove; at least one.
    #[serde(default)]
    pub taints: Vec<TaintTemplate>,
}

/// Operator of a condition match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum MatchConditionOperator {
    /// The condition status is one of the values.
    #[default]
    In,
    /// The condition status is none of the values.
    NotIn,
}

/// A test on one cluster condition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchCondition {
    /// Condition type, e.g. `Ready`.
    pub condition_type: String,
    /// In or NotIn.
    pub operator: MatchConditionOperator,
    /// Condition statuses compared against: True, False, Unknown.
    #[serde(default)]
    pub status_values: Vec<String>,
}

/// A taint to apply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaintTemplate {
    /// Taint key.
    pub key: String,
    /// NoSchedule, PreferNoSchedule or NoExecute.
    pub effect: String,
    /// Taint value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}
