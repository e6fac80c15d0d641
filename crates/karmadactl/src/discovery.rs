//! Which resource a user means by `deploy`, `deployments.apps`, `Deployment` or `pp`: the server's discovery
//! documents (`/api/v1`, `/apis` and each group's preferred version) matched as kubectl matches them.

use anyhow::{Context, bail};
use kube::api::{ApiResource, GroupVersionKind};
use serde_json::Value;

/// A resource type the server serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub kind: String,
    pub namespaced: bool,
}

impl Resource {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `deployments.apps`, `pods`: how kubectl names the type in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `deployment.apps`, `pod`: how kubectl names an object's type in `TYPE/NAME` lines.
    pub fn kind_qualified(&self) -> String {
        let kind = self.kind.to_lowercase();
        if self.group.is_empty() {
            kind
        } else {
            format!("{kind}.{}", self.group)
        }
    }

    /// Go's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment` (`/v1, Kind=Pod` for the core group).
    pub fn gvk_string(&self) -> String {
        format!("{}/{}, Kind={}", self.group, self.version, self.kind)
    }

    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&self.group, &self.version, &self.kind),
            &self.plural,
        )
    }

    /// The URL path of the collection (`namespace` ignored for cluster-scoped types; `None` lists every
    /// namespace) or, with `name`, of one object.
    pub fn path(&self, namespace: Option<&str>, name: Option<&str>) -> String {
        let prefix = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        let mut path = match namespace {
            Some(ns) if self.namespaced => format!("{prefix}/namespaces/{ns}/{}", self.plural),
            _ => format!("{prefix}/{}", self.plural),
        };
        if let Some(name) = name {
            path.push('/');
            path.push_str(name);
        }
        path
    }
}

/// One `APIResourceList` with its group version (`v1`, `apps/v1`).
pub type ResourceList = (String, Value);

/// Resolves a user's type name against discovery lists, searched in order (core first).
pub fn resolve(lists: &[ResourceList], query: &str) -> Option<Resource> {
    let (name, group_part) = match query.split_once('.') {
        Some((name, rest)) => (name, Some(rest)),
        None => (query, None),
    };
    // `deployments.v1.apps` names the version too.
    let (version, group) = match group_part {
        Some(rest) => match rest.split_once('.') {
            Some((v, g)) if looks_like_version(v) => (Some(v), Some(g)),
            _ if looks_like_version(rest) => (Some(rest), Some("")),
            _ => (None, Some(rest)),
        },
        None => (None, None),
    };
    let lower = name.to_lowercase();
    for (group_version, list) in lists {
        let (g, v) = match group_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", group_version.as_str()),
        };
        if group.is_some_and(|want| want != g) || version.is_some_and(|want| want != v) {
            continue;
        }
        for entry in list["resources"].as_array().into_iter().flatten() {
            let plural = entry["name"].as_str().unwrap_or_default();
            if plural.contains('/') {
                continue;
            }
            let kind = entry["kind"].as_str().unwrap_or_default();
            let singular = entry["singularName"].as_str().unwrap_or_default();
            let short = entry["shortNames"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s.as_str() == Some(lower.as_str()));
            if plural == lower
                || (!singular.is_empty() && singular == lower)
                || kind.to_lowercase() == lower
                || short
            {
                return Some(Resource {
                    group: g.to_string(),
                    version: v.to_string(),
                    plural: plural.to_string(),
                    kind: kind.to_string(),
                    namespaced: entry["namespaced"].as_bool().unwrap_or(false),
                });
            }
        }
    }
    None
}

/// The resource of an object's `apiVersion` and `kind`.
pub fn resolve_kind(lists: &[ResourceList], api_version: &str, kind: &str) -> Option<Resource> {
    let (_, list) = lists.iter().find(|(gv, _)| gv == api_version)?;
    let entry = list["resources"]
        .as_array()?
        .iter()
        .find(|e| e["kind"] == kind && !e["name"].as_str().unwrap_or("/").contains('/'))?;
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    Some(Resource {
        group: group.to_string(),
        version: version.to_string(),
        plural: entry["name"].as_str().unwrap_or_default().to_string(),
        kind: kind.to_string(),
        namespaced: entry["namespaced"].as_bool().unwrap_or(false),
    })
}

fn looks_like_version(s: &str) -> bool {
    s.strip_prefix('v')
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_digit())
}

