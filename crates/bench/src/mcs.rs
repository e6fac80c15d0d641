//! Multi-cluster Services benchmark (`karmada-bench mcs`): how fast a provider's endpoint change reaches a
//! consumer's DNS, and how many queries one member-sim's DNS answers.
//!
//! Real processes: `karmada apiserver`, `karmada controller-manager`, `karmada scheduler` and one `karmada
//! member-sim` process serving two members (pods and EndpointSlices, not scale mode), joined with `karmadactl
//! join`. member1 runs a two-replica Deployment behind a headless Service, exported to the clusterset; member2
//! imports it (a Headless ServiceImport). A change: the Deployment is scaled between 2 and 3 replicas, adding or
//! removing one endpoint. The clock starts when member1's EndpointSlice (as its watch reports it) lists the new set of ready
//! addresses and stops when member2's DNS answers `<svc>.<ns>.svc.clusterset.local` with exactly that set
//! (polled every 5 ms over UDP). Target: P99 ≤ 2 s over 200 changes.
//!
//! DNS throughput: `--dns-clients` tasks, each with its own UDP socket and one query in flight, ask member2's DNS
//! for a mix of names (the clusterset name, a cluster.local Service, an SRV, a name that does not exist) for
//! `--dns-seconds`; answered queries per second and their latency. Target: ≥ 20,000/s with P99 ≤ 5 ms.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher;
use tokio::net::UdpSocket;
use tokio::sync::watch;

use crate::process::{
    Launcher, LogDir, Process, client, join_push, karmada_binary, start_apiserver, start_component,
    start_scheduler, wait_clusters_ready, wait_for_file,
};
use crate::report::{self, Row};
use crate::stats::{Samples, ms};

#[derive(clap::Args)]
pub struct Args {
    /// Endpoint changes to time.
    #[arg(long, default_value_t = 200)]
    pub changes: u32,
    /// Concurrent DNS clients (one query in flight each).
    #[arg(long, default_value_t = 16)]
    pub dns_clients: u32,
    /// How long the DNS load runs.
    #[arg(long, default_value_t = 10)]
    pub dns_seconds: u64,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one); `karmadactl` is looked up beside it.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
    /// Keep the processes' logs in this directory (default: a temporary one, removed at the end).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// `RUST_LOG` of the processes.
    #[arg(long, default_value = "warn")]
    pub log_level: String,
}

const TIMEOUT: Duration = Duration::from_secs(300);
const NAMESPACE: &str = "bench";
const SERVICE: &str = "echo";
const CLUSTERSET_NAME: &str = "echo.bench.svc.clusterset.local";

fn manifests() -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {NAMESPACE}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {SERVICE}, namespace: {NAMESPACE}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: {SERVICE}}}}}
  template:
    metadata: {{labels: {{app: {SERVICE}}}}}
    spec: {{containers: [{{name: echo, image: echo:1, ports: [{{containerPort: 8080}}]}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: {SERVICE}, namespace: {NAMESPACE}}}
spec: {{clusterIP: None, selector: {{app: {SERVICE}}}, ports: [{{name: http, port: 8080}}]}}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata: {{name: {SERVICE}, namespace: {NAMESPACE}}}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceImport
metadata: {{name: {SERVICE}, namespace: {NAMESPACE}}}
spec: {{type: Headless, ports: [{{name: http, protocol: TCP, port: 8080}}]}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: provider, namespace: {NAMESPACE}}}
spec:
  resourceSelectors:
    - {{apiVersion: apps/v1, kind: Deployment, name: {SERVICE}}}
    - {{apiVersion: v1, kind: Service, name: {SERVICE}}}
    - {{apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceExport, name: {SERVICE}}}
  placement: {{clusterAffinity: {{clusterNames: [member1]}}}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: consumer, namespace: {NAMESPACE}}}
spec:
  resourceSelectors:
    - {{apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceImport, name: {SERVICE}}}
  placement: {{clusterAffinity: {{clusterNames: [member2]}}}}
"#
    )
}

