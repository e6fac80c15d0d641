//! `OverridePolicy` (namespaced) and `ClusterOverridePolicy` (cluster-scoped): per-cluster changes applied to a
//! resource template before it is sent to a member.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ClusterAffinity, ResourceSelector};

/// Annotation on a Work listing the OverridePolicies applied to it (JSON).
pub const ANNOTATION_APPLIED_OVERRIDES: &str = "policy.karmada.io/applied-overrides";
/// Annotation on a Work listing the ClusterOverridePolicies applied to it (JSON).
pub const ANNOTATION_APPLIED_CLUSTER_OVERRIDES: &str =
    "policy.karmada.io/applied-cluster-overrides";

/// Changes resources of its own namespace per cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverridePolicy {
    /// API version of this object: `policy.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `OverridePolicy`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Which resources change, and how, in which clusters.
    #[serde(default)]
    pub spec: OverrideSpec,
}

/// Changes resources of any namespace, or cluster-scoped ones, per cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOverridePolicy {
    /// API version of this object: `policy.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ClusterOverridePolicy`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Which resources change, and how, in which clusters.
    #[serde(default)]
    pub spec: OverrideSpec,
}

/// The resources an override policy changes and its rules.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverrideSpec {
    /// Resources to change; empty means every resource the policy can see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selectors: Vec<ResourceSelector>,
    /// Rules, each with its target clusters and overriders, applied in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub override_rules: Vec<RuleWithCluster>,
    /// Deprecated: target clusters of the top-level `overriders`; only read when `overrideRules` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,
    /// Deprecated: overriders used when `overrideRules` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overriders: Option<Overriders>,
}

/// Overriders and the clusters they apply to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleWithCluster {
    /// Clusters this rule applies to; absent means every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,
    /// The changes.
    #[serde(default)]
    pub overriders: Overriders,
}

/// Changes to make. Within one rule they apply in this order: plaintext, image, command, args, labels,
/// annotations, field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Overriders {
    /// JSON-patch style operations on arbitrary paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plaintext: Vec<PlaintextOverrider>,
    /// Changes to container image references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_overrider: Vec<ImageOverrider>,
    /// Changes to a container's command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_overrider: Vec<CommandArgsOverrider>,
    /// Changes to a container's args.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args_overrider: Vec<CommandArgsOverrider>,
    /// Changes to the resource's labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels_overrider: Vec<LabelAnnotationOverrider>,
    /// Changes to the resource's annotations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations_overrider: Vec<LabelAnnotationOverrider>,
    /// Changes inside a string field that holds JSON or YAML (e.g. a ConfigMap entry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field_overrider: Vec<FieldOverrider>,
}

impl Overriders {
    /// True when no overrider of any kind is given.
    pub fn is_empty(&self) -> bool {
        self.plaintext.is_empty()
            && self.image_overrider.is_empty()
            && self.command_overrider.is_empty()
            && self.args_overrider.is_empty()
            && self.labels_overrider.is_empty()
            && self.annotations_overrider.is_empty()
            && self.field_overrider.is_empty()
    }
}

/// Operation of an overrider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OverriderOperator {
    /// Add the value.
    #[default]
    Add,
    /// Remove the value.
    Remove,
    /// Replace the value.
    Replace,
}

/// One JSON-patch operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlaintextOverrider {
    /// JSON pointer (RFC 6901) of the field, e.g. `/spec/replicas`.
    pub path: String,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// New value; not used by remove.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_value")]
    pub value: Option<Value>,
}

/// Part of an image reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ImageComponent {
    /// The registry host, e.g. `docker.io`.
    #[default]
    Registry,
    /// The repository path, e.g. `library/nginx`.
    Repository,
    /// The tag, e.g. `1.27`.
    Tag,
}

/// Changes one component of image references.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageOverrider {
    /// Which image field to change; when absent the containers of Pods and of the common workload kinds are used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<ImagePredicate>,
    /// Registry, Repository or Tag.
    pub component: ImageComponent,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// New value of the component; not used by remove.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// Locates one image field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePredicate {
    /// JSON pointer of the image field, e.g. `/spec/template/spec/containers/0/image`.
    pub path: String,
}

/// Adds or removes command or args entries of one container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandArgsOverrider {
    /// Container to change.
    pub container_name: String,
    /// add or remove.
    pub operator: OverriderOperator,
    /// Entries appended (add) or deleted (remove).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value: Vec<String>,
}

/// Adds, removes or replaces labels or annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelAnnotationOverrider {
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// Keys and values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub value: BTreeMap<String, String>,
}

/// Changes inside a string field holding a JSON or YAML document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldOverrider {
    /// JSON pointer of the string field, e.g. `/data/config.yaml`.
    pub field_path: String,
    /// Operations when the field holds JSON. Exclusive with `yaml`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json: Vec<PatchOperation>,
    /// Operations when the field holds YAML. Exclusive with `json`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yaml: Vec<PatchOperation>,
}

/// One operation inside an embedded document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchOperation {
    /// JSON pointer inside the embedded document.
    pub sub_path: String,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// New value; not used by remove.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_value")]
    pub value: Option<Value>,
}
