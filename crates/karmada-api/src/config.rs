//! `config.karmada.io/v1alpha1`: how Karmada understands kinds it does not know natively.
//! ResourceInterpreterCustomization carries Lua scripts per interpreter operation;
//! ResourceInterpreterWebhookConfiguration points operations at webhooks. Both are cluster-scoped.

use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of this module's kinds.
pub const GROUP: &str = "config.karmada.io";
/// API version of this module's kinds.
pub const VERSION: &str = "v1alpha1";

/// Interpreter operations a webhook may register for (`*` means all).
pub const INTERPRETER_OPERATIONS: &[&str] = &[
    "InterpretReplica",
    "InterpretComponent",
    "ReviseReplica",
    "InterpretStatus",
    "Prune",
    "Retain",
    "AggregateStatus",
    "InterpretHealth",
    "InterpretDependency",
    "*",
];

/// Lua scripts that teach Karmada about one kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterCustomization {
    /// API version of this object: `config.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ResourceInterpreterCustomization`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Target kind and scripts.
    #[serde(default)]
    pub spec: ResourceInterpreterCustomizationSpec,
}

/// Target and scripts of a customization.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterCustomizationSpec {
    /// The kind these scripts interpret.
    pub target: CustomizationTarget,
    /// One optional script per operation.
    #[serde(default)]
    pub customizations: CustomizationRules,
}

/// API version and kind a customization applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizationTarget {
    /// API version, e.g. `apps/v1`.
    pub api_version: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
}

/// Scripts by operation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizationRules {
    /// `Retain(desired, observed)`: keep fields the member changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<LuaScript>,
    /// `GetReplicas(obj)`: replicas and per-replica requirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_resource: Option<LuaScript>,
    /// `GetComponents(obj)`: pod templates of a multi-template workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_resource: Option<LuaScript>,
    /// `ReviseReplica(obj, replicas)`: set replicas for one cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_revision: Option<LuaScript>,
    /// `ReflectStatus(obj)`: the status to collect from a member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reflection: Option<LuaScript>,
    /// `AggregateStatus(desired, statusItems)`: the template's status from the members'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_aggregation: Option<LuaScript>,
    /// `InterpretHealth(obj)`: whether a member object is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_interpretation: Option<LuaScript>,
    /// `GetDependencies(desired)`: objects that must travel with this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_interpretation: Option<LuaScript>,
}

/// A Lua (5.1) script.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LuaScript {
    /// The script source; it defines the operation's function.
    pub lua_script: String,
}

/// Webhooks that interpret kinds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterWebhookConfiguration {
    /// API version of this object: `config.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `ResourceInterpreterWebhookConfiguration`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// The webhooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhooks: Vec<ResourceInterpreterWebhook>,
}

/// One interpreter webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterWebhook {
    /// Fully qualified webhook name, e.g. `workloads.example.com`.
    pub name: String,
    /// How to call the webhook.
    pub client_config: WebhookClientConfig,
    /// Operations and kinds the webhook handles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleWithOperations>,
    /// Call timeout, 1 to 30 seconds; defaults to 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// ResourceInterpreterContext versions the webhook accepts, in order of preference.
    #[serde(default)]
    pub interpreter_context_versions: Vec<String>,
}

/// Operations and kinds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleWithOperations {
    /// Interpreter operations, or `*`.
    #[serde(default)]
    pub operations: Vec<String>,
    /// API groups, or `*`.
    #[serde(default)]
    pub api_groups: Vec<String>,
    /// API versions, or `*`.
    #[serde(default)]
    pub api_versions: Vec<String>,
    /// Kinds, or `*`.
    #[serde(default)]
    pub kinds: Vec<String>,
}
