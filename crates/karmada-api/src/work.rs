//! `work.karmada.io`: ResourceBinding / ClusterResourceBinding (v1alpha2, the scheduler's input and output) and
//! Work (v1alpha1, one manifest bound for one member cluster, stored in `karmada-es-<cluster>`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cluster::ResourceList;
use crate::policy::{ConflictResolution, FailoverBehavior, Placement, PurgeMode, SuspendClusters};

/// API group of bindings and Works.
pub const GROUP: &str = "work.karmada.io";
/// Storage version of ResourceBinding and ClusterResourceBinding.
pub const BINDING_VERSION: &str = "v1alpha2";
/// Version of Work.
pub const WORK_VERSION: &str = "v1alpha1";

/// Permanent-id labels.
pub const LABEL_RESOURCE_BINDING_PERMANENT_ID: &str = "resourcebinding.karmada.io/permanent-id";
pub const LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID: &str =
    "clusterresourcebinding.karmada.io/permanent-id";
pub const LABEL_WORK_PERMANENT_ID: &str = "work.karmada.io/permanent-id";
/// Marks member objects Karmada created.
pub const LABEL_MANAGED: &str = "karmada.io/managed";
/// Annotation with the placement a binding was last scheduled with (JSON).
pub const ANNOTATION_APPLIED_PLACEMENT: &str = "policy.karmada.io/applied-placement";
/// Finalizers.
pub const FINALIZER_EXECUTION_CONTROLLER: &str = "karmada.io/execution-controller";
pub const FINALIZER_BINDING_CONTROLLER: &str = "karmada.io/binding-controller";
pub const FINALIZER_CLUSTER_RESOURCE_BINDING_CONTROLLER: &str =
    "karmada.io/cluster-resource-binding-controller";

/// Binding condition types.
pub const CONDITION_SCHEDULED: &str = "Scheduled";
pub const CONDITION_FULLY_APPLIED: &str = "FullyApplied";
/// Scheduled condition reasons.
pub const REASON_SCHEDULE_SUCCESS: &str = "Success";
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";
pub const REASON_NO_CLUSTER_FIT: &str = "NoClusterFit";
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
pub const REASON_QUOTA_EXCEEDED: &str = "QuotaExceeded";
pub const MESSAGE_SCHEDULE_SUCCESS: &str = "Binding has been scheduled successfully.";
/// FullyApplied condition reasons.
pub const REASON_FULLY_APPLIED_SUCCESS: &str = "FullyAppliedSuccess";
pub const REASON_FULLY_APPLIED_FAILED: &str = "FullyAppliedFailed";
pub const MESSAGE_FULLY_APPLIED_SUCCESS: &str = "All works have been successfully applied";
pub const MESSAGE_FULLY_APPLIED_FAILED: &str =
    "Failed to apply all works, see status.aggregatedStatus for details";

/// Work condition types.
pub const WORK_CONDITION_APPLIED: &str = "Applied";
pub const WORK_CONDITION_PROGRESSING: &str = "Progressing";
pub const WORK_CONDITION_AVAILABLE: &str = "Available";
pub const WORK_CONDITION_DEGRADED: &str = "Degraded";
pub const WORK_CONDITION_DISPATCHING: &str = "Dispatching";
/// Work condition reasons.
pub const REASON_APPLIED_SUCCESSFUL: &str = "AppliedSuccessful";
pub const REASON_APPLIED_FAILED: &str = "AppliedFailed";
pub const MESSAGE_APPLIED_SUCCESSFUL: &str = "Manifest has been successfully applied";
pub const REASON_DISPATCHING: &str = "Dispatching";
pub const REASON_SUSPEND_DISPATCHING: &str = "SuspendDispatching";

/// Graceful eviction reasons and producers.
pub const EVICTION_REASON_TAINT_UNTOLERATED: &str = "TaintUntolerated";
pub const EVICTION_REASON_APPLICATION_FAILURE: &str = "ApplicationFailure";
pub const EVICTION_PRODUCER_TAINT_MANAGER: &str = "TaintManager";

