//! `karmada scheduler`: the scheduler runner (karmada-scheduler) against the API server named by a kubeconfig,
//! with Karmada's scheduler metrics on `/metrics` and `/healthz`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use karmada_controllers::runtime::leader_election::run_leader_elected;
use karmada_controllers::scheduler::{SchedulerConfig, SchedulerMetrics};
use tokio_util::sync::CancellationToken;

use crate::component::{self, LeaderElectionArgs};

#[derive(Args, Debug)]
pub struct SchedulerArgs {
    /// Kubeconfig of the Karmada API server.
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// Context in the kubeconfig (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Where `/metrics` and `/healthz` are served; port 0 picks a free port (printed in the log).
    #[arg(long, default_value = "127.0.0.1:10351")]
    pub metrics_bind_address: SocketAddr,
    /// Bindings whose spec.schedulerName names another scheduler are left to it.
    #[arg(long, default_value = "default-scheduler")]
    pub scheduler_name: String,
    /// Keep selected clusters that were assigned 0 replicas in spec.clusters.
    #[arg(long)]
    pub enable_empty_workload_propagation: bool,
    /// Bindings scheduled at once. Karmada schedules one at a time; each of ours mostly waits on its two
    /// writes (spec, then status), so several in flight keep pace with a burst of new bindings (64 kept pace no
    /// better than 32 in the propagation benchmark).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_schedule_syncs: u16,
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
    /// Exit when standard input closes (for supervisors and tests).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

pub async fn run(args: SchedulerArgs) -> anyhow::Result<()> {
    let client = component::kube_client(&args.kubeconfig, args.context.as_deref()).await?;
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = SchedulerMetrics::register(&mut registry);
    let scheduler_config = SchedulerConfig {
        scheduler_name: args.scheduler_name.clone(),
        enable_empty_workload_propagation: args.enable_empty_workload_propagation,
        workers: usize::from(args.concurrent_schedule_syncs),
        ..SchedulerConfig::default()
    };
    let election = args.leader_election.config("karmada-scheduler")?;

    let cancel = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    let serve =
        component::serve_metrics(args.metrics_bind_address, registry, cancel.child_token()).await?;
    tasks.spawn(serve);
    // One scheduling term: runs until leadership ends (or shutdown); a start failure ends the process.
    let (failed, mut failure) = tokio::sync::mpsc::channel::<anyhow::Error>(1);
    let term = move |term_cancel: CancellationToken| {
        let client = client.clone();
        let config = scheduler_config.clone();
        let metrics = metrics.clone();
        let failed = failed.clone();
        async move {
            if let Err(err) =
                karmada_controllers::scheduler::run(client, config, metrics, term_cancel).await
            {
                let _ = failed.send(anyhow::Error::from(err)).await;
            }
        }
    };
    let work_cancel = cancel.child_token();
    match election {
        Some(config) => {
            let election_client =
                component::kube_client(&args.kubeconfig, args.context.as_deref()).await?;
            component::ensure_namespace(&election_client, &config.lease_namespace).await?;
            tasks.spawn(async move {
                run_leader_elected(election_client, config, work_cancel, term).await;
                Ok(())
            });
        }
        None => {
            tasks.spawn(async move {
                term(work_cancel).await;
                Ok(())
            });
        }
    }
    tracing::info!("scheduler started");
    let outcome = tokio::select! {
        reason = crate::process::shutdown_requested(args.exit_with_stdin) => {
            tracing::info!(reason, "shutting down");
            Ok(())
        }
        // The scheduler failing to start (e.g. its framework) ends the process with the error.
        Some(err) = failure.recv() => Err(err),
    };
    cancel.cancel();
    while tasks.join_next().await.is_some() {}
    outcome
}
