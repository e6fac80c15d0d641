//! `karmada controller-manager`: runs the control plane's controllers against the API server named by a
//! kubeconfig. For now: the cluster controller and the cluster status controller (Push clusters), and the
//! cluster gauges on `/metrics`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use karmada_controllers::cluster::cluster_controller::run_cluster_controller;
use karmada_controllers::cluster::health::Thresholds;
use karmada_controllers::cluster::metrics::ClusterMetrics;
use karmada_controllers::cluster::status_controller::{
    StatusControllerConfig, run_status_controller,
};
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug)]
pub struct ControllerManagerArgs {
    /// Kubeconfig of the Karmada API server.
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// Context in the kubeconfig (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// How often the status of each Push cluster is probed and posted, e.g. 10s, 500ms.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub cluster_status_update_frequency: Duration,
    /// How long a failing cluster must stay failing before Ready turns False.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub cluster_failure_threshold: Duration,
    /// How long a recovered cluster must stay healthy before Ready turns True.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub cluster_success_threshold: Duration,
    /// How often the cluster controller reconciles every Cluster (namespace, finalizer, taints).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub cluster_monitor_period: Duration,
    /// Where `/metrics` is served; port 0 picks a free port (printed in the log).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: SocketAddr,
    /// Exit when standard input closes (for supervisors and tests).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let accepted = "a positive duration such as 10s, 500ms or 1m30s";
    let parsed: jiff::SignedDuration = text
        .parse()
        .map_err(|e| format!("{e}; expected {accepted}"))?;
    let duration = Duration::try_from(parsed).map_err(|_| format!("expected {accepted}"))?;
    if duration.is_zero() {
        return Err(format!("expected {accepted}"));
    }
    Ok(duration)
}

pub async fn run(args: ControllerManagerArgs) -> anyhow::Result<()> {
    let kubeconfig = kube::config::Kubeconfig::read_from(&args.kubeconfig)
        .with_context(|| format!("reading kubeconfig {}", args.kubeconfig.display()))?;
    let options = kube::config::KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .with_context(|| format!("using kubeconfig {}", args.kubeconfig.display()))?;
    let client = kube::Client::try_from(config).context("building the API client")?;

    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ClusterMetrics::register(&mut registry);
    let registry = Arc::new(registry);
    let listener = tokio::net::TcpListener::bind(args.metrics_bind_address)
        .await
        .with_context(|| {
            format!(
                "binding --metrics-bind-address {}",
                args.metrics_bind_address
            )
        })?;
    tracing::info!(address = %listener.local_addr()?, "serving metrics");

    let cancel = CancellationToken::new();
    let status_config = StatusControllerConfig {
        update_frequency: args.cluster_status_update_frequency,
        thresholds: Thresholds {
            success: jiff::SignedDuration::try_from(args.cluster_success_threshold)?,
            failure: jiff::SignedDuration::try_from(args.cluster_failure_threshold)?,
        },
        probe_timeout: args
            .cluster_status_update_frequency
            .clamp(Duration::from_secs(1), Duration::from_secs(5)),
    };
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(run_cluster_controller(
        client.clone(),
        args.cluster_monitor_period,
        cancel.child_token(),
    ));
    tasks.spawn(run_status_controller(
        client,
        status_config,
        metrics,
        cancel.child_token(),
    ));
    let metrics_cancel = cancel.child_token();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let registry = Arc::clone(&registry);
            async move {
                let mut body = String::new();
                match prometheus_client::encoding::text::encode(&mut body, &registry) {
                    Ok(()) => (
                        [(
                            http::header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        body,
                    ),
                    Err(_) => (
                        [(http::header::CONTENT_TYPE, "text/plain")],
                        "encoding metrics failed".to_string(),
                    ),
                }
            }
        }),
    );
    tasks.spawn(async move {
        let shutdown = async move { metrics_cancel.cancelled().await };
        if let Err(err) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::warn!(%err, "metrics server stopped");
        }
    });
    tracing::info!("controller-manager started");
    let reason = crate::process::shutdown_requested(args.exit_with_stdin).await;
    tracing::info!(reason, "shutting down");
    cancel.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}