/// Ties a namespaced resource template to its placement and scheduling result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBinding {
    /// API version of this object: `work.karmada.io/v1alpha2`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ResourceBinding`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// The template, its requirements, and where it is scheduled.
    #[serde(default)]
    pub spec: ResourceBindingSpec,
    /// Scheduling and propagation progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ResourceBindingStatus>,
}

/// Ties a cluster-scoped resource template (or a namespaced one claimed by a ClusterPropagationPolicy) to its
/// placement and scheduling result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterResourceBinding {
    /// API version of this object: `work.karmada.io/v1alpha2`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ClusterResourceBinding`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// The template, its requirements, and where it is scheduled.
    #[serde(default)]
    pub spec: ResourceBindingSpec,
    /// Scheduling and propagation progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ResourceBindingStatus>,
}

/// Desired state of a binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingSpec {
    /// The resource template being propagated.
    #[serde(default)]
    pub resource: ObjectReference,
    /// Whether the template's dependencies follow it.
    #[serde(default, skip_serializing_if = "crate::cluster::is_false")]
    pub propagate_deps: bool,
    /// What one replica needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ReplicaRequirements>,
    /// Desired replica count of the template (0 for kinds without replicas).
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub replicas: i32,
    /// Pod templates of a multi-template workload, each with its replicas and requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// The scheduling result: chosen clusters and their replicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
    /// Placement copied from the claiming policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Clusters being evicted from, kept until the replacement is ready or the grace period ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graceful_eviction_tasks: Vec<GracefulEvictionTask>,
    /// Bindings that depend on this one and the clusters they were scheduled to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<BindingSnapshot>,
    /// Scheduler responsible for this binding.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// Failover behaviour copied from the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverBehavior>,
    /// Abort (default) or Overwrite, copied from the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict_resolution: Option<ConflictResolution>,
    /// When set later than the last scheduling time, the scheduler makes a fresh assignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_triggered_at: Option<Time>,
    /// Pause scheduling or dispatching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<BindingSuspension>,
    /// Keep member resources when the template is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,
    /// Resolved scheduling priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_priority: Option<BindingSchedulePriority>,
    /// Workload affinity groups, as `<labelKey>=<value>` (ResourceBinding only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity_groups: Option<WorkloadAffinityGroups>,
}

impl ResourceBindingSpec {
    /// Whether scheduling of this binding is suspended.
    pub fn scheduling_suspended(&self) -> bool {
        self.suspension
            .as_ref()
            .and_then(|s| s.scheduling)
            .unwrap_or(false)
    }
}

pub(crate) fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

/// Points at a resource template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version of the template.
    pub api_version: String,
    /// Kind of the template.
    pub kind: String,
    /// Namespace; empty for cluster-scoped templates.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the template.
    pub name: String,
    /// UID of the template.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// resourceVersion of the template when the binding was last updated.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
}

/// What one replica needs from a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaRequirements {
    /// Node constraints of the pod template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    /// Resource requests of one replica.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_request: ResourceList,
    /// Namespace of the template (for quota checks in members).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Priority class of the pod template.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// Node constraints taken from the pod template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaim {
    /// Required node affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_node_affinity: Option<NodeSelector>,
    /// Node selector labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Pod tolerations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

/// One pod template of a multi-template workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// Name of the component, at most 32 characters.
    pub name: String,
    /// Replicas of this component.
    #[serde(default)]
    pub replicas: i32,
    /// What one replica of this component needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ComponentReplicaRequirements>,
}

/// Requirements of one component's replica.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentReplicaRequirements {
    /// Node constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    /// Resource requests of one replica.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_request: ResourceList,
    /// Priority class.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// A chosen cluster and what it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetCluster {
    /// Cluster name.
    pub name: String,
    /// Replicas assigned to the cluster (absent for kinds without replicas and for Duplicated zero).
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub replicas: i32,
    /// Per-component replicas for multi-template workloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ComponentReplicas>,
}

/// Replicas of one component in one cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentReplicas {
    /// Component name.
    pub name: String,
    /// Replicas of the component.
    #[serde(default)]
    pub replicas: i32,
}

