//! `karmadactl unregister NAME`: stops the local agent `register` started and deletes the Pull cluster.
//!
//! The Cluster is deleted first, with the administrator's kubeconfig (the agent's identity may not delete it),
//! while the agent still runs: the cluster controller removes `karmada-es-NAME`, and the agent's execution
//! controller deletes what each Work applied and releases the Work. Garbage collection removes the agent's
//! Lease, ClusterRole and bindings (owned by the Cluster). Once the Cluster is gone (or `--wait` ran out) the
//! agent is stopped and its local files removed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use kube::api::DeleteParams;

use super::init::DEFAULT_DATA_DIR;
use super::join::clusters;
use super::register::agent_process::{self, agent_dir};
use crate::client;

#[derive(Args, Debug)]
pub struct UnregisterArgs {
    /// Name of the member cluster.
    pub name: String,
    /// The directory `register` used (the agent lives under agents/NAME/).
    #[arg(long = "karmada-data", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Kubeconfig of the Karmada control plane (an administrator's).
    #[arg(long, alias = "karmada-config")]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long = "karmada-context")]
    pub karmada_context: Option<String>,
    /// How long to wait for the Cluster (and the Works its agent cleans up) to be gone.
    #[arg(long, default_value = "60s", value_parser = parse_wait)]
    pub wait: Duration,
}

fn parse_wait(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration = text
        .parse()
        .map_err(|e| format!("{e}; expected a duration such as 60s or 2m"))?;
    Duration::try_from(parsed).map_err(|_| "expected a positive duration such as 60s".to_string())
}

pub async fn run(args: UnregisterArgs) -> anyhow::Result<()> {
    let name = args.name.as_str();
    let path = client::kubeconfig_path(args.kubeconfig.as_deref());
    let karmada = client::from_kubeconfig(&path, args.karmada_context.as_deref()).await?;
    let api = clusters(&karmada);
    let cluster = api.get_opt(name).await.context("reading the cluster")?;
    let dir = agent_dir(&args.data_dir, name);
    if cluster.is_none() && !dir.exists() {
        bail!(
            "cluster {name:?} not found in Karmada and no agent for it under {}",
            args.data_dir.display()
        );
    }
    if let Some(cluster) = &cluster {
        let mode = cluster
            .data
            .pointer("/spec/syncMode")
            .and_then(|m| m.as_str())
            .unwrap_or("Push");
        if mode != "Pull" {
            bail!("cluster {name:?} is in {mode} mode; remove it with `karmadactl unjoin {name}`");
        }
    }
    let mut gone = true;
    if let Some(cluster) = cluster {
        if cluster.metadata.deletion_timestamp.is_none() {
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("deleting cluster {name}")),
            }
        }
        println!("deleted cluster {name} in karmada");
        let deadline = Instant::now() + args.wait;
        while api.get_opt(name).await?.is_some() {
            if Instant::now() >= deadline {
                gone = false;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    if agent_process::stop(&dir).await? {
        println!("stopped karmada-agent of cluster {name}");
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    if !gone {
        bail!(
            "cluster {name:?} still exists after {}s: is `karmada controller-manager` running? It removes \
             karmada-es-{name} and then the cluster; Works whose agent is gone keep their finalizer",
            args.wait.as_secs()
        );
    }
    println!("cluster({name}) is unregistered successfully");
    Ok(())
}
