//! The actions: cordon/uncordon and taint/untaint a cluster, promote a member's object, delete a policy. Each is
//! a confirmation page whose form POSTs with the session's CSRF token; the change is made with the user's
//! client, so RBAC refuses it as it would refuse kubectl. Taints go through the same code as `karmadactl
//! taint|cordon` ([`taint_edit`]) and promote writes what `karmadactl promote` writes ([`promote`]).

use karmada_controllers::cluster::taint_edit::{self, TaintChange, TaintEditError};
use karmada_controllers::promote::{self, Selected, Targets};
use serde_json::{Value, json};

use crate::api::{self, ApiError, paths};
use crate::html::{esc, query_value};
use crate::views::workload::served;

impl From<TaintEditError> for ApiError {
    fn from(error: TaintEditError) -> Self {
        match error {
            TaintEditError::Api { source, .. } => ApiError::from(source),
            TaintEditError::ClusterNotFound(_) => ApiError::NotFound(error.to_string()),
            other => ApiError::Invalid(other.to_string()),
        }
    }
}

/// The confirmation form.
pub fn confirm(
    action_url: &str,
    question: &str,
    fields: &[(&str, &str)],
    csrf: &str,
    button: &str,
) -> String {
    let hidden: String = fields
        .iter()
        .map(|(k, v)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                esc(k),
                esc(v)
            )
        })
        .collect();
    format!(
        "<h1>Confirm</h1><p id=\"question\">{}</p><form method=\"post\" action=\"{}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">{hidden}\
         <button type=\"submit\" class=\"danger\" id=\"confirm\">{}</button> <a href=\"/\">Cancel</a></form>",
        esc(question),
        esc(action_url),
        esc(csrf),
        esc(button)
    )
}

/// The outcome page.
pub fn outcome(result: &Result<String, ApiError>) -> String {
    match result {
        Ok(message) => format!(
            "<p class=\"notice\" id=\"action-result\">{}</p><p><a href=\"/\">Back</a></p>",
            esc(message)
        ),
        Err(error) => format!(
            "<p class=\"error\" id=\"action-error\">{}</p><p><a href=\"/\">Back</a></p>",
            esc(&error.to_string())
        ),
    }
}

/// Cordons or uncordons `name`.
pub async fn cordon(client: &kube::Client, name: &str, cordon: bool) -> Result<String, ApiError> {
    let verb = if cordon { "cordoned" } else { "uncordoned" };
    let changed = taint_edit::update_taints(client, name, false, |taints| {
        Ok(taint_edit::cordoned(taints, cordon))
    })
    .await?;
    let already = if changed { "" } else { "already " };
    Ok(format!("cluster/{name} {already}{verb}"))
}

/// The taint page of a cluster: its taints, each with a remove link, and a form for a new one. Both lead to
/// the confirmation ([`taint_question`]).
pub fn taint_form(cluster: &Value) -> String {
    let name = api::text(cluster, "/metadata/name");
    let mut rows = Vec::new();
    for taint in cluster
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = api::text(taint, "/key");
        let effect = api::text(taint, "/effect");
        let shown = crate::views::overview::taint_text(taint);
        let removal = format!("{key}:{effect}-");
        rows.push(vec![
            esc(&shown),
            esc(api::text(taint, "/timeAdded")),
            format!(
                "<a class=\"action\" href=\"/clusters/{}/taint?spec={}\">remove</a>",
                query_value(name),
                query_value(&removal)
            ),
        ]);
    }
    format!(
        "<h1>Taints of cluster {n}</h1>{table}<h2>Add a taint</h2>\
         <form method=\"get\" action=\"/clusters/{q}/taint\" class=\"stack\">\
         <label for=\"spec\">Taint (KEY[=VALUE]:EFFECT to add, KEY[:EFFECT]- to remove)</label>\
         <input id=\"spec\" name=\"spec\" required placeholder=\"dedicated=gpu:NoSchedule\">\
         <label><input type=\"checkbox\" name=\"overwrite\" value=\"1\" id=\"overwrite\"> overwrite a taint with the \
         same key and effect</label>\
         <button type=\"submit\" id=\"taint-next\">Continue</button></form>",
        n = esc(name),
        q = query_value(name),
        table = crate::html::table("taints", &["Taint", "Added", ""], &rows),
    )
}

