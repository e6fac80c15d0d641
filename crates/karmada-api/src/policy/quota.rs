//! `FederatedResourceQuota`: a namespace's resource quota across all member clusters, optionally split per
//! cluster.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::ResourceList;

/// A quota over the whole federation for one namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedResourceQuota {
    /// API version of this object: `policy.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `FederatedResourceQuota`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// The limits.
    #[serde(default)]
    pub spec: FederatedResourceQuotaSpec,
    /// Current usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FederatedResourceQuotaStatus>,
}

/// Limits of a federated quota.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedResourceQuotaSpec {
    /// Total limits over all clusters.
    #[serde(default)]
    pub overall: ResourceList,
    /// Per-cluster shares, written to members as ResourceQuotas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_assignments: Vec<StaticClusterAssignment>,
}

/// The share of one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaticClusterAssignment {
    /// Cluster name.
    pub cluster_name: String,
    /// Limits in that cluster.
    #[serde(default)]
    pub hard: ResourceList,
}

/// Usage of a federated quota.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedResourceQuotaStatus {
    /// Limits in force.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub overall: ResourceList,
    /// Usage summed over clusters.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub overall_used: ResourceList,
    /// Limits and usage per cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<ClusterQuotaStatus>,
}

/// Quota status of one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQuotaStatus {
    /// Cluster name.
    pub cluster_name: String,
    /// Limits in that cluster.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub hard: ResourceList,
    /// Usage in that cluster.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub used: ResourceList,
}
