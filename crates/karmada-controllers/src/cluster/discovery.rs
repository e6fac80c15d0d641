//! Reading a member's API discovery for `status.apiEnablements`.
//!
//! Aggregated discovery (`apidiscovery.k8s.io/v2`, Kubernetes ≥ 1.30) returns every group, version and
//! resource in two requests (`/api`, `/apis`), where the legacy documents take one request per
//! group/version (two dozen on a bare cluster, each probe period). A server that does not speak the
//! aggregated form answers the same Accept header with the legacy `APIVersions`/`APIGroupList`, and the
//! per-group/version documents are then read as before.
//!
//! [`from_aggregated`] is pure; [`discover`] does the requests.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList, APIVersions};
use serde_json::{Value, json};

/// Accept header asking for aggregated discovery, with plain JSON (the legacy documents) as fallback.
const ACCEPT_AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// What a member's discovery yielded: one list per group/version, and the group/versions that could not
/// be read (stale in the aggregated form, failing in the legacy one).
#[derive(Debug, Default)]
pub struct Discovered {
    pub lists: Vec<APIResourceList>,
    pub failed: Vec<String>,
}

/// The resource lists of an `APIGroupDiscoveryList` document, or `None` when `doc` is not one (a legacy
/// answer). Group/versions whose freshness is `Stale` are reported as failed, as a legacy fetch of them
/// would have failed.
pub fn from_aggregated(doc: &Value) -> Option<Discovered> {
    if doc.get("kind").and_then(Value::as_str) != Some("APIGroupDiscoveryList") {
        return None;
    }
    let mut out = Discovered::default();
    for group in doc
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let group_name = group
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        for version in group
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(version_name) = version.get("version").and_then(Value::as_str) else {
                continue;
            };
            let group_version = if group_name.is_empty() {
                version_name.to_string()
            } else {
                format!("{group_name}/{version_name}")
            };
            if version.get("freshness").and_then(Value::as_str) == Some("Stale") {
                out.failed.push(group_version);
                continue;
            }
            let resources: Vec<Value> = version
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| {
                    let name = r.get("resource").and_then(Value::as_str)?;
                    let kind = r.pointer("/responseKind/kind").and_then(Value::as_str)?;
                    let namespaced = r.get("scope").and_then(Value::as_str) == Some("Namespaced");
                    Some(json!({
                        "name": name, "kind": kind, "namespaced": namespaced,
                        "singularName": "", "verbs": [],
                    }))
                })
                .collect();
            let list = json!({"groupVersion": group_version, "resources": resources});
            match serde_json::from_value::<APIResourceList>(list) {
                Ok(list) => out.lists.push(list),
                Err(_) => out.failed.push(group_version),
            }
        }
    }
    Some(out)
}

async fn get_value(member: &kube::Client, path: &str, accept: &str) -> Result<Value, kube::Error> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    member.request::<Value>(request).await
}

/// The member's API resources, through aggregated discovery when it is served, else the legacy documents.
pub async fn discover(member: &kube::Client) -> Discovered {
    let core = get_value(member, "/api", ACCEPT_AGGREGATED).await;
    let groups = get_value(member, "/apis", ACCEPT_AGGREGATED).await;
    let mut out = Discovered::default();
    let mut legacy_group_versions = Vec::new();
    match core {
        Ok(doc) => match from_aggregated(&doc) {
            Some(found) => merge(&mut out, found),
            None => {
                if let Ok(versions) = serde_json::from_value::<APIVersions>(doc) {
                    legacy_group_versions.extend(versions.versions);
                }
            }
        },
        Err(_) => out.failed.push("v1".to_string()),
    }
    if let Ok(doc) = groups {
        match from_aggregated(&doc) {
            Some(found) => merge(&mut out, found),
            None => {
                if let Ok(list) = serde_json::from_value::<APIGroupList>(doc) {
                    legacy_group_versions.extend(
                        list.groups
                            .into_iter()
                            .flat_map(|g| g.versions.into_iter().map(|v| v.group_version)),
                    );
                }
            }
        }
    }
    for gv in legacy_group_versions {
        let path = if gv.contains('/') {
            format!("/apis/{gv}")
        } else {
            format!("/api/{gv}")
        };
        match get_value(member, &path, "application/json")
            .await
            .ok()
            .and_then(|v| serde_json::from_value::<APIResourceList>(v).ok())
        {
            Some(list) => out.lists.push(list),
            None => out.failed.push(gv),
        }
    }
    out
}

fn merge(into: &mut Discovered, found: Discovered) {
    into.lists.extend(found.lists);
    into.failed.extend(found.failed);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_documents_become_resource_lists() {
        let doc = json!({
            "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [
                {"metadata": {"name": "apps"}, "versions": [
                    {"version": "v1", "freshness": "Current", "resources": [
                        {"resource": "deployments", "scope": "Namespaced",
                         "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                         "subresources": [{"subresource": "status"}]},
                    ]},
                    {"version": "v1beta1", "freshness": "Stale", "resources": []},
                ]},
                {"metadata": {}, "versions": [
                    {"version": "v1", "resources": [
                        {"resource": "nodes", "scope": "Cluster",
                         "responseKind": {"group": "", "version": "", "kind": "Node"}},
                    ]},
                ]},
            ],
        });
        let found = from_aggregated(&doc).unwrap();
        type Resources = Vec<(String, String, bool)>;
        let summary: Vec<(String, Resources)> = found
            .lists
            .iter()
            .map(|l| {
                (
                    l.group_version.clone(),
                    l.resources
                        .iter()
                        .map(|r| (r.name.clone(), r.kind.clone(), r.namespaced))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    "apps/v1".to_string(),
                    vec![("deployments".into(), "Deployment".into(), true)]
                ),
                (
                    "v1".to_string(),
                    vec![("nodes".into(), "Node".into(), false)]
                ),
            ]
        );
        assert_eq!(found.failed, vec!["apps/v1beta1".to_string()]);
    }

    #[test]
    fn legacy_documents_are_not_aggregated() {
        let legacy = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": []});
        assert!(from_aggregated(&legacy).is_none());
        assert!(from_aggregated(&json!({"kind": "APIVersions", "versions": ["v1"]})).is_none());
    }
}
