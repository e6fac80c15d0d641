//! `karmadactl unjoin NAME [--wait]`: deletes the Cluster and its Secret. The cluster controller then removes
//! `karmada-es-<name>` (and the cluster's Works in it) before it lets the Cluster go; `--wait` waits for that.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams};

use super::join::{CLUSTER_NAMESPACE, clusters};
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
    if cluster.metadata.deletion_timestamp.is_none() {
        api.delete(name, &DeleteParams::background())
            .await
            .with_context(|| format!("deleting cluster {name}"))?;
    }
    println!("deleted cluster {name} in karmada");
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
    match Api::<Secret>::namespaced(karmada.clone(), &secret_ns)
        .delete(&secret_name, &DeleteParams::background())
        .await
    {
        Ok(_) => println!("deleted secret {secret_ns}/{secret_name} in karmada"),
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e).context(format!("deleting secret {secret_ns}/{secret_name}")),
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
