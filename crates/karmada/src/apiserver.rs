//! `karmada apiserver`: the API server on a data directory.
//!
//! First start creates `DATA/pki` (CA, serving and admin certificates), `DATA/store.redb` and
//! `DATA/karmada-apiserver.config`; later starts reuse them. Readiness is `/readyz`.
//!
//! With `--etcd-servers` the store is etcd (the source of truth; watches go to it) and the data
//! directory keeps only the PKI and the kubeconfig: several replicas sharing one `--pki-dir`
//! serve one consistent API. The embedded store also listens on `DATA/backup.sock` for
//! `karmadactl backup`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use karmada_apiserver::server::{Anonymous, ApiServer, ApiServerOptions};
use tokio_util::sync::CancellationToken;

use crate::kubeconfig::{self, KubeconfigSpec};
use crate::process::shutdown_requested;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum StorageBackend {
    /// The embedded on-disk store (default).
    Embedded,
    /// Everything in memory: gone when the process exits (tests, demos).
    Memory,
}

#[derive(Args, Debug)]
pub struct ApiserverArgs {
    /// Directory for the store, certificates and the admin kubeconfig.
    #[arg(long = "data-dir", alias = "karmada-data")]
    pub data_dir: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: String,
    /// Port to listen on (0 picks a free one; the kubeconfig records the chosen port).
    #[arg(long, default_value_t = 32443)]
    pub secure_port: u16,
    /// Serve plain HTTP with every request treated as an administrator. For tests only.
    #[arg(long)]
    pub insecure_http: bool,
    /// kube-apiserver's static token file: `token,user,uid,"group1,group2"` per line.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = StorageBackend::Embedded)]
    pub storage: StorageBackend,
    /// Stop when standard input closes: a parent (test harness, supervisor) that dies takes
    /// the server with it.
    #[arg(long)]
    pub exit_with_stdin: bool,
    /// etcd client URLs (`http://127.0.0.1:2379,...`): store everything in etcd instead of the
    /// embedded store, so that several API server replicas can share it.
    #[arg(long = "etcd-servers", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// Key prefix inside etcd: empty, or ending with `/`.
    #[arg(long = "etcd-prefix", default_value = "")]
    pub etcd_prefix: String,
    /// CA certificate verifying the etcd servers (with --etcd-certfile and --etcd-keyfile).
    #[arg(long = "etcd-cafile", requires_all = ["etcd_certfile", "etcd_keyfile"])]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd.
    #[arg(long = "etcd-certfile", requires_all = ["etcd_cafile", "etcd_keyfile"])]
    pub etcd_certfile: Option<PathBuf>,
    /// Client key for etcd.
    #[arg(long = "etcd-keyfile", requires_all = ["etcd_cafile", "etcd_certfile"])]
    pub etcd_keyfile: Option<PathBuf>,
    /// Directory of the certificates (default DATA/pki); replicas behind one endpoint share it.
    #[arg(long = "pki-dir")]
    pub pki_dir: Option<PathBuf>,
    /// Extra DNS names or IPs for the serving certificate.
    #[arg(long = "tls-san", value_delimiter = ',')]
    pub tls_sans: Vec<String>,
    /// How long an Event is kept after it was last recorded (kube-apiserver's flag); `0s` keeps
    /// Events until they are deleted.
    #[arg(long = "event-ttl", default_value = "1h", value_parser = parse_event_ttl)]
    pub event_ttl: std::time::Duration,
}

/// `--event-ttl`: a duration such as `1h`, `30m` or `90s`; zero turns expiry off.
fn parse_event_ttl(text: &str) -> Result<std::time::Duration, String> {
    if text
        .parse::<jiff::SignedDuration>()
        .is_ok_and(|parsed| parsed.is_zero())
    {
        return Ok(std::time::Duration::ZERO);
    }
    crate::component::parse_duration(text)
        .map_err(|e| format!("{e} (or 0s to keep Events until deleted)"))
}

/// A started API server: serving on its socket until its cancel token fires.
pub struct RunningApiServer {
    /// The router, for an in-process client (see [`RunningApiServer::in_process_client`]).
    router: axum::Router,
    server: Arc<ApiServer>,
    serve: std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<()>> + Send>>,
    cancel: CancellationToken,
    compactor: tokio::task::JoinHandle<()>,
    backup_socket: Option<tokio::task::JoinHandle<()>>,
    /// Where the certificates live (`None` in plain-HTTP test mode).
    pub pki_dir: Option<PathBuf>,
}

