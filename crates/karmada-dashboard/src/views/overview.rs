//! The federation overview: the clusters (Ready, sync mode, version, allocation against allocatable, taints)
//! and the map of replicas per workload × cluster, one page of ResourceBindings at a time.

use std::fmt::Write;

use serde_json::Value;

use crate::api::{self, ApiError, paths};
use crate::html::{esc, query_value, table};
use crate::views::View;

/// Bindings per page of the replica map: a first page renders fast with any number of workloads.
pub const PAGE_SIZE: usize = 50;

pub async fn render(client: &kube::Client, continue_token: Option<&str>) -> Result<View, ApiError> {
    let clusters = api::list_page(client, paths::CLUSTERS, 500, None)
        .await?
        .items;
    let bindings = api::list_page(client, paths::BINDINGS, PAGE_SIZE, continue_token).await?;
    let mut content = String::from("<h1>Federation</h1><h2>Clusters</h2>");
    let rows: Vec<Vec<String>> = clusters.iter().map(cluster_row).collect();
    content.push_str(&table(
        "clusters",
        &[
            "Cluster",
            "Ready",
            "Mode",
            "Kubernetes",
            "CPU",
            "Memory",
            "Pods",
            "Taints",
            "",
        ],
        &rows,
    ));
    let names: Vec<String> = clusters
        .iter()
        .map(|c| api::text(c, "/metadata/name").to_string())
        .collect();
    content.push_str("<h2>Replicas per workload and cluster</h2>");
    content.push_str(&replica_map(&names, &bindings.items));
    if let Some(next) = &bindings.next {
        let _ = write!(
            content,
            "<p class=\"pager\"><a id=\"next-page\" class=\"button\" href=\"/?continue={}\">Next page</a></p>",
            query_value(next)
        );
    }
    Ok(View {
        title: "Overview".into(),
        content,
        live: Some("/live/overview".into()),
    })
}

/// One row of the clusters table.
pub fn cluster_row(cluster: &Value) -> Vec<String> {
    let name = api::text(cluster, "/metadata/name");
    let ready = api::condition(cluster, "Ready")
        .map(|c| c["status"].as_str().unwrap_or("Unknown"))
        .unwrap_or("Unknown");
    let (label, class) = if ready == "True" {
        ("Ready", "ok")
    } else {
        ("NotReady", "bad")
    };
    let taints = taints(cluster);
    let cordoned = taints
        .iter()
        .any(|t| t.starts_with(karmada_api::cluster::TAINT_CLUSTER_UNSCHEDULABLE));
    let action = if cordoned { "uncordon" } else { "cordon" };
    vec![
        esc(name),
        format!(
            "<span class=\"{class} ready\" data-cluster=\"{n}\">{label}</span>",
            n = esc(name)
        ),
        esc(api::text(cluster, "/spec/syncMode")),
        esc(api::text(cluster, "/status/kubernetesVersion")),
        allocation(cluster, "cpu"),
        allocation(cluster, "memory"),
        allocation(cluster, "pods"),
        esc(&taints.join(", ")),
        format!(
            "<a class=\"action\" id=\"{action}-{n}\" href=\"/clusters/{q}/cordon?action={action}\">{action}</a> \
             <a class=\"action\" id=\"taints-{n}\" href=\"/clusters/{q}/taint\">taints</a>",
            n = esc(name),
            q = query_value(name)
        ),
    ]
}

/// `allocated / allocatable` of one resource from status.resourceSummary.
fn allocation(cluster: &Value, resource: &str) -> String {
    let get = |field: &str| {
        cluster
            .pointer(&format!("/status/resourceSummary/{field}/{resource}"))
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
    };
    match (get("allocated"), get("allocatable")) {
        (None, None) => String::new(),
        (allocated, allocatable) => format!(
            "{} / {}",
            esc(allocated.as_deref().unwrap_or("0")),
            esc(allocatable.as_deref().unwrap_or("?"))
        ),
    }
}

/// A cluster's taints as `key=value:effect`.
pub fn taints(cluster: &Value) -> Vec<String> {
    cluster
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .map(|taints| taints.iter().map(taint_text).collect())
        .unwrap_or_default()
}

