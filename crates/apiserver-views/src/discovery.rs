//! Discovery documents: aggregated (`apidiscovery.k8s.io/v2`, what kubectl 1.32 prefers) and
//! legacy (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`).
//!
//! Invariants: groups appear in the order of their first definition; versions within a group
//! are in Kubernetes preference order, so the first one is the preferred version.

use apimachinery::ResourceDef;
use base64::Engine;
use serde_json::{Map, Value, json};

use crate::hash::fnv1a64;
use crate::review_discovery;
use crate::versions::by_preference;

/// The Content-Type an aggregated discovery response must carry, exactly.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Every verb a served resource supports.
pub const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs `def` supports: every one, or get and list for a read-only kind.
fn verbs_of(def: &ResourceDef) -> Value {
    if crate::metrics_api::is_read_only(def) {
        json!(crate::metrics_api::READ_ONLY_VERBS)
    } else {
        json!(VERBS)
    }
}

/// Verbs of the `status` and `scale` subresources.
pub const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];

/// `GET /api` with the aggregated Accept: the core group only.
pub fn aggregated_api(defs: &[ResourceDef]) -> Value {
    aggregated_list(defs, |group| group.is_empty())
}

/// `GET /apis` with the aggregated Accept: every named group.
pub fn aggregated_apis(defs: &[ResourceDef]) -> Value {
    let mut list = aggregated_list(defs, |group| !group.is_empty());
    if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
        items.extend(review_discovery::aggregated_items());
    }
    list
}

fn aggregated_list(defs: &[ResourceDef], include: impl Fn(&str) -> bool) -> Value {
    let items: Vec<Value> = groups(defs)
        .into_iter()
        .filter(|group| include(group))
        .map(|group| {
            let versions: Vec<Value> = versions(defs, &group)
                .into_iter()
                .map(|version| {
                    let resources: Vec<Value> = in_version(defs, &group, &version)
                        .map(aggregated_resource)
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn aggregated_resource(def: &ResourceDef) -> Value {
    let mut resource = Map::new();
    resource.insert("resource".into(), json!(def.plural));
    resource.insert(
        "responseKind".into(),
        json!({"group": def.group, "version": def.version, "kind": def.kind}),
    );
    resource.insert(
        "scope".into(),
        json!(if def.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    resource.insert("singularResource".into(), json!(def.singular));
    resource.insert("verbs".into(), verbs_of(def));
    if !def.short_names.is_empty() {
        resource.insert("shortNames".into(), json!(def.short_names));
    }
    if !def.categories.is_empty() {
        resource.insert("categories".into(), json!(def.categories));
    }
    let mut subresources = Vec::new();
    if def.scale_subresource.is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if def.status_subresource {
        subresources.push(json!({
            "subresource": "status",
            "responseKind": {"group": def.group, "version": def.version, "kind": def.kind},
            "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if is_service_accounts(def) {
        subresources.push(json!({
            "subresource": "token",
            "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
            "verbs": ["create"],
        }));
    }
    if !subresources.is_empty() {
        resource.insert("subresources".into(), Value::Array(subresources));
    }
    Value::Object(resource)
}

/// ServiceAccounts have a `token` subresource (TokenRequest, `kubectl create token`).
pub fn is_service_accounts(def: &ResourceDef) -> bool {
    def.builtin && def.group.is_empty() && def.plural == "serviceaccounts"
}

/// `GET /api`: the legacy `APIVersions` document.
pub fn legacy_api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// `GET /apis`: every named group with its versions.
pub fn legacy_group_list(defs: &[ResourceDef]) -> Value {
    let groups: Vec<Value> = groups(defs)
        .into_iter()
        .filter(|group| !group.is_empty())
        .map(|group| api_group(defs, &group))
        .chain(review_discovery::legacy_groups())
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}`, or `None` when no resource is served in that group.
pub fn legacy_group(defs: &[ResourceDef], group: &str) -> Option<Value> {
    if group.is_empty() || !defs.iter().any(|def| def.group == group) {
        return review_discovery::legacy_group(group);
    }
    let mut document = api_group(defs, group);
    if let Value::Object(map) = &mut document {
        map.insert("kind".into(), json!("APIGroup"));
        map.insert("apiVersion".into(), json!("v1"));
    }
    Some(document)
}

fn api_group(defs: &[ResourceDef], group: &str) -> Value {
    let versions: Vec<Value> = versions(defs, group)
        .into_iter()
        .map(|version| json!({"groupVersion": format!("{group}/{version}"), "version": version}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

/// `GET /api/v1` (group `""`) or `GET /apis/{group}/{version}`; `None` when nothing is served there.
pub fn legacy_resource_list(defs: &[ResourceDef], group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceDef> = in_version(defs, group, version).collect();
    if served.is_empty() {
        return review_discovery::legacy_resource_list(group, version);
    }
    let mut resources = Vec::new();
    for def in served {
        let mut resource = Map::new();
        resource.insert("name".into(), json!(def.plural));
        resource.insert("singularName".into(), json!(def.singular));
        resource.insert("namespaced".into(), json!(def.namespaced));
        resource.insert("kind".into(), json!(def.kind));
        resource.insert("verbs".into(), verbs_of(def));
        if !def.short_names.is_empty() {
            resource.insert("shortNames".into(), json!(def.short_names));
        }
        if !def.categories.is_empty() {
            resource.insert("categories".into(), json!(def.categories));
        }
        resource.insert(
            "storageVersionHash".into(),
            json!(storage_version_hash(defs, def)),
        );
        resources.push(Value::Object(resource));
        if def.scale_subresource.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", def.plural),
                "singularName": "",
                "namespaced": def.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
        if def.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", def.plural),
                "singularName": "",
                "namespaced": def.namespaced,
                "kind": def.kind,
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
        if is_service_accounts(def) {
            resources.push(json!({
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": true,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

/// An opaque 8-byte digest of the storage version's group/version/kind, base64-encoded like
/// upstream's; it changes exactly when the storage version changes.
fn storage_version_hash(defs: &[ResourceDef], def: &ResourceDef) -> String {
    let storage = defs
        .iter()
        .find(|other| other.group == def.group && other.kind == def.kind && other.storage_version)
        .unwrap_or(def);
    let key = format!("{}/{}/{}", storage.group, storage.version, storage.kind);
    base64::engine::general_purpose::STANDARD.encode(fnv1a64(key.as_bytes()).to_be_bytes())
}

/// Group names in order of first appearance.
pub(crate) fn groups(defs: &[ResourceDef]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for def in defs {
        if !seen.contains(&def.group) {
            seen.push(def.group.clone());
        }
    }
    seen
}

/// Versions of `group`, most preferred first.
pub(crate) fn versions(defs: &[ResourceDef], group: &str) -> Vec<String> {
    let mut versions: Vec<String> = Vec::new();
    for def in defs.iter().filter(|def| def.group == group) {
        if !versions.contains(&def.version) {
            versions.push(def.version.clone());
        }
    }
    versions.sort_by(|a, b| by_preference(a, b));
    versions
}

pub(crate) fn in_version<'a>(
    defs: &'a [ResourceDef],
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'a ResourceDef> + 'a {
    defs.iter()
        .filter(move |def| def.group == group && def.version == version)
}
