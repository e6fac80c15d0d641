//! `karmada scheduler-estimator`: Karmada's karmada-scheduler-estimator for one member cluster — its gRPC service
//! (`MaxAvailableReplicas`, `GetUnschedulableReplicas`) answered from the member's Nodes, Pods and
//! ResourceQuotas, with `/metrics`. With `--karmada-kubeconfig` it also publishes itself to the control plane
//! as Karmada's schedulers find estimators: the ExternalName Service `karmada-scheduler-estimator-<cluster>` in
//! `karmada-system`, whose port 10352 targets the port it serves on (so `--server-port 0` works).
//!
//! Also here: the flags schedulers and descheduler use to reach estimators ([`EstimatorConnectionArgs`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::Service;
use karmada_scheduler_estimator::metrics::EstimatorMetrics;
use karmada_scheduler_estimator::{
    DEFAULT_PORT, DEFAULT_SERVICE_NAMESPACE, DEFAULT_SERVICE_PREFIX, EstimatorClientConfig,
    EstimatorClients, EstimatorService, MemberState,
};
use kube::Api;
use kube::api::{Patch, PatchParams};
use tokio_util::sync::CancellationToken;

use crate::component::{self, parse_duration};
use crate::features::{self, FeatureGates};

/// How schedulers and the descheduler reach the estimators (Karmada's flag names and defaults).
#[derive(Args, Debug, Clone)]
pub struct EstimatorConnectionArgs {
    /// Specifies the timeout period of calling the scheduler estimator service.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub scheduler_estimator_timeout: Duration,
    /// The namespace to be used for discovering scheduler estimator services.
    #[arg(long, default_value = DEFAULT_SERVICE_NAMESPACE)]
    pub scheduler_estimator_service_namespace: String,
    /// The prefix of scheduler estimator service name.
    #[arg(long, default_value = DEFAULT_SERVICE_PREFIX)]
    pub scheduler_estimator_service_prefix: String,
    /// The port of the estimator Services (their target port is where each estimator serves).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub scheduler_estimator_port: u16,
    /// How long an estimator's answer is reused for bindings with the same replica requirements, less what the
    /// scheduler placed there meanwhile; 0 asks for every binding.
    #[arg(long, default_value = "1s", value_parser = parse_duration_or_zero)]
    pub scheduler_estimator_cache_ttl: Duration,
}

fn parse_duration_or_zero(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    parse_duration(text)
}

impl EstimatorConnectionArgs {
    pub fn config(&self) -> EstimatorClientConfig {
        EstimatorClientConfig {
            namespace: self.scheduler_estimator_service_namespace.clone(),
            prefix: self.scheduler_estimator_service_prefix.clone(),
            port: self.scheduler_estimator_port,
            timeout: self.scheduler_estimator_timeout,
            cache_ttl: self.scheduler_estimator_cache_ttl,
        }
    }

    /// Clients finding estimators through `control_plane`'s Services.
    pub fn clients(&self, control_plane: kube::Client) -> Arc<EstimatorClients> {
        EstimatorClients::new(control_plane, self.config())
    }
}

#[derive(Args, Debug)]
pub struct SchedulerEstimatorArgs {
    /// Kubeconfig of the member cluster the estimator serves for.
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// Context in the kubeconfig (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Name of member cluster that the estimator serves for.
    #[arg(long = "cluster-name", visible_alias = "cluster")]
    pub cluster_name: String,
    /// The port on which to serve gRPC; 0 picks a free port (logged, and published with --karmada-kubeconfig).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub server_port: u16,
    /// The address gRPC is served on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,
    /// Where `/metrics` and `/healthz` are served; port 0 picks a free port (printed in the log).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub metrics_bind_address: SocketAddr,
    /// Once `/metrics` is bound, write its address (`host:port`) to this file (how `karmadactl local-up
    /// --monitoring` finds it to scrape).
    #[arg(long)]
    pub metrics_address_file: Option<PathBuf>,
    /// Kubeconfig of the Karmada control plane: publish this estimator there as the ExternalName Service
    /// schedulers look for.
    #[arg(long)]
    pub karmada_kubeconfig: Option<PathBuf>,
    /// Context in --karmada-kubeconfig (default: its current context).
    #[arg(long)]
    pub karmada_context: Option<String>,
    #[arg(long, default_value = "", value_parser = FeatureGates::parse, help = features::help())]
    pub feature_gates: FeatureGates,
    /// Exit when standard input closes (for supervisors and tests).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

pub async fn run(args: SchedulerEstimatorArgs) -> anyhow::Result<()> {
    karmada_controllers::runtime::client::name_component("karmada-scheduler-estimator");
    let member = component::kube_client(&args.kubeconfig, args.context.as_deref()).await?;
    let mut registries = component::registries(true);
    let metrics = EstimatorMetrics::register(&mut registries.metrics);
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
    let state = Arc::new(MemberState::new());
    tasks.spawn(karmada_scheduler_estimator::state::run_watches(
        member.clone(),
        Arc::clone(&state),
        cancel.child_token(),
    ));
    let address = SocketAddr::new(args.bind_address, args.server_port);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding --server-port {address}"))?;
    let bound = listener.local_addr()?;
    tracing::info!(address = %bound, cluster = %args.cluster_name, "serving the scheduler estimator");
    let service = EstimatorService::new(
        &args.cluster_name,
        state,
        Some(member),
        args.feature_gates.enabled("ResourceQuotaEstimate"),
        metrics,
    );
    let grpc_cancel = cancel.child_token();
    tasks.spawn(async move {
        if let Err(err) = karmada_scheduler_estimator::serve(listener, service, grpc_cancel).await {
            tracing::warn!(%err, "gRPC server stopped");
        }
    });
    if let Some(kubeconfig) = &args.karmada_kubeconfig {
        let control_plane =
            component::kube_client(kubeconfig, args.karmada_context.as_deref()).await?;
        publish(&control_plane, &args.cluster_name, bound)
            .await
            .context("publishing the estimator Service to the control plane")?;
    }
    let reason = crate::process::shutdown_requested(args.exit_with_stdin).await;
    tracing::info!(reason, "shutting down");
    cancel.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Creates or updates the ExternalName Service Karmada's schedulers resolve for `cluster`.
async fn publish(client: &kube::Client, cluster: &str, address: SocketAddr) -> anyhow::Result<()> {
    component::ensure_namespace(client, DEFAULT_SERVICE_NAMESPACE).await?;
    let name = format!("{DEFAULT_SERVICE_PREFIX}-{cluster}");
    let service: Service = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": DEFAULT_SERVICE_NAMESPACE,
                     "labels": {"cluster": cluster, "app": DEFAULT_SERVICE_PREFIX}},
        "spec": {"type": "ExternalName", "externalName": address.ip().to_string(),
                 "ports": [{"name": "grpc", "protocol": "TCP", "port": DEFAULT_PORT, "targetPort": address.port()}]}
    }))?;
    let services: Api<Service> = Api::namespaced(client.clone(), DEFAULT_SERVICE_NAMESPACE);
    services
        .patch(
            &name,
            &PatchParams::apply("karmada-scheduler-estimator").force(),
            &Patch::Apply(&service),
        )
        .await
        .with_context(|| format!("applying Service {DEFAULT_SERVICE_NAMESPACE}/{name}"))?;
    tracing::info!(service = %name, %address, "published the estimator");
    Ok(())
}
