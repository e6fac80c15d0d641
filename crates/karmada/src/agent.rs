//! `karmada agent`: the Pull-mode agent of one member cluster (Karmada's karmada-agent).
//!
//! It reaches the control plane with its own identity (`system:karmada:agent:<cluster>`, the certificate
//! `karmadactl register` obtained), which RBAC confines to this cluster's objects. It:
//! - probes its member and posts the Cluster's status every `--cluster-status-update-frequency` (the same round
//!   as the controller-manager's for Push clusters: `status_controller::sync_cluster_status`);
//! - renews the Lease `karmada-cluster/<cluster>` every `--cluster-lease-duration` / 4, which is what tells the
//!   control plane that this agent is alive;
//! - runs the execution and work status controllers for exactly this cluster (Works in `karmada-es-<cluster>`),
//!   and the service-export controller, which reports the member's exported Services there.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use jiff::SignedDuration;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use karmada_controllers::cluster::api::{clusters, to_cluster};
use karmada_controllers::cluster::health::{ReadyDebouncer, Thresholds};
use karmada_controllers::cluster::metrics::ClusterMetrics;
use karmada_controllers::cluster::status_controller::{
    StatusControllerConfig, sync_cluster_status,
};
use karmada_controllers::execution::{self, ExecutionConfig, ExecutionMetrics, ServedClusters};
use karmada_controllers::runtime::MemberClients;
use kube::api::{Api, PostParams};
use tokio_util::sync::CancellationToken;

/// Namespace of the cluster Leases.
const LEASE_NAMESPACE: &str = "karmada-cluster";

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// Kubeconfig of the Karmada control plane, with this agent's credentials.
    #[arg(long)]
    pub karmada_kubeconfig: PathBuf,
    #[arg(long)]
    pub karmada_context: Option<String>,
    /// Name of the member cluster this agent serves.
    #[arg(long)]
    pub cluster_name: String,
    /// Kubeconfig of the member cluster.
    #[arg(long)]
    pub cluster_kubeconfig: PathBuf,
    #[arg(long)]
    pub cluster_context: Option<String>,
    /// How often the member is probed and the Cluster status posted.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub cluster_status_update_frequency: Duration,
    /// The Lease's duration; it is renewed every quarter of it.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub cluster_lease_duration: Duration,
    /// How long a failing member must stay failing before Ready turns False.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub cluster_failure_threshold: Duration,
    /// How long a recovered member must stay healthy before Ready turns True.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub cluster_success_threshold: Duration,
    /// Where `/metrics` and `/healthz` are served; port 0 picks a free port (printed in the log).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: std::net::SocketAddr,
    /// Once `/metrics` is bound, write its address (`host:port`) to this file: how a supervisor that let port 0
    /// pick one (`karmadactl local-up --monitoring`) finds it to scrape.
    #[arg(long)]
    pub metrics_address_file: Option<PathBuf>,
    /// Works of this cluster the agent applies, and reflects the status of, at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_work_syncs: u16,
    /// Exit when standard input closes (for supervisors and tests).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let accepted = "a positive duration such as 10s, 500ms or 1m30s";
    let parsed: SignedDuration = text
        .parse()
        .map_err(|e| format!("{e}; expected {accepted}"))?;
    let duration = Duration::try_from(parsed).map_err(|_| format!("expected {accepted}"))?;
    if duration.is_zero() {
        return Err(format!("expected {accepted}"));
    }
    Ok(duration)
}

async fn client_from(
    path: &std::path::Path,
    context: Option<&str>,
    timeout: Option<Duration>,
) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .with_context(|| format!("using kubeconfig {}", path.display()))?;
    if timeout.is_some() {
        config.connect_timeout = timeout;
        config.read_timeout = timeout;
    }
    karmada_controllers::runtime::client::http1_client(config)
        .with_context(|| format!("building a client from {}", path.display()))
}

pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    karmada_controllers::runtime::client::name_component("karmada-agent");
    let name = args.cluster_name.clone();
    let karmada = client_from(
        &args.karmada_kubeconfig,
        args.karmada_context.as_deref(),
        None,
    )
    .await?;
    let probe_timeout = args
        .cluster_status_update_frequency
        .clamp(Duration::from_secs(1), Duration::from_secs(5));
    let member = client_from(
        &args.cluster_kubeconfig,
        args.cluster_context.as_deref(),
        Some(probe_timeout),
    )
    .await?;
    // Fail fast on credentials that cannot even read our own Cluster.
    clusters(&karmada)
        .get(&name)
        .await
        .with_context(|| format!("reading cluster {name} with the agent's credentials"))?;

    let status_config = StatusControllerConfig {
        update_frequency: args.cluster_status_update_frequency,
        thresholds: Thresholds {
            success: SignedDuration::try_from(args.cluster_success_threshold)?,
            failure: SignedDuration::try_from(args.cluster_failure_threshold)?,
        },
        probe_timeout,
    };
    let cancel = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut registries = crate::component::registries(true);
    let cluster_metrics = ClusterMetrics::register(&mut registries.metrics);
    let execution_metrics = ExecutionMetrics::register(&mut registries.metrics);
    crate::component::serve_metrics(
        &mut tasks,
        args.metrics_bind_address,
        args.metrics_address_file.as_deref(),
        registries,
        cancel.child_token(),
    )
    .await?;
    tasks.spawn(status_loop(
        karmada.clone(),
        member.clone(),
        name.clone(),
        status_config,
        cluster_metrics,
        cancel.child_token(),
    ));
    tasks.spawn(lease_loop(
        karmada.clone(),
        name.clone(),
        args.cluster_lease_duration,
        cancel.child_token(),
    ));

    // Work execution for this cluster only: Works in karmada-es-<name>, applied with the member client.
    let members = MemberClients::new(karmada.clone(), probe_timeout);
    members.pin(&name, member).await;
    // The config's registry serves both controllers (run_with_status shares it): one watch of this cluster's
    // Works; the member's objects are watched outside it.
    let informers = karmada_controllers::runtime::Informers::default();
    // Retain, status reflection and health of this member's objects follow the control plane's customizations.
    let resource_interpreter = karmada_controllers::resourceinterpreter::ResourceInterpreter::new();
    tasks.spawn(
        resource_interpreter
            .clone()
            .watch(karmada.clone(), cancel.child_token()),
    );
    tasks.spawn(execution::run_with_status(
        karmada.clone(),
        ExecutionConfig {
            concurrency: args.concurrent_work_syncs,
            informers: informers.clone(),
            interpreter: resource_interpreter.interpreter.clone(),
            ..ExecutionConfig::new(ServedClusters::Only(name.clone()), members.clone())
        },
        execution_metrics,
        cancel.child_token(),
    ));
    // This member's exported Services, reported as Works of its execution namespace (Karmada's agent runs
    // serviceExport and endpointsliceCollect for its cluster).
    tasks.spawn(karmada_controllers::mcs::service_export::run(
        karmada,
        karmada_controllers::mcs::service_export::ServiceExportConfig {
            informers,
            ..karmada_controllers::mcs::service_export::ServiceExportConfig::new(
                ServedClusters::Only(name.clone()),
                members,
            )
        },
        cancel.child_token(),
    ));

    tracing::info!(cluster = %name, "karmada-agent started");
    let reason = crate::process::shutdown_requested(args.exit_with_stdin).await;
    tracing::info!(reason, "shutting down");
    cancel.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}

async fn status_loop(
    karmada: kube::Client,
    member: kube::Client,
    name: String,
    config: StatusControllerConfig,
    metrics: ClusterMetrics,
    cancel: CancellationToken,
) {
    let mut debouncer = ReadyDebouncer::default();
    let mut ticker = tokio::time::interval(config.update_frequency);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let round = async {
            let object = clusters(&karmada).get(&name).await?;
            let cluster = to_cluster(&object)?;
            sync_cluster_status(
                &karmada,
                cluster,
                Ok::<_, std::convert::Infallible>(member.clone()),
                &config,
                &mut debouncer,
                &metrics,
            )
            .await
        };
        let result = tokio::select! {
            () = cancel.cancelled() => return,
            r = round => r,
        };
        match result {
            Err(err) if err.is_conflict() => {
                tracing::debug!(cluster = %name, "status write conflicted; retrying next round")
            }
            Err(err) => tracing::warn!(cluster = %name, %err, "posting cluster status"),
            Ok(()) => {}
        }
    }
}

async fn lease_loop(
    karmada: kube::Client,
    name: String,
    duration: Duration,
    cancel: CancellationToken,
) {
    let leases: Api<Lease> = Api::namespaced(karmada, LEASE_NAMESPACE);
    let seconds = i32::try_from(duration.as_secs()).unwrap_or(i32::MAX).max(1);
    let mut ticker = tokio::time::interval((duration / 4).max(Duration::from_millis(100)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let renew = async {
            let mut lease = leases.get(&name).await?;
            let spec = lease.spec.get_or_insert_with(Default::default);
            spec.holder_identity = Some(name.clone());
            spec.lease_duration_seconds = Some(seconds);
            spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
            // The read resourceVersion travels with the object: a concurrent writer makes this a 409.
            leases.replace(&name, &PostParams::default(), &lease).await
        };
        let result = tokio::select! {
            () = cancel.cancelled() => return,
            r = renew => r,
        };
        if let Err(err) = result {
            tracing::warn!(cluster = %name, %err, "renewing lease {LEASE_NAMESPACE}/{name}");
        }
    }
}
