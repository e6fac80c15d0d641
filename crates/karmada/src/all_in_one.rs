//! `karmada all-in-one`: the API server, the controllers and the scheduler in one process. The components reach
//! the API through the router in memory (`kube::Client` over the in-process tower service: no socket, no TLS, no
//! HTTP framing), the same client code as across processes; everyone else — kubectl, karmadactl, Pull agents —
//! connects over HTTPS as usual. Flags are the three components' own, with one `/metrics` endpoint for the
//! controllers and the scheduler together.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use karmada_controllers::scheduler::SchedulerMetrics;
use tokio_util::sync::CancellationToken;

use crate::apiserver::{self, ApiserverArgs};
use crate::component::{self, LeaderElectionArgs};
use crate::controller_manager::{self, ControllerManagerOptions, Controllers};
use crate::features::{self, FeatureGates};
use crate::scheduler::{self, SchedulerClients, SchedulerOptions, SchedulerSettings};
use crate::scheduler_estimator::EstimatorConnectionArgs;

#[derive(Args, Debug)]
pub struct AllInOneArgs {
    #[command(flatten)]
    pub apiserver: ApiserverArgs,
    /// Where the controllers' and the scheduler's `/metrics` and `/healthz` are served; port 0 picks a free
    /// port (printed in the log). The API server's own metrics stay on its `/metrics`.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: SocketAddr,
    /// Once `/metrics` is bound, write its address (`host:port`) to this file: how a supervisor that let port 0
    /// pick one (`karmadactl local-up --monitoring`) finds it to scrape.
    #[arg(long)]
    pub metrics_address_file: Option<PathBuf>,
    #[command(flatten)]
    pub controllers: ControllerManagerOptions,
    #[command(flatten)]
    pub scheduler: SchedulerOptions,
    /// How the scheduler and the descheduler reach the clusters' scheduler estimators.
    #[command(flatten)]
    pub estimator: EstimatorConnectionArgs,
    #[arg(long, default_value = "", value_parser = FeatureGates::parse, help = features::help())]
    pub feature_gates: FeatureGates,
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
}

pub async fn run(args: AllInOneArgs) -> anyhow::Result<()> {
    // Its member clients write as the controller-manager does.
    karmada_controllers::runtime::client::name_component("karmada-controller-manager");
    let AllInOneArgs {
        apiserver: apiserver_args,
        metrics_bind_address,
        metrics_address_file,
        mut controllers,
        scheduler: scheduler_options,
        estimator,
        feature_gates,
        leader_election,
    } = args;
    let controller_election = leader_election.config("karmada-controller-manager")?;
    let scheduler_election = leader_election.config("karmada-scheduler")?;

    let server_cancel = CancellationToken::new();
    let apiserver = apiserver::start(&apiserver_args, server_cancel.clone(), true).await?;
    let client = apiserver.in_process_client("karmada-controller-manager");
    let scheduler_client = apiserver.in_process_client("karmada-scheduler");
    // Agents' certificates are signed with the API server's own CA unless another one is named.
    if let (None, None, Some(pki)) = (
        &controllers.cluster_signing_cert_file,
        &controllers.cluster_signing_key_file,
        &apiserver.pki_dir,
    ) {
        controllers.cluster_signing_cert_file = Some(pki.join("ca.crt"));
        controllers.cluster_signing_key_file = Some(pki.join("ca.key"));
    }
    let (stop_server, server_stopped) = tokio::sync::oneshot::channel::<&'static str>();
    let mut server = tokio::spawn(
        apiserver.run_until(async move { server_stopped.await.unwrap_or("stopping") }),
    );

    let components = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut server_ended = false;
    let outcome = async {
        // The API server's own /metrics has the process's process_* metrics.
        let mut registries = component::registries(false);
        let controllers = Controllers::new(
            client.clone(),
            &controllers,
            &feature_gates,
            &estimator,
            &mut registries,
        )?;
        let scheduler_metrics = SchedulerMetrics::register(&mut registries.metrics);
        component::serve_metrics(
            &mut tasks,
            metrics_bind_address,
            metrics_address_file.as_deref(),
            registries,
            components.child_token(),
        )
        .await?;
        controller_manager::spawn_controllers(
            &mut tasks,
            client.clone(),
            controllers,
            controller_election,
            components.child_token(),
        )
        .await?;
        let mut scheduler_failure = scheduler::spawn_scheduler(
            &mut tasks,
            SchedulerClients {
                work: scheduler_client,
                election: None,
            },
            SchedulerSettings {
                options: &scheduler_options,
                gates: &feature_gates,
                estimator: &estimator,
            },
            scheduler_metrics,
            scheduler_election,
            components.child_token(),
        )
        .await?;
        tracing::info!("karmada all-in-one started");
        tokio::select! {
            reason = crate::process::shutdown_requested(apiserver_args.exit_with_stdin) => {
                tracing::info!(reason, "shutting down");
                Ok(())
            }
            Some(err) = scheduler_failure.recv() => Err(err),
            served = &mut server => {
                server_ended = true;
                match served {
                    Ok(Ok(())) => Err(anyhow::anyhow!("the API server stopped serving")),
                    Ok(Err(err)) => Err(err),
                    Err(join) => Err(anyhow::Error::from(join)),
                }
            }
        }
    }
    .await;
    // Components first, so nothing they still write meets a stopped server.
    components.cancel();
    while tasks.join_next().await.is_some() {}
    let _ = stop_server.send("components stopped");
    if !server_ended {
        let served = server.await;
        if outcome.is_ok() {
            served??;
        }
    }
    server_cancel.cancel();
    outcome
}
