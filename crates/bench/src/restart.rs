//! Restart benchmark (issue 37): a federation holding many propagated workloads has its controller-manager and
//! scheduler restarted, then its API server.
//!
//! Real processes as in the propagation benchmark (API server on the embedded store, controller-manager,
//! scheduler, one member-sim in scale mode, members joined in Push mode) and one PropagationPolicy duplicating
//! every labelled Deployment to every member. In order:
//! 1. fill: the workloads created from 32 clients, until every ResourceBinding reports FullyApplied and the
//!    control plane has written nothing but leases and Cluster status for a quiet stretch;
//! 2. components: both stopped cleanly and started again; steady state is when the new controller-manager's
//!    detector, binding and execution queues have each taken at least one item per object they own (every
//!    template, binding and Work reconciled) and every work queue of both processes is empty with nothing in
//!    progress, held for a second. The writes the restart made are counted from the API server's
//!    `apiserver_request_total` and the members' store write counters, until a quiet stretch after it;
//! 3. API server: stopped cleanly and started on the same data; the time until `/readyz` answers 200.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kube::Client;
use kube::api::{Api, DynamicObject};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::api_requests::RequestCounts;
use crate::process::{LogDir, karmada_binary, scrape_metrics, wait_for_file};
use crate::propagation::{
    Federation, Layout, Mode, create_burst, log_tails, progress, setup_namespace_and_policy,
};
use crate::report::{self, Row};
use crate::store_latency::StoreWrites;
use crate::workload_kind::WorkloadKind;

#[derive(clap::Args)]
pub struct Args {
    /// Members, all in one member-sim process.
    #[arg(long, default_value_t = 3)]
    pub members: u32,
    /// Workloads propagated before the restarts (each Duplicated to every member).
    #[arg(long, default_value_t = 30_000)]
    pub workloads: u32,
    /// How long the control plane must write nothing but leases and Cluster status to count as settled.
    #[arg(long, default_value_t = 5)]
    pub quiet_seconds: u64,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one); `karmadactl` is looked up beside it.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
}

/// Karmada's default cluster status period.
const STATUS_PERIOD: &str = "10s";
const FILL_TIMEOUT: Duration = Duration::from_secs(3600);
const RESTART_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the steady-state condition must hold to count.
const HELD: Duration = Duration::from_secs(1);

/// The queues that must have taken one item per object they own, with the objects' count per workload
/// (`None`: per workload × member).
const OWNING_QUEUES: [(&str, Option<u32>); 3] = [
    ("resource detector", Some(1)),
    ("binding-controller", Some(1)),
    ("execution-controller", None),
];

/// Writes that are heartbeats, not reconciliation: leader Leases, and the cluster status controller's periodic
/// writes of each Cluster (its status, and the `cluster.karmada.io/api-latency` annotation it measures, a patch
/// of the Cluster itself).
fn is_heartbeat(labels: &str) -> bool {
    labels.contains("resource=\"leases\"") || labels.contains("resource=\"clusters\"")
}

