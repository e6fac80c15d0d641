//! `karmadactl top pod|node`: the CPU and memory the member clusters' pods and nodes use, as Karmada's
//! `karmadactl top` prints it (kubectl top's table with a CLUSTER column after NAME).
//!
//! With `-C a,b` each named member's own `metrics.k8s.io` is read (with the credentials in its Cluster's
//! Secret, as `get -C` does); without it, the control plane's `metrics.k8s.io`, which aggregates every Ready
//! member and names each item's member in `resource.karmada.io/query-from-cluster`. Node percentages are of
//! the node's allocatable, read from its member.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use apimachinery::Quantity;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::get::{get_value, member_client, query};
use crate::client::ControlPlaneFlags;
use crate::printer;

/// Karmada's annotation naming the member a metrics item came from.
pub const QUERY_SOURCE_ANNOTATION: &str = karmada_api::cluster::ANNOTATION_QUERY_FROM_CLUSTER;

#[derive(Args, Debug)]
pub struct TopArgs {
    #[command(subcommand)]
    pub command: TopCommand,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

#[derive(Subcommand, Debug)]
pub enum TopCommand {
    /// Display resource (CPU/memory) usage of pods of member clusters.
    #[command(visible_aliases = ["pods", "po"])]
    Pod(PodArgs),
    /// Display resource (CPU/memory) usage of nodes of member clusters.
    #[command(visible_aliases = ["nodes", "no"])]
    Node(NodeArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SortBy {
    Cpu,
    Memory,
}

#[derive(Args, Debug)]
pub struct PodArgs {
    /// One pod's name (default: every pod the selectors match).
    pub name: Option<String>,
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Label selector, e.g. app=nginx.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Member clusters to read, e.g. -C=member1,member2 (default: every member, through the control plane).
    #[arg(short = 'C', long = "clusters", value_delimiter = ',')]
    pub clusters: Vec<String>,
    /// Each container's usage instead of the pod's.
    #[arg(long)]
    pub containers: bool,
    /// A total line under the table.
    #[arg(long)]
    pub sum: bool,
    /// Sort by cpu or memory, largest first (default: cluster, namespace, name).
    #[arg(long = "sort-by", value_enum)]
    pub sort_by: Option<SortBy>,
    #[arg(long)]
    pub no_headers: bool,
}

#[derive(Args, Debug)]
pub struct NodeArgs {
    /// One node's name (default: every node the selector matches).
    pub name: Option<String>,
    /// Label selector, e.g. kubernetes.io/os=linux.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Member clusters to read, e.g. -C=member1,member2 (default: every member, through the control plane).
    #[arg(short = 'C', long = "clusters", value_delimiter = ',')]
    pub clusters: Vec<String>,
    /// Sort by cpu or memory, largest first (default: name).
    #[arg(long = "sort-by", value_enum)]
    pub sort_by: Option<SortBy>,
    #[arg(long)]
    pub no_headers: bool,
}

/// CPU in thousandths of a core and memory in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_milli: i128,
    pub memory_bytes: i128,
}

impl Usage {
    fn of(resources: &Value) -> Self {
        let read = |name: &str| {
            resources[name]
                .as_str()
                .and_then(|q| Quantity::parse(q).ok())
        };
        Self {
            cpu_milli: read("cpu").map_or(0, |q| q.milli_value()),
            memory_bytes: read("memory").map_or(0, |q| q.value()),
        }
    }

    fn add(self, other: Usage) -> Usage {
        Usage {
            cpu_milli: self.cpu_milli + other.cpu_milli,
            memory_bytes: self.memory_bytes + other.memory_bytes,
        }
    }

