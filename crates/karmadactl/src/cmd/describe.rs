//! `karmadactl describe RESOURCE NAME [-n NS]`: a resource template of the control plane with what Karmada made
//! of it — its (Cluster)ResourceBinding (target clusters and replicas, the Scheduled condition, the scheduler's
//! explanation, per-cluster applied/health/ready replicas) and the template's events.

use anyhow::{Context, bail};
use clap::Args;
use jiff::Timestamp;
use serde_json::Value;

use super::get::{get_value, is_not_found};
use crate::client::ControlPlaneFlags;
use crate::{discovery, printer};

#[derive(Args, Debug)]
pub struct DescribeArgs {
    /// Resource type: deployments, deploy, service, ...
    pub resource: String,
    pub name: String,
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

pub async fn run(args: DescribeArgs) -> anyhow::Result<()> {
    let path = args.control_plane.path();
    let karmada = args.control_plane.client_at(&path).await?;
    let resource = discovery::find(&karmada, &args.resource).await?;
    let namespace = args.namespace.as_deref().unwrap_or("default");
    let template = match get_value(
        &karmada,
        &resource.path(Some(namespace), Some(&args.name)),
        None,
    )
    .await
    {
        Ok(t) => t,
        Err(err) if is_not_found(&err) => {
            bail!("{} {:?} not found", resource.qualified(), args.name)
        }
        Err(err) => {
            return Err(err.context(format!("getting {} {}", resource.qualified(), args.name)));
        }
    };
    let binding_name = karmada_controllers::names::binding_name(&resource.kind, &args.name);
    let binding_path = if resource.namespaced {
        format!(
            "/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings/{binding_name}"
        )
    } else {
        format!("/apis/work.karmada.io/v1alpha2/clusterresourcebindings/{binding_name}")
    };
    let binding = match get_value(&karmada, &binding_path, None).await {
        Ok(b) => Some(b),
        Err(err) if is_not_found(&err) => None,
        Err(err) => return Err(err.context("reading the binding")),
    };
    let uid = template["metadata"]["uid"].as_str().unwrap_or_default();
    let mut selector = format!("involvedObject.name={}", args.name);
    if !uid.is_empty() {
        selector.push_str(&format!(",involvedObject.uid={uid}"));
    }
    let events_path = if resource.namespaced {
        selector.push_str(&format!(",involvedObject.namespace={namespace}"));
        format!("/api/v1/namespaces/{namespace}/events")
    } else {
        "/api/v1/events".to_string()
    };
    let events = get_value(
        &karmada,
        &format!("{events_path}?fieldSelector={}", encode(&selector)),
        None,
    )
    .await
    .context("listing events")?;
    let events: Vec<Value> = events["items"].as_array().cloned().unwrap_or_default();
    print!(
        "{}",
        describe(&template, binding.as_ref(), &events, Timestamp::now())
    );
    if resource.group == karmada_api::mcs::GROUP && resource.kind == "ServiceImport" {
        let backing = super::get::import_backing(&karmada, namespace, &args.name).await?;
        print!("{}", backing_section(&backing));
    }
    Ok(())
}

/// Which clusters back a ServiceImport and with how many endpoints.
fn backing_section(
    backing: &std::collections::BTreeMap<String, karmada_controllers::mcs::backing::Endpoints>,
) -> String {
    let mut out = String::from("Backing Clusters:\n");
    if backing.is_empty() {
        out.push_str(
            "  <none>: no cluster exports this Service (see the ServiceImport's events)\n",
        );
        return out;
    }
    let mut rows = vec![vec![
        "CLUSTER".to_string(),
        "READY".into(),
        "ENDPOINTS".into(),
    ]];
    for (cluster, endpoints) in backing {
        rows.push(vec![
            cluster.clone(),
            endpoints.ready.to_string(),
            endpoints.total.to_string(),
        ]);
    }
    table_block(&mut out, &rows, 2);
    out
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn map_lines(map: &Value, skip: &[&str]) -> Vec<String> {
    let mut lines: Vec<String> = map
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    lines.sort();
    lines
}

fn field(out: &mut String, name: &str, value: &str) {
    out.push_str(&format!("{:<14}{value}\n", format!("{name}:")));
}

fn multi(out: &mut String, name: &str, lines: &[String]) {
    match lines.split_first() {
        None => field(out, name, "<none>"),
        Some((first, rest)) => {
            field(out, name, first);
            for line in rest {
                out.push_str(&format!("{:<14}{line}\n", ""));
            }
        }
    }
}

fn indented_yaml(out: &mut String, value: &Value, indent: usize) {
    let text = serde_saphyr::to_string(value).unwrap_or_default();
    for line in text.lines() {
        out.push_str(&format!("{:indent$}{line}\n", ""));
    }
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn table_block(out: &mut String, rows: &[Vec<String>], indent: usize) {
    for line in printer::table(rows).lines() {
        out.push_str(&format!("{:indent$}{line}\n", ""));
    }
}

/// The describe text; pure (the caller passes `now` for event ages).
pub fn describe(
    template: &Value,
    binding: Option<&Value>,
    events: &[Value],
    now: Timestamp,
) -> String {
    let mut out = String::new();
    let meta = &template["metadata"];
    field(&mut out, "Name", meta["name"].as_str().unwrap_or_default());
    if let Some(ns) = meta["namespace"].as_str() {
        field(&mut out, "Namespace", ns);
    }
    field(
        &mut out,
        "Kind",
        template["kind"].as_str().unwrap_or_default(),
    );
    field(
        &mut out,
        "API Version",
        template["apiVersion"].as_str().unwrap_or_default(),
    );
    multi(&mut out, "Labels", &map_lines(&meta["labels"], &[]));
    multi(
        &mut out,
        "Annotations",
        &map_lines(
            &meta["annotations"],
            &["kubectl.kubernetes.io/last-applied-configuration"],
        ),
    );
    field(
        &mut out,
        "Created",
        meta["creationTimestamp"].as_str().unwrap_or("<unknown>"),
    );
    for (title, key) in [("Template", "spec"), ("Status", "status")] {
        if let Some(section) = template.get(key).filter(|v| !v.is_null()) {
            out.push_str(&format!("{title}:\n"));
            indented_yaml(&mut out, section, 2);
        }
    }
    // Kinds without spec (ConfigMap, Secret) show their data.
    if template.get("spec").is_none()
        && let Some(data) = template.get("data")
    {
        out.push_str("Data:\n");
        let keys: Vec<String> = data
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| format!("  {k}"))
            .collect();
        out.push_str(&keys.join("\n"));
        out.push('\n');
    }

    match binding {
        None => out.push_str(
            "Binding:      <none> (no PropagationPolicy or ClusterPropagationPolicy claims this object)\n",
        ),
        Some(binding) => describe_binding(&mut out, binding),
    }

    out.push_str("Events:");
    if events.is_empty() {
        out.push_str("       <none>\n");
        return out;
    }
    out.push('\n');
    let mut rows = vec![vec![
        "Type".to_string(),
        "Reason".to_string(),
        "Age".to_string(),
        "From".to_string(),
        "Message".to_string(),
    ]];
    let mut sorted: Vec<&Value> = events.iter().collect();
    sorted.sort_by_key(|e| event_time(e));
    for event in sorted {
        let age = event_time(event)
            .map(|t| apimachinery::time::age(t, now))
            .unwrap_or_else(|| "<unknown>".to_string());
        let age = match event["count"].as_i64() {
            Some(n) if n > 1 => format!("{age} (x{n})"),
            _ => age,
        };
        let from = event["source"]["component"]
            .as_str()
            .or(event["reportingComponent"].as_str())
            .unwrap_or_default();
        rows.push(vec![
            event["type"].as_str().unwrap_or_default().to_string(),
            event["reason"].as_str().unwrap_or_default().to_string(),
            age,
            from.to_string(),
            event["message"].as_str().unwrap_or_default().to_string(),
        ]);
    }
    table_block(&mut out, &rows, 2);
    out
}

fn event_time(event: &Value) -> Option<Timestamp> {
    ["lastTimestamp", "eventTime", "firstTimestamp"]
        .iter()
        .filter_map(|k| event[*k].as_str())
        .find_map(|t| apimachinery::time::parse_timestamp(t).ok())
        .or_else(|| {
            event["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(|t| apimachinery::time::parse_timestamp(t).ok())
        })
}

fn describe_binding(out: &mut String, binding: &Value) {
    let kind = binding["kind"].as_str().unwrap_or("ResourceBinding");
    let name = binding["metadata"]["name"].as_str().unwrap_or_default();
    let full = match binding["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    out.push_str(&format!("{kind}:  {full}\n"));
    match condition(binding, "Scheduled") {
        Some(c) => out.push_str(&format!(
            "  Scheduled:   {} ({}) {}\n",
            c["status"].as_str().unwrap_or_default(),
            c["reason"].as_str().unwrap_or_default(),
            c["message"].as_str().unwrap_or_default()
        )),
        None => out.push_str("  Scheduled:   <not yet>\n"),
    }
    if let Some(c) = condition(binding, "FullyApplied") {
        out.push_str(&format!(
            "  FullyApplied: {} ({}) {}\n",
            c["status"].as_str().unwrap_or_default(),
            c["reason"].as_str().unwrap_or_default(),
            c["message"].as_str().unwrap_or_default()
        ));
    }
    let targets = binding["spec"]["clusters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if targets.is_empty() {
        out.push_str("  Placement:   <none>\n");
    } else {
        out.push_str("  Placement:\n");
        let mut rows = vec![vec!["CLUSTER".to_string(), "REPLICAS".to_string()]];
        for t in &targets {
            rows.push(vec![
                t["name"].as_str().unwrap_or_default().to_string(),
                t["replicas"]
                    .as_i64()
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".to_string()),
            ]);
        }
        table_block(out, &rows, 4);
    }
    if let Some(text) = binding["metadata"]["annotations"]
        [karmada_scheduler::explain::ANNOTATION_EXPLANATION]
        .as_str()
    {
        out.push_str("  Explanation:\n");
        let lines = match serde_json::from_str::<karmada_scheduler::explain::Explanation>(text) {
            Ok(explanation) => karmada_scheduler::render::explanation_lines(&explanation),
            Err(_) => text.lines().map(str::to_string).collect(),
        };
        for line in lines {
            out.push_str(&format!("    {line}\n"));
        }
    }
    let aggregated = binding["status"]["aggregatedStatus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !aggregated.is_empty() {
        out.push_str("  Status per cluster:\n");
        let mut rows = vec![vec![
            "CLUSTER".to_string(),
            "APPLIED".to_string(),
            "HEALTH".to_string(),
            "READY REPLICAS".to_string(),
            "MESSAGE".to_string(),
        ]];
        for item in &aggregated {
            let ready = item["status"]["readyReplicas"]
                .as_i64()
                .map(|r| r.to_string())
                .unwrap_or_else(|| "-".to_string());
            rows.push(vec![
                item["clusterName"].as_str().unwrap_or_default().to_string(),
                if item["applied"].as_bool().unwrap_or(false) {
                    "True".to_string()
                } else {
                    "False".to_string()
                },
                item["health"].as_str().unwrap_or("Unknown").to_string(),
                ready,
                item["appliedMessage"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ]);
        }
        table_block(out, &rows, 4);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shows_template_placement_status_and_events() {
        let template = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 6},
            "status": {"readyReplicas": 6}
        });
        let binding = json!({
            "kind": "ResourceBinding",
            "metadata": {"name": "nginx-deployment", "namespace": "default",
                         "annotations": {"scheduling.karmada.io/explanation": "not json"}},
            "spec": {"clusters": [{"name": "member1", "replicas": 4}, {"name": "member2", "replicas": 2}]},
            "status": {
                "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
                                "message": "Binding has been scheduled successfully."}],
                "aggregatedStatus": [
                    {"clusterName": "member1", "applied": true, "health": "Healthy", "status": {"readyReplicas": 4}},
                    {"clusterName": "member2", "applied": false, "appliedMessage": "conflict"}
                ]
            }
        });
        let events = [json!({
            "type": "Normal", "reason": "ScheduleBindingSucceed", "message": "Binding has been scheduled",
            "lastTimestamp": "2026-01-01T00:00:00Z", "source": {"component": "karmada-scheduler"}
        })];
        let now = apimachinery::time::parse_timestamp("2026-01-01T00:05:00Z").unwrap();
        let text = describe(&template, Some(&binding), &events, now);
        for want in [
            "Name:         nginx",
            "Namespace:    default",
            "Labels:       app=nginx",
            "replicas: 6",
            "ResourceBinding:  default/nginx-deployment",
            "Scheduled:   True (Success) Binding has been scheduled successfully.",
            "member1   4",
            "member2   2",
            "    not json",
            "member1   True      Healthy   4",
            "member2   False     Unknown   -                conflict",
            "Normal   ScheduleBindingSucceed   5m    karmada-scheduler",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }

    #[test]
    fn an_unclaimed_template_says_so() {
        let template = json!({"kind": "ConfigMap", "apiVersion": "v1",
                              "metadata": {"name": "c", "namespace": "default"}, "data": {"k": "v"}});
        let text = describe(&template, None, &[], Timestamp::now());
        assert!(text.contains("Binding:      <none>"), "{text}");
        assert!(text.contains("Data:\n  k"), "{text}");
        assert!(text.contains("Events:       <none>"), "{text}");
    }
}
