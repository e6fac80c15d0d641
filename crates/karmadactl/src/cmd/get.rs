//! `karmadactl get RESOURCE [NAME...] [-n NS|-A] [-l SELECTOR] [-C a,b] [--operation-scope karmada|members|all]
//! [-o wide|yaml|json]`: kubectl's get over the control plane, the member clusters, or both.
//!
//! Tables are the servers' own (`as=Table`), so columns match kubectl's. Member rows gain a CLUSTER column
//! after NAME and an ADOPTION column at the end: `Y` when the object carries `karmada.io/managed` (Karmada
//! manages it), else `N`. In `all` scope the control plane's rows show CLUSTER `Karmada` and ADOPTION `-`.
//! Members are reached directly with the credentials in their Cluster's Secret (as the controllers do), so
//! `-C` gives the member view without a cluster proxy; `-C` alone implies `--operation-scope members`.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::client::ControlPlaneFlags;
use crate::discovery::{self, Resource};
use crate::output::Output;
use crate::{client, printer};

pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const MEMBER_TIMEOUT: Duration = Duration::from_secs(10);
/// CLUSTER cell of control-plane rows in `all` scope.
pub const KARMADA_CLUSTER_CELL: &str = "Karmada";
const MANAGED_LABEL: &str = "karmada.io/managed";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// The Karmada control plane.
    Karmada,
    /// The member clusters.
    Members,
    /// Both.
    All,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// Resource type: deployments, deploy, deployment.apps, clusters, pp, ...
    pub resource: String,
    /// Object names (default: all).
    pub names: Vec<String>,
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Label selector, e.g. app=nginx.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Member clusters to read (comma-separated); implies `--operation-scope members`.
    #[arg(short = 'C', long = "clusters", value_delimiter = ',')]
    pub clusters: Vec<String>,
    /// Where to read: karmada (default), members or all.
    #[arg(short = 's', long = "operation-scope", value_enum)]
    pub operation_scope: Option<Scope>,
    /// Output format: wide, yaml or json.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Output>,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

/// What one source answered: the control plane (`cluster` None) or a member.
#[derive(Debug)]
pub struct Fetched {
    pub cluster: Option<String>,
    /// A Table, a list, or one object.
    pub body: Value,
}

/// The scope `get` reads, from the flags.
pub fn effective_scope(explicit: Option<Scope>, clusters: &[String]) -> anyhow::Result<Scope> {
    match (explicit, clusters.is_empty()) {
        (Some(Scope::Karmada), false) => {
            bail!("--clusters/-C applies to --operation-scope members or all, not karmada")
        }
        (Some(scope), _) => Ok(scope),
        (None, true) => Ok(Scope::Karmada),
        (None, false) => Ok(Scope::Members),
    }
}

/// Visible columns of a Table: their indices and upper-cased names.
fn visible_columns(table: &Value, wide: bool) -> Vec<(usize, String)> {
    table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, c)| wide || c["priority"].as_i64().unwrap_or(0) == 0)
        .map(|(i, c)| (i, c["name"].as_str().unwrap_or_default().to_uppercase()))
        .collect()
}

fn cell_text(cell: Option<&Value>) -> String {
    match cell {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "<none>".to_string(),
        Some(other) => other.to_string(),
    }
}

