//! The fields of the four RBAC kinds the evaluator needs, read from their JSON.
//!
//! Unknown fields are ignored; absent lists are empty. Nothing here is written back to the
//! store, so this is not the full API type.

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectName {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub verbs: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub resources: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        deserialize_with = "null_as_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Role {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub rules: Vec<PolicyRule>,
}

/// A ClusterRole; its `aggregationRule` is not read (see the module docs).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ClusterRole {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub rules: Vec<PolicyRule>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    #[serde(default)]
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    pub kind: String,
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    #[serde(default)]
    pub api_group: String,
    pub name: String,
    /// For ServiceAccount subjects; defaults to the binding's namespace.
    #[serde(default)]
    pub namespace: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RoleBinding {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub subjects: Vec<Subject>,
    pub role_ref: RoleRef,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRoleBinding {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub subjects: Vec<Subject>,
    pub role_ref: RoleRef,
}

/// Go clients send `null` for empty lists; treat it like an absent field.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}
