//! Failover benchmark: how long after a member fails all its replicas are Ready in the others.
//!
//! Real processes: `karmada apiserver`, `karmada controller-manager --enable-failover` (short failure threshold),
//! `karmada scheduler` and one `karmada member-sim --count N --scale-mode` process, joined with `karmadactl join`.
//! One PropagationPolicy divides every labelled Deployment evenly over the members and tolerates a not-ready
//! member for `--toleration-seconds`. Once every Deployment is Ready everywhere, member1 is made unreachable
//! (`karmada member-sim fault ... unreachable`); per Deployment we time the fault to the moment the other members
//! together run all its replicas Ready (as their watches report it), and the total is when the last one got there.
//! Target: the failure threshold + tolerationSeconds + 5 s.
//! Afterwards the failover controllers' reconciles are counted over `--quiet-window-seconds` (from the
//! controller-manager's `eviction_processing_total`): with every workload moved they should be idle, and their
//! eviction metrics are printed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::bail;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};

use crate::api_requests::RequestCounts;
use crate::process::{
    Launcher, LogDir, Process, cluster_api, is_ready, join_push, karmada_binary, start_apiserver,
    start_component, start_member_sim, start_scheduler, wait_clusters_ready,
};
use crate::report::{self, Row};
use crate::stats::{Samples, ms};

#[derive(clap::Args)]
pub struct Args {
    /// Member-sims (member1 fails).
    #[arg(long, default_value_t = 3)]
    pub members: u32,
    /// Deployments, each with `members` replicas (one per member).
    #[arg(long, default_value_t = 500)]
    pub workloads: u32,
    /// `--cluster-failure-threshold` of the controller-manager, in seconds.
    #[arg(long, default_value_t = 5)]
    pub failure_threshold: u64,
    /// tolerationSeconds of the not-ready NoExecute toleration in the policy.
    #[arg(long, default_value_t = 5)]
    pub toleration_seconds: u64,
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
    /// After every workload moved, how long to count the failover controllers' reconciles (steady state).
    #[arg(long, default_value_t = 5)]
    pub quiet_window_seconds: u64,
}

/// Names of [`Setup::processes`], in order.
const PROCESS_NAMES: [&str; 4] = ["apiserver", "member-sim", "controller-manager", "scheduler"];

const TIMEOUT: Duration = Duration::from_secs(300);
const NAMESPACE: &str = "bench";
const LABEL: (&str, &str) = ("bench", "failover");

/// Polls `check` every 100 ms until it yields a value, or fails with `what` after [`TIMEOUT`].
async fn until<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Ready replicas of each labelled Deployment in one member.
async fn ready_by_name(client: &Client) -> anyhow::Result<HashMap<String, i32>> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let list = api
        .list(&ListParams::default().labels(&format!("{}={}", LABEL.0, LABEL.1)))
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|d| {
            let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            Some((d.metadata.name?, ready))
        })
        .collect())
}

struct Setup {
    /// apiserver, member-sim, controller-manager, scheduler (their names in [`PROCESS_NAMES`]).
    processes: Vec<Process>,
    _logs: LogDir,
    _dir: tempfile::TempDir,
    karmada: Client,
    members: Vec<(String, Client)>,
    members_dir: PathBuf,
    binary: PathBuf,
    /// The controller-manager's `/metrics`.
    metrics: std::net::SocketAddr,
}

/// `--log-dir` if given, else a temporary directory.
fn log_dir(args: &Args) -> anyhow::Result<LogDir> {
    match &args.log_dir {
        Some(dir) => LogDir::kept(dir),
        None => LogDir::temp(),
    }
}

/// The controller-manager with failover on, a 1 s status period and the given failure threshold.
fn start_controller_manager(
    launcher: &Launcher,
    kubeconfig: &Path,
    metrics: std::net::SocketAddr,
    failure_threshold: u64,
) -> anyhow::Result<Process> {
    let threshold = format!("{failure_threshold}s");
    start_component(
        launcher,
        "controller-manager",
        kubeconfig,
        &metrics.to_string(),
        &[
            "--enable-failover",
            "--cluster-status-update-frequency",
            "1s",
            "--cluster-failure-threshold",
            &threshold,
            "--cluster-success-threshold",
            "1s",
        ],
    )
}

