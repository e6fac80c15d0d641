//! `multicluster.x-k8s.io/v1alpha1` (the Kubernetes Multi-Cluster Services API): ServiceExport marks a Service as
//! shared with the clusterset; ServiceImport is its consumer-side view.

use k8s_openapi::api::core::v1::SessionAffinityConfig;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of this module's kinds.
pub const GROUP: &str = "multicluster.x-k8s.io";
/// API version of this module's kinds.
pub const VERSION: &str = "v1alpha1";
/// Label naming the Service an EndpointSlice or import belongs to.
pub const LABEL_SERVICE_NAME: &str = "multicluster.kubernetes.io/service-name";
/// ServiceExport condition types.
pub const CONDITION_VALID: &str = "Valid";
pub const CONDITION_CONFLICT: &str = "Conflict";
/// The zone multi-cluster Services are named in (the MCS DNS specification's `<clustersetzone>`).
pub const CLUSTERSET_ZONE: &str = "clusterset.local";

/// Karmada's name for the Service a ServiceImport is served through in the importing clusters: `derived-<svc>`.
pub fn derived_service_name(service: &str) -> String {
    format!("derived-{service}")
}

/// Karmada's name for an EndpointSlice imported from a cluster into the control plane: `imported-<cluster>-<slice>`.
pub fn imported_endpoint_slice_name(cluster: &str, slice: &str) -> String {
    format!("imported-{cluster}-{slice}")
}

/// Shares the Service of the same name and namespace with the rest of the clusterset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceExport {
    /// API version of this object: `multicluster.x-k8s.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ServiceExport`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata; the name equals the exported Service's name.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Whether the export is valid and free of conflicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ServiceExportStatus>,
}

/// Observed state of a ServiceExport.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceExportStatus {
    /// Conditions: Valid and Conflict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ServiceExportCondition>,
}

/// One ServiceExport condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceExportCondition {
    /// Valid or Conflict.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A Service imported from the clusterset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceImport {
    /// API version of this object: `multicluster.x-k8s.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ServiceImport`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Ports, type and addresses of the imported Service.
    #[serde(default)]
    pub spec: ServiceImportSpec,
    /// Clusters exporting the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ServiceImportStatus>,
}

/// How an imported Service is addressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ServiceImportType {
    /// A single virtual IP for the clusterset.
    #[default]
    ClusterSetIP,
    /// No virtual IP; clients get backend addresses.
    Headless,
}

/// Desired state of a ServiceImport.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceImportSpec {
    /// Ports of the Service.
    #[serde(default)]
    pub ports: Vec<ServicePort>,
    /// Clusterset IP (at most one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<String>,
    /// ClusterSetIP or Headless.
    #[serde(rename = "type")]
    pub type_: ServiceImportType,
    /// ClientIP or None.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_affinity: String,
    /// Session affinity settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity_config: Option<SessionAffinityConfig>,
}

/// One port of an imported Service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// Port name; required when there are several ports.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// TCP (default), UDP or SCTP.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    /// Application protocol hint.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_protocol: String,
    /// Port number.
    pub port: i32,
}

/// Observed state of a ServiceImport.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceImportStatus {
    /// Clusters exporting the Service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ClusterStatus>,
}

/// One exporting cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Cluster name.
    pub cluster: String,
}
