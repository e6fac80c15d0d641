//! `karmadactl unjoin NAME [--wait] [--cluster-kubeconfig PATH [--force]] [--cluster-namespace NS] [--dry-run]`:
//! deletes the Cluster and its Secret.
//! The cluster controller then removes `karmada-es-<name>` (and the cluster's Works in it) before it lets the
//! Cluster go; `--wait` waits for that. Given the member's kubeconfig, it also removes what join created there, as
//! Karmada does: the ClusterRoleBinding and ClusterRole, the ServiceAccount, and the namespace join put it in
//! (`--cluster-namespace`, default `karmada-cluster`, with the token Secret in it, so the credential join stored
//! stops working); `--force` carries on past errors there. `--dry-run` reads what is there and prints what would
//! be deleted, deleting nothing. A Pull cluster is refused: `karmadactl unregister` removes those.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams};

use super::join::{
    CLUSTER_NAMESPACE, clusters, member_client, member_object_names, parse_cluster_namespace,
    read_member_kubeconfig,
};
use crate::client;

#[derive(Args, Debug)]
pub struct UnjoinArgs {
    /// Name of the member cluster.
    pub name: String,
    #[arg(long, alias = "karmada-config")]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long = "karmada-context")]
    pub karmada_context: Option<String>,
    /// Wait until the Cluster is gone (its execution namespace cleaned up), at most this long.
    #[arg(long, num_args = 0..=1, default_missing_value = "60s", value_parser = parse_wait)]
    pub wait: Option<Duration>,
    /// Kubeconfig of the member cluster: also remove the ServiceAccount, RBAC and namespace join created there.
    #[arg(long)]
    pub cluster_kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig (default: its current context).
    #[arg(long)]
    pub cluster_context: Option<String>,
    /// Report failures to clean up the member and carry on.
    #[arg(long)]
    pub force: bool,
    /// Namespace in the member that join put the ServiceAccount and its token in.
    #[arg(long, default_value = CLUSTER_NAMESPACE, value_parser = parse_cluster_namespace)]
    pub cluster_namespace: String,
    /// Check the cluster and the member, and print what would be deleted without deleting anything.
    #[arg(long)]
    pub dry_run: bool,
}

fn parse_wait(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration = text
        .parse()
        .map_err(|e| format!("{e}; expected a duration such as 60s or 2m"))?;
    Duration::try_from(parsed).map_err(|_| "expected a positive duration such as 60s".to_string())
}

