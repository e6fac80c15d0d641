//! `remedy.karmada.io/v1alpha1` `Remedy` (cluster-scoped): actions taken on clusters whose conditions match,
//! e.g. stop routing traffic to a cluster whose DNS is broken.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of this module's kinds.
pub const GROUP: &str = "remedy.karmada.io";
/// API version of this module's kinds.
pub const VERSION: &str = "v1alpha1";

/// Remedy actions on clusters whose conditions match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Remedy {
    /// API version of this object: `remedy.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `Remedy`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Which clusters, when, and what to do.
    #[serde(default)]
    pub spec: RemedySpec,
}

/// Rules of a Remedy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemedySpec {
    /// Clusters the remedy watches; absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<RemedyClusterAffinity>,
    /// The actions apply when any of these match; empty means always.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_matches: Vec<DecisionMatch>,
    /// Actions to take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<RemedyAction>,
}

/// Clusters by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemedyClusterAffinity {
    /// Cluster names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

/// One match on cluster state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionMatch {
    /// A test on one cluster condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_condition_match: Option<ClusterConditionRequirement>,
}

/// Compares a condition's status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ClusterConditionOperator {
    /// The status equals the given one.
    #[default]
    Equal,
    /// The status differs from the given one.
    NotEqual,
}

/// A test on one cluster condition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConditionRequirement {
    /// Condition type, e.g. `ServiceDomainNameResolutionReady`.
    pub condition_type: String,
    /// Equal or NotEqual.
    pub operator: ClusterConditionOperator,
    /// Status compared against: True, False or Unknown.
    pub condition_status: String,
}

/// An action a remedy takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RemedyAction {
    /// Stop routing traffic to the cluster.
    #[default]
    TrafficControl,
}
