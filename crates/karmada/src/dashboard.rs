//! `karmada dashboard`: the web dashboard over HTTPS, talking to the control plane with each user's own
//! credentials (the kubeconfig given here only says where the control plane is and which CA to trust).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use karmada_dashboard::{ControlPlane, tls};
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug)]
pub struct DashboardArgs {
    /// Kubeconfig naming the control plane (its server and CA; its credentials are not used).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Context in --kubeconfig (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// The control plane's URL (overrides the kubeconfig's server).
    #[arg(long)]
    pub server: Option<String>,
    /// PEM CA bundle to trust for --server without --kubeconfig.
    #[arg(long)]
    pub certificate_authority: Option<PathBuf>,
    /// Where the dashboard listens; port 0 picks a free port (logged, and written to --address-file).
    #[arg(long, default_value = "127.0.0.1:8443")]
    pub bind: SocketAddr,
    /// PEM certificate chain to serve (default: a self-signed certificate made at start).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Once listening, write the dashboard's URL to this file.
    #[arg(long)]
    pub address_file: Option<PathBuf>,
    /// Exit when standard input closes (for supervisors and tests).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

async fn control_plane(args: &DashboardArgs) -> anyhow::Result<ControlPlane> {
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            let options = kube::config::KubeConfigOptions {
                context: args.context.clone(),
                ..Default::default()
            };
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("using kubeconfig {}", path.display()))?
        }
        None => {
            let server = args
                .server
                .as_deref()
                .context("pass --kubeconfig or --server to say where the control plane is")?;
            let mut config = kube::Config::new(
                server
                    .parse()
                    .with_context(|| format!("--server {server}"))?,
            );
            config.root_cert_file = args.certificate_authority.clone();
            config
        }
    };
    if let (Some(server), Some(_)) = (&args.server, &args.kubeconfig) {
        config.cluster_url = server
            .parse()
            .with_context(|| format!("--server {server}"))?;
    }
    Ok(ControlPlane::new(config))
}

pub async fn run(args: DashboardArgs) -> anyhow::Result<()> {
    let control_plane = control_plane(&args).await?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => tls::from_files(cert, key)?,
        _ => tls::self_signed(&[args.bind.ip().to_string()])?,
    };
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("binding --bind {}", args.bind))?;
    let bound = listener.local_addr()?;
    let url = format!("https://{bound}/");
    tracing::info!(%url, control_plane = %control_plane.server(), "serving the dashboard");
    if let Some(path) = &args.address_file {
        std::fs::write(path, &url).with_context(|| format!("writing {}", path.display()))?;
    }
    let cancel = CancellationToken::new();
    let server = tokio::spawn(karmada_dashboard::serve(
        listener,
        tls,
        control_plane,
        cancel.clone(),
    ));
    let why = crate::process::shutdown_requested(args.exit_with_stdin).await;
    tracing::info!(reason = why, "dashboard stopping");
    cancel.cancel();
    server.await??;
    Ok(())
}