/// One taint as `key=value:effect` (`key:effect` without a value), as kubectl prints it.
pub fn taint_text(taint: &Value) -> String {
    let key = api::text(taint, "/key");
    let value = api::text(taint, "/value");
    let effect = api::text(taint, "/effect");
    if value.is_empty() {
        format!("{key}:{effect}")
    } else {
        format!("{key}={value}:{effect}")
    }
}

/// The workloads × clusters table from the bindings' spec.clusters.
pub fn replica_map(clusters: &[String], bindings: &[Value]) -> String {
    let mut headers: Vec<&str> = vec!["Workload"];
    headers.extend(clusters.iter().map(String::as_str));
    headers.push("Total");
    let rows: Vec<Vec<String>> = bindings
        .iter()
        .map(|binding| {
            let namespace = api::text(binding, "/metadata/namespace");
            let name = api::text(binding, "/metadata/name");
            let kind = api::text(binding, "/spec/resource/kind");
            let resource = api::text(binding, "/spec/resource/name");
            let mut row = vec![format!(
                "<a class=\"workload\" href=\"/workloads/{}/{}\">{}/{}/{}</a>",
                query_value(namespace),
                query_value(name),
                esc(kind),
                esc(namespace),
                esc(resource)
            )];
            let placed = targets(binding);
            let most = placed.iter().map(|(_, r)| *r).max().unwrap_or(0);
            let mut total = 0;
            for cluster in clusters {
                let cell = placed.iter().find(|(n, _)| n == cluster).map(|(_, r)| *r);
                total += cell.unwrap_or(0);
                row.push(match cell {
                    Some(replicas) => format!(
                        "<span class=\"replicas heat-{}\" data-cell=\"{}/{}/{}\">{replicas}</span>",
                        heat(replicas, most),
                        esc(namespace),
                        esc(name),
                        esc(cluster)
                    ),
                    None => String::new(),
                });
            }
            row.push(total.to_string());
            row
        })
        .collect();
    table("replica-map", &headers, &rows)
}

/// The shade (0-4) of a cell: its replicas against the row's largest, as in a heat map.
pub fn heat(replicas: i64, most: i64) -> i64 {
    if most <= 0 || replicas <= 0 {
        return 0;
    }
    ((replicas * 4 + most - 1) / most).clamp(1, 4)
}

/// A binding's spec.clusters as (cluster, replicas).
pub fn targets(binding: &Value) -> Vec<(String, i64)> {
    binding
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .map(|targets| {
            targets
                .iter()
                .map(|t| {
                    (
                        api::text(t, "/name").to_string(),
                        t["replicas"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cluster_row_reads_ready_allocation_and_taints() {
        let cluster = json!({
            "metadata": {"name": "m1"},
            "spec": {"syncMode": "Push", "taints": [{"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}]},
            "status": {"kubernetesVersion": "v1.33.0",
                "conditions": [{"type": "Ready", "status": "False"}],
                "resourceSummary": {"allocatable": {"cpu": "8"}, "allocated": {"cpu": "500m"}}}
        });
        let row = cluster_row(&cluster);
        assert!(row[1].contains("NotReady"), "{}", row[1]);
        assert_eq!(row[4], "500m / 8");
        assert_eq!(row[7], "cluster.karmada.io/unschedulable:NoSchedule");
        assert!(row[8].contains("uncordon"), "{}", row[8]);
    }

    #[test]
    fn heat_scales_to_the_row_maximum() {
        assert_eq!(
            [heat(0, 6), heat(1, 6), heat(3, 6), heat(6, 6), heat(5, 0)],
            [0, 1, 2, 4, 0]
        );
    }

    #[test]
    fn replica_map_places_each_binding_under_its_clusters() {
        let binding = json!({
            "metadata": {"namespace": "default", "name": "web-deployment"},
            "spec": {"resource": {"kind": "Deployment", "name": "web"},
                     "clusters": [{"name": "m2", "replicas": 2}, {"name": "m1", "replicas": 1}]}
        });
        let html = replica_map(&["m1".into(), "m2".into(), "m3".into()], &[binding]);
        assert!(
            html.contains("heat-2\" data-cell=\"default/web-deployment/m1\">1<"),
            "{html}"
        );
        assert!(
            html.contains("heat-4\" data-cell=\"default/web-deployment/m2\">2<"),
            "{html}"
        );
        assert!(!html.contains("web-deployment/m3"), "{html}");
        assert!(html.contains("<td>3</td>"), "{html}");
    }
}