struct Federation {
    _processes: Vec<Process>,
    _logs: LogDir,
    _dir: tempfile::TempDir,
    karmada: Client,
    provider: Client,
    dns: SocketAddr,
}

async fn start(binary: &Path, args: &Args) -> anyhow::Result<Federation> {
    let dir = tempfile::tempdir()?;
    let logs = match &args.log_dir {
        Some(path) => LogDir::kept(path)?,
        None => LogDir::temp()?,
    };
    let launcher = Launcher::new(binary, logs.path(), &args.log_level);
    let apiserver = start_apiserver(&launcher, dir.path().join("karmada"), TIMEOUT).await?;
    let members_dir = dir.path().join("members");
    let members_arg = members_dir.to_string_lossy().to_string();
    let member_sim = launcher.spawn(
        "member-sim",
        &[
            "member-sim",
            "--count",
            "2",
            "--name-prefix",
            "member",
            "--pod-startup-delay",
            "0s",
            "--exit-with-stdin",
            "--data-dir",
            &members_arg,
        ],
    )?;
    for name in ["member1", "member2"] {
        wait_for_file(
            &members_dir.join(format!("{name}.config")),
            "member-sim",
            TIMEOUT,
        )
        .await?;
    }
    let controller_manager = start_component(
        &launcher,
        "controller-manager",
        &apiserver.kubeconfig,
        "127.0.0.1:0",
        &["--cluster-status-update-frequency", "1s"],
    )?;
    let scheduler = start_scheduler(&launcher, &apiserver.kubeconfig)?;
    for name in ["member1", "member2"] {
        join_push(
            &launcher.karmadactl(),
            name,
            &apiserver.kubeconfig,
            &members_dir.join(format!("{name}.config")),
        )
        .await?;
    }
    wait_clusters_ready(&apiserver.client, 2, TIMEOUT).await?;
    let dns_port: u16 = std::fs::read_to_string(members_dir.join("member2.dns-port"))
        .context("member2's DNS port")?
        .trim()
        .parse()?;
    Ok(Federation {
        provider: client(&members_dir.join("member1.config")).await?,
        karmada: apiserver.client,
        dns: SocketAddr::new(IpAddr::from([127, 0, 0, 1]), dns_port),
        _processes: vec![apiserver.process, member_sim, controller_manager, scheduler],
        _logs: logs,
        _dir: dir,
    })
}