impl RunningApiServer {
    /// A client that reaches the API through the router in this process: no socket, no TLS. Its requests
    /// carry no user, so the server must have been started with `in_process_admin`; they name `component` in
    /// their `User-Agent`, so its writes are recorded under that field manager as across processes.
    pub fn in_process_client(&self, component: &str) -> kube::Client {
        let agent = karmada_controllers::runtime::client::user_agent(component);
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut request: http::Request<kube::client::Body>| {
                if let Some(agent) = &agent {
                    request
                        .headers_mut()
                        .entry(http::header::USER_AGENT)
                        .or_insert_with(|| agent.clone());
                }
                request
            })
            .service(self.router.clone());
        kube::Client::new(service, "default")
    }

    /// Serves until `shutdown` resolves (or serving fails), then stops everything it started.
    pub async fn run_until(
        mut self,
        shutdown: impl std::future::Future<Output = &'static str>,
    ) -> anyhow::Result<()> {
        let outcome = tokio::select! {
            result = &mut self.serve => result,
            reason = shutdown => {
                tracing::info!(%reason, "shutting down");
                self.cancel.cancel();
                (&mut self.serve).await
            }
        };
        self.cancel.cancel();
        self.server.shutdown().await;
        let _ = self.compactor.await;
        if let Some(task) = self.backup_socket {
            let _ = task.await;
        }
        outcome
    }
}

pub async fn run(args: ApiserverArgs) -> anyhow::Result<()> {
    let running = start(&args, CancellationToken::new(), false).await?;
    running
        .run_until(shutdown_requested(args.exit_with_stdin))
        .await
}

/// Opens the store, prepares certificates and the admin kubeconfig, and starts serving. With
/// `in_process_admin`, requests that reach the router without passing the socket's authentication (only an
/// in-process client's can) act as the administrator, as the components sharing the process need.
pub async fn start(
    args: &ApiserverArgs,
    cancel: CancellationToken,
    in_process_admin: bool,
) -> anyhow::Result<RunningApiServer> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating data directory {}", args.data_dir.display()))?;
    let (store, embedded) = open_store(args).await?;
    let backup_socket = match embedded {
        Some(redb) => Some(crate::backup_socket::spawn(
            &args.data_dir,
            redb,
            cancel.clone(),
        )?),
        None => None,
    };

    let listener = tokio::net::TcpListener::bind((args.bind_address.as_str(), args.secure_port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind_address, args.secure_port))?;
    let local: SocketAddr = listener.local_addr()?;

    let mut options = ApiServerOptions {
        cancel: cancel.clone(),
        advertise_address: local.to_string(),
        bootstrap_objects: apiserver_auth::rbac::bootstrap::bootstrap_cluster_roles()
            .into_iter()
            .chain(apiserver_auth::rbac::bootstrap::bootstrap_cluster_role_bindings())
            .collect(),
        // metrics.k8s.io over the members (karmada-metrics-adapter), as kube-aggregator would serve it
        provided: vec![karmada_apiserver::metrics_adapter::MetricsAdapter::new()],
        // custom.metrics.k8s.io pod metrics over the members, as karmada-metrics-adapter serves them
        custom_metrics: Some(
            karmada_apiserver::custom_metrics_adapter::CustomMetricsAdapter::new(),
        ),
        event_ttl: Some(args.event_ttl).filter(|ttl| !ttl.is_zero()),
        ..ApiServerOptions::default()
    };
    if args.insecure_http {
        // Test mode: every request is an administrator, so RBAC would have nothing to decide.
        options.anonymous = Anonymous::Admin;
    } else {
        // The socket's requests always arrive with a user (`serve` authenticates them), so this only decides
        // what a request without one is: an in-process component's, or none at all.
        options.anonymous = if in_process_admin {
            Anonymous::Admin
        } else {
            Anonymous::Reject
        };
        options.authorizer =
            apiserver_auth::rbac::RbacAuthorizer::new(store.clone(), cancel.clone());
    }
    let compactor =
        store::compactor::spawn_compactor(store.clone(), Default::default(), cancel.clone());

    let kubeconfig_path = args.data_dir.join("karmada-apiserver.config");
    let host = if local.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        local.ip().to_string()
    };
    let mut pki_dir = None;
    let (tls, authn) = if args.insecure_http {
        let authn = apiserver_auth::authn::Authenticator::new(None);
        let server = format!("http://{host}:{}", local.port());
        kubeconfig::write(
            &kubeconfig_path,
            &KubeconfigSpec {
                context: "karmada-apiserver",
                server: &server,
                ca_pem: None,
                client_cert_pem: None,
                client_key_pem: None,
            },
        )?;
        (None, authn)
    } else {
        let dir = args
            .pki_dir
            .clone()
            .unwrap_or_else(|| args.data_dir.join("pki"));
        let mut hosts = args.tls_sans.clone();
        hosts.push(host.clone());
        let pki = apiserver_auth::pki::Pki::load_or_create(&dir, &hosts)
            .context("preparing certificates")?;
        pki_dir = Some(dir);
        let tokens = match &args.token_auth_file {
            Some(path) => Some(
                apiserver_auth::authn::StaticTokens::load(path)
                    .context("loading the token file")?,
            ),
            None => None,
        };
        let issuer = Arc::new(
            apiserver_auth::service_account::TokenIssuer::load_or_create(pki.dir())
                .context("preparing the service account signing key")?,
        );
        options.service_account_tokens =
            Some(Arc::new(karmada_apiserver::server::ServiceAccountTokens {
                issuer: Arc::clone(&issuer),
                ca_pem: pki.ca_cert_pem().to_string(),
            }));
        let authn = apiserver_auth::authn::Authenticator::new(tokens)
            .with_token_authenticator(Arc::new(
                apiserver_auth::bootstrap_token::BootstrapTokenAuthenticator::new(store.clone()),
            ))
            .with_token_authenticator(Arc::new(
                apiserver_auth::service_account::ServiceAccountTokenAuthenticator::new(
                    issuer,
                    store.clone(),
                ),
            ));
        let server = format!("https://{host}:{}", local.port());
        kubeconfig::write(
            &kubeconfig_path,
            &KubeconfigSpec {
                context: "karmada-apiserver",
                server: &server,
                ca_pem: Some(pki.ca_cert_pem()),
                client_cert_pem: Some(pki.admin_cert_pem()),
                client_key_pem: Some(pki.admin_key_pem()),
            },
        )?;
        (Some(apiserver_auth::tls::server_config(&pki)?), authn)
    };

    let server = ApiServer::new(store, options)
        .await
        .context("starting the API server")?;
    let router = karmada_apiserver::router::router(server.clone());
    tracing::info!(address = %local, kubeconfig = %kubeconfig_path.display(), "karmada apiserver listening");

    let serve = karmada_apiserver::serve::serve(
        listener,
        tls,
        Arc::new(authn),
        router.clone(),
        cancel.clone(),
    );
    Ok(RunningApiServer {
        router,
        server,
        serve: Box::pin(async move { serve.await.map_err(anyhow::Error::from) }),
        cancel,
        compactor,
        backup_socket,
        pki_dir,
    })
}

