//! `karmada apiserver`: the API server on a data directory.
//!
//! First start creates `DATA/pki` (CA, serving and admin certificates), `DATA/store.redb` and
//! `DATA/karmada-apiserver.config`; later starts reuse them. Readiness is `/readyz`.

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
    /// Extra DNS names or IPs for the serving certificate.
    #[arg(long = "tls-san", value_delimiter = ',')]
    pub tls_sans: Vec<String>,
}

pub async fn run(args: ApiserverArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating data directory {}", args.data_dir.display()))?;
    let store: Arc<dyn store::Store> = match args.storage {
        StorageBackend::Embedded => Arc::new(
            store::redb_backend::RedbStore::open(
                &args.data_dir.join("store.redb"),
                store::redb_backend::RedbOptions::default(),
            )
            .context("opening the embedded store")?,
        ),
        StorageBackend::Memory => Arc::new(store::memory::MemoryStore::new()),
    };

    let cancel = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind((args.bind_address.as_str(), args.secure_port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind_address, args.secure_port))?;
    let local: SocketAddr = listener.local_addr()?;

    let mut options = ApiServerOptions::default();
    options.cancel = cancel.clone();
    options.advertise_address = local.to_string();
    options.bootstrap_objects = apiserver_auth::rbac::bootstrap::bootstrap_cluster_roles()
        .into_iter()
        .chain(apiserver_auth::rbac::bootstrap::bootstrap_cluster_role_bindings())
        .collect();
    if args.insecure_http {
        // Test mode: every request is an administrator, so RBAC would have nothing to decide.
        options.anonymous = Anonymous::Admin;
    } else {
        options.anonymous = Anonymous::Reject;
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
        let mut hosts = args.tls_sans.clone();
        hosts.push(host.clone());
        let pki = apiserver_auth::pki::Pki::load_or_create(&args.data_dir.join("pki"), &hosts)
            .context("preparing certificates")?;
        let tokens = match &args.token_auth_file {
            Some(path) => Some(
                apiserver_auth::authn::StaticTokens::load(path)
                    .context("loading the token file")?,
            ),
            None => None,
        };
        let authn = apiserver_auth::authn::Authenticator::new(tokens);
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
    let server_handle = server.clone();
    let router = karmada_apiserver::router::router(server);
    tracing::info!(address = %local, kubeconfig = %kubeconfig_path.display(), "karmada apiserver listening");

    let serve =
        karmada_apiserver::serve::serve(listener, tls, Arc::new(authn), router, cancel.clone());
    tokio::pin!(serve);
    tokio::select! {
        result = &mut serve => result?,
        reason = shutdown_requested(args.exit_with_stdin) => {
            tracing::info!(%reason, "shutting down");
            cancel.cancel();
            serve.await?;
        }
    }
    cancel.cancel();
    server_handle.shutdown().await;
    let _ = compactor.await;
    Ok(())
}
