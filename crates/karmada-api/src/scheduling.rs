//! `scheduling.karmada.io/v1alpha1` `SchedulerProfile` (cluster-scoped): which scheduler plugins run, with what
//! score weights and arguments. This kind is karmada-rs's own; Karmada configures plugins with flags.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// API group of this module's kinds.
pub const GROUP: &str = "scheduling.karmada.io";
/// API version of this module's kinds.
pub const VERSION: &str = "v1alpha1";

/// A named scheduler configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerProfile {
    /// API version of this object: `scheduling.karmada.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of this object: `SchedulerProfile`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata; the name is the profile's name.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::object_meta")]
    pub metadata: ObjectMeta,
    /// Plugins and their arguments.
    #[serde(default)]
    pub spec: SchedulerProfileSpec,
}

/// Plugins and their arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerProfileSpec {
    /// Plugins to enable or disable, on top of the defaults.
    #[serde(default)]
    pub plugins: Plugins,
    /// Arguments per plugin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugin_config: Vec<PluginConfig>,
}

/// Plugin sets by extension point.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plugins {
    /// Plugins of the whole scheduling cycle (filter and score).
    #[serde(default)]
    pub schedule: PluginSet,
}

/// Plugins turned on and off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSet {
    /// Plugins to run, in addition to the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled: Vec<Plugin>,
    /// Default plugins not to run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled: Vec<Plugin>,
}

/// One plugin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plugin {
    /// Plugin name, e.g. `ClusterAffinity`.
    pub name: String,
    /// Multiplier of the plugin's score; defaults to 1. Only for enabled scoring plugins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

/// Arguments of one plugin.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginConfig {
    /// Plugin name.
    pub name: String,
    /// Free-form arguments, read by the plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::preserved_object")]
    pub args: Option<Value>,
}
