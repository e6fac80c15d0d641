//! `Placement`: which clusters a resource may go to and how its replicas are split among them.
//! Shared by policies and bindings (a binding carries a copy of its policy's placement).

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Cluster selection and replica division rules.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// One set of rules choosing candidate clusters. Cannot be combined with `clusterAffinities`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    /// Ordered alternatives: the scheduler uses the first term that yields a feasible placement and falls back to
    /// the next one otherwise. Cannot be combined with `clusterAffinity`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_affinities: Vec<ClusterAffinityTerm>,
    /// Cluster taints this placement tolerates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_tolerations: Vec<Toleration>,
    /// How many groups of clusters (by cluster, region, zone, provider or a label) to spread over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread_constraints: Vec<SpreadConstraint>,
    /// How replicas are assigned to the chosen clusters. When absent every cluster gets all replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scheduling: Option<ReplicaSchedulingStrategy>,
    /// Co-location or separation of workloads that share a label value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity: Option<WorkloadAffinity>,
}

impl Placement {
    /// The effective scheduling type: Duplicated when `replicaScheduling` is absent.
    pub fn replica_scheduling_type(&self) -> ReplicaSchedulingType {
        self.replica_scheduling
            .as_ref()
            .map_or(ReplicaSchedulingType::Duplicated, |r| {
                r.replica_scheduling_type
            })
    }
}

/// Rules choosing clusters. All given rules must hold; an empty affinity matches every cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    /// Clusters whose labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Clusters whose `provider`, `region` or `zone` match the expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<FieldSelector>,
    /// Clusters with these names; empty means any name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
    /// Clusters never chosen, whatever the other rules say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// Expressions over cluster fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldSelector {
    /// Requirements on the keys `provider`, `region` and `zone` (operators In and NotIn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
}

/// A named cluster affinity, one alternative of `clusterAffinities`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinityTerm {
    /// Name of this term, 1 to 32 characters, unique within the placement.
    pub affinity_name: String,
    /// The rules of this term.
    #[serde(flatten)]
    pub cluster_affinity: ClusterAffinity,
    /// Extra clusters used for replicas that do not fit in the term's clusters; only with dynamic weights or
    /// Aggregated division.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overflow_affinities: Vec<OverflowAffinityTerm>,
}

/// A named overflow affinity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverflowAffinityTerm {
    /// Name of this overflow term, 1 to 32 characters.
    pub affinity_name: String,
    /// The rules of this term.
    #[serde(flatten)]
    pub cluster_affinity: ClusterAffinity,
}

/// The property clusters are grouped by for spreading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpreadByField {
    /// Each cluster is its own group.
    #[default]
    Cluster,
    /// Clusters grouped by `spec.region`.
    Region,
    /// Clusters grouped by `spec.zones`.
    Zone,
    /// Clusters grouped by `spec.provider`.
    Provider,
}

impl SpreadByField {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cluster => "cluster",
            Self::Region => "region",
            Self::Zone => "zone",
            Self::Provider => "provider",
        }
    }
}

/// How many groups of clusters the resource spreads over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraint {
    /// Cluster field to group by. Exclusive with `spreadByLabel`; when both are empty it defaults to `cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_by_field: Option<SpreadByField>,
    /// Cluster label whose value forms the groups. Exclusive with `spreadByField`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spread_by_label: String,
    /// At most this many groups are chosen; 0 means no upper bound was given.
    #[serde(default)]
    pub max_groups: i32,
    /// At least this many groups are chosen; defaults to 1.
    #[serde(default)]
    pub min_groups: i32,
}

/// Whether every cluster gets all replicas or replicas are divided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReplicaSchedulingType {
    /// Every chosen cluster runs the full replica count.
    Duplicated,
    /// The replica count is split among the chosen clusters.
    #[default]
    Divided,
}

/// How Divided replicas are split.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReplicaDivisionPreference {
    /// Pack replicas into as few clusters as possible.
    Aggregated,
    /// Split replicas by weight (static weights or available replicas).
    #[default]
    Weighted,
}

/// How replicas are assigned to the chosen clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSchedulingStrategy {
    /// Duplicated or Divided; defaults to Divided when this object is given.
    #[serde(default)]
    pub replica_scheduling_type: ReplicaSchedulingType,
    /// For Divided: Aggregated or Weighted (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_division_preference: Option<ReplicaDivisionPreference>,
    /// For Weighted: static weights per cluster, or weights taken from each cluster's available replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_preference: Option<ClusterPreferences>,
}

/// Weights for Weighted division.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPreferences {
    /// Fixed weights for clusters chosen by an affinity; a cluster matched by no entry gets no replicas. Ignored
    /// when `dynamicWeight` is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_weight_list: Vec<StaticClusterWeight>,
    /// Derive weights from a cluster property instead of fixed numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_weight: Option<DynamicWeightFactor>,
}

/// Source of dynamic weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DynamicWeightFactor {
    /// Weight each cluster by how many more replicas it can run.
    #[default]
    AvailableReplicas,
}

/// A weight for the clusters an affinity selects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaticClusterWeight {
    /// Clusters this weight applies to.
    pub target_cluster: ClusterAffinity,
    /// Relative weight, at least 1.
    pub weight: i64,
}

/// Affinity and anti-affinity between workloads across clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinity {
    /// Place workloads sharing this label value in the same clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<WorkloadAffinityTerm>,
    /// Keep workloads sharing this label value in different clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anti_affinity: Option<WorkloadAffinityTerm>,
}

/// The label that groups workloads for affinity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityTerm {
    /// Label key on the resource template whose value forms the group.
    pub group_by_label_key: String,
}