/// An ongoing eviction of the resource from one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GracefulEvictionTask {
    /// Cluster being evicted from.
    pub from_cluster: String,
    /// How to remove the old copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_mode: Option<PurgeMode>,
    /// Replicas the evicted cluster had, when more than zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Why: a CamelCase word of 1 to 32 characters such as TaintUntolerated or ApplicationFailure.
    pub reason: String,
    /// Human-readable detail, at most 1024 characters.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Component that created the task, e.g. TaintManager.
    pub producer: String,
    /// Seconds to wait before removing the old copy regardless of the replacement's health. Exclusive with
    /// `suppressDeletion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
    /// Keep the old copy until this is cleared. Exclusive with `gracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_deletion: Option<bool>,
    /// Labels carried to the replacement (state preservation).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub preserved_label_state: BTreeMap<String, String>,
    /// When the task was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// Clusters the resource ran in before this failover.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters_before_failover: Vec<String>,
}

/// A dependent binding and where it went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingSnapshot {
    /// Namespace of the dependent binding.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the dependent binding.
    pub name: String,
    /// Its scheduling result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
}

/// Suspension as carried by a binding: the policy's plus scheduling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingSuspension {
    /// Stop dispatching to every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching: Option<bool>,
    /// Stop dispatching to the named clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching_on_clusters: Option<SuspendClusters>,
    /// Stop scheduling this binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<bool>,
}

/// Resolved priority of a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingSchedulePriority {
    /// Priority value; higher is scheduled first. Defaults to 0.
    #[serde(default)]
    pub priority: i32,
}

/// Workload affinity groups of a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityGroups {
    /// `<labelKey>=<value>` of the affinity group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub affinity_group: String,
    /// `<labelKey>=<value>` of the anti-affinity group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub anti_affinity_group: String,
}

/// Observed state of a binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingStatus {
    /// Generation the scheduler last acted on.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub scheduler_observed_generation: i64,
    /// Name of the `clusterAffinities` term used by the last scheduling.
    #[serde(
        rename = "schedulerObservingAffinityName",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub scheduler_observed_affinity_name: String,
    /// When the binding was last scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scheduled_time: Option<Time>,
    /// Conditions: Scheduled and FullyApplied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Status of the resource in each cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<AggregatedStatusItem>,
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// Health of a propagated resource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ResourceHealth {
    /// The resource works as intended.
    Healthy,
    /// The resource does not work as intended.
    Unhealthy,
    /// Health could not be told.
    #[default]
    Unknown,
}

/// Status of the resource in one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AggregatedStatusItem {
    /// Cluster name.
    pub cluster_name: String,
    /// The member resource's status as reflected by the interpreter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::preserved_object")]
    pub status: Option<Value>,
    /// Whether the Work was applied.
    #[serde(default, skip_serializing_if = "crate::cluster::is_false")]
    pub applied: bool,
    /// Why applying failed, when it did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub applied_message: String,
    /// Health of the member resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ResourceHealth>,
}

/// One set of manifests to apply in one member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Work {
    /// API version of this object: `work.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `Work`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata; the namespace is `karmada-es-<cluster>`.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// The manifests.
    #[serde(default)]
    pub spec: WorkSpec,
    /// Apply results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkStatus>,
}

/// Desired state of a Work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkSpec {
    /// The manifests to apply.
    #[serde(default)]
    pub workload: WorkloadTemplate,
    /// Stop applying to the member while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_dispatching: Option<bool>,
    /// Keep the member objects when the Work is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,
}

/// Manifests of a Work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadTemplate {
    /// Complete Kubernetes objects; Karmada writes exactly one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::embedded_objects")]
    pub manifests: Vec<Value>,
}

/// Observed state of a Work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkStatus {
    /// Conditions: Applied, Progressing, Available, Degraded, Dispatching.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Status of each manifest in the member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_statuses: Vec<ManifestStatus>,
}

/// Status of one applied manifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestStatus {
    /// Which manifest.
    pub identifier: ResourceIdentifier,
    /// The member object's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::preserved_object")]
    pub status: Option<Value>,
    /// Health of the member object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ResourceHealth>,
}

/// Identifies one manifest of a Work.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIdentifier {
    /// Index in `spec.workload.manifests`.
    #[serde(default)]
    pub ordinal: i32,
    /// API group.
    #[serde(default)]
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    #[serde(default)]
    pub resource: String,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
}
