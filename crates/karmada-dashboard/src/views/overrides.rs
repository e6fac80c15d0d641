//! OverridePolicies and ClusterOverridePolicies: their resource selectors and rules, the workloads they match
//! (bindings whose resource the selectors name), and where each was applied (the Works' applied-overrides
//! annotations, which name the policy per member).

use std::collections::BTreeMap;

use karmada_api::policy::{ANNOTATION_APPLIED_CLUSTER_OVERRIDES, ANNOTATION_APPLIED_OVERRIDES};
use karmada_controllers::names::cluster_of_execution_namespace;
use serde_json::Value;

use crate::api::{self, ApiError, paths};
use crate::html::{esc, table};
use crate::views::policies::selector;
use crate::views::{View, workload_link};

/// Objects read per kind; past it the page says it shows the first ones.
const READ: usize = 1000;

pub async fn render(client: &kube::Client) -> Result<View, ApiError> {
    let policies = api::list_page(client, paths::OVERRIDE_POLICIES, READ, None).await?;
    let cluster_policies =
        api::list_page(client, paths::CLUSTER_OVERRIDE_POLICIES, READ, None).await?;
    let bindings = api::list_page(client, paths::BINDINGS, 2000, None).await?;
    let works = api::list_page(client, paths::WORKS, 2000, None).await?;
    let applied = applied_by_policy(&works.items);
    let rows: Vec<Vec<String>> = policies
        .items
        .iter()
        .chain(cluster_policies.items.iter())
        .map(|policy| row(policy, &bindings.items, &applied))
        .collect();
    let mut content = String::from("<h1>Override policies</h1>");
    if bindings.next.is_some() || works.next.is_some() || policies.next.is_some() {
        content.push_str(&format!(
            "<p class=\"notice\">Read the first {READ} policies and 2000 bindings and Works; matches may be partial.</p>"
        ));
    }
    content.push_str(&table(
        "overrides",
        &[
            "Kind",
            "Policy",
            "Resource selectors",
            "Rules",
            "Matches",
            "Applied on",
        ],
        &rows,
    ));
    Ok(View {
        title: "Overrides".into(),
        content,
        live: Some("/live/overrides".into()),
    })
}

/// Where a policy was applied: (kind, namespace of an OverridePolicy or "", name) → "cluster: Kind ns/name".
pub type Applied = BTreeMap<(String, String, String), Vec<String>>;

/// Reads the applied-overrides annotations of `works`.
pub fn applied_by_policy(works: &[Value]) -> Applied {
    let mut applied = Applied::new();
    for work in works {
        let cluster = cluster_of_execution_namespace(api::text(work, "/metadata/namespace"))
            .unwrap_or("?")
            .to_string();
        let manifest = work
            .pointer("/spec/workload/manifests/0")
            .unwrap_or(&Value::Null);
        let namespace = api::text(manifest, "/metadata/namespace");
        let object = format!(
            "{cluster}: {} {}{}",
            api::text(manifest, "/kind"),
            if namespace.is_empty() {
                String::new()
            } else {
                format!("{namespace}/")
            },
            api::text(manifest, "/metadata/name")
        );
        for (kind, policy_namespace, policy) in applied_to_work(work) {
            applied
                .entry((kind.to_string(), policy_namespace, policy))
                .or_default()
                .push(object.clone());
        }
    }
    applied
}

/// The override policies a Work records as applied: (kind, namespace of an OverridePolicy or "", name).
pub fn applied_to_work(work: &Value) -> Vec<(&'static str, String, String)> {
    let namespace = api::text(work, "/spec/workload/manifests/0/metadata/namespace");
    let mut out = Vec::new();
    for (annotation, kind, policy_namespace) in [
        (ANNOTATION_APPLIED_OVERRIDES, "OverridePolicy", namespace),
        (
            ANNOTATION_APPLIED_CLUSTER_OVERRIDES,
            "ClusterOverridePolicy",
            "",
        ),
    ] {
        let Some(text) = work
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(annotation))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let shadows: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
        for shadow in shadows {
            out.push((
                kind,
                policy_namespace.to_string(),
                api::text(&shadow, "/policyName").to_string(),
            ));
        }
    }
    out
}

/// Whether a resource selector names a binding's resource: `Some(true|false)` from apiVersion, kind,
/// namespace and name; `None` when only the template's labels could tell (a label selector).
pub fn selects(selector: &Value, resource: &Value, policy_namespace: &str) -> Option<bool> {
    let same = |field: &str| {
        let wanted = api::text(selector, field);
        wanted.is_empty() || wanted == api::text(resource, field)
    };
    // A namespaced policy selects only in its own namespace.
    let in_namespace =
        policy_namespace.is_empty() || api::text(resource, "/namespace") == policy_namespace;
    let named = same("/apiVersion") && same("/kind") && same("/namespace") && same("/name");
    if !(named && in_namespace) {
        return Some(false);
    }
    let labels = selector
        .get("labelSelector")
        .is_some_and(|l| !l.is_null() && l != &serde_json::json!({}));
    if labels && api::text(selector, "/name").is_empty() {
        None
    } else {
        Some(true)
    }
}