/// Waits until every template in `bench` has a FullyApplied binding, printing progress.
async fn wait_all_applied(karmada: &Client, workloads: u32) -> anyhow::Result<Duration> {
    let applied: Arc<Mutex<HashSet<String>>> = Arc::default();
    let stop = CancellationToken::new();
    {
        let applied = applied.clone();
        crate::bindings::watch(karmada, "bench", &stop, move |binding| {
            let applied = applied.clone();
            async move {
                if crate::scale::is_fully_applied(&binding)
                    && let Some(template) = crate::bindings::template(&binding)
                {
                    applied.lock().await.insert(template);
                }
            }
        });
    }
    let started = Instant::now();
    let mut reported = Instant::now();
    loop {
        let done = applied.lock().await.len();
        if done >= workloads as usize {
            stop.cancel();
            return Ok(started.elapsed());
        }
        if started.elapsed() > FILL_TIMEOUT {
            bail!("{done} of {workloads} workloads FullyApplied after {FILL_TIMEOUT:?}");
        }
        if reported.elapsed() > Duration::from_secs(15) {
            progress("restart", &format!("{done} of {workloads} applied"));
            reported = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The control plane's successful write requests so far (but heartbeats), by their labels; refused ones (a
/// create answered AlreadyExists, a conflict) changed nothing.
async fn writes(karmada: &Client) -> anyhow::Result<BTreeMap<String, f64>> {
    Ok(RequestCounts::read(karmada)
        .await?
        .writes()
        .filter(|(labels, _)| !is_heartbeat(labels) && labels.contains("code=\"2"))
        .collect())
}

/// Waits until the control plane has written nothing but heartbeats for `quiet` and the members no more than
/// their own heartbeats (one write a second per member: their nodes' Leases), so the workloads' statuses have
/// settled too; returns when the last write was seen.
async fn settle(federation: &Federation, quiet: Duration) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + RESTART_TIMEOUT;
    let karmada = &federation.karmada;
    let mut last = writes(karmada).await?;
    let mut last_change = Instant::now();
    let mut members_from = member_writes(federation).await?;
    loop {
        if Instant::now() > deadline {
            bail!("the control plane or the members kept writing for {RESTART_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = writes(karmada).await?;
        if now != last {
            last_change = Instant::now();
            last = now;
            members_from = member_writes(federation).await?;
        } else if last_change.elapsed() >= quiet {
            let members = member_writes(federation).await?;
            let heartbeats =
                last_change.elapsed().as_secs_f64() * federation.member_clients.len() as f64;
            if members.since(&members_from).total() <= heartbeats {
                return Ok(last_change);
            }
            // The members are still busy (pods starting): look again over a fresh window.
            last_change = Instant::now();
            members_from = members;
        }
    }
}

/// One work queue's figures from a `/metrics` text.
#[derive(Default, Debug)]
struct Queue {
    depth: f64,
    adds: f64,
    unfinished: f64,
}

/// Every work queue in `metrics`, by its `name` label.
fn queues(metrics: &str) -> BTreeMap<String, Queue> {
    let mut queues: BTreeMap<String, Queue> = BTreeMap::new();
    for line in metrics.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let Some((metric, labels)) = series.split_once('{') else {
            continue;
        };
        let Some(name) = labels
            .split(',')
            .find_map(|label| label.strip_prefix("name=\""))
            .and_then(|rest| rest.split('"').next())
        else {
            continue;
        };
        let queue = queues.entry(name.to_string()).or_default();
        match metric {
            "workqueue_depth" => queue.depth += value,
            "workqueue_adds_total" => queue.adds += value,
            "workqueue_unfinished_work_seconds" => queue.unfinished += value,
            _ => {}
        }
    }
    queues
}

/// Whether the restarted processes are steady (see the module docs), from their queues.
fn steady(queues: &BTreeMap<String, Queue>, workloads: u32, members: u32) -> bool {
    let owned = OWNING_QUEUES.iter().all(|(name, per_workload)| {
        let objects = f64::from(workloads) * f64::from(per_workload.unwrap_or(members));
        queues.get(*name).is_some_and(|q| q.adds >= objects)
    });
    owned
        && queues
            .values()
            .all(|q| q.depth == 0.0 && q.unfinished == 0.0)
}

/// What brought bindings to the scheduler's queue, by event (`karmada_scheduler_queue_incoming_bindings_total`):
/// a restart should take each binding once, not again for every Cluster write it sees.
fn incoming_bindings(metrics: &str) -> String {
    let prefix = "karmada_scheduler_queue_incoming_bindings_total{event=\"";
    let counts: Vec<String> = metrics
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(prefix)?;
            let (event, value) = rest.split_once("\"} ")?;
            Some(format!("{event} {}", value.trim()))
        })
        .collect();
    if counts.is_empty() {
        "none".into()
    } else {
        counts.join(", ")
    }
}

/// The metrics address a restarted component published.
async fn published(path: &Path) -> anyhow::Result<SocketAddr> {
    wait_for_file(path, "a component's metrics address", RESTART_TIMEOUT).await?;
    let text = std::fs::read_to_string(path)?;
    text.trim()
        .parse()
        .with_context(|| format!("metrics address {text:?} in {}", path.display()))
}

/// Polls both components' queues until steady; returns when the steady stretch began and the queues then.
async fn wait_steady(
    addresses: &[SocketAddr],
    workloads: u32,
    members: u32,
) -> anyhow::Result<(Instant, BTreeMap<String, Queue>)> {
    let deadline = Instant::now() + RESTART_TIMEOUT;
    let mut since: Option<Instant> = None;
    loop {
        let mut all = BTreeMap::new();
        for address in addresses {
            // A component still binding its port answers nothing yet.
            if let Ok(text) = scrape_metrics(*address).await {
                all.extend(queues(&text));
            }
        }
        if steady(&all, workloads, members) {
            let began = *since.get_or_insert_with(Instant::now);
            if began.elapsed() >= HELD {
                return Ok((began, all));
            }
        } else {
            since = None;
        }
        if Instant::now() > deadline {
            bail!("not steady after {RESTART_TIMEOUT:?}: {all:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `/readyz` until it answers 200.
async fn wait_ready(client: &Client) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + RESTART_TIMEOUT;
    loop {
        let request = http::Request::get("/readyz").body(Vec::new())?;
        if client.request_text(request).await.is_ok() {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!("/readyz not ready after {RESTART_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// "n  labels" lines of the counters that grew, largest first.
fn grown(after: &BTreeMap<String, f64>, before: &BTreeMap<String, f64>) -> Vec<(f64, String)> {
    let mut grown: Vec<(f64, String)> = after
        .iter()
        .map(|(k, v)| (v - before.get(k).copied().unwrap_or(0.0), k.clone()))
        .filter(|(d, _)| *d > 0.0)
        .collect();
    grown.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    grown
}

async fn member_writes(federation: &Federation) -> anyhow::Result<StoreWrites> {
    let clients: Vec<&Client> = federation.member_clients.iter().map(|(_, c)| c).collect();
    StoreWrites::read_all(&clients).await
}

async fn measure(binary: &Path, args: &Args) -> anyhow::Result<Vec<Row>> {
    let logs = LogDir::from_env()?;
    let started = Federation::start(
        binary,
        args.members,
        Mode::Push,
        Layout::Processes,
        STATUS_PERIOD,
        logs.path(),
    )
    .await;
    let mut federation = match started {
        Ok(f) => f,
        Err(err) => return Err(err.context(log_tails(logs.path())?)),
    };
    let result = measure_on(&mut federation, args).await;
    match result {
        Ok(rows) => Ok(rows),
        Err(err) => Err(err.context(log_tails(logs.path())?)),
    }
}

async fn measure_on(federation: &mut Federation, args: &Args) -> anyhow::Result<Vec<Row>> {
    let (workloads, members) = (args.workloads, args.members);
    let setup = format!("{members} members, {workloads} workloads");
    let quiet = Duration::from_secs(args.quiet_seconds);
    setup_namespace_and_policy(federation, WorkloadKind::Deployment).await?;

    // 1. Fill.
    progress(&setup, "fill");
    let names: Vec<String> = (0..workloads).map(|i| format!("held-{i:05}")).collect();
    let resource = WorkloadKind::Deployment.resource();
    let api: Api<DynamicObject> =
        Api::namespaced_with(federation.karmada.clone(), "bench", &resource);
    create_burst(&api, WorkloadKind::Deployment, &names).await?;
    let filled = wait_all_applied(&federation.karmada, workloads).await?;
    // The members' own writes (their simulated nodes and controllers) over a quiet stretch, to tell the
    // restart's writes from them.
    let baseline_from = (Instant::now(), member_writes(federation).await?);
    settle(federation, quiet).await?;
    let baseline = (
        baseline_from.0.elapsed(),
        member_writes(federation).await?.since(&baseline_from.1),
    );
    progress(&setup, &format!("filled in {:.0} s", filled.as_secs_f64()));

    // 2. Controller-manager and scheduler.
    let writes_before = writes(&federation.karmada).await?;
    let members_before = (Instant::now(), member_writes(federation).await?);
    let metrics_dir = tempfile::tempdir()?;
    progress(
        &setup,
        "restarting the controller-manager and the scheduler",
    );
    let spawned = federation
        .restart_components(STATUS_PERIOD, metrics_dir.path())
        .await?;
    let addresses = [
        published(&metrics_dir.path().join("controller-manager.metrics")).await?,
        published(&metrics_dir.path().join("scheduler.metrics")).await?,
    ];
    let (steady_at, steady_queues) = wait_steady(&addresses, workloads, members).await?;
    let to_steady = steady_at.saturating_duration_since(spawned);
    let scheduler_incoming = incoming_bindings(&scrape_metrics(addresses[1]).await?);
    let every_queue = steady_queues
        .iter()
        .map(|(name, q)| format!("{name} {:.0}", q.adds))
        .collect::<Vec<_>>()
        .join(", ");
    progress(
        &setup,
        &format!("items taken by every queue: {every_queue}"),
    );
    let cpu_at_steady = federation.cpu_seconds();
    let rss_at_steady = federation.rss_each();
    settle(federation, quiet).await?;
    let restart_writes = grown(&writes(&federation.karmada).await?, &writes_before);
    let member_restart_writes = (
        members_before.0.elapsed(),
        member_writes(federation).await?.since(&members_before.1),
    );
    progress(
        &setup,
        &format!("components steady after {:.1} s", to_steady.as_secs_f64()),
    );

    // 3. API server.
    progress(&setup, "restarting the API server");
    let (apiserver_spawned, client) = federation.restart_apiserver().await?;
    let ready_at = wait_ready(&client).await?;
    let to_ready = ready_at.saturating_duration_since(apiserver_spawned);
    let apiserver_rss = federation.rss_each();

    let control_plane_writes: f64 = restart_writes.iter().map(|(n, _)| n).sum();
    let write_detail = if restart_writes.is_empty() {
        "none".to_string()
    } else {
        restart_writes
            .iter()
            .take(6)
            .map(|(n, labels)| format!("{n:.0} {labels}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let queue_detail = OWNING_QUEUES
        .iter()
        .filter_map(|(name, _)| {
            steady_queues
                .get(*name)
                .map(|q| format!("{name} {:.0}", q.adds))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let cpu_detail = cpu_at_steady
        .0
        .iter()
        .skip(1)
        .map(|(name, s)| format!("{name} {s:.1} s"))
        .collect::<Vec<_>>()
        .join(", ");
    let rss_detail = |rss: &[(String, f64)]| {
        rss.iter()
            .map(|(name, mib)| format!("{name} {mib:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Ok(vec![
        Row {
            name: format!(
                "controller-manager and scheduler restart to steady state, {members} members, {workloads} workloads"
            ),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: Some(format!("{:.0}", to_steady.as_secs_f64() * 1000.0)),
            target: "≤ 30 s (Karmada: about 5 minutes)".into(),
            note: format!(
                "from the new processes' spawn until every template, binding and Work was reconciled and every \
                 queue empty (items taken: {queue_detail}; scheduler's queue took {scheduler_incoming}); CPU until \
                 then {cpu_detail}; RSS then {} MiB",
                rss_detail(&rss_at_steady)
            ),
        },
        Row {
            name: format!("writes a restart makes, {members} members, {workloads} workloads"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "none but leases".into(),
            note: format!(
                "control plane: {control_plane_writes:.0} ({write_detail}), Leases and the cluster status \
                 controller's Cluster writes not counted; members: {} in {:.0} s (their own baseline: {:.0} in the {:.0} s before the \
                 restart); counted until {} s without a write after steady state",
                member_restart_writes.1.total(),
                member_restart_writes.0.as_secs_f64(),
                baseline.1.total(),
                baseline.0.as_secs_f64(),
                args.quiet_seconds
            ),
        },
        Row {
            name: format!("API server restart to /readyz, {workloads} workloads"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: Some(format!("{:.0}", to_ready.as_secs_f64() * 1000.0)),
            target: "≤ 5 s".into(),
            note: format!(
                "from the new process's spawn on the same data until /readyz answers 200; RSS then {} MiB; \
                 filling took {:.0} s",
                rss_detail(&apiserver_rss),
                filled.as_secs_f64()
            ),
        },
    ])
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.workloads == 0 || args.members == 0 {
        bail!("--workloads and --members must be at least 1");
    }
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    let rows = measure(&binary, &args).await.context("restart benchmark")?;
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Measured on {} on {} (load average at the end {}) with `cargo build --release --bins -p karmada -p \
         karmadactl -p bench && ./target/release/karmada-bench restart --members {} --workloads {}`.\n\
         Real processes: API server on the embedded store, controller-manager (Karmada's default 10 s cluster \
         status period), scheduler, one member-sim in scale mode with {} members joined in Push mode, and one \
         PropagationPolicy duplicating every workload to every member. Once every binding is FullyApplied, \
         the control plane has written nothing but Leases and Clusters (status, api-latency) for {} s and the \
         members no more than their nodes' Leases, the controller-manager \
         and the scheduler are stopped cleanly and started again: steady state is when the new \
         controller-manager's detector, binding and execution queues have each taken one item per template, \
         binding and Work, and every queue of both processes has been empty with nothing in progress for 1 s. \
         Then the API server is stopped and started on the same data.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().date(),
        report::load_average(),
        args.members,
        args.workloads,
        args.members,
        args.quiet_seconds,
    );
    report::write_section(&args.report, "Restart", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = "\
workqueue_depth{name=\"resource detector\",controller=\"resource detector\",priority=\"\"} 0
workqueue_adds_total{name=\"resource detector\",controller=\"resource detector\"} 10
workqueue_unfinished_work_seconds{name=\"resource detector\",controller=\"resource detector\"} 0.0
workqueue_depth{name=\"binding-controller\",controller=\"binding-controller\",priority=\"\"} 0
workqueue_adds_total{name=\"binding-controller\",controller=\"binding-controller\"} 10
workqueue_depth{name=\"execution-controller\",controller=\"execution-controller\",priority=\"\"} 0
workqueue_adds_total{name=\"execution-controller\",controller=\"execution-controller\"} 30
workqueue_depth{name=\"work-status-controller\",controller=\"work-status-controller\",priority=\"\"} 2
";

    #[test]
    fn the_schedulers_incoming_bindings_are_listed_by_event() {
        let metrics = "\
# TYPE karmada_scheduler_queue_incoming_bindings_total counter
karmada_scheduler_queue_incoming_bindings_total{event=\"BindingAdd\"} 10000
karmada_scheduler_queue_incoming_bindings_total{event=\"ClusterChanged\"} 30000
karmada_scheduler_schedule_attempts_total{result=\"scheduled\",schedule_type=\"ReconcileSchedule\"} 40000
";
        assert_eq!(
            incoming_bindings(metrics),
            "BindingAdd 10000, ClusterChanged 30000"
        );
        assert_eq!(incoming_bindings(METRICS), "none");
    }

    #[test]
    fn steady_needs_every_owned_object_taken_and_every_queue_empty() {
        let parsed = queues(METRICS);
        assert_eq!(parsed["execution-controller"].adds, 30.0);
        assert!(
            !steady(&parsed, 10, 3),
            "work status still has two items queued"
        );
        let drained = queues(&METRICS.replace("priority=\"\"} 2", "priority=\"\"} 0"));
        assert!(steady(&drained, 10, 3));
        assert!(
            !steady(&drained, 11, 3),
            "one template not yet reconciled by the detector"
        );
        assert!(
            !steady(&drained, 10, 4),
            "a member's Works not yet reconciled by execution"
        );
    }

    #[test]
    fn leases_and_cluster_status_are_heartbeats() {
        assert!(is_heartbeat(
            "{verb=\"PUT\",group=\"coordination.k8s.io\",resource=\"leases\",subresource=\"\"}"
        ));
        assert!(is_heartbeat(
            "{verb=\"PATCH\",resource=\"clusters\",subresource=\"status\"}"
        ));
        assert!(is_heartbeat(
            "{verb=\"PATCH\",resource=\"clusters\",subresource=\"\"}"
        ));
        assert!(!is_heartbeat(
            "{verb=\"PATCH\",resource=\"works\",subresource=\"status\"}"
        ));
    }
}