/// The store the flags ask for; the embedded one is also returned as itself, for backups.
async fn open_store(
    args: &ApiserverArgs,
) -> anyhow::Result<(
    Arc<dyn store::Store>,
    Option<Arc<store::redb_backend::RedbStore>>,
)> {
    if !args.etcd_servers.is_empty() {
        let tls = match (&args.etcd_cafile, &args.etcd_certfile, &args.etcd_keyfile) {
            (Some(ca), Some(cert), Some(key)) => Some(store_etcd::EtcdTls {
                ca_file: ca.clone(),
                cert_file: cert.clone(),
                key_file: key.clone(),
            }),
            _ => None,
        };
        let options = store_etcd::EtcdOptions {
            endpoints: args.etcd_servers.clone(),
            prefix: args.etcd_prefix.clone(),
            tls,
            ..store_etcd::EtcdOptions::default()
        };
        let etcd = connect_etcd(options).await?;
        return Ok((Arc::new(etcd), None));
    }
    Ok(match args.storage {
        StorageBackend::Embedded => {
            let path = args.data_dir.join("store.redb");
            let redb = Arc::new(
                tokio::task::spawn_blocking(move || {
                    store::redb_backend::RedbStore::open(
                        &path,
                        store::redb_backend::RedbOptions {
                            // Events need no sync of their own, as kube-apiserver deployments
                            // keep them apart from durable state (docs/compat.md).
                            relaxed_prefixes: vec![
                                karmada_apiserver::event_ttl::EVENTS_PREFIX.to_string(),
                            ],
                            ..store::redb_backend::RedbOptions::default()
                        },
                    )
                })
                .await
                .context("opening the embedded store")?
                .context("opening the embedded store")?,
            );
            (redb.clone(), Some(redb))
        }
        StorageBackend::Memory => (Arc::new(store::memory::MemoryStore::new()), None),
    })
}

/// How long a starting API server waits for etcd: members started together come up in any
/// order and need a leader before they serve.
const ETCD_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Connects and waits until etcd serves a linearizable read, retrying within [`ETCD_WAIT`].
async fn connect_etcd(options: store_etcd::EtcdOptions) -> anyhow::Result<store_etcd::EtcdStore> {
    use store::Store;
    let deadline = tokio::time::Instant::now() + ETCD_WAIT;
    loop {
        let attempt = match store_etcd::EtcdStore::connect(options.clone()).await {
            Ok(etcd) => etcd.current_revision().await.map(|_| etcd),
            Err(error) => Err(error),
        };
        match attempt {
            Ok(etcd) => return Ok(etcd),
            Err(error) if tokio::time::Instant::now() >= deadline => {
                return Err(error).context(format!(
                    "etcd at {} did not serve within {}s (--etcd-servers)",
                    options.endpoints.join(","),
                    ETCD_WAIT.as_secs()
                ));
            }
            Err(error) => {
                tracing::info!(%error, "waiting for etcd");
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_event_ttl;
    use std::time::Duration;

    #[test]
    fn event_ttl_takes_durations_and_zero_turns_it_off() {
        assert_eq!(parse_event_ttl("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_event_ttl("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_event_ttl("0s"), Ok(Duration::ZERO));
        for bad in ["soon", "-5m", ""] {
            let error = parse_event_ttl(bad).expect_err(bad);
            assert!(
                error.contains("such as 10s") && error.contains("0s to keep Events"),
                "{bad}: {error}"
            );
        }
    }
}
