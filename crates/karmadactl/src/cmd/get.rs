//! `karmadactl get clusters [NAME] [-o wide|yaml|json]`: the server's Table for Clusters printed as kubectl
//! prints it (priority-0 columns, all of them with `-o wide`), or the objects as YAML/JSON.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;

use crate::{client, printer};

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const CLUSTERS_PATH: &str = "/apis/cluster.karmada.io/v1alpha1/clusters";

#[derive(Args, Debug)]
pub struct GetArgs {
    /// Resource type: clusters (cluster, clusters.cluster.karmada.io).
    pub resource: String,
    /// Cluster names (default: all).
    pub names: Vec<String>,
    /// Output format: wide, yaml or json.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long = "karmada-context", alias = "context")]
    pub context: Option<String>,
}

/// Table cells as kubectl prints them: the header, then one row per object.
pub fn table_rows(table: &Value, wide: bool) -> Vec<Vec<String>> {
    let columns = table["columnDefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let shown: Vec<usize> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| wide || c["priority"].as_i64().unwrap_or(0) == 0)
        .map(|(i, _)| i)
        .collect();
    let mut rows = vec![
        shown
            .iter()
            .map(|&i| {
                columns[i]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_uppercase()
            })
            .collect(),
    ];
    for row in table["rows"].as_array().into_iter().flatten() {
        let cells = row["cells"].as_array().cloned().unwrap_or_default();
        rows.push(
            shown
                .iter()
                .map(|&i| match cells.get(i) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => "<none>".to_string(),
                    Some(other) => other.to_string(),
                })
                .collect(),
        );
    }
    rows
}

async fn get_value(
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

pub async fn run(args: GetArgs) -> anyhow::Result<()> {
    if !matches!(
        args.resource.as_str(),
        "clusters" | "cluster" | "clusters.cluster.karmada.io"
    ) {
        bail!(
            "karmadactl get serves the resource type \"clusters\" (got {:?}); use kubectl for other resources",
            args.resource
        );
    }
    let output = args.output.as_deref().unwrap_or("");
    if !matches!(output, "" | "wide" | "yaml" | "json") {
        bail!("unknown output format {output:?}; accepted: wide, yaml, json");
    }
    let path = client::kubeconfig_path(args.kubeconfig.as_deref());
    let client = client::from_kubeconfig(&path, args.context.as_deref()).await?;
    let accept = matches!(output, "" | "wide").then_some(TABLE_ACCEPT);
    let mut results = Vec::new();
    if args.names.is_empty() {
        results.push(
            get_value(&client, CLUSTERS_PATH, accept)
                .await
                .context("listing clusters")?,
        );
    } else {
        for name in &args.names {
            let value = get_value(&client, &format!("{CLUSTERS_PATH}/{name}"), accept)
                .await
                .map_err(|e| match e.downcast_ref::<kube::Error>() {
                    Some(kube::Error::Api(s)) if s.code == 404 => {
                        anyhow::anyhow!("clusters.cluster.karmada.io {name:?} not found")
                    }
                    _ => e.context(format!("getting cluster {name}")),
                })?;
            results.push(value);
        }
    }
    match output {
        "yaml" | "json" => {
            let mut items: Vec<Value> = Vec::new();
            for r in results {
                match r.get("items").and_then(Value::as_array) {
                    Some(list) => items.extend(list.iter().cloned().map(|mut item| {
                        item["apiVersion"] = "cluster.karmada.io/v1alpha1".into();
                        item["kind"] = "Cluster".into();
                        item
                    })),
                    None => items.push(r),
                }
            }
            let single = !args.names.is_empty() && items.len() == 1;
            let document = if single {
                items.remove(0)
            } else {
                serde_json::json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}})
            };
            if output == "json" {
                println!("{}", serde_json::to_string_pretty(&document)?);
            } else {
                print!("{}", serde_saphyr::to_string(&document)?);
            }
        }
        _ => {
            let mut rows: Vec<Vec<String>> = Vec::new();
            for r in &results {
                let mut table = table_rows(r, output == "wide");
                if rows.is_empty() {
                    rows.append(&mut table);
                } else {
                    rows.extend(table.into_iter().skip(1));
                }
            }
            if rows.len() <= 1 {
                eprintln!("No resources found");
                return Ok(());
            }
            print!("{}", printer::table(&rows));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
