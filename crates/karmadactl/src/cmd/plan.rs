//! `karmadactl plan -f FILE...`: the what-if. Where would the scheduler place these workloads,
//! and why? Nothing is written anywhere.
//!
//! Inputs: workloads, the policies that would claim them, and Cluster objects — or, when the
//! files hold no Cluster, the live clusters of the control plane in `--kubeconfig`. A current
//! ResourceBinding in the files is the previous assignment (scale up/down semantics).
//!
//! `--from-cluster` plans with what the running scheduler would use: the control plane's Clusters
//! (the files may then hold none), the SchedulerProfile each policy names (or `--profile`), read
//! from the control plane when the files do not hold it, and each workload's current binding there
//! as its previous assignment. `--plugins` is the scheduler's flag of that name.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use crate::client::ControlPlaneFlags;
use crate::output::Output;

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Files with workloads, policies, and optionally Clusters, a ResourceBinding or a SchedulerProfile.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// `wide` adds scores and the division arithmetic; `json`/`yaml` print the ResourceBinding.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Output>,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
    /// Plan against the control plane as the scheduler sees it: its Clusters, the SchedulerProfiles the
    /// policies name, and the workloads' current bindings.
    #[arg(long)]
    pub from_cluster: bool,
    /// Plan with this SchedulerProfile (from the files, or else the control plane) instead of the one the
    /// policy names.
    #[arg(long)]
    pub profile: Option<String>,
    /// The scheduler's --plugins ('*', 'Name', '-Name'), when it is not the default.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub plugins: Vec<String>,
}