async fn start_federation(binary: &Path, args: &Args) -> anyhow::Result<Setup> {
    let dir = tempfile::tempdir()?;
    let logs = log_dir(args)?;
    let launcher = Launcher::new(binary, logs.path(), &args.log_level);
    let apiserver = start_apiserver(&launcher, dir.path().join("karmada"), TIMEOUT).await?;
    let member_sim = start_member_sim(
        &launcher,
        dir.path().join("members"),
        args.members,
        &["--nodes", "10"],
        TIMEOUT,
    )
    .await?;
    let metrics = free_address()?;
    let controller_manager = start_controller_manager(
        &launcher,
        &apiserver.kubeconfig,
        metrics,
        args.failure_threshold,
    )?;
    let scheduler = start_scheduler(&launcher, &apiserver.kubeconfig)?;
    let karmadactl = launcher.karmadactl();
    for name in &member_sim.names {
        join_push(
            &karmadactl,
            name,
            &apiserver.kubeconfig,
            &member_sim.kubeconfig(name),
        )
        .await?;
    }
    let members = member_sim.clients().await?;
    wait_clusters_ready(&apiserver.client, member_sim.names.len(), TIMEOUT).await?;
    Ok(Setup {
        processes: vec![
            apiserver.process,
            member_sim.process,
            controller_manager,
            scheduler,
        ],
        _logs: logs,
        _dir: dir,
        karmada: apiserver.client,
        members,
        members_dir: member_sim.dir,
        binary: binary.to_path_buf(),
        metrics,
    })
}

/// A local port free right now (the controller-manager binds it next).
fn free_address() -> anyhow::Result<std::net::SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// Prints how many Events of each reason the control plane recorded (first or repeated) during the bench.
async fn events_by_reason(client: &Client) -> anyhow::Result<()> {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::all(client.clone());
    let mut counts: std::collections::BTreeMap<(String, String), i32> = Default::default();
    for event in events.list(&ListParams::default()).await?.items {
        let source = event.source.and_then(|s| s.component).unwrap_or_default();
        let reason = event.reason.unwrap_or_default();
        *counts.entry((source, reason)).or_default() += event.count.unwrap_or(1);
    }
    println!("Events recorded since the start (component, reason: occurrences):");
    for ((source, reason), count) in counts {
        println!("  {count:>7}  {source} {reason}");
    }
    Ok(())
}

/// The sum of `eviction_processing_total` (every failover controller's reconciles) in a `/metrics` text.
fn failover_reconciles(metrics: &str) -> u64 {
    let mut total = 0.0;
    for line in metrics.lines() {
        if line.starts_with("eviction_processing_total{")
            && let Some(value) = line.rsplit(' ').next()
        {
            total += value.parse::<f64>().unwrap_or(0.0);
        }
    }
    // Counters are whole numbers.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let total = total as u64;
    total
}

/// What the watches report while member1 fails.
enum Seen {
    /// Ready replicas of a Deployment in survivor `member`.
    Ready {
        member: usize,
        name: String,
        ready: i32,
    },
    /// member1's Ready condition is no longer True.
    NotReady,
    /// One watch has listed what exists (every watch does before the fault).
    Synced,
}

