//! A workload's page, addressed by its ResourceBinding: the template, the policy Karmada matched, the
//! per-cluster placement and aggregated status, the scheduler's explanation, events, and the Works.
//! When the binding or the template is gone the page says so (it stays open and live).

use std::fmt::Write;

use serde_json::Value;

use crate::api::{self, ApiError, paths};
use crate::html::{esc, query_value, table};
use crate::views::{View, explanation};

/// The binding label carrying its permanent id, which its Works carry too.
pub const LABEL_BINDING_ID: &str = "resourcebinding.karmada.io/permanent-id";

pub async fn render(client: &kube::Client, namespace: &str, name: &str) -> Result<View, ApiError> {
    let live = |binding_id: &str| {
        Some(format!(
            "/live/workload?namespace={}&name={}&binding={}",
            query_value(namespace),
            query_value(name),
            query_value(binding_id)
        ))
    };
    let title = format!("{namespace}/{name}");
    let Some(binding) = api::get_opt(client, &paths::binding(namespace, name)).await? else {
        return Ok(View {
            title,
            content: gone(&format!("ResourceBinding {namespace}/{name}")),
            live: live(""),
        });
    };
    let live = live(binding_id(&binding));
    let resource = &binding["spec"]["resource"];
    let kind = api::text(resource, "/kind");
    let template_name = api::text(resource, "/name");
    let template_path = object_path(
        client,
        api::text(resource, "/apiVersion"),
        kind,
        api::text(resource, "/namespace"),
        template_name,
    )
    .await?;
    let template = match &template_path {
        Some(path) => api::get_opt(client, path).await?,
        None => None,
    };
    let mut content = format!(
        "<h1>{} {}/{}</h1>",
        esc(kind),
        esc(namespace),
        esc(template_name)
    );
    match &template {
        None => content.push_str(&gone(&format!("{kind} {namespace}/{template_name}"))),
        Some(template) => {
            content.push_str("<h2>Template</h2>");
            content.push_str(&template_summary(template));
            content.push_str("<h2>Matched policy</h2>");
            content.push_str(&karmada_marks(template, &binding));
        }
    }
    content.push_str("<h2>Placement</h2>");
    content.push_str(&placement(&binding));
    content.push_str("<h2>Scheduler's explanation</h2>");
    match binding
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(karmada_scheduler::explain::ANNOTATION_EXPLANATION))
        .and_then(Value::as_str)
    {
        Some(annotation) => match explanation::parse(annotation) {
            Ok(parsed) => content.push_str(&explanation::render(&parsed)),
            Err(why) => {
                let _ = write!(content, "<p class=\"error\">{}</p>", esc(&why));
            }
        },
        None => content.push_str("<p class=\"muted\">not scheduled yet</p>"),
    }
    content.push_str("<h2>Events</h2>");
    content.push_str(&events(client, namespace, &[template_name, name]).await?);
    content.push_str("<h2>Works</h2>");
    content.push_str(&works(client, &binding).await?);
    Ok(View {
        title,
        content,
        live,
    })
}

fn gone(what: &str) -> String {
    format!(
        "<p class=\"error\" id=\"gone\">{} no longer exists: it was deleted.</p>",
        esc(what)
    )
}

/// A kind as a server serves it: the API base path, its plural, and whether it is namespaced.
pub struct Served {
    pub base: String,
    pub plural: String,
    pub namespaced: bool,
}

impl Served {
    /// The path of one object (`namespace` ignored for cluster-scoped kinds).
    pub fn object(&self, namespace: &str, name: &str) -> String {
        if self.namespaced && !namespace.is_empty() {
            format!(
                "{}/namespaces/{}/{}/{}",
                self.base,
                paths::segment(namespace),
                self.plural,
                paths::segment(name)
            )
        } else {
            format!("{}/{}/{}", self.base, self.plural, paths::segment(name))
        }
    }
}

