//! `karmadactl promote KIND NAME [-n NS] -C CLUSTER`: takes an object that already runs in a member cluster
//! under Karmada's management. The object becomes a resource template in the control plane (without status and
//! server fields, annotated `work.karmada.io/conflict-resolution: overwrite`) and a (Cluster)PropagationPolicy
//! named by Karmada's promote rule sends it back to that cluster with `conflictResolution: Overwrite`, so the
//! member's object is adopted rather than refused.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};

use super::get::{get_value, is_not_found, member_client};
use crate::client;
use crate::client::ControlPlaneFlags;
use crate::discovery::{self, Resource};
use karmada_controllers::promote::{self as policy, Selected, Targets};

#[derive(Args, Debug)]
pub struct PromoteArgs {
    /// Resource type: deployment, service, clusterrole, ...
    pub resource: String,
    pub name: String,
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The member cluster the object is read from (and propagated to).
    #[arg(short = 'C', long = "cluster")]
    pub cluster: String,
    /// Read the member with this kubeconfig instead of the Cluster's credentials in the control plane.
    #[arg(long)]
    pub cluster_kubeconfig: Option<PathBuf>,
    #[arg(long)]
    pub cluster_context: Option<String>,
    /// Print what would be created (as YAML) without creating it.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

pub fn object_api(
    client: &kube::Client,
    resource: &Resource,
    namespace: &str,
) -> Api<DynamicObject> {
    if resource.namespaced {
        Api::namespaced_with(client.clone(), namespace, &resource.api_resource())
    } else {
        Api::all_with(client.clone(), &resource.api_resource())
    }
}

pub async fn run(args: PromoteArgs) -> anyhow::Result<()> {
    let path = args.control_plane.path();
    let karmada = args.control_plane.client_at(&path).await?;
    let cluster = args.cluster.as_str();
    let member = match &args.cluster_kubeconfig {
        Some(kc) => {
            if super::join::clusters(&karmada)
                .get_opt(cluster)
                .await?
                .is_none()
            {
                bail!(
                    "cluster {cluster:?} is not joined to karmada (see `karmadactl get clusters`)"
                );
            }
            client::from_kubeconfig(kc, args.cluster_context.as_deref()).await?
        }
        None => member_client(&karmada, cluster, Some(&path)).await?,
    };
    let resource = discovery::find(&member, &args.resource)
        .await
        .with_context(|| format!("in cluster {cluster}"))?;
    let namespace = args.namespace.as_deref().unwrap_or("default");
    let object = match get_value(
        &member,
        &resource.path(Some(namespace), Some(&args.name)),
        None,
    )
    .await
    {
        Ok(o) => o,
        Err(err) if is_not_found(&err) => bail!(
            "{} {:?} not found in cluster {cluster}{}",
            resource.qualified(),
            args.name,
            if resource.namespaced {
                format!(" (namespace {namespace})")
            } else {
                String::new()
            }
        ),
        Err(err) => return Err(err.context(format!("reading the object from cluster {cluster}"))),
    };

    let lists = discovery::lists(&karmada).await?;
    let Some(in_karmada) = discovery::resolve_kind(&lists, &resource.api_version(), &resource.kind)
    else {
        bail!(
            "karmada does not serve {} ({}); install its CRD in the control plane first",
            resource.qualified(),
            resource.api_version()
        );
    };
    let template = policy::template_from_member(&object);
    let ns = if resource.namespaced { namespace } else { "" };
    let policy = policy::propagation_policy(
        Selected {
            api_version: &resource.api_version(),
            kind: &resource.kind,
            name: &args.name,
            namespace: ns,
            gvk: &resource.gvk_string(),
        },
        &Targets::Clusters(vec![cluster.to_string()]),
        true,
    );
    if args.dry_run {
        print!("{}", serde_saphyr::to_string(&template)?);
        println!("---");
        print!("{}", serde_saphyr::to_string(&policy)?);
        return Ok(());
    }

    let templates = object_api(&karmada, &in_karmada, namespace);
    if templates.get_opt(&args.name).await?.is_some() {
        bail!(
            "{} {:?} already exists in karmada; nothing to promote",
            resource.qualified(),
            args.name
        );
    }
    if resource.namespaced {
        ensure_namespace(&karmada, namespace).await?;
    }
    let label = if resource.namespaced {
        format!("{namespace}/{}", args.name)
    } else {
        args.name.clone()
    };
    let created: DynamicObject = serde_json::from_value(template)?;
    templates
        .create(&PostParams::default(), &created)
        .await
        .with_context(|| format!("creating the resource template {label} in karmada"))?;
    println!("ResourceTemplate ({label}) is created successfully");

    let policy_kind = policy["kind"].as_str().unwrap_or_default().to_string();
    let policy_name = policy["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let policy_resource =
        discovery::resolve_kind(&lists, "policy.karmada.io/v1alpha1", &policy_kind)
            .context("karmada does not serve policy.karmada.io/v1alpha1")?;
    let policies = object_api(&karmada, &policy_resource, namespace);
    let policy_object: DynamicObject = serde_json::from_value(policy)?;
    match policies
        .create(&PostParams::default(), &policy_object)
        .await
    {
        Ok(_) => {
            let shown = if resource.namespaced {
                format!("{namespace}/{policy_name}")
            } else {
                policy_name
            };
            println!("{policy_kind} ({shown}) is created successfully");
        }
        Err(kube::Error::Api(s)) if s.code == 409 => {
            println!("{policy_kind} {policy_name} already exists; it was kept");
        }
        Err(err) => {
            // Without its policy the template would sit unpropagated: take it back.
            let _ = templates.delete(&args.name, &DeleteParams::default()).await;
            return Err(anyhow::Error::from(err).context(format!(
                "creating {policy_kind} {policy_name}; the resource template was removed again"
            )));
        }
    }
    Ok(())
}

/// Creates the namespace in the control plane unless it exists.
pub async fn ensure_namespace(karmada: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(karmada.clone());
    if namespaces.get_opt(namespace).await?.is_some() {
        return Ok(());
    }
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}}))?;
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(err) => {
            Err(anyhow::Error::from(err).context(format!("creating namespace {namespace}")))
        }
    }
}
