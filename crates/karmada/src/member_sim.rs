//! `karmada member-sim`: simulated member clusters in the foreground, and `karmada member-sim
//! fault` to inject faults into a running one.
//!
//! Each cluster `NAME` keeps its certificates (and, with `--storage embedded`, its store) in
//! `DIR/NAME/`, its admin kubeconfig (context `NAME`) in `DIR/NAME.config`, written once the
//! cluster serves and its nodes exist, and its faults in `DIR/NAME.faults.json`. Each cluster also serves
//! DNS (`cluster.local`, `clusterset.local`; UDP and TCP on one port): the port is printed and written to
//! `DIR/NAME.dns-port` (before the kubeconfig, so a cluster whose kubeconfig exists has both).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use karmada_apiserver::server::ServiceAccountTokens;
use member_sim::SimConfig;
use member_sim::faults::Fault;
use member_sim::resource_metrics::Load;
use member_sim::runtime::{ClusterOptions, RunningCluster, cluster, faults_file};
use tokio_util::sync::CancellationToken;

use crate::kubeconfig::{self, KubeconfigSpec};
use crate::process::shutdown_requested;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct MemberSimArgs {
    #[command(subcommand)]
    pub action: Option<MemberSimAction>,
    /// Boxed: the flags are many, and the command enum should stay small.
    #[command(flatten)]
    pub run: Box<RunArgs>,
}

#[derive(Subcommand, Debug)]
pub enum MemberSimAction {
    /// Injects (or clears) a fault in a running member-sim.
    Fault(FaultArgs),
    /// Sets the CPU and memory the matching pods of a running member-sim report through
    /// metrics.k8s.io (`kubectl top`, FederatedHPA), and custom metrics through
    /// custom.metrics.k8s.io (`--metric`); a later load for the same selector replaces it whole.
    Load(LoadArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SimStorage {
    /// Everything in memory (default): a restart starts a fresh cluster.
    Memory,
    /// The embedded on-disk store under DIR/NAME/.
    Embedded,
}

#[derive(Args, Clone, Debug)]
pub struct RunArgs {
    /// The cluster's name (its kubeconfig context and node name prefix).
    #[arg(long)]
    pub name: Option<String>,
    /// Where kubeconfigs, certificates and fault files live.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Port to listen on; with --count, clusters take PORT, PORT+1, ... (0: free ports).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Port the cluster's DNS answers on (UDP and TCP); with --count, DNS-PORT, DNS-PORT+1, ... (0: free
    /// ports). The port is also written to DIR/NAME.dns-port.
    #[arg(long, default_value_t = 0)]
    pub dns_port: u16,
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: String,
    /// Run this many clusters in one process, named PREFIX1, PREFIX2, ...
    #[arg(long)]
    pub count: Option<u32>,
    #[arg(long, default_value = "member")]
    pub name_prefix: String,
    #[arg(long, default_value_t = 3)]
    pub nodes: u32,
    #[arg(long, default_value = "8")]
    pub node_cpu: String,
    #[arg(long, default_value = "32Gi")]
    pub node_memory: String,
    #[arg(long, default_value = "110")]
    pub node_pods: String,
    #[arg(long, default_value = "v1.30.2")]
    pub kubernetes_version: String,
    /// Block the nodes' pod ranges (one /24 each) come from; the default fits the node count
    /// (10.244.0.0/16 up to 256 nodes, 100.64.0.0/10 beyond).
    #[arg(long)]
    pub pod_cidr: Option<String>,
    #[arg(long)]
    pub region: Option<String>,
    #[arg(long)]
    pub zone: Option<String>,
    #[arg(long)]
    pub provider: Option<String>,
    /// Compute workload status from capacity without Pod objects (many large clusters).
    #[arg(long)]
    pub scale_mode: bool,
    /// From binding to Running and Ready, e.g. 500ms, 1s, 0s.
    #[arg(long, value_parser = parse_delay)]
    pub pod_startup_delay: Option<jiff::SignedDuration>,
    #[arg(long, value_enum, default_value_t = SimStorage::Memory)]
    pub storage: SimStorage,
    /// Stop when standard input closes (test harnesses, supervisors).
    #[arg(long)]
    pub exit_with_stdin: bool,
}

#[derive(Args, Debug)]
pub struct FaultArgs {
    /// The running member-sim's --data-dir.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The cluster to change.
    #[arg(long)]
    pub name: String,
    /// notready | unreachable | latency DURATION | error-rate FRACTION | node-notready NODE |
    /// crash WORKLOAD | clear
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
    pub fault: Vec<String>,
}

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// The running member-sim's --data-dir.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The cluster to change.
    #[arg(long)]
    pub name: String,
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// The pods, e.g. app=web (empty: every pod of the namespace).
    #[arg(long, short = 'l', default_value = "")]
    pub selector: String,
    /// CPU each pod uses, e.g. 400m.
    #[arg(long, default_value = "0")]
    pub cpu: String,
    /// Memory each pod uses, e.g. 128Mi.
    #[arg(long, default_value = "0")]
    pub memory: String,
    /// A custom metric each pod reports, NAME=QUANTITY (e.g. http_requests_per_second=50);
    /// repeat for several.
    #[arg(long = "metric", value_name = "NAME=QUANTITY")]
    pub metrics: Vec<String>,
}

/// Room for 16,384 nodes' /24 pod ranges, outside the default service range.
const LARGE_POD_CIDR: &str = "100.64.0.0/10";

/// `500ms`, `2s`, `1m`: a non-negative duration with a unit.
fn parse_delay(text: &str) -> Result<jiff::SignedDuration, String> {
    let accepted = "expected a duration such as 500ms, 2s or 1m";
    let (number, millis_per_unit) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1_000.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60_000.0)
    } else {
        return Err(format!("{text:?}: {accepted}"));
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?}: {accepted}"))?;
    if !value.is_finite() || value < 0.0 || value * millis_per_unit > 86_400_000.0 {
        return Err(format!("{text:?}: {accepted}, at most a day"));
    }
    Ok(jiff::SignedDuration::from_millis(
        (value * millis_per_unit).round() as i64,
    ))
}