/// The rows of every source's Table under one header (the first table's columns, matched by name). With
/// `namespaces` a NAMESPACE column comes first; with `member_columns`, CLUSTER after NAME and ADOPTION last.
pub fn render(
    fetched: &[Fetched],
    wide: bool,
    namespaces: bool,
    member_columns: bool,
) -> Vec<Vec<String>> {
    let Some(first) = fetched.first() else {
        return Vec::new();
    };
    let columns: Vec<String> = visible_columns(&first.body, wide)
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    let name_at = columns.iter().position(|c| c == "NAME").unwrap_or(0);
    let mut header = Vec::new();
    if namespaces {
        header.push("NAMESPACE".to_string());
    }
    for (i, column) in columns.iter().enumerate() {
        header.push(column.clone());
        if member_columns && i == name_at {
            header.push("CLUSTER".to_string());
        }
    }
    if member_columns {
        header.push("ADOPTION".to_string());
    }
    let mut rows = vec![header];
    for source in fetched {
        let all_columns: Vec<String> = visible_columns(&source.body, true)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        for row in source.body["rows"].as_array().into_iter().flatten() {
            let cells = row["cells"].as_array().cloned().unwrap_or_default();
            let metadata = &row["object"]["metadata"];
            let mut out = Vec::new();
            if namespaces {
                out.push(
                    metadata["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
            for (i, column) in columns.iter().enumerate() {
                let index = all_columns.iter().position(|c| c == column);
                out.push(cell_text(index.and_then(|i| cells.get(i))));
                if member_columns && i == name_at {
                    out.push(
                        source
                            .cluster
                            .clone()
                            .unwrap_or_else(|| KARMADA_CLUSTER_CELL.to_string()),
                    );
                }
            }
            if member_columns {
                let adoption = match &source.cluster {
                    None => "-",
                    Some(_) if metadata["labels"].get(MANAGED_LABEL).is_some() => "Y",
                    Some(_) => "N",
                };
                out.push(adoption.to_string());
            }
            rows.push(out);
        }
    }
    rows
}

/// The objects of every answer for `-o yaml|json`: one object when exactly one was asked for and found, else a
/// List. List items get the apiVersion and kind the server leaves out.
pub fn document(
    fetched: &[Fetched],
    resource_kind: &str,
    api_version: &str,
    single: bool,
) -> Value {
    let mut items = Vec::new();
    for source in fetched {
        match source.body.get("items").and_then(Value::as_array) {
            Some(list) => items.extend(list.iter().cloned().map(|mut item| {
                item["apiVersion"] = api_version.into();
                item["kind"] = resource_kind.into();
                item
            })),
            None => items.push(source.body.clone()),
        }
    }
    if single && items.len() == 1 {
        return items.remove(0);
    }
    serde_json::json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}})
}

pub async fn get_value(
    client: &kube::Client,
    path: &str,
    accept: Option<&str>,
) -> anyhow::Result<Value> {
    let mut request = http::Request::get(path);
    if let Some(accept) = accept {
        request = request.header(http::header::ACCEPT, accept);
    }
    Ok(client.request(request.body(Vec::new())?).await?)
}

/// Whether an error is the server's 404.
pub fn is_not_found(err: &anyhow::Error) -> bool {
    matches!(err.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 404)
}

