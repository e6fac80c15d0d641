//! `karmadactl apply -f FILE (--all-clusters | -C a,b)`: server-side applies every object of the files to the
//! control plane and, for each, a PropagationPolicy (a ClusterPropagationPolicy for cluster-scoped objects)
//! named by Karmada's promote rule that propagates it to every cluster or to the listed ones. Applying again
//! updates both.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::Value;

use super::promote::{ensure_namespace, object_api};
use crate::client::ControlPlaneFlags;
use crate::discovery::{self, ResourceList};
use karmada_controllers::promote::{self as policy, Selected, Targets};

const FIELD_MANAGER: &str = "karmadactl";

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("targets").required(true).args(["all_clusters", "clusters"])))]
pub struct ApplyArgs {
    /// Manifest files (YAML or JSON, several documents each); `-` reads standard input.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// Namespace of objects that name none.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Propagate to every member cluster.
    #[arg(long)]
    pub all_clusters: bool,
    /// Propagate to these member clusters (comma-separated).
    #[arg(short = 'C', long = "cluster", value_delimiter = ',')]
    pub clusters: Vec<String>,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

/// The objects of parsed documents: nulls skipped, `List`s flattened.
pub fn objects(documents: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for doc in documents {
        if doc.is_null() {
            continue;
        }
        match doc["items"].as_array() {
            Some(items) if doc["kind"].as_str().is_some_and(|k| k.ends_with("List")) => {
                out.extend(items.iter().cloned());
            }
            _ => out.push(doc),
        }
    }
    out
}

pub(crate) fn read_documents(path: &PathBuf) -> anyhow::Result<Vec<Value>> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading standard input")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    serde_saphyr::from_multiple(&text).with_context(|| format!("parsing {}", path.display()))
}

async fn apply_one(
    karmada: &kube::Client,
    lists: &[ResourceList],
    object: &Value,
    default_namespace: &str,
    targets: &Targets,
) -> anyhow::Result<()> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() || name.is_empty() {
        bail!("every object needs apiVersion, kind and metadata.name");
    }
    let Some(resource) = discovery::resolve_kind(lists, api_version, kind) else {
        bail!("karmada does not serve {kind} in {api_version}");
    };
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or(default_namespace)
        .to_string();
    let mut object = object.clone();
    if resource.namespaced {
        object["metadata"]["namespace"] = namespace.clone().into();
        ensure_namespace(karmada, &namespace).await?;
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    object_api(karmada, &resource, &namespace)
        .patch(name, &params, &Patch::Apply(&object))
        .await
        .with_context(|| format!("applying {}/{name}", resource.qualified()))?;
    println!("{}/{name} serverside-applied", resource.kind_qualified());

    let policy = policy::propagation_policy(
        Selected {
            api_version,
            kind,
            name,
            namespace: if resource.namespaced { &namespace } else { "" },
            gvk: &resource.gvk_string(),
        },
        targets,
        false,
    );
    let policy_kind = policy["kind"].as_str().unwrap_or_default();
    let policy_name = policy["metadata"]["name"].as_str().unwrap_or_default();
    let policy_resource = discovery::resolve_kind(lists, "policy.karmada.io/v1alpha1", policy_kind)
        .context("karmada does not serve policy.karmada.io/v1alpha1")?;
    let policy_object: DynamicObject = serde_json::from_value(policy.clone())?;
    object_api(karmada, &policy_resource, &namespace)
        .patch(policy_name, &params, &Patch::Apply(&policy_object))
        .await
        .with_context(|| format!("applying {policy_kind} {policy_name}"))?;
    println!(
        "{}/{policy_name} serverside-applied",
        policy_resource.kind_qualified()
    );
    Ok(())
}

pub async fn run(args: ApplyArgs) -> anyhow::Result<()> {
    let targets = if args.all_clusters {
        Targets::All
    } else {
        Targets::Clusters(
            args.clusters
                .iter()
                .filter(|c| !c.is_empty())
                .cloned()
                .collect(),
        )
    };
    if targets == Targets::Clusters(Vec::new()) {
        bail!("give --all-clusters or -C CLUSTER[,CLUSTER...]");
    }
    let mut all = Vec::new();
    for file in &args.files {
        all.extend(objects(read_documents(file)?));
    }
    if all.is_empty() {
        bail!(
            "no objects in {}",
            args.files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let path = args.control_plane.path();
    let karmada = args.control_plane.client_at(&path).await?;
    let lists = discovery::lists(&karmada).await?;
    let namespace = args.namespace.as_deref().unwrap_or("default");
    let mut failed = 0;
    for object in &all {
        if let Err(err) = apply_one(&karmada, &lists, object, namespace, &targets).await {
            eprintln!("error: {err:#}");
            failed += 1;
        }
    }
    if failed > 0 {
        bail!("{failed} of {} object(s) could not be applied", all.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_are_flattened_and_empty_documents_skipped() {
        let docs = vec![
            json!({"kind": "Deployment", "metadata": {"name": "a"}}),
            Value::Null,
            json!({"kind": "List", "items": [{"kind": "Service"}, {"kind": "ConfigMap"}]}),
        ];
        let kinds: Vec<Value> = objects(docs)
            .into_iter()
            .map(|o| o["kind"].clone())
            .collect();
        assert_eq!(
            kinds,
            vec![json!("Deployment"), json!("Service"), json!("ConfigMap")]
        );
    }
}
