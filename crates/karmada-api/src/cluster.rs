//! `cluster.karmada.io/v1alpha1` `Cluster`: one member cluster as the control plane sees it.
//!
//! The spec says how to reach the cluster and how to schedule onto it (taints, location, resource models); the
//! status is what the cluster-status controller (or the agent in Pull mode) last observed. Cluster is
//! cluster-scoped and has a status subresource.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of [`Cluster`].
pub const GROUP: &str = "cluster.karmada.io";
/// API version of [`Cluster`].
pub const VERSION: &str = "v1alpha1";

/// Taint key placed on a cluster whose Ready condition is False.
pub const TAINT_CLUSTER_NOT_READY: &str = "cluster.karmada.io/not-ready";
/// Taint key placed on a cluster whose Ready condition is Unknown (the control plane cannot reach it).
pub const TAINT_CLUSTER_UNREACHABLE: &str = "cluster.karmada.io/unreachable";
/// Taint key placed by `karmadactl cordon`.
pub const TAINT_CLUSTER_UNSCHEDULABLE: &str = "cluster.karmada.io/unschedulable";

/// Condition type: the cluster is healthy and accepts workloads.
pub const CONDITION_READY: &str = "Ready";
/// Condition type: `status.apiEnablements` lists every API the member serves.
pub const CONDITION_COMPLETE_API_ENABLEMENTS: &str = "CompleteAPIEnablements";

/// Ready=True reason.
pub const REASON_CLUSTER_READY: &str = "ClusterReady";
/// Ready=False reason: reachable, but its health endpoint is not OK.
pub const REASON_CLUSTER_NOT_READY: &str = "ClusterNotReady";
/// Ready=False reason: the cluster could not be reached.
pub const REASON_CLUSTER_NOT_REACHABLE: &str = "ClusterNotReachable";
/// Ready=Unknown reason: status stopped being refreshed.
pub const REASON_CLUSTER_STATUS_UNKNOWN: &str = "ClusterStatusUnknown";
/// Ready=Unknown reason: status was never reported.
pub const REASON_CLUSTER_STATUS_NEVER_UPDATED: &str = "ClusterStatusNeverUpdated";
/// CompleteAPIEnablements reasons.
pub const REASON_API_ENABLEMENTS_COMPLETE: &str = "Complete";
pub const REASON_API_ENABLEMENTS_PARTIAL: &str = "Partial";
pub const REASON_API_ENABLEMENTS_EMPTY: &str = "Empty";

/// Message of the Ready=True condition.
pub const MESSAGE_CLUSTER_READY: &str = "cluster is healthy and ready to accept workloads";
/// Message of the Ready=False condition when the cluster cannot be reached.
pub const MESSAGE_CLUSTER_NOT_REACHABLE: &str = "cluster is not reachable";

/// Finalizer the cluster controller keeps on every Cluster.
pub const FINALIZER_CLUSTER_CONTROLLER: &str = "karmada.io/cluster-controller";
/// Annotation marking objects served from the search cache.
pub const ANNOTATION_CACHED_FROM_CLUSTER: &str = "resource.karmada.io/cached-from-cluster";
/// Annotation karmada-metrics-adapter puts on each item it answers, naming its member cluster.
pub const ANNOTATION_QUERY_FROM_CLUSTER: &str = "resource.karmada.io/query-from-cluster";

/// Resource names a resource model range may use.
pub const RESOURCE_MODEL_NAMES: &[&str] = &["cpu", "memory", "storage", "ephemeral-storage"];

/// A resource list: resource name to quantity, e.g. `cpu: "4"`, `memory: 16Gi`.
pub type ResourceList = BTreeMap<String, Quantity>;

/// A member cluster registered with the Karmada control plane.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    /// API version of this object: `cluster.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `Cluster`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata; the name is the cluster's name.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// How to reach the cluster and how workloads may be placed on it.
    #[serde(default)]
    pub spec: ClusterSpec,
    /// What was last observed about the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ClusterStatus>,
}

/// How the control plane talks to a cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ClusterSyncMode {
    /// The control plane pushes workloads to the member's API server.
    #[default]
    Push,
    /// An agent inside the member pulls its workloads from the control plane.
    Pull,
}