/// The discovery lists of `/api/v1` and every group's preferred version.
pub async fn lists(client: &kube::Client) -> anyhow::Result<Vec<ResourceList>> {
    let mut lists = vec![(
        "v1".to_string(),
        get(client, "/api/v1")
            .await
            .context("discovering /api/v1")?,
    )];
    let groups = get(client, "/apis").await.context("discovering /apis")?;
    for group in groups["groups"].as_array().into_iter().flatten() {
        let Some(gv) = group["preferredVersion"]["groupVersion"].as_str() else {
            continue;
        };
        match get(client, &format!("/apis/{gv}")).await {
            Ok(list) => lists.push((gv.to_string(), list)),
            // One broken group (an unavailable aggregated API) must not hide the others.
            Err(err) => eprintln!("warning: discovering {gv}: {err:#}"),
        }
    }
    Ok(lists)
}

/// Discovers and resolves `query`, failing as kubectl does for an unknown type.
pub async fn find(client: &kube::Client, query: &str) -> anyhow::Result<Resource> {
    let lists = lists(client).await?;
    match resolve(&lists, query) {
        Some(resource) => Ok(resource),
        None => bail!("the server doesn't have a resource type {query:?}"),
    }
}

async fn get(client: &kube::Client, path: &str) -> anyhow::Result<Value> {
    let request = http::Request::get(path).body(Vec::new())?;
    Ok(client.request(request).await?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lists() -> Vec<ResourceList> {
        vec![
            (
                "v1".into(),
                json!({"resources": [
                    {"name": "pods", "singularName": "pod", "kind": "Pod", "namespaced": true, "shortNames": ["po"]},
                    {"name": "pods/status", "kind": "Pod", "namespaced": true},
                    {"name": "namespaces", "singularName": "namespace", "kind": "Namespace", "namespaced": false, "shortNames": ["ns"]},
                    {"name": "events", "singularName": "event", "kind": "Event", "namespaced": true, "shortNames": ["ev"]}
                ]}),
            ),
            (
                "apps/v1".into(),
                json!({"resources": [
                    {"name": "deployments", "singularName": "deployment", "kind": "Deployment", "namespaced": true, "shortNames": ["deploy"]}
                ]}),
            ),
            (
                "events.k8s.io/v1".into(),
                json!({"resources": [
                    {"name": "events", "singularName": "event", "kind": "Event", "namespaced": true, "shortNames": ["ev"]}
                ]}),
            ),
            (
                "policy.karmada.io/v1alpha1".into(),
                json!({"resources": [
                    {"name": "propagationpolicies", "singularName": "propagationpolicy", "kind": "PropagationPolicy", "namespaced": true, "shortNames": ["pp"]},
                    {"name": "clusterpropagationpolicies", "singularName": "clusterpropagationpolicy", "kind": "ClusterPropagationPolicy", "namespaced": false, "shortNames": ["cpp"]}
                ]}),
            ),
        ]
    }

    #[test]
    fn names_resolve_like_kubectl() {
        let lists = lists();
        // (query, expected "plural.group" or None)
        let table = [
            ("deploy", Some("deployments.apps")),
            ("deployments", Some("deployments.apps")),
            ("Deployment", Some("deployments.apps")),
            ("deployment.apps", Some("deployments.apps")),
            ("deployments.v1.apps", Some("deployments.apps")),
            ("deployments.v2.apps", None),
            ("po", Some("pods")),
            ("pods.v1", Some("pods")),
            ("pods/status", None),
            ("events", Some("events")),
            ("events.events.k8s.io", Some("events.events.k8s.io")),
            ("pp", Some("propagationpolicies.policy.karmada.io")),
            ("cpp", Some("clusterpropagationpolicies.policy.karmada.io")),
            ("widgets", None),
        ];
        for (query, want) in table {
            let got = resolve(&lists, query).map(|r| r.qualified());
            assert_eq!(got.as_deref(), want, "{query}");
        }
        let ns = resolve(&lists, "ns").unwrap();
        assert!(!ns.namespaced);
    }

    #[test]
    fn paths_and_names() {
        let lists = lists();
        let deploy = resolve(&lists, "deploy").unwrap();
        assert_eq!(
            deploy.path(Some("default"), Some("nginx")),
            "/apis/apps/v1/namespaces/default/deployments/nginx"
        );
        assert_eq!(deploy.path(None, None), "/apis/apps/v1/deployments");
        assert_eq!(deploy.gvk_string(), "apps/v1, Kind=Deployment");
        assert_eq!(deploy.kind_qualified(), "deployment.apps");
        let ns = resolve(&lists, "namespace").unwrap();
        assert_eq!(ns.path(Some("default"), Some("x")), "/api/v1/namespaces/x");
        assert_eq!(ns.gvk_string(), "/v1, Kind=Namespace");
        let by_kind = resolve_kind(&lists, "apps/v1", "Deployment").unwrap();
        assert_eq!(by_kind, deploy);
        assert!(resolve_kind(&lists, "apps/v2", "Deployment").is_none());
    }
}
