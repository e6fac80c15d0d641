//! `PropagationPolicy` (namespaced) and `ClusterPropagationPolicy` (cluster-scoped): which resource templates are
//! propagated and how. Both share [`PropagationSpec`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Placement;

/// Label holding a PropagationPolicy's permanent id (set on create, immutable).
pub const LABEL_PROPAGATION_POLICY_PERMANENT_ID: &str = "propagationpolicy.karmada.io/permanent-id";
/// Label holding a ClusterPropagationPolicy's permanent id (set on create, immutable).
pub const LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID: &str =
    "clusterpropagationpolicy.karmada.io/permanent-id";
/// Finalizer on every PropagationPolicy.
pub const FINALIZER_PROPAGATION_POLICY: &str = "karmada.io/propagation-policy-controller";
/// Finalizer on every ClusterPropagationPolicy.
pub const FINALIZER_CLUSTER_PROPAGATION_POLICY: &str =
    "karmada.io/cluster-propagation-policy-controller";
/// Annotations on a claimed template naming its PropagationPolicy.
pub const ANNOTATION_PROPAGATION_POLICY_NAMESPACE: &str = "propagationpolicy.karmada.io/namespace";
pub const ANNOTATION_PROPAGATION_POLICY_NAME: &str = "propagationpolicy.karmada.io/name";
/// Annotation on a claimed template naming its ClusterPropagationPolicy.
pub const ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME: &str =
    "clusterpropagationpolicy.karmada.io/name";
/// Scheduler used when a policy names none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// Propagates the selected resource templates of its own namespace to member clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PropagationPolicy {
    /// API version of this object: `policy.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `PropagationPolicy`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// What to propagate and where.
    #[serde(default)]
    pub spec: PropagationSpec,
}

/// Propagates selected resource templates of any namespace, or cluster-scoped ones, to member clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPropagationPolicy {
    /// API version of this object: `policy.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ClusterPropagationPolicy`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// What to propagate and where.
    #[serde(default)]
    pub spec: PropagationSpec,
}

/// What a propagation policy selects and how the selected resources are placed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PropagationSpec {
    /// Resource templates this policy applies to; at least one.
    #[serde(default)]
    pub resource_selectors: Vec<ResourceSelector>,
    /// Deprecated; replaced by `propagateDeps`.
    #[serde(default, skip_serializing_if = "crate::cluster::is_false")]
    pub association: bool,
    /// Also propagate what the selected resources depend on (ConfigMaps, Secrets, ServiceAccounts, ...) to the
    /// same clusters. Required when application failover is configured.
    #[serde(default, skip_serializing_if = "crate::cluster::is_false")]
    pub propagate_deps: bool,
    /// Which clusters and how replicas are divided.
    #[serde(default)]
    pub placement: Placement,
    /// When several policies match one resource, the highest priority wins. Defaults to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Whether this policy may take resources away from a lower-priority policy: Always or Never (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption: Option<PreemptionBehavior>,
    /// OverridePolicies (same namespace) and ClusterOverridePolicies that must exist before this policy applies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependent_overrides: Vec<String>,
    /// Scheduler that places the selected resources; defaults to `default-scheduler`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// What to do when a cluster or the application on it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverBehavior>,
    /// What to do when a member already has a resource of the same name: Abort (default) or Overwrite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict_resolution: Option<ConflictResolution>,
    /// When policy changes take effect on already-propagated resources; Lazy waits for the resource to change.
    /// Empty means immediately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_preference: Option<ActivationPreference>,
    /// Pause dispatching to all or some clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,
    /// Keep the propagated resources in members when the template is deleted. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,
    /// Scheduling priority of the selected resources in the scheduler queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_priority: Option<SchedulePriority>,
}

/// Selects resource templates by API version and kind, then by namespace, name or labels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    /// API version of the target, e.g. `apps/v1`.
    pub api_version: String,
    /// Kind of the target, e.g. `Deployment`.
    pub kind: String,
    /// Namespace of the target. For a PropagationPolicy it must be the policy's own namespace (filled when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the target; when set, `labelSelector` is ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Labels the target must carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// Whether a policy may preempt resources claimed by a lower-priority policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PreemptionBehavior {
    /// Take over resources from lower-priority policies.
    Always,
    /// Never take over resources already claimed.
    #[default]
    Never,
}

/// How to treat a member resource that already exists with the same name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConflictResolution {
    /// Leave the existing resource alone and report the conflict.
    #[default]
    Abort,
    /// Take the existing resource over and overwrite it.
    Overwrite,
}

/// When a policy change takes effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ActivationPreference {
    /// Apply the change only when the resource template itself changes next.
    #[default]
    Lazy,
}

/// Pause propagation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    /// Stop dispatching to every cluster. Exclusive with `dispatchingOnClusters`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching: Option<bool>,
    /// Stop dispatching to the named clusters only. Exclusive with `dispatching`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching_on_clusters: Option<SuspendClusters>,
}

/// Clusters to which dispatching is paused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuspendClusters {
    /// Names of the clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

/// Failover behaviour for cluster failures and application failures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailoverBehavior {
    /// Move the application away from a cluster where it is unhealthy. Needs `propagateDeps: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<ApplicationFailoverBehavior>,
    /// How to evict from a cluster that failed (tainted NoExecute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterFailoverBehavior>,
}

/// Application failover settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationFailoverBehavior {
    /// When the application counts as failed.
    #[serde(default)]
    pub decision_conditions: DecisionConditions,
    /// How the old copy is removed: Directly, Gracefully (default) or Never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_mode: Option<PurgeMode>,
    /// With Gracefully: how long to wait for the new copy to become healthy before removing the old one
    /// (defaults to 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
    /// State carried from the failed copy to its replacement as labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_preservation: Option<StatePreservation>,
}

/// When an application is considered failed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionConditions {
    /// Seconds the application must stay unhealthy before failover starts; defaults to 300, 0 means at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i32>,
}

/// Cluster failover settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFailoverBehavior {
    /// How the copy on the failed cluster is removed: Directly or Gracefully (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_mode: Option<PurgeMode>,
    /// State carried from the failed copy to its replacement as labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_preservation: Option<StatePreservation>,
}

/// How a workload is removed from the cluster it fails over from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PurgeMode {
    /// Remove at once, before the replacement is up. (Older releases spelled this `Immediately`; admission
    /// rewrites that spelling.)
    Directly,
    /// Remove once the replacement is healthy or the grace period ends. (Older spelling: `Graciously`.)
    #[default]
    Gracefully,
    /// Never remove; the old copy stays.
    Never,
}

impl PurgeMode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Directly => "Directly",
            Self::Gracefully => "Gracefully",
            Self::Never => "Never",
        }
    }
}

/// Rules extracting state from the failed copy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatePreservation {
    /// One label per rule.
    #[serde(default)]
    pub rules: Vec<StatePreservationRule>,
}

/// Copies one value from the failed copy's status into a label on the replacement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatePreservationRule {
    /// Label key that receives the value.
    pub alias_label_name: String,
    /// JSONPath evaluated against the failed copy's `.status`.
    pub json_path: String,
}

/// Where a resource's scheduling priority comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulePriority {
    /// Kind of priority class to read: KubePriorityClass (the only one implemented).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_source: Option<PriorityClassSource>,
    /// Name of the priority class.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// Kind of priority class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PriorityClassSource {
    /// A `scheduling.k8s.io/v1` PriorityClass.
    #[default]
    KubePriorityClass,
    /// Reserved: the priority class of the pod template.
    PodPriorityClass,
    /// Reserved: a federated priority class.
    FederatedPriorityClass,
}