/// How the server under `prefix` ("" for the control plane, a cluster proxy for a member) serves `kind` of
/// `api_version` (through discovery); `None` if it does not.
pub async fn served(
    client: &kube::Client,
    prefix: &str,
    api_version: &str,
    kind: &str,
) -> Result<Option<Served>, ApiError> {
    let base = if api_version.contains('/') {
        format!("{prefix}/apis/{api_version}")
    } else {
        format!("{prefix}/api/{api_version}")
    };
    let Some(discovery) = api::get_opt(client, &base).await? else {
        return Ok(None);
    };
    let found = discovery["resources"].as_array().and_then(|resources| {
        resources
            .iter()
            .find(|r| r["kind"] == kind && !api::text(r, "/name").contains('/'))
            .map(|r| (api::text(r, "/name").to_string(), r["namespaced"] == true))
    });
    Ok(found.map(|(plural, namespaced)| Served {
        base,
        plural,
        namespaced,
    }))
}

/// The API path of an object from its apiVersion and kind (through discovery), `None` if the kind is not
/// served.
pub async fn object_path(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<String>, ApiError> {
    Ok(served(client, "", api_version, kind)
        .await?
        .map(|served| served.object(namespace, name)))
}

fn template_summary(template: &Value) -> String {
    let images: Vec<&str> = template
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map(|containers| containers.iter().map(|c| api::text(c, "/image")).collect())
        .unwrap_or_default();
    let replicas = template
        .pointer("/spec/replicas")
        .map(Value::to_string)
        .unwrap_or_default();
    format!(
        "<dl id=\"template\"><dt>Replicas</dt><dd>{}</dd><dt>Images</dt><dd>{}</dd><dt>Generation</dt><dd>{}</dd>\
         <dt>Created</dt><dd>{}</dd></dl>",
        esc(&replicas),
        esc(&images.join(", ")),
        esc(&template
            .pointer("/metadata/generation")
            .map(Value::to_string)
            .unwrap_or_default()),
        esc(api::text(template, "/metadata/creationTimestamp")),
    )
}

/// The labels and annotations Karmada puts on the template and binding naming the matched policy and the
/// applied overrides.
fn karmada_marks(template: &Value, binding: &Value) -> String {
    let mut rows = Vec::new();
    for (object, which) in [(template, "template"), (binding, "binding")] {
        for field in ["labels", "annotations"] {
            if let Some(map) = object
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_object)
            {
                for (key, value) in map {
                    let relevant =
                        key.contains("policy.karmada.io") || key.ends_with("applied-overrides");
                    if relevant {
                        let value = value.as_str().unwrap_or("");
                        rows.push(vec![
                            esc(which),
                            esc(key),
                            format!("<span class=\"wrap\">{}</span>", esc(value)),
                        ]);
                    }
                }
            }
        }
    }
    table("policy", &["On", "Key", "Value"], &rows)
}

/// spec.clusters joined with status.aggregatedStatus, plus the binding's conditions.
fn placement(binding: &Value) -> String {
    let statuses = binding
        .pointer("/status/aggregatedStatus")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = crate::views::overview::targets(binding)
        .into_iter()
        .map(|(cluster, replicas)| {
            let status = statuses
                .iter()
                .find(|s| s["clusterName"] == cluster.as_str());
            let applied = status
                .and_then(|s| s["applied"].as_bool())
                .map(|a| a.to_string())
                .unwrap_or_default();
            let health = status.map(|s| api::text(s, "/health")).unwrap_or("");
            let ready = status
                .and_then(|s| s.pointer("/status/readyReplicas"))
                .map(Value::to_string)
                .unwrap_or_default();
            vec![
                esc(&cluster),
                format!(
                    "<span class=\"replicas\" data-cluster=\"{}\">{replicas}</span>",
                    esc(&cluster)
                ),
                esc(&applied),
                esc(health),
                esc(&ready),
            ]
        })
        .collect();
    let mut out = table(
        "placement",
        &["Cluster", "Replicas", "Applied", "Health", "Ready replicas"],
        &rows,
    );
    let conditions: Vec<Vec<String>> = binding
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|conditions| {
            conditions
                .iter()
                .map(|c| {
                    [
                        "/type",
                        "/status",
                        "/reason",
                        "/message",
                        "/lastTransitionTime",
                    ]
                    .iter()
                    .map(|p| esc(api::text(c, p)))
                    .collect()
                })
                .collect()
        })
        .unwrap_or_default();
    out.push_str(&table(
        "conditions",
        &["Condition", "Status", "Reason", "Message", "Since"],
        &conditions,
    ));
    out
}