    fn cells(self) -> [String; 2] {
        [
            format!("{}m", self.cpu_milli),
            format!("{}Mi", self.memory_bytes / (1024 * 1024)),
        ]
    }
}

fn cluster_of(item: &Value) -> &str {
    item["metadata"]["annotations"][QUERY_SOURCE_ANNOTATION]
        .as_str()
        .unwrap_or_default()
}

fn text<'a>(item: &'a Value, pointer: &str) -> &'a str {
    item.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn pod_usage(item: &Value) -> Usage {
    item["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Usage::of(&c["usage"]))
        .fold(Usage::default(), Usage::add)
}

/// What the pod table shows.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodTable {
    pub namespaces: bool,
    pub containers: bool,
    pub sum: bool,
    pub sort_by: Option<SortBy>,
    pub headers: bool,
}

/// The rows of `top pod` for PodMetrics `items` (each annotated with its member).
pub fn pod_rows(items: &[Value], table: PodTable) -> Vec<Vec<String>> {
    let mut items: Vec<&Value> = items.iter().collect();
    match table.sort_by {
        Some(SortBy::Cpu) => items.sort_by_key(|i| std::cmp::Reverse(pod_usage(i).cpu_milli)),
        Some(SortBy::Memory) => {
            items.sort_by_key(|i| std::cmp::Reverse(pod_usage(i).memory_bytes));
        }
        None => items.sort_by(|a, b| {
            (
                cluster_of(a),
                table.namespaces.then(|| text(a, "/metadata/namespace")),
                text(a, "/metadata/name"),
            )
                .cmp(&(
                    cluster_of(b),
                    table.namespaces.then(|| text(b, "/metadata/namespace")),
                    text(b, "/metadata/name"),
                ))
        }),
    }
    let mut rows = Vec::new();
    let mut header = Vec::new();
    if table.namespaces {
        header.push("NAMESPACE".to_string());
    }
    if table.containers {
        header.push("POD".to_string());
    }
    header.extend(["NAME", "CLUSTER", "CPU(cores)", "MEMORY(bytes)"].map(String::from));
    let width = header.len();
    if table.headers {
        rows.push(header);
    }
    let mut total = Usage::default();
    for item in items {
        let mut lead = Vec::new();
        if table.namespaces {
            lead.push(text(item, "/metadata/namespace").to_string());
        }
        let name = text(item, "/metadata/name");
        let cluster = cluster_of(item).to_string();
        total = total.add(pod_usage(item));
        if table.containers {
            for container in item["containers"].as_array().into_iter().flatten() {
                let mut row = lead.clone();
                row.push(name.to_string());
                row.push(text(container, "/name").to_string());
                row.push(cluster.clone());
                row.extend(Usage::of(&container["usage"]).cells());
                rows.push(row);
            }
        } else {
            let mut row = lead;
            row.push(name.to_string());
            row.push(cluster);
            row.extend(pod_usage(item).cells());
            rows.push(row);
        }
    }
    if table.sum {
        let blank = |n: usize| vec![String::new(); n];
        let mut rule = blank(width - 2);
        rule.extend(["________".to_string(), "________".to_string()]);
        rows.push(rule);
        let mut sums = blank(width - 2);
        sums.extend(total.cells());
        rows.push(sums);
    }
    rows
}

/// The rows of `top node` for NodeMetrics `items`, with each member's nodes' allocatable (by cluster, then
/// node) for the percentages; allocatable nodes without metrics are listed with `<unknown>`.
pub fn node_rows(
    items: &[Value],
    allocatable: &BTreeMap<String, BTreeMap<String, Usage>>,
    sort_by: Option<SortBy>,
    headers: bool,
) -> Vec<Vec<String>> {
    let mut items: Vec<&Value> = items.iter().collect();
    match sort_by {
        Some(SortBy::Cpu) => {
            items.sort_by_key(|i| std::cmp::Reverse(Usage::of(&i["usage"]).cpu_milli))
        }
        Some(SortBy::Memory) => {
            items.sort_by_key(|i| std::cmp::Reverse(Usage::of(&i["usage"]).memory_bytes));
        }
        None => items.sort_by(|a, b| text(a, "/metadata/name").cmp(text(b, "/metadata/name"))),
    }
    let mut rows = Vec::new();
    if headers {
        rows.push(
            [
                "NAME",
                "CLUSTER",
                "CPU(cores)",
                "CPU%",
                "MEMORY(bytes)",
                "MEMORY%",
            ]
            .map(String::from)
            .to_vec(),
        );
    }
    let mut unseen = allocatable.clone();
    for item in items {
        let name = text(item, "/metadata/name");
        let cluster = cluster_of(item);
        let usage = Usage::of(&item["usage"]);
        let capacity = unseen.get_mut(cluster).and_then(|nodes| nodes.remove(name));
        let percent = |used: i128, of: Option<i128>| match of {
            Some(of) if of > 0 => format!("{}%", used * 100 / of),
            _ => "<unknown>".to_string(),
        };
        let [cpu, memory] = usage.cells();
        rows.push(vec![
            name.to_string(),
            cluster.to_string(),
            cpu,
            percent(usage.cpu_milli, capacity.map(|c| c.cpu_milli)),
            memory,
            percent(usage.memory_bytes, capacity.map(|c| c.memory_bytes)),
        ]);
    }
    for (cluster, nodes) in unseen {
        for node in nodes.keys() {
            let mut row = vec![node.clone(), cluster.clone()];
            row.extend(std::iter::repeat_n("<unknown>".to_string(), 4));
            rows.push(row);
        }
    }
    rows
}

/// The items of a list at `path`, each annotated with `cluster` when given.
async fn items(
    client: &kube::Client,
    path: &str,
    cluster: Option<&str>,
) -> anyhow::Result<Vec<Value>> {
    let list = get_value(client, path, None).await?;
    Ok(list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut item| {
            if let Some(cluster) = cluster {
                if !item["metadata"]["annotations"].is_object() {
                    item["metadata"]["annotations"] = json!({});
                }
                item["metadata"]["annotations"][QUERY_SOURCE_ANNOTATION] = json!(cluster);
            }
            item
        })
        .collect())
}

