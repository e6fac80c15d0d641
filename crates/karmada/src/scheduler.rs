//! `karmada scheduler`: the scheduler runner (karmada-scheduler) against the API server named by a kubeconfig,
//! with Karmada's scheduler metrics on `/metrics` and `/healthz`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use karmada_controllers::runtime::leader_election::{LeaderElectionConfig, run_leader_elected};
use karmada_controllers::scheduler::{SchedulerConfig, SchedulerMetrics};
use tokio_util::sync::CancellationToken;

use crate::component::{self, LeaderElectionArgs};
use crate::features::{self, FeatureGates};
use crate::scheduler_estimator::EstimatorConnectionArgs;

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
    /// Once `/metrics` is bound, write its address (`host:port`) to this file: how a supervisor that let port 0
    /// pick one (`karmadactl local-up --monitoring`) finds it to scrape.
    #[arg(long)]
    pub metrics_address_file: Option<PathBuf>,
    #[command(flatten)]
    pub options: SchedulerOptions,
    #[command(flatten)]
    pub estimator: EstimatorConnectionArgs,
    #[arg(long, default_value = "", value_parser = FeatureGates::parse, help = features::help())]
    pub feature_gates: FeatureGates,
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
    /// Exit when standard input closes (for supervisors and tests).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

/// `--plugins`' help: Karmada's text with this build's plugins.
fn plugins_help() -> String {
    let names = karmada_scheduler::default_registry()
        .map(|registry| registry.names().join(","))
        .unwrap_or_default();
    format!(
        "A list of plugins to enable. '*' enables the built-in plugins that are on by default ({}), 'foo' enables the plugin named 'foo', '*,-foo' disables the plugin named 'foo'.\nAll built-in plugins: {names}.",
        karmada_scheduler::framework::DEFAULT_PLUGINS.join(",")
    )
}

/// What the scheduler is told, whichever process it runs in (`scheduler` or `all-in-one`).
#[derive(Args, Debug, Clone)]
pub struct SchedulerOptions {
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
    #[arg(long, value_delimiter = ',', default_value = "*", help = plugins_help())]
    pub plugins: Vec<String>,
    /// Enable calling cluster scheduler estimator for adjusting replicas.
    #[arg(long)]
    pub enable_scheduler_estimator: bool,
    /// Disable the scheduler estimator for clusters in pull mode, which takes effect only when
    /// enable-scheduler-estimator is true.
    #[arg(long)]
    pub disable_scheduler_estimator_in_pull_mode: bool,
}

impl SchedulerOptions {
    fn config(
        &self,
        client: &kube::Client,
        gates: &FeatureGates,
        estimator: &EstimatorConnectionArgs,
    ) -> SchedulerConfig {
        SchedulerConfig {
            scheduler_name: self.scheduler_name.clone(),
            enable_empty_workload_propagation: self.enable_empty_workload_propagation,
            workers: usize::from(self.concurrent_schedule_syncs),
            plugins: self.plugins.clone(),
            estimators: self
                .enable_scheduler_estimator
                .then(|| estimator.clients(client.clone())),
            skip_estimators_in_pull_mode: self.disable_scheduler_estimator_in_pull_mode,
            priority_scheduling: gates.enabled("PriorityBasedScheduling"),
            ..SchedulerConfig::default()
        }
    }
}

/// What the scheduler is told besides its options: the feature gates and how to reach estimators (flags
/// shared with the controller-manager in `all-in-one`).
pub struct SchedulerSettings<'a> {
    pub options: &'a SchedulerOptions,
    pub gates: &'a FeatureGates,
    pub estimator: &'a EstimatorConnectionArgs,
}

pub async fn run(args: SchedulerArgs) -> anyhow::Result<()> {
    karmada_controllers::runtime::client::name_component("karmada-scheduler");
    let client = component::kube_client(&args.kubeconfig, args.context.as_deref()).await?;
    let mut registries = component::registries(true);
    let metrics = SchedulerMetrics::register(&mut registries.metrics);
    let election = args.leader_election.config("karmada-scheduler")?;

    let cancel = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    component::serve_metrics(
        &mut tasks,
        args.metrics_bind_address,
        args.metrics_address_file.as_deref(),
        registries,
        cancel.child_token(),
    )
    .await?;
    // Lease renewals get their own connections, so a burst of scheduling requests cannot delay them.
    let election_client = match election {
        Some(_) => Some(component::kube_client(&args.kubeconfig, args.context.as_deref()).await?),
        None => None,
    };
    let mut failure = spawn_scheduler(
        &mut tasks,
        SchedulerClients {
            work: client,
            election: election_client,
        },
        SchedulerSettings {
            options: &args.options,
            gates: &args.feature_gates,
            estimator: &args.estimator,
        },
        metrics,
        election,
        cancel.child_token(),
    )
    .await?;
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

/// The scheduler's API clients: one for its work, and one for its Lease (the work client when `None`).
pub struct SchedulerClients {
    pub work: kube::Client,
    pub election: Option<kube::Client>,
}

/// Starts the scheduler on `tasks`, under `election` when given. The receiver yields the error that ends a term
/// which could not start (e.g. its framework), which should end the process.
pub async fn spawn_scheduler(
    tasks: &mut tokio::task::JoinSet<()>,
    clients: SchedulerClients,
    settings: SchedulerSettings<'_>,
    metrics: SchedulerMetrics,
    election: Option<LeaderElectionConfig>,
    cancel: CancellationToken,
) -> anyhow::Result<tokio::sync::mpsc::Receiver<anyhow::Error>> {
    let scheduler_config =
        settings
            .options
            .config(&clients.work, settings.gates, settings.estimator);
    let (failed, failure) = tokio::sync::mpsc::channel::<anyhow::Error>(1);
    let client = clients.work.clone();
    // One scheduling term: runs until leadership ends (or shutdown).
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
    match election {
        Some(config) => {
            let election_client = clients.election.unwrap_or(clients.work);
            component::ensure_namespace(&election_client, &config.lease_namespace).await?;
            tasks.spawn(run_leader_elected(election_client, config, cancel, term));
        }
        None => {
            tasks.spawn(term(cancel));
        }
    }
    Ok(failure)
}
