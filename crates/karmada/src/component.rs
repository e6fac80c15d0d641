//! What every control-plane component binary shares: the API client from a kubeconfig, the `/metrics` and
//! `/healthz` server, and Kubernetes' leader-election flags.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use karmada_controllers::runtime::leader_election::LeaderElectionConfig;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

/// A client of the API server named by `kubeconfig` (its current context unless `context` is given).
pub async fn kube_client(kubeconfig: &Path, context: Option<&str>) -> anyhow::Result<kube::Client> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading kubeconfig {}", kubeconfig.display()))?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(file, &options)
        .await
        .with_context(|| format!("using kubeconfig {}", kubeconfig.display()))?;
    karmada_controllers::runtime::client::client(config).context("building the API client")
}

/// What a component serves: `/metrics`, and apart from it on `/metrics/placements` the series of every
/// workload's placement per member cluster (10,000 series for 1,000 workloads on 10 members: a scrape of their
/// own, which Prometheus may take less often).
pub struct Registries {
    pub metrics: Registry,
    pub placements: Registry,
}

/// The registries a component serves (see [`registry`] for `/metrics`; placements start empty).
pub fn registries(process_metrics: bool) -> Registries {
    Registries {
        metrics: registry(process_metrics),
        placements: Registry::default(),
    }
}

/// The registry of `/metrics`, holding what every component exposes: `karmada_build_info`, its libraries'
/// metrics (controller-runtime's, the work queues', the REST client's), Karmada's propagation metrics, and
/// `process_*` unless the process's API server already serves them (`all-in-one`).
fn registry(process_metrics: bool) -> Registry {
    let mut registry = Registry::default();
    if process_metrics {
        karmada_apiserver::process_metrics::ProcessCollector::register(&mut registry);
    }
    karmada_controllers::runtime::metrics::global().register(&mut registry);
    karmada_controllers::metrics::global().register(&mut registry);
    let build_info = prometheus_client::metrics::family::Family::<
        Vec<(&'static str, &'static str)>,
        prometheus_client::metrics::gauge::Gauge,
    >::default();
    build_info
        .get_or_create(&vec![("version", env!("CARGO_PKG_VERSION"))])
        .set(1);
    registry.register(
        "karmada_build_info",
        "A metric with a constant '1' value labeled by the karmada-rs version",
        build_info,
    );
    registry
}

/// Binds `address` (port 0 picks one, logged as "serving metrics") and serves `/metrics` and
/// `/metrics/placements` from `registries` and `/healthz` on `tasks` until `cancel` fires. With `publish`, the bound address (`host:port`) is written to that
/// file, so a supervisor that let the port be picked (`karmadactl local-up`) can point Prometheus at it.
pub async fn serve_metrics(
    tasks: &mut tokio::task::JoinSet<()>,
    address: SocketAddr,
    publish: Option<&Path>,
    registries: Registries,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding --metrics-bind-address {address}"))?;
    let bound = listener.local_addr()?;
    tracing::info!(address = %bound, "serving metrics");
    if let Some(path) = publish {
        publish_address(path, bound)?;
    }
    let app = axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route("/metrics", exposition(registries.metrics))
        .route("/metrics/placements", exposition(registries.placements));
    tasks.spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { cancel.cancelled().await })
            .await;
        if let Err(err) = served {
            tracing::warn!(%err, "metrics server stopped");
        }
    });
    Ok(())
}

/// A GET route answering `registry` in OpenMetrics text.
fn exposition(registry: Registry) -> axum::routing::MethodRouter {
    let registry = Arc::new(registry);
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
    })
}

/// Writes `address` to `path` whole (through a temporary file and a rename), so a reader never sees half of it.
fn publish_address(path: &Path, address: SocketAddr) -> anyhow::Result<()> {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, format!("{address}\n"))
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("writing --metrics-address-file {}", path.display()))
}

/// Kubernetes' leader-election flags, with Karmada's defaults.
#[derive(Args, Debug, Clone)]
pub struct LeaderElectionArgs {
    /// Run only while holding the component's Lease, so several replicas can run (one active).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long, default_value = "karmada-system")]
    pub leader_elect_resource_namespace: String,
    /// How long standbys wait after the leader's last renewal before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps working without a successful renewal (less than the lease duration).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often the lease is renewed or retried.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
}

impl LeaderElectionArgs {
    /// The election of Lease `name`, or `None` with `--leader-elect=false`.
    pub fn config(&self, name: &str) -> anyhow::Result<Option<LeaderElectionConfig>> {
        if !self.leader_elect {
            return Ok(None);
        }
        anyhow::ensure!(
            self.leader_elect_renew_deadline < self.leader_elect_lease_duration,
            "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
        );
        Ok(Some(LeaderElectionConfig {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            ..LeaderElectionConfig::new(
                &self.leader_elect_resource_namespace,
                name,
                LeaderElectionConfig::default_identity(),
            )
        }))
    }
}

/// Parses a duration such as `10s`, `500ms` or `1m30s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
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

/// Creates `namespace` when absent (the Lease lives there).
pub async fn ensure_namespace(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
    let object = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(namespace.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&Default::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(err) => Err(err).with_context(|| format!("creating namespace {namespace}")),
    }
}