/// The question confirming `change` on `cluster`, or why the spec is refused (with the accepted form).
pub fn taint_question(cluster: &str, spec: &str) -> Result<String, ApiError> {
    Ok(match taint_edit::parse_taint(spec.trim())? {
        TaintChange::Remove { .. } => format!(
            "Remove the taint {} from cluster {cluster}? Workloads it kept away may be scheduled there again.",
            spec.trim().trim_end_matches('-')
        ),
        TaintChange::Add { effect, .. } => format!(
            "Taint cluster {cluster} with {}? {}",
            spec.trim(),
            match effect.as_str() {
                "NoExecute" => {
                    "Workloads that do not tolerate it are evicted (when taint eviction is on) and none are \
                     scheduled there."
                }
                "NoSchedule" => "New workloads that do not tolerate it are not scheduled there.",
                _ => "The scheduler avoids the cluster for workloads that do not tolerate it.",
            }
        ),
    })
}

/// Adds or removes one taint on `name`, as `karmadactl taint` does.
pub async fn taint(
    client: &kube::Client,
    name: &str,
    spec: &str,
    overwrite: bool,
    now: jiff::Timestamp,
) -> Result<String, ApiError> {
    let change = taint_edit::parse_taint(spec.trim())?;
    let removal = change.is_removal();
    let now = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let changes = [change];
    let changed = taint_edit::update_taints(client, name, false, |taints| {
        taint_edit::apply_changes(taints, &changes, overwrite, &now)
    })
    .await?;
    Ok(match (changed, removal) {
        (false, _) => format!("cluster/{name} modified (no change)"),
        (true, true) => format!("cluster/{name} untainted"),
        (true, false) => format!("cluster/{name} tainted"),
    })
}

/// What to promote: an object of a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromoteRequest {
    pub cluster: String,
    pub api_version: String,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
}

impl PromoteRequest {
    /// The request from form fields; every field but the namespace is required.
    pub fn from_fields(field: impl Fn(&str) -> String) -> Result<PromoteRequest, ApiError> {
        let request = PromoteRequest {
            cluster: field("cluster").trim().to_string(),
            api_version: field("apiVersion").trim().to_string(),
            kind: field("kind").trim().to_string(),
            namespace: field("namespace").trim().to_string(),
            name: field("name").trim().to_string(),
        };
        let missing: Vec<&str> = [
            ("cluster", &request.cluster),
            ("apiVersion", &request.api_version),
            ("kind", &request.kind),
            ("name", &request.name),
        ]
        .iter()
        .filter(|(_, v)| v.is_empty())
        .map(|(k, _)| *k)
        .collect();
        if missing.is_empty() {
            Ok(request)
        } else {
            Err(ApiError::Invalid(format!(
                "promote needs {}: e.g. cluster member1, apiVersion apps/v1, kind Deployment, namespace default, \
                 name nginx",
                missing.join(", ")
            )))
        }
    }

