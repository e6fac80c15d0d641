//! The actions: cordon/uncordon a cluster (the unschedulable taint, as `karmadactl cordon` sets it) and
//! delete a policy. Each is a confirmation page whose form POSTs with the session's CSRF token; the change
//! is made with the user's client, so RBAC refuses it as it would refuse kubectl.

use serde_json::{Value, json};

use crate::api::{self, ApiError, paths};
use crate::html::esc;

pub const TAINT_UNSCHEDULABLE: &str = "cluster.karmada.io/unschedulable";
/// Tries of a read-modify-write that meets concurrent writers (409 Conflict).
const CONFLICT_TRIES: usize = 3;

fn is_cordon_taint(taint: &Value) -> bool {
    taint["key"] == TAINT_UNSCHEDULABLE && taint["effect"] == "NoSchedule"
}

/// The taints with (cordon) or without (uncordon) the unschedulable taint; `None` when nothing changes.
pub fn cordoned(taints: &[Value], cordon: bool) -> Option<Vec<Value>> {
    let present = taints.iter().any(is_cordon_taint);
    match (cordon, present) {
        (true, true) | (false, false) => None,
        (true, false) => {
            let mut out = taints.to_vec();
            out.push(json!({"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"}));
            Some(out)
        }
        (false, true) => Some(
            taints
                .iter()
                .filter(|t| !is_cordon_taint(t))
                .cloned()
                .collect(),
        ),
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

/// Cordons or uncordons `name`: a read, then a write carrying the read's resourceVersion.
pub async fn cordon(client: &kube::Client, name: &str, cordon: bool) -> Result<String, ApiError> {
    let verb = if cordon { "cordoned" } else { "uncordoned" };
    let path = paths::cluster(name);
    let mut last = None;
    for _ in 0..CONFLICT_TRIES {
        let mut cluster = api::get(client, &path).await?;
        let taints = cluster
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(taints) = cordoned(&taints, cordon) else {
            return Ok(format!("cluster/{name} already {verb}"));
        };
        cluster["spec"]["taints"] = Value::Array(taints);
        match api::put(client, &path, &cluster).await {
            Ok(_) => return Ok(format!("cluster/{name} {verb}")),
            Err(ApiError::Other(message)) if message.contains("(409 ") => last = Some(message),
            Err(other) => return Err(other),
        }
    }
    Err(ApiError::Other(last.unwrap_or_default()))
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
    fn cordon_adds_once_and_uncordon_keeps_other_taints() {
        let other = json!({"key": "x", "effect": "NoExecute"});
        let once = cordoned(std::slice::from_ref(&other), true).unwrap();
        assert_eq!(once.len(), 2);
        assert_eq!(cordoned(&once, true), None);
        assert_eq!(cordoned(&once, false), Some(vec![other.clone()]));
        assert_eq!(cordoned(&[other], false), None);
    }

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
}