/// The rules as `target: overriders`.
pub fn rules(policy: &Value) -> Vec<String> {
    policy
        .pointer("/spec/overrideRules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|rule| {
            let names: Vec<String> = rule
                .pointer("/targetCluster/clusterNames")
                .and_then(Value::as_array)
                .map(|n| {
                    n.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let target = if names.is_empty() {
                "all clusters".to_string()
            } else {
                names.join(",")
            };
            let overriders: Vec<String> = rule
                .get("overriders")
                .and_then(Value::as_object)
                .map(|o| {
                    o.iter()
                        .map(|(kind, list)| {
                            format!("{kind}×{}", list.as_array().map_or(1, Vec::len))
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("{target}: {}", overriders.join(", "))
        })
        .collect()
}

fn row(policy: &Value, bindings: &[Value], applied: &Applied) -> Vec<String> {
    let namespace = api::text(policy, "/metadata/namespace");
    let name = api::text(policy, "/metadata/name");
    let kind = if namespace.is_empty() {
        "ClusterOverridePolicy"
    } else {
        "OverridePolicy"
    };
    let selectors: Vec<Value> = policy
        .pointer("/spec/resourceSelectors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let applied_here = applied
        .get(&(kind.to_string(), namespace.to_string(), name.to_string()))
        .cloned()
        .unwrap_or_default();
    let matches: Vec<String> = bindings
        .iter()
        .filter(|b| {
            let resource = &b["spec"]["resource"];
            let by_selector = selectors
                .iter()
                .map(|s| selects(s, resource, namespace))
                .collect::<Vec<_>>();
            // No selectors: every resource (of the namespace).
            if selectors.is_empty() {
                return namespace.is_empty() || api::text(resource, "/namespace") == namespace;
            }
            by_selector.contains(&Some(true))
                || (by_selector.contains(&None) && applied_to(&applied_here, resource))
        })
        .map(workload_link)
        .collect();
    let shown = if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    };
    vec![
        esc(kind),
        esc(&shown),
        format!(
            "<span class=\"wrap\">{}</span>",
            esc(&selectors
                .iter()
                .map(selector)
                .collect::<Vec<_>>()
                .join("; "))
        ),
        format!(
            "<span class=\"wrap\">{}</span>",
            esc(&rules(policy).join("; "))
        ),
        matches.join("<br>"),
        applied_here
            .iter()
            .map(|a| format!("<span class=\"applied\">{}</span>", esc(a)))
            .collect::<Vec<_>>()
            .join("<br>"),
    ]
}

/// Whether a Work shows the policy applied to `resource` (for selectors that only labels decide).
fn applied_to(applied: &[String], resource: &Value) -> bool {
    let namespace = api::text(resource, "/namespace");
    let object = format!(
        " {} {}{}",
        api::text(resource, "/kind"),
        if namespace.is_empty() {
            String::new()
        } else {
            format!("{namespace}/")
        },
        api::text(resource, "/name")
    );
    applied.iter().any(|a| a.ends_with(&object))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_match_by_name_or_defer_to_labels() {
        let web = json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"});
        let by_name = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
        let other = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"});
        let by_labels = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "labelSelector": {"matchLabels": {"app": "web"}}});
        assert_eq!(selects(&by_name, &web, "default"), Some(true));
        assert_eq!(selects(&by_name, &web, "prod"), Some(false));
        assert_eq!(selects(&other, &web, ""), Some(false));
        assert_eq!(selects(&by_labels, &web, "default"), None);
    }

    #[test]
    fn works_tell_where_each_policy_applied() {
        let work = json!({"metadata": {"namespace": "karmada-es-member2", "annotations": {
            "policy.karmada.io/applied-overrides": "[{\"policyName\":\"web-image\",\"overriders\":{}}]",
            "policy.karmada.io/applied-cluster-overrides": "[{\"policyName\":\"everywhere\",\"overriders\":{}}]"}},
            "spec": {"workload": {"manifests": [{"kind": "Deployment",
                "metadata": {"namespace": "default", "name": "web"}}]}}});
        assert_eq!(
            applied_to_work(&work),
            [
                (
                    "OverridePolicy",
                    "default".to_string(),
                    "web-image".to_string()
                ),
                (
                    "ClusterOverridePolicy",
                    String::new(),
                    "everywhere".to_string()
                )
            ]
        );
        let applied = applied_by_policy(&[work]);
        let key = |k: &str, ns: &str, n: &str| (k.to_string(), ns.to_string(), n.to_string());
        assert_eq!(
            applied[&key("OverridePolicy", "default", "web-image")],
            ["member2: Deployment default/web"]
        );
        assert_eq!(
            applied[&key("ClusterOverridePolicy", "", "everywhere")],
            ["member2: Deployment default/web"]
        );
        let policy = json!({"kind": "OverridePolicy",
            "metadata": {"namespace": "default", "name": "web-image"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                        "labelSelector": {"matchLabels": {"app": "web"}}}],
                     "overrideRules": [{"targetCluster": {"clusterNames": ["member2"]},
                        "overriders": {"imageOverrider": [{"component": "Tag", "operator": "replace", "value": "1.28"}]}}]}});
        let binding = json!({"metadata": {"namespace": "default", "name": "web-deployment"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"}}});
        let cells = row(&policy, &[binding], &applied);
        assert_eq!(
            cells[3],
            "<span class=\"wrap\">member2: imageOverrider×1</span>"
        );
        assert!(cells[4].contains("Deployment/web"), "{}", cells[4]);
        assert!(
            cells[5].contains("member2: Deployment default/web"),
            "{}",
            cells[5]
        );
    }
}