/// A member client from the Cluster and its Secret in the control plane. A Pull cluster has no Secret there
/// (its agent holds the credentials); it is read through the context of the same name in `kubeconfig` when
/// there is one (`local-up` writes one per member).
pub async fn member_client(
    karmada: &kube::Client,
    name: &str,
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<kube::Client> {
    let object = super::join::clusters(karmada)
        .get_opt(name)
        .await
        .with_context(|| format!("reading cluster {name}"))?
        .with_context(|| format!("cluster {name:?} not found (see `karmadactl get clusters`)"))?;
    let cluster = karmada_controllers::cluster::api::to_cluster(&object)?;
    if cluster.spec.secret_ref.is_none()
        && let Some(path) = kubeconfig
        && kube::config::Kubeconfig::read_from(path)
            .is_ok_and(|kc| kc.contexts.iter().any(|c| c.name == name))
    {
        return client::from_kubeconfig(path, Some(name)).await;
    }
    if cluster.spec.secret_ref.is_none() {
        bail!(
            "the control plane holds no credentials for cluster {name} (Pull mode); add a context named {name} \
             to the kubeconfig to read it"
        );
    }
    Ok(karmada_controllers::cluster::api::member_client(karmada, &cluster, MEMBER_TIMEOUT).await?)
}

/// Names of every joined cluster, sorted.
pub async fn all_cluster_names(karmada: &kube::Client) -> anyhow::Result<Vec<String>> {
    let list = super::join::clusters(karmada)
        .list(&Default::default())
        .await
        .context("listing clusters")?;
    let mut names: Vec<String> = list
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    names.sort();
    Ok(names)
}

/// `?labelSelector=…` for `selector`, percent-encoded; empty without one.
pub fn query(selector: Option<&str>) -> String {
    match selector {
        Some(s) if !s.is_empty() => {
            let encoded: String = s
                .bytes()
                .map(|b| match b {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("?labelSelector={encoded}")
        }
        _ => String::new(),
    }
}

/// Reads `args`' objects from one source. A name missing there is skipped when `tolerate_missing`.
async fn fetch(
    client: &kube::Client,
    resource: &Resource,
    args: &GetArgs,
    namespace: Option<&str>,
    accept: Option<&str>,
    tolerate_missing: bool,
) -> anyhow::Result<Vec<Value>> {
    let mut bodies = Vec::new();
    if args.names.is_empty() {
        let path = format!(
            "{}{}",
            resource.path(namespace, None),
            query(args.selector.as_deref())
        );
        bodies.push(
            get_value(client, &path, accept)
                .await
                .with_context(|| format!("listing {}", resource.qualified()))?,
        );
    } else {
        for name in &args.names {
            match get_value(client, &resource.path(namespace, Some(name)), accept).await {
                Ok(body) => bodies.push(body),
                Err(err) if is_not_found(&err) => {
                    if !tolerate_missing {
                        bail!("{} {name:?} not found", resource.qualified());
                    }
                }
                Err(err) => {
                    return Err(err)
                        .with_context(|| format!("getting {} {name}", resource.qualified()));
                }
            }
        }
    }
    Ok(bodies)
}

pub async fn run(args: GetArgs) -> anyhow::Result<()> {
    let output = args.output;
    if args.all_namespaces && args.namespace.is_some() {
        bail!("give either --namespace/-n or --all-namespaces/-A, not both");
    }
    let scope = effective_scope(args.operation_scope, &args.clusters)?;
    let path = args.control_plane.path();
    let karmada = args.control_plane.client_at(&path).await?;

    let mut sources: Vec<(Option<String>, kube::Client)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    if scope != Scope::Members {
        sources.push((None, karmada.clone()));
    }
    if scope != Scope::Karmada {
        let names = if args.clusters.is_empty() {
            all_cluster_names(&karmada).await?
        } else {
            args.clusters.clone()
        };
        for name in names {
            match member_client(&karmada, &name, Some(&path)).await {
                Ok(member) => sources.push((Some(name), member)),
                Err(err) => failures.push(format!("cluster {name}: {err:#}")),
            }
        }
    }

    let accept = Output::is_table(output).then_some(TABLE_ACCEPT);
    let namespace = if args.all_namespaces {
        None
    } else {
        Some(
            args.namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
        )
    };
    let mut fetched = Vec::new();
    let mut resolved: Option<Resource> = None;
    for (cluster, source) in &sources {
        let result = async {
            let resource = discovery::find(source, &args.resource).await?;
            let bodies = fetch(
                source,
                &resource,
                &args,
                namespace.as_deref(),
                accept,
                cluster.is_some(),
            )
            .await?;
            anyhow::Ok((resource, bodies))
        }
        .await;
        match (result, cluster) {
            (Ok((resource, bodies)), _) => {
                resolved.get_or_insert(resource);
                fetched.extend(bodies.into_iter().map(|body| Fetched {
                    cluster: cluster.clone(),
                    body,
                }));
            }
            // The control plane's own errors (unknown type, not found) are the command's errors.
            (Err(err), None) => return Err(err),
            (Err(err), Some(name)) => failures.push(format!("cluster {name}: {err:#}")),
        }
    }
    for failure in &failures {
        eprintln!("error: {failure}");
    }

    let Some(resource) = resolved else {
        bail!("no cluster could be read");
    };
    if !args.names.is_empty() && fetched.is_empty() {
        bail!(
            "{} {:?} not found in {}",
            resource.qualified(),
            args.names.join(", "),
            if scope == Scope::Karmada {
                "karmada"
            } else {
                "the selected clusters"
            }
        );
    }
    match output {
        Some(Output::Yaml | Output::Json) => {
            let single = args.names.len() == 1 && scope == Scope::Karmada;
            let doc = document(&fetched, &resource.kind, &resource.api_version(), single);
            if output == Some(Output::Json) {
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                print!("{}", serde_saphyr::to_string(&doc)?);
            }
        }
        _ => {
            if output == Some(Output::Wide)
                && resource.group == karmada_api::mcs::GROUP
                && resource.kind == "ServiceImport"
            {
                add_endpoint_column(&karmada, &mut fetched).await?;
            }
            let namespaces = args.all_namespaces && resource.namespaced;
            let rows = render(
                &fetched,
                output == Some(Output::Wide),
                namespaces,
                scope != Scope::Karmada,
            );
            if rows.len() <= 1 {
                match (&namespace, resource.namespaced) {
                    (Some(ns), true) => eprintln!("No resources found in {ns} namespace."),
                    _ => eprintln!("No resources found"),
                }
            } else {
                print!("{}", printer::table(&rows));
            }
        }
    }
    if !failures.is_empty() {
        bail!("{} cluster(s) could not be read", failures.len());
    }
    Ok(())
}

/// The clusters backing the control-plane ServiceImport `namespace/name`, with their ready and total endpoints:
/// read from the imported EndpointSlices of its derived Service.
pub async fn import_backing(
    karmada: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<std::collections::BTreeMap<String, karmada_controllers::mcs::backing::Endpoints>>
{
    let selector = format!(
        "kubernetes.io%2Fservice-name%3D{}",
        karmada_api::mcs::derived_service_name(name)
    );
    let slices = get_value(
        karmada,
        &format!("/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices?labelSelector={selector}"),
        None,
    )
    .await?;
    let items = slices["items"].as_array().cloned().unwrap_or_default();
    Ok(karmada_controllers::mcs::backing::backing_clusters(&items))
}

/// `-o wide` of the control plane's ServiceImports gains ENDPOINTS: `cluster=ready/total` per backing cluster.
async fn add_endpoint_column(
    karmada: &kube::Client,
    fetched: &mut [Fetched],
) -> anyhow::Result<()> {
    for source in fetched.iter_mut().filter(|f| f.cluster.is_none()) {
        let Some(rows) = source.body["rows"].as_array_mut() else {
            continue;
        };
        for row in rows.iter_mut() {
            let metadata = &row["object"]["metadata"];
            let namespace = metadata["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let name = metadata["name"].as_str().unwrap_or_default().to_string();
            let backing = import_backing(karmada, &namespace, &name).await?;
            let cell = karmada_controllers::mcs::backing::summary(&backing);
            if let Some(cells) = row["cells"].as_array_mut() {
                cells.push(Value::String(cell));
            }
        }
        if let Some(columns) = source.body["columnDefinitions"].as_array_mut() {
            columns.push(serde_json::json!({
                "name": "Endpoints",
                "type": "string",
                "priority": 1,
                "description": "Ready/total endpoints of each backing cluster",
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployments_table(rows: Value) -> Value {
        json!({
            "kind": "Table",
            "columnDefinitions": [
                {"name": "Name", "priority": 0}, {"name": "Ready", "priority": 0},
                {"name": "Age", "priority": 0}, {"name": "Images", "priority": 1}
            ],
            "rows": rows
        })
    }

    fn row(name: &str, ns: &str, managed: bool) -> Value {
        let labels = if managed {
            json!({"karmada.io/managed": "true"})
        } else {
            json!({"app": "x"})
        };
        json!({"cells": [name, "1/1", "5m", "nginx"],
               "object": {"metadata": {"name": name, "namespace": ns, "labels": labels}}})
    }

    fn table_rows(table: &Value, wide: bool) -> Vec<Vec<String>> {
        let fetched = [Fetched {
            cluster: None,
            body: table.clone(),
        }];
        render(&fetched, wide, false, false)
    }

    #[test]
    fn wide_adds_the_priority_columns() {
        let table = json!({
            "columnDefinitions": [
                {"name": "Name", "priority": 0}, {"name": "Version", "priority": 0},
                {"name": "Zones", "priority": 1}
            ],
            "rows": [{"cells": ["member1", "v1.33.0", null]}]
        });
        assert_eq!(
            table_rows(&table, false),
            vec![vec!["NAME", "VERSION"], vec!["member1", "v1.33.0"]]
        );
        assert_eq!(
            table_rows(&table, true)[1],
            vec!["member1", "v1.33.0", "<none>"]
        );
    }

    #[test]
    fn member_rows_gain_cluster_and_adoption() {
        let fetched = [
            Fetched {
                cluster: Some("member1".into()),
                body: deployments_table(json!([row("nginx", "default", true)])),
            },
            Fetched {
                cluster: Some("member2".into()),
                body: deployments_table(json!([row("legacy", "default", false)])),
            },
        ];
        assert_eq!(
            render(&fetched, false, false, true),
            vec![
                vec!["NAME", "CLUSTER", "READY", "AGE", "ADOPTION"],
                vec!["nginx", "member1", "1/1", "5m", "Y"],
                vec!["legacy", "member2", "1/1", "5m", "N"],
            ]
        );
        let wide_all_ns = render(&fetched, true, true, true);
        assert_eq!(
            wide_all_ns[0],
            vec![
                "NAMESPACE",
                "NAME",
                "CLUSTER",
                "READY",
                "AGE",
                "IMAGES",
                "ADOPTION"
            ]
        );
        assert_eq!(
            wide_all_ns[1],
            vec!["default", "nginx", "member1", "1/1", "5m", "nginx", "Y"]
        );
    }

    #[test]
    fn all_scope_marks_control_plane_rows() {
        let fetched = [
            Fetched {
                cluster: None,
                body: deployments_table(json!([row("nginx", "default", false)])),
            },
            Fetched {
                cluster: Some("member1".into()),
                body: deployments_table(json!([row("nginx", "default", true)])),
            },
        ];
        let rows = render(&fetched, false, false, true);
        assert_eq!(rows[1], vec!["nginx", "Karmada", "1/1", "5m", "-"]);
        assert_eq!(rows[2], vec!["nginx", "member1", "1/1", "5m", "Y"]);
        // Karmada scope: kubectl's columns, nothing added.
        let plain = render(&fetched[..1], false, false, false);
        assert_eq!(
            plain,
            vec![vec!["NAME", "READY", "AGE"], vec!["nginx", "1/1", "5m"]]
        );
    }

    #[test]
    fn columns_are_matched_by_name_across_servers() {
        // A member whose table orders the columns differently still lines up under the first header.
        let other = json!({
            "columnDefinitions": [{"name": "Age"}, {"name": "Name"}, {"name": "Ready"}],
            "rows": [{"cells": ["1m", "web", "0/1"], "object": {"metadata": {}}}]
        });
        let fetched = [
            Fetched {
                cluster: Some("a".into()),
                body: deployments_table(json!([])),
            },
            Fetched {
                cluster: Some("b".into()),
                body: other,
            },
        ];
        assert_eq!(
            render(&fetched, false, false, true)[1],
            vec!["web", "b", "0/1", "1m", "N"]
        );
    }

    #[test]
    fn scope_follows_the_flags() {
        let c = vec!["member1".to_string()];
        assert_eq!(effective_scope(None, &[]).unwrap(), Scope::Karmada);
        assert_eq!(effective_scope(None, &c).unwrap(), Scope::Members);
        assert_eq!(effective_scope(Some(Scope::All), &c).unwrap(), Scope::All);
        assert!(effective_scope(Some(Scope::Karmada), &c).is_err());
    }

    #[test]
    fn documents_are_single_objects_or_lists() {
        let list = Fetched {
            cluster: None,
            body: json!({"items": [{"metadata": {"name": "a"}}]}),
        };
        let doc = document(&[list], "Deployment", "apps/v1", false);
        assert_eq!(doc["kind"], "List");
        assert_eq!(doc["items"][0]["kind"], "Deployment");
        assert_eq!(doc["items"][0]["apiVersion"], "apps/v1");
        let one = Fetched {
            cluster: None,
            body: json!({"kind": "Deployment", "metadata": {"name": "a"}}),
        };
        assert_eq!(
            document(&[one], "Deployment", "apps/v1", true)["kind"],
            "Deployment"
        );
        assert_eq!(
            query(Some("app in (a,b)")),
            "?labelSelector=app%20in%20%28a%2Cb%29"
        );
    }
}
