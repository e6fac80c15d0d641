//! `karmada controller-manager`: the control plane's controllers against the API server named by a kubeconfig —
//! the resource detector, the binding, execution, work status and binding status controllers, namespace
//! propagation, the dependencies distributor, the workload rebalancer, the cluster and cluster status
//! controllers and the agent CSR approver — with their metrics on `/metrics`. Several replicas may run: one
//! leads (Lease `karmada-system/karmada-controller-manager`), the others stand by.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use karmada_controllers::binding::controller::BindingConfig;
use karmada_controllers::cluster::cluster_controller::{
    ClusterControllerConfig, run_cluster_controller_with,
};
use karmada_controllers::cluster::health::{MonitorGrace, Thresholds};
use karmada_controllers::cluster::metrics::ClusterMetrics;
use karmada_controllers::cluster::status_controller::{
    StatusControllerConfig, run_status_controller,
};
use karmada_controllers::dependencies_distributor::DistributorConfig;
use karmada_controllers::descheduler::{DeschedulerConfig, DeschedulerMetrics};
use karmada_controllers::detector::controller::DetectorConfig;
use karmada_controllers::detector::skip::DetectorFilter;
use karmada_controllers::execution::{ExecutionConfig, ExecutionMetrics, ServedClusters};
use karmada_controllers::failover::{FailoverConfig, FailoverMetrics};
use karmada_controllers::federatedhpa::controller::FederatedHpaConfig;
use karmada_controllers::namespace::controller::NamespaceSyncConfig;
use karmada_controllers::reserved::{SkippedApis, SkippedNamespaces};
use karmada_controllers::resourceinterpreter::ResourceInterpreter;
use karmada_controllers::runtime::leader_election::{LeaderElectionConfig, run_leader_elected};
use karmada_controllers::runtime::{Informers, MemberClients};
use karmada_controllers::status::binding_status::BindingMetrics;
use karmada_controllers::status::binding_status::BindingStatusConfig;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::component::{self, LeaderElectionArgs, parse_duration};
use crate::controller_set::{self, ControllerSet};
use crate::features::{self, FeatureGates};
use crate::scheduler_estimator::EstimatorConnectionArgs;