/// The metrics at `path`: from each of `clusters`, or the control plane's aggregate when none is named.
/// A member that cannot be read is reported and left out.
async fn gather(
    karmada: &kube::Client,
    kubeconfig: &std::path::Path,
    clusters: &[String],
    path: &str,
) -> anyhow::Result<Vec<Value>> {
    if clusters.is_empty() {
        return items(karmada, path, None).await.with_context(|| {
            "reading the control plane's metrics.k8s.io (are members joined and Ready?)".to_string()
        });
    }
    let mut all = Vec::new();
    let mut failures = Vec::new();
    for cluster in clusters {
        let found = async {
            let member = member_client(karmada, cluster, Some(kubeconfig)).await?;
            items(&member, path, Some(cluster)).await
        }
        .await;
        match found {
            Ok(found) => all.extend(found),
            Err(error) => failures.push(format!("cluster({cluster}): {error:#}")),
        }
    }
    if !failures.is_empty() {
        eprintln!("error: {}", failures.join("\n"));
    }
    if all.is_empty() && !failures.is_empty() {
        bail!("no metrics could be read");
    }
    Ok(all)
}

fn with_name(mut items: Vec<Value>, name: Option<&str>) -> Vec<Value> {
    if let Some(name) = name {
        items.retain(|i| text(i, "/metadata/name") == name);
    }
    items
}

