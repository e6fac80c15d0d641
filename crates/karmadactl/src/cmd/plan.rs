//! `karmadactl plan -f FILE...`: the what-if. Where would the scheduler place these workloads,
//! and why? Nothing is written anywhere.
//!
//! Inputs: workloads, the policies that would claim them, and Cluster objects — or, when the
//! files hold no Cluster, the live clusters of the control plane in `--kubeconfig`. A current
//! ResourceBinding in the files is the previous assignment (scale up/down semantics).

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use crate::client;

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Files with workloads, policies, and optionally Clusters, a ResourceBinding or a SchedulerProfile.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// `wide` adds scores and the division arithmetic; `json`/`yaml` print the ResourceBinding.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long = "karmada-context", alias = "context")]
    pub context: Option<String>,
}

pub async fn run(args: PlanArgs) -> anyhow::Result<()> {
    let output = args.output.as_deref().unwrap_or("table");
    if !matches!(output, "table" | "wide" | "json" | "yaml") {
        bail!("unknown output format {output:?}; accepted: wide, json, yaml");
    }
    let mut documents = Vec::new();
    for path in &args.files {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let parsed: Vec<Value> = serde_saphyr::from_multiple(&text)
            .with_context(|| format!("parsing {} as YAML", path.display()))?;
        documents.extend(parsed.into_iter().filter(|d| !d.is_null()));
    }
    if !documents.iter().any(|d| d["kind"] == "Cluster") {
        documents.extend(live_clusters(&args).await?);
    }
    let registry = karmada_scheduler::default_registry().map_err(|e| anyhow::anyhow!("{e}"))?;
    let plans = karmada_scheduler::plan_documents(&documents, None, &registry)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if plans.is_empty() {
        bail!(
            "no workload in the files is claimed by a PropagationPolicy or ClusterPropagationPolicy in them"
        );
    }
    let mut all_scheduled = true;
    for plan in &plans {
        all_scheduled &= plan.success();
        if matches!(output, "table" | "wide") {
            let resource = &plan.binding["spec"]["resource"];
            let namespace = resource["namespace"]
                .as_str()
                .map(|ns| format!("{ns}/"))
                .unwrap_or_default();
            println!(
                "{} {namespace}{} → {} {}",
                resource["kind"].as_str().unwrap_or_default(),
                resource["name"].as_str().unwrap_or_default(),
                plan.binding["kind"].as_str().unwrap_or_default(),
                plan.binding["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default(),
            );
        }
        match output {
            "wide" => println!("{}", plan.render_wide()),
            "json" => println!("{}", serde_json::to_string_pretty(&plan.binding)?),
            "yaml" => print!("{}", serde_saphyr::to_string(&plan.binding)?),
            _ => println!("{}", plan.render_table()),
        }
    }
    if !all_scheduled {
        bail!("not every workload could be scheduled; the Scheduled condition above says why");
    }
    Ok(())
}

async fn live_clusters(args: &PlanArgs) -> anyhow::Result<Vec<Value>> {
    let path = client::kubeconfig_path(args.kubeconfig.as_deref());
    let client = client::from_kubeconfig(&path, args.context.as_deref())
        .await
        .context("the files hold no Cluster objects, so the live clusters are needed")?;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cluster.karmada.io",
        "v1alpha1",
        "Cluster",
    ));
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let list = api
        .list(&ListParams::default())
        .await
        .context("listing clusters")?;
    list.items
        .into_iter()
        .map(|mut object| {
            object.types = Some(kube::api::TypeMeta {
                api_version: "cluster.karmada.io/v1alpha1".into(),
                kind: "Cluster".into(),
            });
            Ok(serde_json::to_value(object)?)
        })
        .collect()
}