#[derive(Args, Debug)]
pub struct ControllerManagerArgs {
    /// Kubeconfig of the Karmada API server.
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// Context in the kubeconfig (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Where `/metrics` is served; port 0 picks a free port (printed in the log).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: SocketAddr,
    /// Once `/metrics` is bound, write its address (`host:port`) to this file: how a supervisor that let port 0
    /// pick one (`karmadactl local-up --monitoring`) finds it to scrape.
    #[arg(long)]
    pub metrics_address_file: Option<PathBuf>,
    #[command(flatten)]
    pub options: ControllerManagerOptions,
    #[arg(long, default_value = "", value_parser = FeatureGates::parse, help = features::help())]
    pub feature_gates: FeatureGates,
    /// How the descheduler reaches the clusters' scheduler estimators.
    #[command(flatten)]
    pub estimator: EstimatorConnectionArgs,
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
    /// Exit when standard input closes (for supervisors and tests).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

/// What the controllers are told, whichever process they run in (`controller-manager` or `all-in-one`).
#[derive(Args, Debug)]
pub struct ControllerManagerOptions {
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
    /// How long a Pull cluster's agent may renew neither status nor Lease before Ready turns Unknown.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub cluster_monitor_grace_period: Duration,
    /// Like --cluster-monitor-grace-period, for a Pull cluster that never posted a status.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub cluster_startup_grace_period: Duration,
    /// PEM CA certificate that signs agent client certificates (the API server's DATA/pki/ca.crt).
    #[arg(long, requires = "cluster_signing_key_file")]
    pub cluster_signing_cert_file: Option<PathBuf>,
    /// PEM key of --cluster-signing-cert-file (DATA/pki/ca.key). Without the pair, agent CSRs are not handled.
    #[arg(long, requires = "cluster_signing_cert_file")]
    pub cluster_signing_key_file: Option<PathBuf>,
    /// Cluster failover, the one switch: NoExecute taints from cluster conditions (a default
    /// ClusterTaintPolicy) and eviction of workloads from tainted clusters. Karmada spreads this over
    /// `--feature-gates=Failover=true`, `--enable-taint-manager` and `--enable-no-execute-taint-eviction`.
    #[arg(long)]
    pub enable_failover: bool,
    /// Run the descheduler: replicas that stay unschedulable in a member are moved elsewhere
    /// (dynamic-weight and Aggregated workloads).
    #[arg(long)]
    pub enable_descheduler: bool,
    /// How often the descheduler looks at every binding.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub descheduling_interval: Duration,
    /// How long replicas must stay unschedulable before the descheduler moves them.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub unschedulable_threshold: Duration,
    #[command(flatten)]
    pub concurrency: ConcurrencyArgs,
    #[command(flatten)]
    pub hpa: HpaArgs,
    #[arg(long, default_value = "*", value_parser = ControllerSet::parse, help = controller_set::help())]
    pub controllers: ControllerSet,
    /// Comma-separated namespaces that should be skipped from propagating (regular expressions, each matched
    /// whole). Note: 'karmada-system', 'karmada-cluster' and 'karmada-es-.*' are Karmada reserved namespaces
    /// that will always be skipped.
    #[arg(long, value_delimiter = ',', default_value = "kube-.*")]
    pub skipped_propagating_namespaces: Vec<String>,
    /// Semicolon separated resources that should be skipped from propagating in addition to the default skip
    /// list (cluster.karmada.io;policy.karmada.io;work.karmada.io). Supported formats are: <group>,
    /// <group>/<version>, <group>/<version>/<kind>,<kind> (kinds case-insensitive).
    #[arg(long, default_value = "")]
    pub skipped_propagating_apis: String,
}

/// How many objects each controller reconciles at once, under Karmada's flag names. Our defaults are higher than
/// Karmada's 5: a reconcile here mostly waits on the API server. The detector's is the highest: it makes two writes
/// in sequence per template (claim, then binding), and in a burst the stages after it must not starve it (in the
/// propagation benchmark, 64 instead of 16 placed a burst's bindings about twice as fast, end to end no slower).
#[derive(Args, Debug, Clone, Copy)]
pub struct ConcurrencyArgs {
    /// Templates the resource detector matches and binds at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_resource_template_syncs: u16,
    /// ResourceBindings and ClusterResourceBindings the binding controller turns into Works at once; given, it
    /// also sets the binding status controller's (default 5, which coalesces a rollout's updates anyway).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_resourcebinding_syncs: Option<u16>,
    /// Works the execution controller applies, and the work status controller reflects, at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_work_syncs: u16,
    /// Bindings whose dependencies (ConfigMaps, Secrets, ...) the dependencies distributor follows at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_dependent_resource_syncs: u16,
}

/// The FederatedHPA controller's settings, under Karmada's flag names and defaults.
#[derive(Args, Debug, Clone, Copy)]
pub struct HpaArgs {
    /// The period for syncing the number of pods in horizontal pod autoscaler.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_sync_period: Duration,
    /// The period for which autoscaler will look backwards and not scale down below any recommendation it made
    /// during that period.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_downscale_stabilization: Duration,
    /// The minimum change (from 1.0) in the desired-to-actual metrics ratio for the horizontal pod autoscaler to
    /// consider scaling.
    #[arg(long, default_value_t = 0.1)]
    pub horizontal_pod_autoscaler_tolerance: f64,
    /// The period after pod start when CPU samples might be skipped.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_cpu_initialization_period: Duration,
    /// The period after pod start during which readiness changes will be treated as initial readiness.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_initial_readiness_delay: Duration,
}

impl HpaArgs {
    fn config(&self) -> anyhow::Result<FederatedHpaConfig> {
        use karmada_controllers::federatedhpa::evaluate::EvaluationConfig;
        use karmada_controllers::federatedhpa::replica_calculator::CalculatorConfig;
        let signed = jiff::SignedDuration::try_from;
        Ok(FederatedHpaConfig {
            sync_period: self.horizontal_pod_autoscaler_sync_period,
            evaluation: EvaluationConfig {
                calculator: CalculatorConfig {
                    tolerance: self.horizontal_pod_autoscaler_tolerance,
                    cpu_initialization_period: signed(
                        self.horizontal_pod_autoscaler_cpu_initialization_period,
                    )?,
                    initial_readiness_delay: signed(
                        self.horizontal_pod_autoscaler_initial_readiness_delay,
                    )?,
                },
                downscale_stabilization: signed(
                    self.horizontal_pod_autoscaler_downscale_stabilization,
                )?,
            },
            ..FederatedHpaConfig::default()
        })
    }
}

/// Everything the controllers need, built once; each leadership term starts them from it.
pub struct Controllers {
    client: kube::Client,
    status: StatusControllerConfig,
    cluster: ClusterControllerConfig,
    signer: Option<Arc<apiserver_auth::signer::CaSigner>>,
    cluster_metrics: ClusterMetrics,
    execution_metrics: ExecutionMetrics,
    binding_metrics: BindingMetrics,
    failover: FailoverConfig,
    failover_metrics: FailoverMetrics,
    descheduler: Option<DeschedulerConfig>,
    descheduler_metrics: DeschedulerMetrics,
    concurrency: ConcurrencyArgs,
    hpa: FederatedHpaConfig,
    controllers: ControllerSet,
    gates: FeatureGates,
    filter: DetectorFilter,
}

impl Controllers {
    /// The controllers `options` describe, talking through `client`, their metrics registered in `registry`.
    pub fn new(
        client: kube::Client,
        options: &ControllerManagerOptions,
        gates: &FeatureGates,
        estimator: &EstimatorConnectionArgs,
        registries: &mut component::Registries,
    ) -> anyhow::Result<Arc<Self>> {
        let registry = &mut registries.metrics;
        let filter = DetectorFilter {
            skipped_namespaces: SkippedNamespaces::new(&options.skipped_propagating_namespaces)
                .context("--skipped-propagating-namespaces")?,
            skipped_apis: SkippedApis::parse(&options.skipped_propagating_apis)
                .context("--skipped-propagating-apis")?,
        };
        let mut failover = if options.enable_failover || gates.enabled("Failover") {
            FailoverConfig::enabled()
        } else {
            FailoverConfig::default()
        };
        failover.application_failover &= options.controllers.enabled("applicationFailover");
        failover.graceful_eviction &= options.controllers.enabled("gracefulEviction");
        failover.cluster_taint_policy &= options.controllers.enabled("clustertaintpolicy");
        let estimators = estimator.clients(client.clone());
        Ok(Arc::new(Controllers {
            client,
            status: StatusControllerConfig {
                update_frequency: options.cluster_status_update_frequency,
                thresholds: Thresholds {
                    success: jiff::SignedDuration::try_from(options.cluster_success_threshold)?,
                    failure: jiff::SignedDuration::try_from(options.cluster_failure_threshold)?,
                },
                probe_timeout: options
                    .cluster_status_update_frequency
                    .clamp(Duration::from_secs(1), Duration::from_secs(5)),
            },
            cluster: ClusterControllerConfig {
                period: options.cluster_monitor_period,
                grace: MonitorGrace {
                    grace: jiff::SignedDuration::try_from(options.cluster_monitor_grace_period)?,
                    startup: jiff::SignedDuration::try_from(options.cluster_startup_grace_period)?,
                },
            },
            signer: match (
                &options.cluster_signing_cert_file,
                &options.cluster_signing_key_file,
            ) {
                (Some(cert), Some(key)) => Some(Arc::new(
                    apiserver_auth::signer::CaSigner::load(cert, key)
                        .context("loading the cluster signing CA")?,
                )),
                _ => None,
            },
            cluster_metrics: ClusterMetrics::register(registry),
            execution_metrics: ExecutionMetrics::register(registry),
            binding_metrics: BindingMetrics::register(registry, &mut registries.placements),
            failover,
            failover_metrics: FailoverMetrics::register(registry),
            descheduler: options.enable_descheduler.then_some(DeschedulerConfig {
                interval: options.descheduling_interval,
                unschedulable_threshold: options.unschedulable_threshold,
                estimators: Some(estimators),
            }),
            descheduler_metrics: DeschedulerMetrics::register(registry),
            concurrency: options.concurrency,
            hpa: options.hpa.config()?,
            controllers: options.controllers.clone(),
            gates: gates.clone(),
            filter,
        }))
    }