/// Watches labelled Deployments in each survivor and the Cluster member1, reporting every change with the time
/// it arrived. Watches rather than polls: listing every Deployment of every survivor ten times a second costs
/// the member-sims (on the same cores as the control plane) CPU, and a poll round's length blurs the times.
fn watch_failover(
    setup: &Setup,
    survivors: &[(String, Client)],
    tasks: &mut tokio::task::JoinSet<anyhow::Result<()>>,
) -> tokio::sync::mpsc::Receiver<(Instant, Seen)> {
    use futures::StreamExt;
    use kube::runtime::watcher;
    let (tx, rx) = tokio::sync::mpsc::channel(4096);
    for (member, (_, client)) in survivors.iter().enumerate() {
        let api: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
        let config = watcher::Config::default().labels(&format!("{}={}", LABEL.0, LABEL.1));
        let tx = tx.clone();
        tasks.spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config));
            while let Some(event) = events.next().await {
                let seen = match event? {
                    watcher::Event::Apply(d) | watcher::Event::InitApply(d) => {
                        let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
                        let Some(name) = d.metadata.name else {
                            continue;
                        };
                        Seen::Ready {
                            member,
                            name,
                            ready,
                        }
                    }
                    watcher::Event::InitDone => Seen::Synced,
                    watcher::Event::Delete(_) | watcher::Event::Init => continue,
                };
                if tx.send((Instant::now(), seen)).await.is_err() {
                    break;
                }
            }
            Ok(())
        });
    }
    let clusters = cluster_api(&setup.karmada);
    tasks.spawn(async move {
        let mut events = std::pin::pin!(watcher(clusters, watcher::Config::default()));
        while let Some(event) = events.next().await {
            let seen = match event? {
                watcher::Event::Apply(c) | watcher::Event::InitApply(c)
                    if c.metadata.name.as_deref() == Some("member1") && !is_ready(&c) =>
                {
                    Seen::NotReady
                }
                watcher::Event::InitDone => Seen::Synced,
                _ => continue,
            };
            if tx.send((Instant::now(), seen)).await.is_err() {
                break;
            }
        }
        Ok(())
    });
    rx
}

async fn create_workloads(setup: &Setup, args: &Args) -> anyhow::Result<Vec<String>> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(setup.karmada.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}}))?,
        )
        .await?;
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        "propagationpolicies",
    );
    let policies: Api<DynamicObject> =
        Api::namespaced_with(setup.karmada.clone(), NAMESPACE, &resource);
    let policy = serde_json::json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "failover", "namespace": NAMESPACE},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                   "labelSelector": {"matchLabels": {LABEL.0: LABEL.1}}}],
            "placement": {
                "clusterTolerations": [{"key": "cluster.karmada.io/not-ready", "operator": "Exists",
                                        "effect": "NoExecute", "tolerationSeconds": args.toleration_seconds}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
            },
            "failover": {"cluster": {"purgeMode": "Gracefully"}}
        }
    });
    policies
        .create(&PostParams::default(), &serde_json::from_value(policy)?)
        .await?;
    // The namespace reaches every member first, or early applies fail and wait out their backoff.
    for (member, client) in &setup.members {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        until(&format!("namespace {NAMESPACE} in {member}"), || {
            let namespaces = namespaces.clone();
            async move { Ok(namespaces.get_opt(NAMESPACE).await?.map(|_| ())) }
        })
        .await?;
    }
    let api: Api<Deployment> = Api::namespaced(setup.karmada.clone(), NAMESPACE);
    let names: Vec<String> = (0..args.workloads).map(|i| format!("web-{i:04}")).collect();
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in names.chunks(names.len().div_ceil(16).max(1)) {
        let api = api.clone();
        let chunk = chunk.to_vec();
        let replicas = args.members;
        tasks.spawn(async move {
            for name in chunk {
                let object: Deployment = serde_json::from_value(serde_json::json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "namespace": NAMESPACE, "labels": {LABEL.0: LABEL.1}},
                    "spec": {
                        "replicas": replicas,
                        "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                                     "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                         "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
                    }
                }))?;
                api.create(&PostParams::default(), &object).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(result) = tasks.join_next().await {
        result??;
    }
    Ok(names)
}

/// Waits until every member runs every labelled Deployment Ready (one replica each).
async fn wait_all_ready(setup: &Setup, total: usize) -> anyhow::Result<()> {
    let per_member = 1;
    for (member, client) in &setup.members {
        until(&format!("every Deployment Ready in {member}"), || async {
            let ready = ready_by_name(client).await?;
            let done = ready.values().filter(|r| **r >= per_member).count();
            Ok((done == total).then_some(()))
        })
        .await?;
    }
    Ok(())
}

/// Reads the watches until every one has listed; returns Ready replicas per Deployment, per survivor.
async fn await_synced(
    seen: &mut tokio::sync::mpsc::Receiver<(Instant, Seen)>,
    survivors: usize,
) -> anyhow::Result<Vec<HashMap<String, i32>>> {
    let mut ready: Vec<HashMap<String, i32>> = vec![HashMap::new(); survivors];
    let mut synced = 0;
    while synced < survivors + 1 {
        match tokio::time::timeout(TIMEOUT, seen.recv()).await {
            Ok(Some((_, Seen::Synced))) => synced += 1,
            Ok(Some((
                _,
                Seen::Ready {
                    member,
                    name,
                    ready: r,
                },
            ))) => {
                ready[member].insert(name, r);
            }
            Ok(Some((_, Seen::NotReady))) => bail!("member1 not Ready before the fault"),
            Ok(None) | Err(_) => bail!("watches of the survivors never listed"),
        }
    }
    Ok(ready)
}

