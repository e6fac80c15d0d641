//! One running member cluster: its API server on a listener, the fault layer in front of it,
//! the fault-file poller, the watchers and the controller loop, all owned by
//! [`RunningCluster`].
//!
//! Readiness: [`start`] returns once the server accepts connections and the cluster's Nodes and
//! their Leases exist, so a caller may announce the cluster (write its kubeconfig) right away.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use apiserver_auth::authn::Authenticator;
use axum::Router;
use jiff::Timestamp;
use karmada_apiserver::server::{Anonymous, ApiServer, ApiServerOptions, ServiceAccountTokens};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Layer;

use crate::api::WATCHED;
use crate::config::SimConfig;
use crate::dns::DnsTable;
use crate::faults::Faults;
use crate::naming::fnv32a;
use crate::nodes::{self, NodeConfigError};
use crate::objects::{Objects, Write};
use crate::runtime::controller::{self, ControllerOptions};
use crate::runtime::custom_metrics_api::SimCustomMetrics;
use crate::runtime::dns;
use crate::runtime::fault_layer::FaultLayer;
use crate::runtime::faults_file;
use crate::runtime::metrics_api::SimMetrics;
use crate::runtime::watch::{Observed, watch_kind};
use crate::runtime::writer::{self, WriteError, Written};

/// Watch events buffered between the watchers and the controller loop.
const EVENT_BUFFER: usize = 1024;