pub async fn run(args: UnjoinArgs) -> anyhow::Result<()> {
    let name = args.name.as_str();
    let path = client::kubeconfig_path(args.kubeconfig.as_deref());
    let karmada = client::from_kubeconfig(&path, args.karmada_context.as_deref()).await?;
    let api = clusters(&karmada);
    let Some(cluster) = api.get_opt(name).await.context("reading the cluster")? else {
        bail!("cluster {name:?} not found; `karmadactl get clusters` lists the joined clusters");
    };
    if cluster
        .data
        .pointer("/spec/syncMode")
        .and_then(|v| v.as_str())
        == Some("Pull")
    {
        bail!(
            "cluster {name:?} is a Pull mode member cluster; use `karmadactl unregister {name}` to unregister it"
        );
    }
    // Reach the member before deleting anything, so a wrong kubeconfig leaves everything as it was.
    let member = match &args.cluster_kubeconfig {
        Some(path) => {
            let kubeconfig = read_member_kubeconfig(path)?;
            Some(member_client(kubeconfig, path, args.cluster_context.as_deref()).await?)
        }
        None => None,
    };
    let secret_name = cluster
        .data
        .pointer("/spec/secretRef/name")
        .and_then(|v| v.as_str())
        .unwrap_or(name)
        .to_string();
    let secret_ns = cluster
        .data
        .pointer("/spec/secretRef/namespace")
        .and_then(|v| v.as_str())
        .unwrap_or(CLUSTER_NAMESPACE)
        .to_string();
    if args.dry_run {
        for line in planned_deletions(
            name,
            &secret_ns,
            &secret_name,
            member.is_some(),
            &args.cluster_namespace,
        ) {
            println!("would delete {line}");
        }
        println!("cluster({name}) is unjoined successfully (dry run)");
        return Ok(());
    }
    if cluster.metadata.deletion_timestamp.is_none() {
        api.delete(name, &DeleteParams::background())
            .await
            .with_context(|| format!("deleting cluster {name}"))?;
    }
    println!("deleted cluster {name} in karmada");
    match Api::<Secret>::namespaced(karmada.clone(), &secret_ns)
        .delete(&secret_name, &DeleteParams::background())
        .await
    {
        Ok(_) => println!("deleted secret {secret_ns}/{secret_name} in karmada"),
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e).context(format!("deleting secret {secret_ns}/{secret_name}")),
    }
    if let Some(member) = member {
        clean_up_member(&member, name, &args.cluster_namespace, args.force).await?;
    }
    if let Some(timeout) = args.wait {
        let deadline = Instant::now() + timeout;
        while api.get_opt(name).await?.is_some() {
            if Instant::now() >= deadline {
                bail!(
                    "cluster {name:?} still exists after {}s: is `karmada controller-manager` running? It removes \
                     karmada-es-{name} and then the cluster",
                    timeout.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    println!("cluster({name}) is unjoined successfully");
    Ok(())
}

/// What unjoin deletes, in order, as `kind [namespace/]name in <where>`.
fn planned_deletions(
    name: &str,
    secret_ns: &str,
    secret_name: &str,
    member: bool,
    namespace: &str,
) -> Vec<String> {
    let mut lines = vec![
        format!("cluster {name} in karmada"),
        format!("secret {secret_ns}/{secret_name} in karmada"),
    ];
    if member {
        let (sa_name, role_name) = member_object_names(name);
        lines.extend([
            format!("clusterrolebinding {role_name} in the member cluster"),
            format!("clusterrole {role_name} in the member cluster"),
            format!("serviceaccount {namespace}/{sa_name} in the member cluster"),
            format!("namespace {namespace} in the member cluster"),
        ]);
    }
    lines
}

/// Deletes what join created in the member, newest first; what is already gone is fine.
async fn clean_up_member(
    member: &kube::Client,
    name: &str,
    namespace: &str,
    force: bool,
) -> anyhow::Result<()> {
    let (sa_name, role_name) = member_object_names(name);
    let dp = DeleteParams::background();
    let result = Api::<ClusterRoleBinding>::all(member.clone())
        .delete(&role_name, &dp)
        .await
        .map(|_| ());
    deleted(&format!("clusterrolebinding {role_name}"), result, force)?;
    let result = Api::<ClusterRole>::all(member.clone())
        .delete(&role_name, &dp)
        .await
        .map(|_| ());
    deleted(&format!("clusterrole {role_name}"), result, force)?;
    let result = Api::<ServiceAccount>::namespaced(member.clone(), namespace)
        .delete(&sa_name, &dp)
        .await
        .map(|_| ());
    deleted(
        &format!("serviceaccount {namespace}/{sa_name}"),
        result,
        force,
    )?;
    let result = Api::<Namespace>::all(member.clone())
        .delete(namespace, &dp)
        .await
        .map(|_| ());
    deleted(&format!("namespace {namespace}"), result, force)
}

/// Reports one member-side deletion; a failure stops unjoin unless `force`.
fn deleted(what: &str, result: Result<(), kube::Error>, force: bool) -> anyhow::Result<()> {
    match result {
        Ok(()) => println!("deleted {what} in the member cluster"),
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) if force => eprintln!("warning: could not delete {what} in the member cluster: {e}"),
        Err(e) => {
            return Err(anyhow::Error::from(e).context(format!(
                "deleting {what} in the member cluster; rerun with --force to carry on past it"
            )));
        }
    }
    Ok(())
}