pub async fn run(args: PlanArgs) -> anyhow::Result<()> {
    let output = args.output;
    let mut documents = Vec::new();
    for path in &args.files {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let parsed: Vec<Value> = serde_saphyr::from_multiple(&text)
            .with_context(|| format!("parsing {} as YAML", path.display()))?;
        documents.extend(parsed.into_iter().filter(|d| !d.is_null()));
    }
    if let Some(profile) = &args.profile {
        for document in documents.iter_mut().filter(|d| is_policy(d)) {
            document["spec"]["schedulerName"] = Value::String(profile.clone());
        }
    }
    let file_clusters: Vec<String> = documents
        .iter()
        .filter(|d| d["kind"] == "Cluster")
        .map(|d| {
            d["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    if args.from_cluster && !file_clusters.is_empty() {
        bail!(
            "--from-cluster plans with the control plane's Clusters, but the files also hold Cluster {}; remove them from the files or drop --from-cluster",
            file_clusters.join(", ")
        );
    }
    if file_clusters.is_empty() {
        let client = control_plane(&args)
            .await
            .context("the files hold no Cluster objects, so the live clusters are needed")?;
        documents.extend(live_objects(&client, CLUSTER).await?);
    }
    let missing = missing_profiles(&documents);
    if !missing.is_empty() {
        let client = control_plane(&args).await.with_context(|| {
            format!(
                "the policies name SchedulerProfile {} and the files hold none, so the control plane's are needed",
                missing.join(", ")
            )
        })?;
        for name in missing {
            documents.push(live_profile(&client, &name).await?);
        }
    }
    if args.from_cluster {
        let client = control_plane(&args).await?;
        let bindings = current_bindings(&client, &documents).await?;
        documents.extend(bindings);
    }
    let registry = karmada_scheduler::default_registry().map_err(|e| anyhow::anyhow!("{e}"))?;
    let plugins = karmada_scheduler::framework::PluginSelection::parse(&args.plugins, &registry)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let plans = karmada_scheduler::plan_documents_with(&documents, None, &registry, Some(&plugins))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if plans.is_empty() {
        bail!(
            "no workload in the files is claimed by a PropagationPolicy or ClusterPropagationPolicy in them"
        );
    }
    let mut all_scheduled = true;
    for plan in &plans {
        all_scheduled &= plan.success();
        if Output::is_table(output) {
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
            Some(Output::Wide) => println!("{}", plan.render_wide()),
            Some(Output::Json) => println!("{}", serde_json::to_string_pretty(&plan.binding)?),
            Some(Output::Yaml) => print!("{}", serde_saphyr::to_string(&plan.binding)?),
            None => println!("{}", plan.render_table()),
        }
    }
    if !all_scheduled {
        bail!("not every workload could be scheduled; the Scheduled condition above says why");
    }
    Ok(())
}

const CLUSTER: (&str, &str, &str) = ("cluster.karmada.io", "v1alpha1", "Cluster");
const PROFILE: (&str, &str, &str) = ("scheduling.karmada.io", "v1alpha1", "SchedulerProfile");

fn is_policy(document: &Value) -> bool {
    matches!(
        document["kind"].as_str(),
        Some("PropagationPolicy" | "ClusterPropagationPolicy")
    ) && document["apiVersion"]
        .as_str()
        .is_some_and(|v| v.starts_with("policy.karmada.io/"))
}

/// Profiles the policies name that the files do not hold.
fn missing_profiles(documents: &[Value]) -> Vec<String> {
    let given: Vec<&str> = documents
        .iter()
        .filter(|d| d["kind"] == "SchedulerProfile")
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    let mut missing: Vec<String> = documents
        .iter()
        .filter(|d| is_policy(d))
        .filter_map(|d| d["spec"]["schedulerName"].as_str())
        .filter(|name| {
            !name.is_empty()
                && *name != karmada_scheduler::framework::DEFAULT_SCHEDULER_NAME
                && !given.contains(name)
        })
        .map(str::to_string)
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

async fn control_plane(args: &PlanArgs) -> anyhow::Result<kube::Client> {
    let path = args.control_plane.path();
    args.control_plane.client_at(&path).await
}

fn api(client: &kube::Client, (group, version, kind): (&str, &str, &str)) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::all_with(client.clone(), &resource)
}

/// An object read from the API with its apiVersion and kind set (lists leave them out of items).
fn typed_value(
    mut object: DynamicObject,
    (group, version, kind): (&str, &str, &str),
) -> anyhow::Result<Value> {
    object.types = Some(kube::api::TypeMeta {
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
    });
    if let Some(metadata) = object.metadata.managed_fields.as_mut() {
        metadata.clear();
    }
    Ok(serde_json::to_value(object)?)
}

async fn live_objects(
    client: &kube::Client,
    gvk: (&str, &str, &str),
) -> anyhow::Result<Vec<Value>> {
    let list = api(client, gvk)
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing {}s", gvk.2))?;
    list.items
        .into_iter()
        .map(|o| typed_value(o, gvk))
        .collect()
}

async fn live_profile(client: &kube::Client, name: &str) -> anyhow::Result<Value> {
    match api(client, PROFILE).get_opt(name).await {
        Ok(Some(profile)) => typed_value(profile, PROFILE),
        Ok(None) => bail!(
            "no SchedulerProfile {name:?} in the control plane; create it there, give it with -f, or plan with --profile default-scheduler"
        ),
        Err(err) => Err(err).with_context(|| format!("reading SchedulerProfile {name}")),
    }
}

/// The current (Cluster)ResourceBindings of the workloads among `documents`, as the scheduler names them
/// (`<name>-<kind>`); workloads not yet bound have none.
async fn current_bindings(
    client: &kube::Client,
    documents: &[Value],
) -> anyhow::Result<Vec<Value>> {
    let mut bindings = Vec::new();
    for workload in documents.iter().filter(|d| {
        d["apiVersion"].as_str().is_some_and(|v| {
            !v.split('/')
                .next()
                .unwrap_or_default()
                .ends_with("karmada.io")
        })
    }) {
        let (Some(kind), Some(name)) = (
            workload["kind"].as_str(),
            workload["metadata"]["name"].as_str(),
        ) else {
            continue;
        };
        let binding_name = format!("{name}-{}", kind.to_lowercase());
        let namespace = workload["metadata"]["namespace"].as_str();
        let (gvk, api) = match namespace {
            Some(namespace) => {
                let gvk = ("work.karmada.io", "v1alpha2", "ResourceBinding");
                let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2));
                (
                    gvk,
                    Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource),
                )
            }
            None => {
                let gvk = ("work.karmada.io", "v1alpha2", "ClusterResourceBinding");
                (gvk, api(client, gvk))
            }
        };
        if let Some(binding) = api
            .get_opt(&binding_name)
            .await
            .with_context(|| format!("reading binding {binding_name}"))?
        {
            bindings.push(typed_value(binding, gvk)?);
        }
    }
    Ok(bindings)
}