    /// Runs every controller until `cancel` fires.
    async fn run(self: Arc<Self>, cancel: CancellationToken) {
        // One interpreter for every controller: native, bundled, and the cluster's customizations (watched).
        let interpreter = ResourceInterpreter::new();
        let shared = Shared {
            members: MemberClients::new(self.client.clone(), self.status.probe_timeout),
            informers: Informers::default(),
            interpreter: interpreter.clone(),
            cancel,
        };
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(interpreter.watch(self.client.clone(), shared.cancel.child_token()));
        self.spawn_cluster_controllers(&mut tasks, &shared);
        self.spawn_propagation_controllers(&mut tasks, &shared);
        self.spawn_service_controllers(&mut tasks, &shared);
        self.spawn_autoscaling_controllers(&mut tasks, &shared);
        self.spawn_quota_and_rebalancing(&mut tasks, &shared);
        tracing::info!("controllers started");
        while tasks.join_next().await.is_some() {}
    }

    fn enabled(&self, name: &str) -> bool {
        self.controllers.enabled(name)
    }

    /// Cluster lifecycle: the cluster controller, cluster status and the agent CSR approver.
    fn spawn_cluster_controllers(&self, tasks: &mut JoinSet<()>, shared: &Shared) {
        let client = &self.client;
        if self.enabled("cluster") {
            tasks.spawn(run_cluster_controller_with(
                client.clone(),
                self.cluster,
                self.cluster_metrics.clone(),
                shared.cancel.child_token(),
            ));
        }
        if self.enabled("clusterStatus") {
            tasks.spawn(run_status_controller(
                client.clone(),
                self.status,
                self.cluster_metrics.clone(),
                shared.cancel.child_token(),
            ));
        }
        if let Some(signer) = self
            .signer
            .as_ref()
            .filter(|_| self.enabled("agentcsrapproving"))
        {
            let config = karmada_controllers::certificate::CertificateControllerConfig {
                signer: signer.clone(),
                period: Duration::from_secs(1),
            };
            tasks.spawn(karmada_controllers::certificate::run(
                client.clone(),
                config,
                shared.cancel.child_token(),
            ));
        }
    }