pub async fn run(args: MemberSimArgs) -> anyhow::Result<()> {
    match args.action {
        Some(MemberSimAction::Fault(fault)) => inject(fault),
        Some(MemberSimAction::Load(load)) => set_load(load),
        None => serve(*args.run).await,
    }
}

fn inject(args: FaultArgs) -> anyhow::Result<()> {
    let words: Vec<&str> = args.fault.iter().map(String::as_str).collect();
    let fault = Fault::from_words(&words)?;
    let path = faults_file::path(&args.data_dir, &args.name);
    let faults = faults_file::apply(&path, fault)?;
    println!("member-sim {}: {faults}", args.name);
    Ok(())
}

fn set_load(args: LoadArgs) -> anyhow::Result<()> {
    let load = Load::parse(
        &args.namespace,
        &args.selector,
        &args.cpu,
        &args.memory,
        &args.metrics,
    )?;
    let path = faults_file::path(&args.data_dir, &args.name);
    faults_file::apply(&path, Fault::Load(load))?;
    let metrics: String = args.metrics.iter().map(|m| format!(" {m}")).collect();
    println!(
        "member-sim {}: pods {{{}}} in {} use cpu {} memory {}{metrics}",
        args.name, args.selector, args.namespace, args.cpu, args.memory
    );
    Ok(())
}

/// The clusters to run: `(name, API port, DNS port)`.
fn cluster_names(args: &RunArgs) -> anyhow::Result<Vec<(String, u16, u16)>> {
    let nth = |base: u16, index: u32| -> anyhow::Result<u16> {
        if base == 0 {
            return Ok(0);
        }
        u16::try_from(u32::from(base) + index)
            .with_context(|| format!("port {base} + {index} is out of range"))
    };
    let ports = |index: u32| -> anyhow::Result<(u16, u16)> {
        Ok((nth(args.port, index)?, nth(args.dns_port, index)?))
    };
    match (args.count, &args.name) {
        (Some(_), Some(_)) => bail!("give either --name or --count (with --name-prefix), not both"),
        (None, None) => bail!("--name NAME is required (or --count N --name-prefix PREFIX)"),
        (None, Some(name)) => {
            let (port, dns) = ports(0)?;
            Ok(vec![(name.clone(), port, dns)])
        }
        (Some(0), None) => bail!("--count must be at least 1"),
        (Some(count), None) => (0..count)
            .map(|i| {
                let (port, dns) = ports(i)?;
                Ok((format!("{}{}", args.name_prefix, i + 1), port, dns))
            })
            .collect(),
    }
}

/// Where the DNS port of cluster `name` is written: `DIR/NAME.dns-port`.
pub fn dns_port_path(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(format!("{name}.dns-port"))
}

fn sim_config(args: &RunArgs, name: &str) -> SimConfig {
    let defaults = SimConfig::default();
    SimConfig {
        name: name.to_string(),
        nodes: args.nodes,
        node_cpu: args.node_cpu.clone(),
        node_memory: args.node_memory.clone(),
        node_pods: args.node_pods.clone(),
        kubernetes_version: args.kubernetes_version.clone(),
        region: args.region.clone().unwrap_or(defaults.region.clone()),
        zone: args.zone.clone().unwrap_or(defaults.zone.clone()),
        provider: args.provider.clone().unwrap_or(defaults.provider.clone()),
        pod_startup_delay: args.pod_startup_delay.unwrap_or(defaults.pod_startup_delay),
        pod_cidr: match &args.pod_cidr {
            Some(cidr) => cidr.clone(),
            None if args.nodes > 256 => LARGE_POD_CIDR.to_string(),
            None => defaults.pod_cidr.clone(),
        },
        ..defaults
    }
}

