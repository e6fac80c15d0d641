//! `networking.karmada.io/v1alpha1`: MultiClusterService (expose a Service across clusters) and
//! MultiClusterIngress (an Ingress whose backends live in several clusters).

use k8s_openapi::api::core::v1::ServiceStatus;
use k8s_openapi::api::networking::v1::{IngressSpec, IngressStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of this module's kinds.
pub const GROUP: &str = "networking.karmada.io";
/// API version of this module's kinds.
pub const VERSION: &str = "v1alpha1";

/// Condition types of a MultiClusterService.
pub const CONDITION_SERVICE_APPLIED: &str = "ServiceApplied";
pub const CONDITION_ENDPOINT_SLICE_DISPATCHED: &str = "EndpointSliceDispatched";
/// Label with the permanent id of a MultiClusterService.
pub const LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID: &str =
    "multiclusterservice.karmada.io/permanent-id";

/// Exposes the Service of the same name and namespace across member clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterService {
    /// API version of this object: `networking.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `MultiClusterService`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata; the name equals the Service's name.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// How the Service is exposed and between which clusters.
    #[serde(default)]
    pub spec: MultiClusterServiceSpec,
    /// Load-balancer status of the exposed Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ServiceStatus>,
}

/// How a Service is exposed across clusters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ExposureType {
    /// Reachable from other member clusters.
    #[default]
    CrossCluster,
    /// Exposed through a load balancer.
    LoadBalancer,
}

/// Desired exposure of a MultiClusterService.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterServiceSpec {
    /// Exposure types; at least one.
    #[serde(default)]
    pub types: Vec<ExposureType>,
    /// Ports to expose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ExposurePort>,
    /// Deprecated: clusters to expose in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<ExposureRange>,
    /// Deprecated: clusters providing the Service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_provision_clusters: Vec<String>,
    /// Deprecated: clusters consuming the Service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_consumption_clusters: Vec<String>,
    /// Clusters running the Service's backends; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_clusters: Vec<ClusterSelector>,
    /// Clusters where clients reach the Service; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumer_clusters: Vec<ClusterSelector>,
}

/// One exposed port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposurePort {
    /// Port name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Port number.
    pub port: i32,
}

/// Deprecated cluster range.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposureRange {
    /// Cluster names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

/// Names one cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSelector {
    /// Cluster name.
    pub name: String,
}

/// An Ingress whose backends may run in any member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterIngress {
    /// API version of this object: `networking.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `MultiClusterIngress`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Same shape as a `networking.k8s.io/v1` Ingress spec.
    #[serde(default)]
    pub spec: IngressSpec,
    /// Ingress status plus where backends are and which clusters receive no traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MultiClusterIngressStatus>,
}

/// Observed state of a MultiClusterIngress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterIngressStatus {
    /// Load-balancer status, as for an Ingress.
    #[serde(flatten)]
    pub ingress: IngressStatus,
    /// Clusters that currently get no traffic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traffic_block_clusters: Vec<String>,
    /// Clusters each backend Service runs in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_locations: Vec<ServiceLocation>,
}

/// Where one backend Service runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceLocation {
    /// Service name.
    pub name: String,
    /// Clusters running it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
}