    /// Template to member: the detector, binding, execution and work status, binding status, namespace
    /// propagation and the dependencies distributor.
    fn spawn_propagation_controllers(&self, tasks: &mut JoinSet<()>, shared: &Shared) {
        let client = &self.client;
        let interpreter = &shared.interpreter.interpreter;
        tasks.spawn(karmada_controllers::detector::controller::run(
            client.clone(),
            DetectorConfig {
                informers: shared.informers.clone(),
                workers: usize::from(self.concurrency.concurrent_resource_template_syncs),
                filter: self.filter.clone(),
                preemption: self.gates.enabled("PropagationPolicyPreemption"),
                priority_scheduling: self.gates.enabled("PriorityBasedScheduling"),
                interpreter: interpreter.clone(),
                customization_changes: Some(shared.interpreter.changes_sender()),
                ..Default::default()
            },
            shared.cancel.child_token(),
        ));
        if self.enabled("binding") {
            tasks.spawn(karmada_controllers::binding::controller::run(
                client.clone(),
                BindingConfig {
                    informers: shared.informers.clone(),
                    concurrency: self
                        .concurrency
                        .concurrent_resourcebinding_syncs
                        .unwrap_or(BindingConfig::default().concurrency),
                    interpreter: interpreter.clone(),
                    ..Default::default()
                },
                shared.cancel.child_token(),
            ));
        }
        let chosen = (self.enabled("execution"), self.enabled("workStatus"));
        if chosen != (false, false) {
            let execution = ExecutionConfig {
                informers: shared.informers.clone(),
                concurrency: self.concurrency.concurrent_work_syncs,
                interpreter: interpreter.clone(),
                ..ExecutionConfig::new(ServedClusters::Push, shared.members.clone())
            };
            tasks.spawn(karmada_controllers::execution::run_chosen(
                client.clone(),
                execution,
                self.execution_metrics.clone(),
                chosen,
                shared.cancel.child_token(),
            ));
        }
        if self.enabled("bindingStatus") {
            tasks.spawn(karmada_controllers::status::binding_status::run(
                client.clone(),
                BindingStatusConfig {
                    informers: shared.informers.clone(),
                    concurrency: self
                        .concurrency
                        .concurrent_resourcebinding_syncs
                        .unwrap_or(BindingStatusConfig::default().concurrency),
                    interpreter: interpreter.clone(),
                    ..Default::default()
                },
                self.binding_metrics.clone(),
                shared.cancel.child_token(),
            ));
        }
        if self.enabled("namespace") {
            tasks.spawn(karmada_controllers::namespace::controller::run(
                client.clone(),
                NamespaceSyncConfig {
                    skipped: self.filter.skipped_namespaces.clone(),
                    ..Default::default()
                },
                shared.cancel.child_token(),
            ));
        }
        if self.gates.enabled("PropagateDeps") {
            tasks.spawn(karmada_controllers::dependencies_distributor::run(
                client.clone(),
                DistributorConfig {
                    informers: shared.informers.clone(),
                    concurrency: self.concurrency.concurrent_dependent_resource_syncs,
                    interpreter: interpreter.clone(),
                },
                shared.cancel.child_token(),
            ));
        }
    }