/// Makes member1 unreachable through `karmada member-sim fault`.
fn make_member1_unreachable(setup: &Setup) -> anyhow::Result<()> {
    let out = Command::new(&setup.binary)
        .args(["member-sim", "fault", "--data-dir"])
        .arg(&setup.members_dir)
        .args(["--name", "member1", "unreachable"])
        .output()?;
    if !out.status.success() {
        bail!("fault: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// What the watches saw from the fault until every workload moved.
struct Moved {
    /// When member1's Ready condition left True, after the fault.
    not_ready_after: Option<Duration>,
    /// Per Deployment, when the survivors together first ran `want` replicas Ready, after the fault.
    moved: HashMap<String, Duration>,
}

/// Follows the watches until the survivors together run all `want` replicas of each of `count` Deployments.
async fn wait_moved(
    seen: &mut tokio::sync::mpsc::Receiver<(Instant, Seen)>,
    watches: &mut tokio::task::JoinSet<anyhow::Result<()>>,
    mut ready: Vec<HashMap<String, i32>>,
    count: usize,
    want: i32,
    failed_at: Instant,
) -> anyhow::Result<Moved> {
    let mut not_ready_after = None;
    let mut moved: HashMap<String, Duration> = HashMap::new();
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while moved.len() < count {
        let Ok(next) = tokio::time::timeout_at(deadline, seen.recv()).await else {
            bail!("{} of {} workloads never moved", count - moved.len(), count);
        };
        let Some((at, event)) = next else {
            // A watch ended: its error says why.
            while let Some(result) = watches.join_next().await {
                result??;
            }
            bail!("the watches ended before every workload moved");
        };
        match event {
            Seen::NotReady => {
                not_ready_after.get_or_insert(at.saturating_duration_since(failed_at));
            }
            Seen::Synced => {}
            Seen::Ready {
                member,
                name,
                ready: r,
            } => {
                ready[member].insert(name.clone(), r);
                let sum: i32 = ready.iter().filter_map(|m| m.get(&name)).sum();
                if sum >= want {
                    moved
                        .entry(name)
                        .or_insert(at.saturating_duration_since(failed_at));
                }
            }
        }
    }
    Ok(Moved {
        not_ready_after,
        moved,
    })
}

/// Counts the failover controllers' reconciles over the quiet window and prints their eviction metrics;
/// returns the reconciles per second in that window.
async fn quiet_reconcile_rate(setup: &Setup, args: &Args) -> anyhow::Result<f64> {
    let before = failover_reconciles(&crate::process::scrape_metrics(setup.metrics).await?);
    let window = Duration::from_secs(args.quiet_window_seconds);
    tokio::time::sleep(window).await;
    let metrics = crate::process::scrape_metrics(setup.metrics).await?;
    let after = failover_reconciles(&metrics);
    // What the failover controllers did (evictions, deferrals and why, reconciles by result), for the log.
    for line in metrics.lines().filter(|l| {
        l.starts_with("eviction_") && !l.starts_with("eviction_processing_latency_seconds_bucket")
    }) {
        println!("  {line}");
    }
    let quiet_rate = after.saturating_sub(before) as f64 / window.as_secs_f64().max(1.0);
    println!(
        "failover reconciles: {after} in total, {quiet_rate:.1}/s over {} s after every workload moved",
        window.as_secs()
    );
    Ok(quiet_rate)
}

/// The two report rows: per workload, and until the last one moved.
fn rows(args: &Args, moved: &Moved, cpu_note: &str, quiet_rate: f64) -> Vec<Row> {
    let mut samples = Samples::default();
    for at in moved.moved.values() {
        samples.push(*at);
    }
    let last = moved.moved.values().max().copied().unwrap_or_default();
    let target = Duration::from_secs(args.failure_threshold + args.toleration_seconds + 5);
    let detected = moved
        .not_ready_after
        .map_or("?".to_string(), |d| format!("{:.1} s", d.as_secs_f64()));
    vec![
        Row {
            name: format!(
                "member failure → its replicas Ready elsewhere, per workload ({} Deployments, {} members)",
                args.workloads, args.members
            ),
            ops_per_sec: None,
            p50_ms: Some(ms(samples.quantile(0.5))),
            p99_ms: Some(ms(samples.quantile(0.99))),
            target: format!(
                "≤ {} s (threshold {} s + tolerationSeconds {} s + 5 s)",
                target.as_secs(),
                args.failure_threshold,
                args.toleration_seconds
            ),
            note: format!(
                "member1 Ready≠True after {detected}; CPU s from the fault until all moved: {cpu_note}; \
                 failover reconciles afterwards {quiet_rate:.1}/s"
            ),
        },
        Row {
            name: format!(
                "member failure → all {} workloads Ready elsewhere",
                args.workloads
            ),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: Some(ms(last)),
            target: format!("≤ {} s", target.as_secs()),
            note: format!(
                "{:.2} s in total; {}",
                last.as_secs_f64(),
                if last <= target {
                    "within target"
                } else {
                    "over target"
                }
            ),
        },
    ]
}

/// Prints the table and writes the Failover section of the report.
fn write_report(args: &Args, rows: &[Row]) -> anyhow::Result<()> {
    let table = report::render(rows);
    println!("{table}");
    let body = format!(
        "Measured on {} on {} with `cargo build --release --bins -p karmada -p karmadactl -p bench && \
         ./target/release/karmada-bench failover`.\n\
         Real processes: API server on the embedded store, `controller-manager --enable-failover \
         --cluster-failure-threshold {}s --cluster-status-update-frequency 1s`, scheduler, {} member-sims in scale \
         mode joined in Push mode. {} Deployments of {} replicas divided evenly (one per member), a policy that \
         tolerates `cluster.karmada.io/not-ready:NoExecute` for {} s and purges Gracefully. member1 is made \
         unreachable; per Deployment, the time from the fault until the other members together run all its \
         replicas Ready (as watches of the survivors report it). The P99 column of the second row is the total.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().date(),
        args.failure_threshold,
        args.members,
        args.workloads,
        args.members,
        args.toleration_seconds,
    );
    report::write_section(&args.report, "Failover", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    if args.members < 2 {
        bail!("--members must be at least 2 (one fails, the others take over)");
    }
    let setup = start_federation(&binary, &args).await?;
    let names = create_workloads(&setup, &args).await?;
    wait_all_ready(&setup, args.workloads as usize).await?;

    let survivors = &setup.members[1..];
    let mut watches = tokio::task::JoinSet::new();
    let mut seen = watch_failover(&setup, survivors, &mut watches);
    let ready = await_synced(&mut seen, survivors.len()).await?;

    let cpu_before: Vec<f64> = setup.processes.iter().map(Process::cpu_seconds).collect();
    let requests_before = RequestCounts::read(&setup.karmada).await?;
    make_member1_unreachable(&setup)?;
    let failed_at = Instant::now();
    println!("member1 made unreachable; waiting for its workloads to move");
    let want = args.members as i32;
    let moved = wait_moved(&mut seen, &mut watches, ready, names.len(), want, failed_at).await?;
    watches.abort_all();
    let cpu_move: Vec<f64> = setup
        .processes
        .iter()
        .zip(&cpu_before)
        .map(|(p, before)| p.cpu_seconds() - before)
        .collect();
    // What the control plane asked of its API server during the move, for the log.
    RequestCounts::read(&setup.karmada).await?.print_since(
        &requests_before,
        "API requests from the fault until every workload moved",
    );
    events_by_reason(&setup.karmada).await?;
    let cpu_note = PROCESS_NAMES
        .iter()
        .zip(&cpu_move)
        .map(|(n, s)| format!("{n} {s:.1}"))
        .collect::<Vec<_>>()
        .join(", ");
    // Steady state: with every workload moved, the failover controllers should have nothing left to do.
    let quiet_rate = quiet_reconcile_rate(&setup, &args).await?;
    write_report(&args, &rows(&args, &moved, &cpu_note, quiet_rate))
}
