//! PropagationPolicies and ClusterPropagationPolicies with their resource selectors and the workloads they
//! claim (the bindings Karmada marked with the policy's permanent id or name).

use std::fmt::Write;

use serde_json::Value;

use crate::api::{self, ApiError, paths};
use crate::html::{esc, query_value, table};
use crate::views::{View, workload_link};

const PAGE_SIZE: usize = 100;
/// Bindings read to find the claims; past it the page says the claims are partial.
const BINDINGS_READ: usize = 2000;

pub async fn render(client: &kube::Client, continue_token: Option<&str>) -> Result<View, ApiError> {
    let policies = api::list_page(client, paths::POLICIES, PAGE_SIZE, continue_token).await?;
    let cluster_policies = api::list_page(client, paths::CLUSTER_POLICIES, PAGE_SIZE, None).await?;
    let bindings = api::list_page(client, paths::BINDINGS, BINDINGS_READ, None).await?;
    let mut content = String::from("<h1>Policies</h1>");
    if bindings.next.is_some() {
        let _ = write!(
            content,
            "<p class=\"notice\">Claims are read from the first {BINDINGS_READ} bindings.</p>"
        );
    }
    let rows: Vec<Vec<String>> = policies
        .items
        .iter()
        .chain(cluster_policies.items.iter())
        .map(|policy| row(policy, &bindings.items))
        .collect();
    content.push_str(&table(
        "policies",
        &["Kind", "Policy", "Resource selectors", "Claims", ""],
        &rows,
    ));
    if let Some(next) = &policies.next {
        let _ = write!(
            content,
            "<p class=\"pager\"><a id=\"next-page\" class=\"button\" href=\"/policies?continue={}\">Next page</a></p>",
            query_value(next)
        );
    }
    Ok(View {
        title: "Policies".into(),
        content,
        live: Some("/live/policies".into()),
    })
}

fn row(policy: &Value, bindings: &[Value]) -> Vec<String> {
    let namespace = api::text(policy, "/metadata/namespace");
    let name = api::text(policy, "/metadata/name");
    let kind = if namespace.is_empty() {
        "ClusterPropagationPolicy"
    } else {
        "PropagationPolicy"
    };
    let selectors: Vec<String> = policy
        .pointer("/spec/resourceSelectors")
        .and_then(Value::as_array)
        .map(|s| s.iter().map(selector).collect())
        .unwrap_or_default();
    let claims: Vec<String> = bindings
        .iter()
        .filter(|b| claims(policy, b))
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
        format!("<span class=\"wrap\">{}</span>", esc(&selectors.join("; "))),
        claims.join("<br>"),
        format!(
            "<a class=\"action\" id=\"delete-{id}\" href=\"/policies/delete?namespace={ns}&amp;name={n}\">delete</a>",
            id = esc(&shown.replace('/', "-")),
            ns = query_value(namespace),
            n = query_value(name)
        ),
    ]
}

/// A resource selector as `apiVersion Kind namespace/name` with its label selector.
pub fn selector(s: &Value) -> String {
    let mut out = format!("{} {}", api::text(s, "/apiVersion"), api::text(s, "/kind"));
    let namespace = api::text(s, "/namespace");
    let name = api::text(s, "/name");
    match (namespace.is_empty(), name.is_empty()) {
        (false, false) => out.push_str(&format!(" {namespace}/{name}")),
        (false, true) => out.push_str(&format!(" in {namespace}")),
        (true, false) => out.push_str(&format!(" {name}")),
        (true, true) => {}
    }
    if let Some(labels) = s
        .pointer("/labelSelector/matchLabels")
        .and_then(Value::as_object)
    {
        let pairs: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        out.push_str(&format!(" [{}]", pairs.join(",")));
    }
    out
}

/// Whether `binding` was claimed by `policy`: the same permanent id, or the policy's name in the
/// annotations Karmada sets.
pub fn claims(policy: &Value, binding: &Value) -> bool {
    let namespace = api::text(policy, "/metadata/namespace");
    let name = api::text(policy, "/metadata/name");
    let (id_label, name_key) = if namespace.is_empty() {
        (
            "/metadata/labels/clusterpropagationpolicy.karmada.io~1permanent-id",
            "clusterpropagationpolicy.karmada.io/name",
        )
    } else {
        (
            "/metadata/labels/propagationpolicy.karmada.io~1permanent-id",
            "propagationpolicy.karmada.io/name",
        )
    };
    let policy_id = api::text(policy, id_label);
    if !policy_id.is_empty() && api::text(binding, id_label) == policy_id {
        return true;
    }
    let annotations = &binding["metadata"]["annotations"];
    let named = annotations[name_key] == name;
    let same_namespace = namespace.is_empty()
        || annotations["propagationpolicy.karmada.io/namespace"] == namespace
        || api::text(binding, "/metadata/namespace") == namespace;
    named && same_namespace
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_follow_permanent_id_or_annotations() {
        let policy = json!({"metadata": {"namespace": "default", "name": "p",
            "labels": {"propagationpolicy.karmada.io/permanent-id": "id1"}}});
        let by_id = json!({"metadata": {"namespace": "default", "labels": {"propagationpolicy.karmada.io/permanent-id": "id1"}}});
        let by_name = json!({"metadata": {"namespace": "default", "annotations": {
            "propagationpolicy.karmada.io/name": "p", "propagationpolicy.karmada.io/namespace": "default"}}});
        let other = json!({"metadata": {"namespace": "other", "annotations": {
            "propagationpolicy.karmada.io/name": "p", "propagationpolicy.karmada.io/namespace": "other"}}});
        assert!(claims(&policy, &by_id));
        assert!(claims(&policy, &by_name));
        assert!(!claims(&policy, &other));
    }

    #[test]
    fn selectors_read_as_text() {
        let s = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "labelSelector": {"matchLabels": {"app": "web"}}});
        assert_eq!(selector(&s), "apps/v1 Deployment web [app=web]");
    }
}