    /// Multi-cluster Services: Push members' exports reported, imported slices, derived Services, export
    /// conditions (ours, so they follow serviceExport), and MultiClusterServices.
    fn spawn_service_controllers(&self, tasks: &mut JoinSet<()>, shared: &Shared) {
        use karmada_controllers::mcs::service_export::{self, ServiceExportConfig};
        use karmada_controllers::{mcs, multiclusterservice};
        let client = &self.client;
        let cancel = &shared.cancel;
        if self.enabled("serviceExport") || self.enabled("endpointsliceCollect") {
            tasks.spawn(service_export::run(
                client.clone(),
                ServiceExportConfig {
                    informers: shared.informers.clone(),
                    ..ServiceExportConfig::new(ServedClusters::Push, shared.members.clone())
                },
                cancel.child_token(),
            ));
        }
        let informers = &shared.informers;
        if self.enabled("endpointSlice") {
            tasks.spawn(mcs::endpointslice::run(
                client.clone(),
                informers.clone(),
                cancel.child_token(),
            ));
        }
        if self.enabled("serviceImport") {
            tasks.spawn(mcs::service_import::run(
                client.clone(),
                informers.clone(),
                cancel.child_token(),
            ));
        }
        if self.enabled("serviceExport") {
            tasks.spawn(mcs::export_status::run(
                client.clone(),
                informers.clone(),
                cancel.child_token(),
            ));
        }
        if self.enabled("multiclusterservice") {
            tasks.spawn(multiclusterservice::controller::run(
                client.clone(),
                informers.clone(),
                cancel.child_token(),
            ));
        }
        if self.enabled("endpointsliceDispatch") {
            tasks.spawn(multiclusterservice::dispatch::run(
                client.clone(),
                informers.clone(),
                cancel.child_token(),
            ));
        }
    }