async fn serve(args: RunArgs) -> anyhow::Result<()> {
    let Some(data_dir) = args.data_dir.clone() else {
        bail!("--data-dir DIR is required");
    };
    if !args.kubernetes_version.starts_with('v') {
        bail!(
            "--kubernetes-version {:?}: expected a version such as v1.30.2",
            args.kubernetes_version
        );
    }
    let clusters = cluster_names(&args)?;
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating data directory {}", data_dir.display()))?;
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let args = Arc::new(args);
    let mut starting = tokio::task::JoinSet::new();
    for (name, port, dns_port) in clusters {
        let args = args.clone();
        let data_dir = data_dir.clone();
        let cancel = cancel.clone();
        starting.spawn(async move {
            start_cluster(&args, &data_dir, &name, (port, dns_port), cancel)
                .await
                .with_context(|| format!("starting member-sim {name}"))
        });
    }
    let mut running: Vec<RunningCluster> = Vec::new();
    let mut failure = None;
    while let Some(joined) = starting.join_next().await {
        match joined.context("a cluster's start task failed") {
            Ok(Ok(cluster)) => running.push(cluster),
            Ok(Err(error)) | Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    if failure.is_none() {
        tracing::info!(
            clusters = running.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "member-sim ready"
        );
        let reason = shutdown_requested(args.exit_with_stdin).await;
        tracing::info!(%reason, "shutting down");
    }
    cancel.cancel();
    for cluster in running {
        cluster.stop().await;
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

async fn start_cluster(
    args: &RunArgs,
    data_dir: &Path,
    name: &str,
    (port, dns_port): (u16, u16),
    cancel: CancellationToken,
) -> anyhow::Result<RunningCluster> {
    let dir = data_dir.join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let store: Arc<dyn store::Store> = match args.storage {
        SimStorage::Memory => Arc::new(store::memory::MemoryStore::new()),
        SimStorage::Embedded => Arc::new(
            store::redb_backend::RedbStore::open(
                dir.join("store.redb"),
                store::redb_backend::RedbOptions::default(),
            )
            .context("opening the embedded store")?,
        ),
    };
    let listener = tokio::net::TcpListener::bind((args.bind_address.as_str(), port))
        .await
        .with_context(|| format!("binding {}:{port}", args.bind_address))?;
    let local = listener.local_addr()?;
    let host = if local.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        local.ip().to_string()
    };
    let pki_dir = dir.join("pki");
    let hosts = vec![host.clone(), "localhost".to_string()];
    // Key generation is CPU work: keep it off the async threads.
    let pki = tokio::task::spawn_blocking(move || {
        apiserver_auth::pki::Pki::load_or_create(&pki_dir, &hosts)
    })
    .await?
    .context("preparing certificates")?;
    let tls = apiserver_auth::tls::server_config(&pki)?;
    let key_dir = pki.dir().to_path_buf();
    let issuer = Arc::new(
        tokio::task::spawn_blocking(move || {
            apiserver_auth::service_account::TokenIssuer::load_or_create(&key_dir)
        })
        .await?
        .context("preparing the service account signing key")?,
    );
    // Like a real cluster: ServiceAccount tokens are minted and accepted (karmadactl join stores one).
    let authn = apiserver_auth::authn::Authenticator::new(None).with_token_authenticator(Arc::new(
        apiserver_auth::service_account::ServiceAccountTokenAuthenticator::new(
            Arc::clone(&issuer),
            store.clone(),
        ),
    ));
    let cluster = cluster::start(
        ClusterOptions {
            config: sim_config(args, name),
            scale_mode: args.scale_mode,
            store,
            listener,
            tls: Some(tls),
            authn: Arc::new(authn),
            service_account_tokens: Some(Arc::new(ServiceAccountTokens {
                issuer,
                ca_pem: pki.ca_cert_pem().to_string(),
            })),
            faults_path: faults_file::path(data_dir, name),
            dns: Some(std::net::SocketAddr::new(local.ip(), dns_port)),
        },
        cancel,
    )
    .await?;
    if let Some(dns) = cluster.dns_address {
        let path = dns_port_path(data_dir, name);
        std::fs::write(&path, format!("{}\n", dns.port()))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("member-sim {name}: DNS on {host}:{} (udp, tcp)", dns.port());
    }
    let kubeconfig_path = data_dir.join(format!("{name}.config"));
    let server = format!("https://{host}:{}", local.port());
    kubeconfig::write(
        &kubeconfig_path,
        &KubeconfigSpec {
            context: name,
            server: &server,
            ca_pem: Some(pki.ca_cert_pem()),
            client_cert_pem: Some(pki.admin_cert_pem()),
            client_key_pem: Some(pki.admin_key_pem()),
        },
    )?;
    tracing::info!(cluster = name, address = %local, kubeconfig = %kubeconfig_path.display(), "member-sim cluster ready");
    Ok(cluster)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_parse_with_units_and_refuse_the_rest() {
        let cases = [
            ("500ms", Some(500)),
            ("2s", Some(2_000)),
            ("1.5s", Some(1_500)),
            ("1m", Some(60_000)),
            ("0s", Some(0)),
            ("5", None),
            ("-1s", None),
            ("soon", None),
        ];
        for (text, millis) in cases {
            let parsed = parse_delay(text).ok().map(|d| d.as_millis() as i64);
            assert_eq!(parsed, millis, "{text}");
        }
        assert!(parse_delay("5").expect_err("no unit").contains("500ms"));
    }
}