/// The namespace's events about the template or the binding, newest first.
async fn events(
    client: &kube::Client,
    namespace: &str,
    names: &[&str],
) -> Result<String, ApiError> {
    let page = api::list_page(client, &paths::namespaced_events(namespace), 500, None).await?;
    let mut about: Vec<&Value> = page
        .items
        .iter()
        .filter(|e| names.contains(&api::text(e, "/involvedObject/name")))
        .collect();
    about.sort_by_key(|e| std::cmp::Reverse(event_time(e).to_string()));
    let rows: Vec<Vec<String>> = about
        .iter()
        .take(50)
        .map(|e| {
            vec![
                esc(event_time(e)),
                esc(api::text(e, "/type")),
                esc(api::text(e, "/reason")),
                esc(api::text(e, "/involvedObject/kind")),
                format!(
                    "<span class=\"wrap\">{}</span>",
                    esc(api::text(e, "/message"))
                ),
            ]
        })
        .collect();
    Ok(table(
        "events",
        &["Time", "Type", "Reason", "Object", "Message"],
        &rows,
    ))
}

/// An event's time: lastTimestamp, else eventTime, else creation.
pub fn event_time(event: &Value) -> &str {
    [
        "/lastTimestamp",
        "/eventTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .map(|p| api::text(event, p))
    .find(|t| !t.is_empty())
    .unwrap_or("")
}

/// The binding's Works (by the binding's permanent id) with their Applied condition.
fn binding_id(binding: &Value) -> &str {
    binding["metadata"]["labels"][LABEL_BINDING_ID]
        .as_str()
        .unwrap_or("")
}

async fn works(client: &kube::Client, binding: &Value) -> Result<String, ApiError> {
    let id = binding_id(binding);
    if id.is_empty() {
        return Ok("<p class=\"muted\">no Works yet</p>".into());
    }
    let selector = format!("{LABEL_BINDING_ID}={id}");
    let path = format!("{}?labelSelector={}", paths::WORKS, query_value(&selector));
    let page = api::list_page(client, &path, 100, None).await?;
    let rows: Vec<Vec<String>> = page
        .items
        .iter()
        .map(|work| {
            let applied = api::condition(work, "Applied");
            let status = applied
                .map(|c| api::text(c, "/status"))
                .unwrap_or("Unknown");
            let class = if status == "True" { "ok" } else { "bad" };
            let overrides: Vec<String> = crate::views::overrides::applied_to_work(work)
                .into_iter()
                .map(|(kind, namespace, name)| match namespace.is_empty() {
                    true => format!("{kind} {name}"),
                    false => format!("{kind} {namespace}/{name}"),
                })
                .collect();
            vec![
                esc(api::text(work, "/metadata/namespace")),
                esc(api::text(work, "/metadata/name")),
                format!("<span class=\"{class}\">{}</span>", esc(status)),
                format!(
                    "<span class=\"wrap overrides\">{}</span>",
                    esc(&overrides.join(", "))
                ),
                format!(
                    "<span class=\"wrap\">{}</span>",
                    esc(applied.map(|c| api::text(c, "/message")).unwrap_or(""))
                ),
            ]
        })
        .collect();
    Ok(table(
        "works",
        &[
            "Execution namespace",
            "Work",
            "Applied",
            "Overrides applied",
            "Message",
        ],
        &rows,
    ))
}