/// Server-side applies every document of `yaml` to the control plane.
async fn apply(karmada: &Client, yaml: &str) -> anyhow::Result<()> {
    let discovery = kube::Discovery::new(karmada.clone()).run().await?;
    for document in yaml.split("\n---\n") {
        let object: DynamicObject = serde_saphyr::from_str(document).context("manifest")?;
        let types = object.types.clone().context("apiVersion and kind")?;
        let (group, version) = types
            .api_version
            .split_once('/')
            .unwrap_or(("", &types.api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, &types.kind);
        let (resource, capabilities) = discovery.resolve_gvk(&gvk).context("kind not served")?;
        let name = object.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match (&object.metadata.namespace, capabilities.scope) {
            (Some(namespace), kube::discovery::Scope::Namespaced) => {
                Api::namespaced_with(karmada.clone(), namespace, &resource)
            }
            _ => Api::all_with(karmada.clone(), &resource),
        };
        api.patch(
            &name,
            &PatchParams::apply("karmada-bench").force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("applying {} {name}", types.kind))?;
    }
    Ok(())
}

/// One DNS question over UDP; the answer's addresses (A records), or `None` for NXDOMAIN/no answer.
async fn ask(
    socket: &UdpSocket,
    id: u16,
    name: &Name,
    kind: RecordType,
) -> anyhow::Result<Option<BTreeSet<String>>> {
    let mut query = Message::query();
    query.metadata.id = id;
    query.add_query(Query::query(name.clone(), kind));
    socket.send(&query.to_vec()?).await?;
    let mut buffer = vec![0u8; 4096];
    loop {
        let read = tokio::time::timeout(Duration::from_secs(1), socket.recv(&mut buffer))
            .await
            .context("no DNS answer within 1 s")??;
        let answer = Message::from_vec(&buffer[..read])?;
        if answer.metadata.id != id {
            continue; // a late answer to an earlier question
        }
        if answer.metadata.response_code == ResponseCode::NXDomain {
            return Ok(None);
        }
        return Ok(Some(
            answer
                .answers
                .iter()
                .filter_map(|r| match &r.data {
                    RData::A(a) => Some(a.0.to_string()),
                    _ => None,
                })
                .collect(),
        ));
    }
}

/// Ready addresses of the provider's EndpointSlices of the Service, as its watch reports them.
fn ready_addresses(slices: &[EndpointSlice]) -> BTreeSet<String> {
    slices
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
        .flat_map(|e| e.addresses.iter().cloned())
        .collect()
}

/// Follows the provider's slices of the Service: the latest ready set and when it was first seen.
fn follow_provider(provider: Client) -> watch::Receiver<(BTreeSet<String>, Instant)> {
    let (sender, receiver) = watch::channel((BTreeSet::new(), Instant::now()));
    tokio::spawn(async move {
        let api: Api<EndpointSlice> = Api::namespaced(provider, NAMESPACE);
        let config =
            watcher::Config::default().labels(&format!("kubernetes.io/service-name={SERVICE}"));
        let (reader, writer) = kube::runtime::reflector::store();
        let mut events = std::pin::pin!(kube::runtime::reflector(
            writer,
            watcher::watcher(api, config)
        ));
        while let Some(event) = events.next().await {
            if event.is_err() {
                continue;
            }
            let slices: Vec<EndpointSlice> = reader.state().iter().map(|s| (**s).clone()).collect();
            let set = ready_addresses(&slices);
            sender.send_if_modified(|(current, at)| {
                if *current == set {
                    return false;
                }
                *current = set;
                *at = Instant::now();
                true
            });
        }
    });
    receiver
}

async fn until_answer(
    socket: &UdpSocket,
    name: &Name,
    expected: &BTreeSet<String>,
    id: &mut u16,
) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        *id = id.wrapping_add(1);
        if let Ok(Some(answer)) = ask(socket, *id, name, RecordType::A).await
            && answer == *expected
        {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!("the consumer's DNS never answered {expected:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn measure_changes(federation: &Federation, changes: u32) -> anyhow::Result<Samples> {
    let socket = UdpSocket::bind("127.0.0.1:0").await?;
    socket.connect(federation.dns).await?;
    let name = Name::from_ascii(CLUSTERSET_NAME)?;
    let mut provider = follow_provider(federation.provider.clone());
    let mut id = 0u16;
    // The starting state: two ready endpoints, answered by the consumer.
    let first = loop {
        let (set, _) = provider.borrow_and_update().clone();
        if set.len() == 2 {
            break set;
        }
        tokio::time::timeout(TIMEOUT, provider.changed()).await??;
    };
    until_answer(&socket, &name, &first, &mut id).await?;
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        federation.karmada.clone(),
        NAMESPACE,
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "apps",
            "v1",
            "Deployment",
        )),
    );
    let mut samples = Samples::default();
    for change in 0..changes {
        let before = provider.borrow().0.clone();
        // 2 → 3 → 2 ...: each change adds or removes one endpoint (member-sim reuses a freed pod IP, so
        // replacing a pod may not change the set).
        let replicas = if change % 2 == 0 { 3 } else { 2 };
        let patch = serde_json::json!({"spec": {"replicas": replicas}});
        deployments
            .patch(SERVICE, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let (target, changed_at) = loop {
            tokio::time::timeout(TIMEOUT, provider.changed())
                .await
                .with_context(|| {
                    format!("change {change}: the provider's slice did not change")
                })??;
            let (set, at) = provider.borrow_and_update().clone();
            if set.len() == replicas && set != before {
                break (set, at);
            }
        };
        let answered = until_answer(&socket, &name, &target, &mut id).await?;
        samples.push(answered.saturating_duration_since(changed_at));
    }
    Ok(samples)
}