/// Everything one cluster needs.
pub struct ClusterOptions {
    pub config: SimConfig,
    pub scale_mode: bool,
    pub store: Arc<dyn store::Store>,
    pub listener: TcpListener,
    /// `None` serves plain HTTP with every request an administrator (tests only).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub authn: Arc<Authenticator>,
    /// Mints ServiceAccount tokens (TokenRequest, token Secrets), as a real cluster's control plane does;
    /// `authn` should then accept them.
    pub service_account_tokens: Option<Arc<ServiceAccountTokens>>,
    /// The fault state file this cluster polls (see [`faults_file`]).
    pub faults_path: PathBuf,
    /// Where the cluster's DNS (`cluster.local`, `clusterset.local`) listens, UDP and TCP; port 0 picks one.
    /// `None`: no DNS.
    pub dns: Option<SocketAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Nodes(#[from] NodeConfigError),
    #[error(transparent)]
    ApiServer(#[from] karmada_apiserver::server::StartError),
    #[error("reading the listener address")]
    Listener(#[source] std::io::Error),
    #[error("registering the cluster's nodes")]
    Register(#[source] WriteError),
    #[error("serving DNS on {address}")]
    Dns {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A member cluster that is serving; dropping it does not stop it, [`RunningCluster::stop`]
/// does.
pub struct RunningCluster {
    pub name: String,
    pub address: SocketAddr,
    /// Where the cluster's DNS answers (UDP and TCP), when it serves one.
    pub dns_address: Option<SocketAddr>,
    /// An in-process client of this cluster's API (no faults applied).
    pub client: kube::Client,
    server: Arc<ApiServer>,
    cancel: CancellationToken,
    tasks: TaskTracker,
    compactor: tokio::task::JoinHandle<()>,
    dns: Option<dns::DnsServer>,
}

/// Starts the cluster's server and controllers on the current runtime; they stop when
/// `cancel` fires (then await [`RunningCluster::stop`]).
pub async fn start(
    options: ClusterOptions,
    cancel: CancellationToken,
) -> Result<RunningCluster, StartError> {
    let ClusterOptions {
        config,
        scale_mode,
        store,
        listener,
        tls,
        authn,
        service_account_tokens,
        faults_path,
        dns: dns_listen,
    } = options;
    let cancel = cancel.child_token();
    let initial = nodes::initial_objects(&config, Timestamp::now())?;
    let address = listener.local_addr().map_err(StartError::Listener)?;

    let initial_faults = faults_file::read(&faults_path).unwrap_or_else(|error| {
        tracing::warn!(%error, "ignoring the fault file");
        Faults::default()
    });
    let (faults_sender, faults) = watch::channel(initial_faults);
    let server_options = ApiServerOptions {
        cancel: cancel.clone(),
        advertise_address: address.to_string(),
        kubernetes_version: Some(config.kubernetes_version.clone()),
        // Requests over the socket are always authenticated by `serve`; only the in-process
        // client's requests carry no user, and they are the cluster's own components.
        anonymous: Anonymous::Admin,
        authorizer: apiserver_auth::rbac::RbacAuthorizer::new(store.clone(), cancel.clone()),
        bootstrap_objects: apiserver_auth::rbac::bootstrap::bootstrap_cluster_roles()
            .into_iter()
            .chain(apiserver_auth::rbac::bootstrap::bootstrap_cluster_role_bindings())
            .collect(),
        service_account_tokens,
        provided: vec![SimMetrics::new(faults.clone())],
        custom_metrics: Some(SimCustomMetrics::new(faults.clone())),
        ..ApiServerOptions::default()
    };
    let compactor =
        store::compactor::spawn_compactor(store.clone(), Default::default(), cancel.clone());
    let server = match ApiServer::new(store, server_options).await {
        Ok(server) => server,
        Err(error) => {
            cancel.cancel();
            let _ = compactor.await;
            return Err(error.into());
        }
    };
    let router = crate::runtime::kubelet::with_kubelet(
        server.clone(),
        karmada_apiserver::router::router(server.clone()),
    );
    let client = kube::Client::new(router.clone(), "default");
    let tasks = TaskTracker::new();
    let (dns_tables, dns_server) = match dns_listen {
        None => (None, None),
        Some(listen) => {
            let (sender, tables) = watch::channel(Arc::new(DnsTable::default()));
            match dns::serve(listen, tables, cancel.clone()).await {
                Ok(server) => (Some(sender), Some(server)),
                Err(source) => {
                    cancel.cancel();
                    server.shutdown().await;
                    let _ = compactor.await;
                    return Err(StartError::Dns {
                        address: listen,
                        source,
                    });
                }
            }
        }
    };
    let running = RunningCluster {
        name: config.name.clone(),
        address,
        dns_address: dns_server.as_ref().map(|s| s.address),
        client: client.clone(),
        server,
        cancel: cancel.clone(),
        tasks: tasks.clone(),
        compactor,
        dns: dns_server,
    };

    tasks.spawn(faults_file::poll(
        faults_path,
        faults_sender,
        cancel.clone(),
    ));

    let seed =
        u64::from(fnv32a(config.name.as_bytes())) << 32 ^ Timestamp::now().as_nanosecond() as u64;
    let external = Router::new()
        .fallback_service(FaultLayer::new(faults.clone(), cancel.clone(), seed).layer(router));
    tasks.spawn({
        let cancel = cancel.clone();
        let name = config.name.clone();
        async move {
            if let Err(error) =
                karmada_apiserver::serve::serve(listener, tls, authn, external, cancel.clone())
                    .await
            {
                tracing::error!(cluster = %name, %error, "serving stopped");
                cancel.cancel();
            }
        }
    });

    if let Err(error) = register(&client, initial).await {
        running.stop().await;
        return Err(StartError::Register(error));
    }

    let (sender, events) = mpsc::channel::<Observed>(EVENT_BUFFER);
    for info in WATCHED {
        tasks.spawn(watch_kind(
            client.clone(),
            info,
            sender.clone(),
            cancel.clone(),
        ));
    }
    drop(sender);
    tasks.spawn(controller::run(
        ControllerOptions {
            config,
            scale_mode,
            client,
            faults,
            cancel: cancel.clone(),
            seed,
            dns: dns_tables,
        },
        events,
    ));
    tasks.close();
    Ok(running)
}

/// Creates the Nodes and Leases that do not exist yet (a restart on a persistent store keeps
/// the old ones; the controllers bring them up to date). Like a kubelet registering, it then
/// posts each new Node's status, which the API server does not take on create.
async fn register(
    client: &kube::Client,
    initial: Vec<serde_json::Value>,
) -> Result<(), WriteError> {
    let now = Timestamp::now();
    for object in initial {
        let created = match writer::send(
            client,
            &Objects::new(),
            &Write::Create(object.clone()),
            now,
        )
        .await
        {
            Ok(Written::Object(created)) => created,
            Ok(Written::Deleted(..)) | Err(WriteError::Stale { .. }) => continue,
            Err(error) => return Err(error),
        };
        if object.get("status").is_some() {
            let known = Objects::from_values([created]);
            writer::send(client, &known, &Write::UpdateStatus(object), now).await?;
        }
    }
    Ok(())
}

impl RunningCluster {
    /// A token that stops this cluster when cancelled.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Resolves when the cluster has stopped by itself (its listener failed) or was cancelled.
    pub async fn stopped(&self) {
        self.cancel.cancelled().await;
    }

    /// Stops every task and waits for them.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.server.shutdown().await;
        let _ = self.compactor.await;
        if let Some(dns) = self.dns {
            dns.stop().await;
        }
    }
}