    pub fn fields(&self) -> [(&'static str, &str); 5] {
        [
            ("cluster", &self.cluster),
            ("apiVersion", &self.api_version),
            ("kind", &self.kind),
            ("namespace", &self.namespace),
            ("name", &self.name),
        ]
    }

    /// Go's GroupVersionKind string, part of the promote policy's name.
    fn gvk(&self) -> String {
        let (group, version) = self
            .api_version
            .split_once('/')
            .unwrap_or(("", &self.api_version));
        format!("{group}/{version}, Kind={}", self.kind)
    }

    fn shown(&self) -> String {
        if self.namespace.is_empty() {
            format!("{} {}", self.kind, self.name)
        } else {
            format!("{} {}/{}", self.kind, self.namespace, self.name)
        }
    }

    /// The policy promote creates (its namespace is cleared for cluster-scoped objects).
    pub fn policy(&self, namespaced: bool) -> Value {
        promote::propagation_policy(
            Selected {
                api_version: &self.api_version,
                kind: &self.kind,
                name: &self.name,
                namespace: if namespaced { &self.namespace } else { "" },
                gvk: &self.gvk(),
            },
            &Targets::Clusters(vec![self.cluster.clone()]),
            true,
        )
    }

    pub fn question(&self) -> String {
        let policy = self.policy(!self.namespace.is_empty());
        format!(
            "Promote {} from cluster {}? It becomes a resource template in Karmada, and {} {} propagates it \
             back to {} with conflictResolution Overwrite, so the running object is adopted.",
            self.shown(),
            self.cluster,
            api::text(&policy, "/kind"),
            api::text(&policy, "/metadata/name"),
            self.cluster
        )
    }
}

/// The promote form.
pub fn promote_form(clusters: &[String], request: &PromoteRequest) -> String {
    let options: String = clusters
        .iter()
        .map(|c| {
            let selected = if *c == request.cluster {
                " selected"
            } else {
                ""
            };
            format!("<option{selected}>{}</option>", esc(c))
        })
        .collect();
    let input = |id: &str, label: &str, value: &str, placeholder: &str| {
        format!(
            "<label for=\"{id}\">{label}</label><input id=\"{id}\" name=\"{id}\" value=\"{}\" placeholder=\"{}\">",
            esc(value),
            esc(placeholder)
        )
    };
    format!(
        "<h1>Promote</h1><p>Take an object that already runs in a member cluster under Karmada's management, \
         as <code>karmadactl promote</code> does.</p>\
         <form method=\"get\" action=\"/promote\" class=\"stack\">\
         <label for=\"cluster\">Cluster</label><select id=\"cluster\" name=\"cluster\">{options}</select>{}{}{}{}\
         <input type=\"hidden\" name=\"confirm\" value=\"1\">\
         <button type=\"submit\" id=\"promote-next\">Continue</button></form>",
        input("apiVersion", "API version", &request.api_version, "apps/v1"),
        input("kind", "Kind", &request.kind, "Deployment"),
        input(
            "namespace",
            "Namespace (empty for cluster-scoped)",
            &request.namespace,
            "default"
        ),
        input("name", "Name", &request.name, "nginx"),
    )
}

/// Promotes the member's object: read through the cluster proxy as the user, then the resource template and
/// its policy created as the user. A policy that cannot be created takes the template back.
pub async fn promote(client: &kube::Client, request: &PromoteRequest) -> Result<String, ApiError> {
    let cluster = &request.cluster;
    let member = paths::cluster_proxy(cluster, "");
    let Some(in_member) = served(client, &member, &request.api_version, &request.kind).await?
    else {
        return Err(ApiError::NotFound(format!(
            "cluster {cluster} does not serve {} {}",
            request.api_version, request.kind
        )));
    };
    let namespace = if in_member.namespaced {
        if request.namespace.is_empty() {
            "default"
        } else {
            &request.namespace
        }
    } else {
        ""
    };
    let request = PromoteRequest {
        namespace: namespace.to_string(),
        ..request.clone()
    };
    let Some(object) = api::get_opt(client, &in_member.object(namespace, &request.name)).await?
    else {
        return Err(ApiError::NotFound(format!(
            "{} not found in cluster {cluster}",
            request.shown()
        )));
    };
    let Some(in_karmada) = served(client, "", &request.api_version, &request.kind).await? else {
        return Err(ApiError::Invalid(format!(
            "karmada does not serve {} {}; install its CRD in the control plane first",
            request.api_version, request.kind
        )));
    };
    let template_path = in_karmada.object(namespace, &request.name);
    if api::get_opt(client, &template_path).await?.is_some() {
        return Err(ApiError::Invalid(format!(
            "{} already exists in karmada; nothing to promote",
            request.shown()
        )));
    }
    if in_karmada.namespaced {
        ensure_namespace(client, namespace).await?;
    }
    let template = promote::template_from_member(&object);
    let collection = template_path
        .rsplit_once('/')
        .map(|(c, _)| c.to_string())
        .unwrap_or_default();
    api::post(client, &collection, &template).await?;
    let policy = request.policy(in_karmada.namespaced);
    let policy_kind = api::text(&policy, "/kind").to_string();
    let policy_name = api::text(&policy, "/metadata/name").to_string();
    let policies = if in_karmada.namespaced {
        format!(
            "/apis/policy.karmada.io/v1alpha1/namespaces/{}/propagationpolicies",
            paths::segment(namespace)
        )
    } else {
        paths::CLUSTER_POLICIES.to_string()
    };
    match api::post(client, &policies, &policy).await {
        Ok(_) => Ok(format!(
            "{} promoted from {cluster}: resource template and {policy_kind} {policy_name} created",
            request.shown()
        )),
        Err(ApiError::Other(message)) if message.contains("(409 ") => Ok(format!(
            "{} promoted from {cluster}: resource template created; {policy_kind} {policy_name} already existed \
             and was kept",
            request.shown()
        )),
        Err(error) => {
            // Without its policy the template would sit unpropagated.
            let _ = api::delete(client, &template_path).await;
            Err(error)
        }
    }
}

async fn ensure_namespace(client: &kube::Client, namespace: &str) -> Result<(), ApiError> {
    let path = format!("{}/{}", paths::NAMESPACES, paths::segment(namespace));
    if api::get_opt(client, &path).await?.is_some() {
        return Ok(());
    }
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    match api::post(client, paths::NAMESPACES, &body).await {
        Ok(_) => Ok(()),
        Err(ApiError::Other(message)) if message.contains("(409 ") => Ok(()),
        Err(error) => Err(error),
    }
}

/// Deletes a PropagationPolicy (`namespace` set) or a ClusterPropagationPolicy.
pub async fn delete_policy(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<String, ApiError> {
    if namespace.is_empty() {
        api::delete(client, &paths::cluster_policy(name)).await?;
        Ok(format!("clusterpropagationpolicy/{name} deleted"))
    } else {
        api::delete(client, &paths::policy(namespace, name)).await?;
        Ok(format!("propagationpolicy/{name} deleted from {namespace}"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_carries_csrf_and_escapes() {
        let html = confirm(
            "/x",
            "Cordon <m1>?",
            &[("action", "cordon")],
            "tok",
            "Cordon",
        );
        assert!(html.contains("name=\"csrf\" value=\"tok\""), "{html}");
        assert!(html.contains("Cordon &lt;m1&gt;?"), "{html}");
        let denied = outcome(&Err(ApiError::Forbidden(
            "clusters \"m1\" is forbidden".into(),
        )));
        assert!(
            denied.contains("action-error") && denied.contains("&quot;m1&quot;"),
            "{denied}"
        );
    }

    #[test]
    fn taint_questions_name_the_change_or_the_accepted_form() {
        let add = taint_question("m1", "dedicated=gpu:NoSchedule").unwrap();
        assert!(
            add.starts_with("Taint cluster m1 with dedicated=gpu:NoSchedule?"),
            "{add}"
        );
        let remove = taint_question("m1", "dedicated:NoSchedule-").unwrap();
        assert!(
            remove.starts_with("Remove the taint dedicated:NoSchedule from cluster m1?"),
            "{remove}"
        );
        let bad = taint_question("m1", "dedicated=gpu").unwrap_err();
        assert!(
            matches!(&bad, ApiError::Invalid(m) if m.contains("KEY[=VALUE]:EFFECT")),
            "{bad}"
        );
    }

    #[test]
    fn taint_form_offers_removal_of_each_taint() {
        let cluster = json!({"metadata": {"name": "m 1"}, "spec": {"taints": [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}});
        let html = taint_form(&cluster);
        assert!(
            html.contains("href=\"/clusters/m+1/taint?spec=dedicated%3ANoSchedule-\""),
            "{html}"
        );
        assert!(html.contains("dedicated=gpu:NoSchedule"), "{html}");
    }

    #[test]
    fn promote_requests_need_their_fields_and_name_karmadas_policy() {
        let fields = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default()
            }
        };
        let missing = PromoteRequest::from_fields(fields(&[("cluster", "m1")])).unwrap_err();
        assert!(
            missing.to_string().contains("apiVersion, kind, name"),
            "{missing}"
        );
        let request = PromoteRequest::from_fields(fields(&[
            ("cluster", "member1"),
            ("apiVersion", "apps/v1"),
            ("kind", "Deployment"),
            ("namespace", "default"),
            ("name", "nginx"),
        ]))
        .unwrap();
        let policy = request.policy(true);
        // The name karmadactl promote gives the same object.
        assert_eq!(
            policy["metadata"]["name"],
            karmada_controllers::names::promote_policy_name(
                "default",
                "apps/v1, Kind=Deployment",
                "nginx"
            )
        );
        assert_eq!(policy["spec"]["conflictResolution"], "Overwrite");
        assert!(
            request
                .question()
                .contains("Promote Deployment default/nginx from cluster member1?"),
            "{}",
            request.question()
        );
        let core = PromoteRequest {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            ..request
        };
        assert_eq!(core.gvk(), "/v1, Kind=ConfigMap");
    }
}