pub async fn run(args: TopArgs) -> anyhow::Result<()> {
    let path = args.control_plane.path();
    let karmada = args.control_plane.client_at(&path).await?;
    match args.command {
        TopCommand::Pod(pod) => {
            let namespace = pod.namespace.clone().unwrap_or_else(|| "default".into());
            let scope = if pod.all_namespaces {
                String::new()
            } else {
                format!("/namespaces/{namespace}")
            };
            let url = format!(
                "/apis/metrics.k8s.io/v1beta1{scope}/pods{}",
                query(pod.selector.as_deref())
            );
            let found = with_name(
                gather(&karmada, &path, &pod.clusters, &url).await?,
                pod.name.as_deref(),
            );
            if found.is_empty() {
                match (&pod.name, pod.all_namespaces) {
                    (Some(name), _) => {
                        bail!("podmetrics \"{name}\" not found in namespace {namespace}")
                    }
                    (None, true) => eprintln!("No resources found"),
                    (None, false) => eprintln!("No resources found in {namespace} namespace."),
                }
                return Ok(());
            }
            let rows = pod_rows(
                &found,
                PodTable {
                    namespaces: pod.all_namespaces,
                    containers: pod.containers,
                    sum: pod.sum,
                    sort_by: pod.sort_by,
                    headers: !pod.no_headers,
                },
            );
            print!("{}", printer::table(&rows));
        }
        TopCommand::Node(node) => {
            let query = query(node.selector.as_deref());
            let url = format!("/apis/metrics.k8s.io/v1beta1/nodes{query}");
            let found = with_name(
                gather(&karmada, &path, &node.clusters, &url).await?,
                node.name.as_deref(),
            );
            let mut clusters: Vec<String> =
                found.iter().map(|i| cluster_of(i).to_string()).collect();
            clusters.extend(node.clusters.iter().cloned());
            clusters.sort();
            clusters.dedup();
            let mut allocatable = BTreeMap::new();
            for cluster in clusters.iter().filter(|c| !c.is_empty()) {
                let member = member_client(&karmada, cluster, Some(&path)).await?;
                let nodes = with_name(
                    items(&member, &format!("/api/v1/nodes{query}"), None).await?,
                    node.name.as_deref(),
                );
                let by_name: BTreeMap<String, Usage> = nodes
                    .iter()
                    .map(|n| {
                        (
                            text(n, "/metadata/name").to_string(),
                            Usage::of(&n["status"]["allocatable"]),
                        )
                    })
                    .collect();
                allocatable.insert(cluster.clone(), by_name);
            }
            if found.is_empty() && allocatable.values().all(BTreeMap::is_empty) {
                match &node.name {
                    Some(name) => bail!("nodemetrics \"{name}\" not found"),
                    None => eprintln!("No resources found"),
                }
                return Ok(());
            }
            let rows = node_rows(&found, &allocatable, node.sort_by, !node.no_headers);
            print!("{}", printer::table(&rows));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pod(cluster: &str, ns: &str, name: &str, containers: &[(&str, &str, &str)]) -> Value {
        json!({
            "metadata": {"name": name, "namespace": ns, "annotations": {QUERY_SOURCE_ANNOTATION: cluster}},
            "containers": containers.iter().map(|(n, cpu, mem)| json!({"name": n, "usage": {"cpu": cpu, "memory": mem}})).collect::<Vec<_>>(),
        })
    }

    #[test]
    fn pods_by_cluster_then_name_with_sums() {
        let items = vec![
            pod("member2", "default", "a", &[("main", "250m", "64Mi")]),
            pod(
                "member1",
                "default",
                "b",
                &[("main", "1", "128Mi"), ("side", "5m", "1Mi")],
            ),
        ];
        let table = PodTable {
            headers: true,
            sum: true,
            ..PodTable::default()
        };
        let out = printer::table(&pod_rows(&items, table));
        let expected: String = [
            "NAME   CLUSTER   CPU(cores)   MEMORY(bytes)",
            "b      member1   1005m        129Mi",
            "a      member2   250m         64Mi",
            "                 ________     ________",
            "                 1255m        193Mi",
        ]
        .map(|line| format!("{line}\n"))
        .concat();
        assert_eq!(out, expected);
        let by_cpu = pod_rows(
            &items,
            PodTable {
                sort_by: Some(SortBy::Cpu),
                namespaces: true,
                containers: true,
                ..PodTable::default()
            },
        );
        assert_eq!(
            by_cpu,
            vec![
                vec!["default", "b", "main", "member1", "1000m", "128Mi"],
                vec!["default", "b", "side", "member1", "5m", "1Mi"],
                vec!["default", "a", "main", "member2", "250m", "64Mi"],
            ]
        );
    }

    #[test]
    fn nodes_with_percentages_of_allocatable() {
        let items = vec![json!({
            "metadata": {"name": "n1", "annotations": {QUERY_SOURCE_ANNOTATION: "member1"}},
            "usage": {"cpu": "500m", "memory": "1Gi"},
        })];
        let mut allocatable = BTreeMap::new();
        allocatable.insert(
            "member1".to_string(),
            BTreeMap::from([
                (
                    "n1".to_string(),
                    Usage {
                        cpu_milli: 2000,
                        memory_bytes: 4 << 30,
                    },
                ),
                (
                    "n2".to_string(),
                    Usage {
                        cpu_milli: 2000,
                        memory_bytes: 4 << 30,
                    },
                ),
            ]),
        );
        assert_eq!(
            node_rows(&items, &allocatable, None, true),
            vec![
                vec![
                    "NAME",
                    "CLUSTER",
                    "CPU(cores)",
                    "CPU%",
                    "MEMORY(bytes)",
                    "MEMORY%"
                ],
                vec!["n1", "member1", "500m", "25%", "1024Mi", "25%"],
                vec![
                    "n2",
                    "member1",
                    "<unknown>",
                    "<unknown>",
                    "<unknown>",
                    "<unknown>"
                ],
            ]
        );
    }
}