/// Queries per second and latency of `clients` concurrent UDP clients for `seconds`.
async fn measure_dns(
    dns: SocketAddr,
    clients: u32,
    seconds: u64,
) -> anyhow::Result<(f64, Samples, u64)> {
    let names: Vec<(Name, RecordType)> = vec![
        (Name::from_ascii(CLUSTERSET_NAME)?, RecordType::A),
        (
            Name::from_ascii("echo.bench.svc.cluster.local")?,
            RecordType::A,
        ),
        (
            Name::from_ascii("_http._tcp.echo.bench.svc.clusterset.local")?,
            RecordType::SRV,
        ),
        (
            Name::from_ascii("missing.bench.svc.clusterset.local")?,
            RecordType::A,
        ),
    ];
    let names = Arc::new(names);
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let (names, stop, failures) = (names.clone(), stop.clone(), failures.clone());
        tasks.spawn(async move {
            let mut samples = Samples::default();
            let Ok(socket) = UdpSocket::bind("127.0.0.1:0").await else {
                return samples;
            };
            if socket.connect(dns).await.is_err() {
                return samples;
            }
            let mut id = (client as u16).wrapping_mul(4099);
            let mut turn = client as usize;
            while !stop.load(Ordering::Relaxed) {
                id = id.wrapping_add(1);
                turn += 1;
                let (name, kind) = &names[turn % names.len()];
                let asked = Instant::now();
                match ask(&socket, id, name, *kind).await {
                    Ok(_) => samples.push(asked.elapsed()),
                    Err(_) => {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            samples
        });
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Samples::default();
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    Ok((
        all.len() as f64 / elapsed,
        all,
        failures.load(Ordering::Relaxed),
    ))
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    let federation = start(&binary, &args).await?;
    apply(&federation.karmada, &manifests()).await?;
    let changes = measure_changes(&federation, args.changes).await?;
    let (qps, latency, failures) =
        measure_dns(federation.dns, args.dns_clients, args.dns_seconds).await?;
    let rows = vec![
        Row {
            name: format!(
                "provider endpoint change → consumer DNS answer ({} changes)",
                args.changes
            ),
            ops_per_sec: None,
            p50_ms: Some(ms(changes.quantile(0.5))),
            p99_ms: Some(ms(changes.quantile(0.99))),
            target: "P99 ≤ 2000 ms".into(),
            note: format!("max {} ms", ms(changes.quantile(1.0))),
        },
        Row {
            name: format!(
                "DNS queries, one member-sim ({} UDP clients, {} s)",
                args.dns_clients, args.dns_seconds
            ),
            ops_per_sec: Some(qps),
            p50_ms: Some(ms(latency.quantile(0.5))),
            p99_ms: Some(ms(latency.quantile(0.99))),
            target: "≥ 20,000/s, P99 ≤ 5 ms".into(),
            note: format!("{failures} unanswered within 1 s"),
        },
    ];
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `karmada-bench mcs --changes {} --dns-clients {} --dns-seconds {}` (binary: `{}`). Machine: {}; \
         date {}. The machine's 1-minute load average was {} when the run ended (other developers' builds share \
         it; on a quiet machine the figures can only improve).\n\n\
         Processes: karmada apiserver, controller-manager, scheduler and one member-sim process serving member1 \
         (a Deployment behind a headless Service, exported) and member2 (the Headless ServiceImport). A change scales \
         the Deployment between 2 and 3 replicas (one endpoint more or less); the clock runs from member1's \
         EndpointSlice listing the new set of ready addresses (its watch) to member2's DNS answering the clusterset name with exactly the new set (polled every \
         5 ms). The path: member slice → reported Work → imported slice → attached binding → Work → member2's slice \
         → member2's DNS. The DNS load is {} concurrent UDP clients with one query in flight each (the clusterset \
         name, a cluster.local Service, an SRV, a missing name in turn), in the benchmark's own process on the same \
         machine.\n\n{table}",
        args.changes,
        args.dns_clients,
        args.dns_seconds,
        report::relative_to_cwd(&binary),
        report::machine(),
        jiff::Timestamp::now().strftime("%Y-%m-%d"),
        report::load_average(),
        args.dns_clients,
    );
    report::write_section(&args.report, "Multi-cluster Services", &body)?;
    Ok(())
}