    /// FederatedHPA and CronFederatedHPA.
    fn spawn_autoscaling_controllers(&self, tasks: &mut JoinSet<()>, shared: &Shared) {
        if self.enabled("federatedHorizontalPodAutoscaler") {
            tasks.spawn(karmada_controllers::federatedhpa::controller::run(
                self.client.clone(),
                shared.informers.clone(),
                shared.members.clone(),
                self.hpa.clone(),
                shared.cancel.child_token(),
            ));
        }
        if self.enabled("cronFederatedHorizontalPodAutoscaler") {
            tasks.spawn(karmada_controllers::cronfederatedhpa::controller::run(
                self.client.clone(),
                shared.informers.clone(),
                Default::default(),
                shared.cancel.child_token(),
            ));
        }
    }

    /// FederatedResourceQuota, the workload rebalancer, failover and the descheduler.
    fn spawn_quota_and_rebalancing(&self, tasks: &mut JoinSet<()>, shared: &Shared) {
        let client = &self.client;
        if self.enabled("federatedResourceQuotaSync")
            || self.enabled("federatedResourceQuotaStatus")
        {
            tasks.spawn(
                karmada_controllers::federatedresourcequota::controller::run(
                    client.clone(),
                    shared.informers.clone(),
                    shared.cancel.child_token(),
                ),
            );
        }
        if self.enabled("workloadRebalancer") {
            tasks.spawn(karmada_controllers::workload_rebalancer::run(
                client.clone(),
                Default::default(),
                shared.cancel.child_token(),
            ));
        }
        tasks.spawn(karmada_controllers::failover::run(
            client.clone(),
            FailoverConfig {
                informers: shared.informers.clone(),
                ..self.failover.clone()
            },
            self.failover_metrics.clone(),
            shared.cancel.child_token(),
        ));
        if let Some(config) = &self.descheduler {
            tasks.spawn(karmada_controllers::descheduler::run(
                client.clone(),
                config.clone(),
                self.descheduler_metrics.clone(),
                shared.cancel.child_token(),
            ));
        }
    }
}

/// What the controllers of one process share: member clients, one watch cache per resource, one interpreter,
/// and the cancellation every task is a child of.
struct Shared {
    members: MemberClients,
    informers: Informers,
    interpreter: ResourceInterpreter,
    cancel: CancellationToken,
}

pub async fn run(args: ControllerManagerArgs) -> anyhow::Result<()> {
    karmada_controllers::runtime::client::name_component("karmada-controller-manager");
    let client = component::kube_client(&args.kubeconfig, args.context.as_deref()).await?;
    let mut registries = component::registries(true);
    let controllers = Controllers::new(
        client.clone(),
        &args.options,
        &args.feature_gates,
        &args.estimator,
        &mut registries,
    )?;
    let election = args.leader_election.config("karmada-controller-manager")?;

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
    spawn_controllers(
        &mut tasks,
        client,
        controllers,
        election,
        cancel.child_token(),
    )
    .await?;
    tracing::info!("controller-manager started");
    let reason = crate::process::shutdown_requested(args.exit_with_stdin).await;
    tracing::info!(reason, "shutting down");
    cancel.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Starts the controllers on `tasks`: under `election` when given (the Lease must be reachable), else at once.
pub async fn spawn_controllers(
    tasks: &mut tokio::task::JoinSet<()>,
    client: kube::Client,
    controllers: Arc<Controllers>,
    election: Option<LeaderElectionConfig>,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    match election {
        Some(config) => {
            component::ensure_namespace(&client, &config.lease_namespace).await?;
            tasks.spawn(run_leader_elected(client, config, cancel, move |term| {
                Arc::clone(&controllers).run(term)
            }));
        }
        None => {
            tasks.spawn(controllers.run(cancel));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ControllerManagerArgs,
    }

    fn parse(flags: &[&str]) -> Result<ConcurrencyArgs, clap::Error> {
        let argv = ["controller-manager", "--kubeconfig", "k.config"]
            .iter()
            .chain(flags);
        Cli::try_parse_from(argv).map(|cli| cli.args.options.concurrency)
    }

    #[test]
    fn concurrency_flags_default_and_parse_under_karmadas_names() {
        let defaults = parse(&[]).expect("no flags");
        assert_eq!(defaults.concurrent_resource_template_syncs, 64);
        assert_eq!(defaults.concurrent_resourcebinding_syncs, None);
        assert_eq!(defaults.concurrent_work_syncs, 16);
        assert_eq!(defaults.concurrent_dependent_resource_syncs, 2);

        let given = parse(&[
            "--concurrent-resource-template-syncs=64",
            "--concurrent-resourcebinding-syncs=4",
            "--concurrent-work-syncs=8",
            "--concurrent-dependent-resource-syncs=3",
        ])
        .expect("valid flags");
        assert_eq!(given.concurrent_resource_template_syncs, 64);
        assert_eq!(given.concurrent_resourcebinding_syncs, Some(4));
        assert_eq!(given.concurrent_work_syncs, 8);
        assert_eq!(given.concurrent_dependent_resource_syncs, 3);
    }

    #[test]
    fn karmadas_controller_gate_and_namespace_flags() {
        let argv = [
            "controller-manager",
            "--kubeconfig",
            "k.config",
            "--controllers=*,-namespace,hpaScaleTargetMarker",
            "--feature-gates=PropagationPolicyPreemption=true,PropagateDeps=false",
            "--skipped-propagating-namespaces=kube-.*,team-.*-scratch",
            "--skipped-propagating-apis=networking.k8s.io",
        ];
        let args = Cli::try_parse_from(argv).expect("valid flags").args;
        let controllers = &args.options.controllers;
        assert!(!controllers.enabled("namespace"));
        assert!(controllers.enabled("binding"));
        assert!(controllers.enabled("hpaScaleTargetMarker"));
        assert!(args.feature_gates.enabled("PropagationPolicyPreemption"));
        assert!(!args.feature_gates.enabled("PropagateDeps"));
        assert!(
            args.feature_gates.enabled("PriorityBasedScheduling"),
            "Karmada's default"
        );
        assert_eq!(
            args.options.skipped_propagating_namespaces,
            ["kube-.*", "team-.*-scratch"]
        );
        let defaults = Cli::try_parse_from(["controller-manager", "--kubeconfig", "k"])
            .expect("defaults")
            .args;
        assert!(
            !defaults
                .feature_gates
                .enabled("PropagationPolicyPreemption")
        );
        assert_eq!(defaults.options.skipped_propagating_namespaces, ["kube-.*"]);
        let bad = Cli::try_parse_from([
            "controller-manager",
            "--kubeconfig",
            "k",
            "--feature-gates=Nope=true",
        ])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(bad.contains("unrecognized feature gate: Nope"), "{bad}");
    }

    #[test]
    fn zero_workers_are_refused_with_the_flag_named() {
        for flag in [
            "--concurrent-resource-template-syncs=0",
            "--concurrent-resourcebinding-syncs=0",
            "--concurrent-work-syncs=0",
            "--concurrent-dependent-resource-syncs=0",
        ] {
            let err = parse(&[flag]).expect_err("0 must be refused");
            let message = err.to_string();
            let name = flag.trim_end_matches("=0");
            assert!(message.contains(name), "{flag}: {message}");
            assert!(message.contains("1.."), "{flag}: {message}");
        }
    }
}