/// Desired state of a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// A unique identity of the cluster, collected when it registers (its clusterset property or the UID of its
    /// kube-system namespace).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Push (the control plane deploys to the member) or Pull (an agent in the member fetches its work).
    pub sync_mode: ClusterSyncMode,
    /// URL of the member's API server.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_endpoint: String,
    /// Secret (keys `token` and `caBundle`) with the credentials used to reach the member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
    /// Secret (key `token`) used to impersonate users when proxying requests to the member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonator_secret_ref: Option<LocalSecretReference>,
    /// Skip verification of the member's serving certificate. Insecure; defaults to false.
    #[serde(
        rename = "insecureSkipTLSVerification",
        default,
        skip_serializing_if = "is_false"
    )]
    pub insecure_skip_tls_verification: bool,
    /// Proxy used to reach the member's API server.
    #[serde(rename = "proxyURL", default, skip_serializing_if = "String::is_empty")]
    pub proxy_url: String,
    /// Extra headers sent to the proxy; several values of one header are comma-separated.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub proxy_header: BTreeMap<String, String>,
    /// Cloud provider name of the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// Region the cluster runs in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// Deprecated single zone; on write it is moved into `zones`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zone: String,
    /// Zones the cluster spans.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// Taints that keep workloads off the cluster unless their policy tolerates them. NoExecute taints also evict
    /// what is already there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// Node size grades used to estimate how many replicas fit; each grade is a set of `[min, max)` ranges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_models: Vec<ResourceModel>,
}

/// A reference to a Secret in a given namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalSecretReference {
    /// Namespace of the Secret.
    pub namespace: String,
    /// Name of the Secret.
    pub name: String,
}

/// One grade of node sizes: a node belongs to the grade when each of its resources falls inside the range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceModel {
    /// Grade index; larger grades describe larger nodes.
    pub grade: u32,
    /// One range per resource.
    #[serde(default)]
    pub ranges: Vec<ResourceModelRange>,
}

/// A half-open interval `[min, max)` of one resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceModelRange {
    /// Resource name: cpu, memory, storage or ephemeral-storage.
    pub name: String,
    /// Inclusive lower bound.
    pub min: Quantity,
    /// Exclusive upper bound.
    pub max: Quantity,
}

/// Observed state of a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Kubernetes version reported by the member.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes_version: String,
    /// API groups/versions and the resources the member serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_enablements: Vec<ApiEnablement>,
    /// Current conditions: `Ready` and `CompleteAPIEnablements`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Node counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_summary: Option<NodeSummary>,
    /// Resource totals over all nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_summary: Option<ResourceSummary>,
    /// Remedy actions currently applied to the cluster, e.g. `TrafficControl`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remedy_actions: Vec<String>,
}

/// The resources a member serves in one group/version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiEnablement {
    /// Group and version, e.g. `apps/v1`.
    pub group_version: String,
    /// Resources of that group/version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResource>,
}

/// One served resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiResource {
    /// Plural resource name, e.g. `deployments`.
    pub name: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
}

/// Node counts of a member.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// Number of nodes.
    #[serde(default)]
    pub total_num: i32,
    /// Number of Ready nodes.
    #[serde(default)]
    pub ready_num: i32,
}

/// Resource totals of a member.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    /// Sum of the allocatable resources of all nodes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: ResourceList,
    /// Sum of requests of pods waiting to be scheduled.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocating: ResourceList,
    /// Sum of requests of pods already scheduled.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated: ResourceList,
    /// Number of nodes in each resource-model grade.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocatable_modelings: Vec<AllocatableModeling>,
}

/// How many nodes fall into one grade.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocatableModeling {
    /// Grade index of a resource model.
    pub grade: u32,
    /// Number of nodes in that grade.
    #[serde(default)]
    pub count: i32,
}

impl Cluster {
    /// The Ready condition, if reported.
    pub fn ready_condition(&self) -> Option<&Condition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_READY)
    }

    /// Whether the cluster serves `kind` in `group_version`: `Some(true)` when listed, `Some(false)` when the list
    /// is known to be complete and it is absent, `None` when that cannot be told.
    pub fn api_enabled(&self, group_version: &str, kind: &str) -> Option<bool> {
        let status = self.status.as_ref()?;
        let listed = status
            .api_enablements
            .iter()
            .filter(|e| e.group_version == group_version)
            .any(|e| e.resources.iter().any(|r| r.kind == kind));
        if listed {
            return Some(true);
        }
        let complete = status
            .conditions
            .iter()
            .any(|c| c.type_ == CONDITION_COMPLETE_API_ENABLEMENTS && c.status == "True");
        if complete { Some(false) } else { None }
    }
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}
