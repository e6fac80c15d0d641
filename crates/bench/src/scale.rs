//! Scale benchmark: many members in one member-sim process (scale mode) and workloads half Duplicated to every
//! member, half Divided among a few of them.
//!
//! It runs the real processes (`karmada apiserver` on the embedded store, `controller-manager` with Karmada's
//! default 10 s cluster status period, `scheduler`, one `karmada member-sim --count N --scale-mode`) and joins
//! every member in Push mode. Then, in order:
//! 1. idle: the control plane's CPU over a stretch with the members joined and nothing to propagate — the cluster
//!    status controller's collection for N members (plus leases);
//! 2. paced: a small batch created at a steady rate; per (workload, member), the time from the create's
//!    acknowledgement to the member's watch seeing the object (distribution latency at this many members);
//! 3. burst: the main batch from 32 clients; the time until every ResourceBinding reports FullyApplied, the
//!    control plane's CPU per (workload × member) placed, and its RSS before and after.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::process::{LogDir, karmada_binary};
use crate::propagation::{
    Federation, LABEL, Layout, Mode, Seen, log_tails, progress, watch_members,
};
use crate::report::{self, Row};
use crate::stats::{Samples, ms};

#[derive(clap::Args)]
pub struct Args {
    /// Members, all in one member-sim process.
    #[arg(long, default_value_t = 100)]
    pub members: u32,
    /// Workloads of the burst: half Duplicated to every member, half Divided.
    #[arg(long, default_value_t = 5000)]
    pub workloads: u32,
    /// Replicas of each Divided workload (spread by available replicas, so about this many members each).
    #[arg(long, default_value_t = 10)]
    pub divided_replicas: u32,
    /// Workloads of the paced batch that measures distribution latency.
    #[arg(long, default_value_t = 100)]
    pub paced: u32,
    /// Creation rate of the paced batch (workloads per second).
    #[arg(long, default_value_t = 5)]
    pub rate: u32,
    /// Length of the idle stretch that measures cluster status collection.
    #[arg(long, default_value_t = 30)]
    pub idle_seconds: u64,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one); `karmadactl` is looked up beside it.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
}

const TIMEOUT: Duration = Duration::from_secs(1800);
const NAMESPACE: &str = "bench";
/// The label choosing each workload's policy.
const PLACEMENT: &str = "scale";

/// Per template name: when its binding first reported FullyApplied, and how many members it was placed on.
type Applied = Arc<Mutex<HashMap<String, (Instant, usize)>>>;

pub(crate) fn is_fully_applied(binding: &DynamicObject) -> bool {
    binding.data["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "FullyApplied" && c["status"] == "True")
        })
}

fn watch_applied(karmada: &kube::Client, applied: Applied, stop: &CancellationToken) {
    crate::bindings::watch(karmada, NAMESPACE, stop, move |binding| {
        let applied = applied.clone();
        async move {
            if !is_fully_applied(&binding) {
                return;
            }
            let Some(template) = crate::bindings::template(&binding) else {
                return;
            };
            let placed = binding.data["spec"]["clusters"]
                .as_array()
                .map_or(0, Vec::len);
            applied
                .lock()
                .await
                .entry(template)
                .or_insert((Instant::now(), placed));
        }
    });
}

/// A workload: Duplicated ones run one replica in every member, Divided ones `divided_replicas` in all.
fn deployment(name: &str, divided: bool, divided_replicas: u32) -> anyhow::Result<Deployment> {
    let (placement, replicas) = if divided {
        ("divided", divided_replicas)
    } else {
        ("duplicated", 1)
    };
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "labels": {LABEL.0: LABEL.1, PLACEMENT: placement}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                  "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
        }
    }))?)
}

/// The namespace and the two policies: `scale=duplicated` to every member, `scale=divided` divided by available
/// replicas.
async fn create_policies(federation: &Federation) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(federation.karmada.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?,
        )
        .await?;
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        "propagationpolicies",
    );
    let policies: Api<DynamicObject> =
        Api::namespaced_with(federation.karmada.clone(), NAMESPACE, &resource);
    let scheduling = [
        ("duplicated", json!({"replicaSchedulingType": "Duplicated"})),
        (
            "divided",
            json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                   "weightPreference": {"dynamicWeight": "AvailableReplicas"}}),
        ),
    ];
    for (placement, replica_scheduling) in scheduling {
        let policy = json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": format!("scale-{placement}"), "namespace": NAMESPACE},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                       "labelSelector": {"matchLabels": {PLACEMENT: placement}}}],
                "placement": {"replicaScheduling": replica_scheduling}
            }
        });
        policies
            .create(&PostParams::default(), &serde_json::from_value(policy)?)
            .await?;
    }
    // The namespace reaches every member before the clock starts.
    let deadline = Instant::now() + TIMEOUT;
    for (name, client) in &federation.member_clients {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        while api.get_opt(NAMESPACE).await?.is_none() {
            if Instant::now() > deadline {
                bail!("namespace {NAMESPACE} never reached {name}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// `count` workload names of one batch, every other one Divided.
fn batch(prefix: &str, count: u32) -> Vec<(String, bool)> {
    (0..count)
        .map(|i| (format!("{prefix}-{i:05}"), i % 2 == 1))
        .collect()
}

/// How far a batch got: when its last FullyApplied arrived, the members placed on in all, and how many of the
/// batch reported.
struct Reached {
    last: Instant,
    pairs: usize,
    applied: usize,
}

/// Waits until every workload of `names` reports FullyApplied, or until [`TIMEOUT`]; says how far it got.
async fn wait_applied(applied: &Applied, names: &[(String, bool)]) -> Reached {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        {
            let applied = applied.lock().await;
            let done: Vec<&(Instant, usize)> =
                names.iter().filter_map(|(n, _)| applied.get(n)).collect();
            if done.len() == names.len() || Instant::now() > deadline {
                let last = done.iter().map(|(at, _)| *at).max();
                return Reached {
                    last: last.unwrap_or_else(Instant::now),
                    pairs: done.iter().map(|(_, placed)| placed).sum(),
                    applied: done.len(),
                };
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// [`wait_applied`] for a batch that must complete.
async fn wait_all_applied(applied: &Applied, names: &[(String, bool)]) -> anyhow::Result<Reached> {
    let reached = wait_applied(applied, names).await;
    if reached.applied < names.len() {
        bail!(
            "{} of {} workloads never reported FullyApplied",
            names.len() - reached.applied,
            names.len()
        );
    }
    Ok(reached)
}

/// Creates the workloads `names` (with whether each is Divided) as fast as 32 clients can.
async fn create_burst(
    api: &Api<Deployment>,
    names: &[(String, bool)],
    divided_replicas: u32,
) -> anyhow::Result<()> {
    crate::creates::burst(api, deployments(names, divided_replicas)?).await
}

/// Creates the workloads `names` at `rate` per second; returns when each create was acknowledged.
async fn create_paced(
    api: &Api<Deployment>,
    names: &[(String, bool)],
    rate: u32,
    divided_replicas: u32,
) -> anyhow::Result<HashMap<String, Instant>> {
    crate::creates::paced(api, deployments(names, divided_replicas)?, rate).await
}

fn deployments(names: &[(String, bool)], divided_replicas: u32) -> anyhow::Result<Vec<Deployment>> {
    names
        .iter()
        .map(|(name, divided)| deployment(name, *divided, divided_replicas))
        .collect()
}

/// CPU seconds per process over a stretch, as "name s" pairs and their control-plane total.
fn cpu_used(
    before: &(Vec<(String, f64)>, f64),
    after: &(Vec<(String, f64)>, f64),
) -> (Vec<(String, f64)>, f64, f64) {
    let used: Vec<(String, f64)> = after
        .0
        .iter()
        .zip(&before.0)
        .map(|((name, a), (_, b))| (name.clone(), a - b))
        .collect();
    let total = used.iter().map(|(_, s)| s).sum();
    (used, total, after.1 - before.1)
}

/// The control plane's CPU over the idle stretch, as percent of one core.
struct Idle {
    /// "name share" per process.
    detail: String,
    controller_manager: f64,
    /// The member-sim's.
    members: f64,
}

/// 1. Idle: what N joined members cost with nothing to propagate.
async fn measure_idle(federation: &Federation, args: &Args) -> Idle {
    let idle_before = federation.cpu_seconds();
    tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
    let (idle_used, _, idle_members) = cpu_used(&idle_before, &federation.cpu_seconds());
    let idle_share = |seconds: f64| seconds * 100.0 / args.idle_seconds as f64;
    let detail = idle_used
        .iter()
        .map(|(name, s)| format!("{name} {:.1} %", idle_share(*s)))
        .collect::<Vec<_>>()
        .join(", ");
    let controller_manager = idle_used
        .iter()
        .find(|(name, _)| name == "controller-manager")
        .map_or(0.0, |(_, s)| idle_share(*s));
    Idle {
        detail,
        controller_manager,
        members: idle_share(idle_members),
    }
}

/// 2. Paced: distribution latency per (workload, member), and the members the batch was placed on in all.
async fn measure_paced(
    api: &Api<Deployment>,
    seen: &Seen,
    applied: &Applied,
    args: &Args,
) -> anyhow::Result<(Samples, usize)> {
    let paced = batch("paced", args.paced);
    let acked = create_paced(api, &paced, args.rate, args.divided_replicas).await?;
    let paced_pairs = wait_all_applied(applied, &paced).await?.pairs;
    let mut latency = Samples::default();
    {
        let seen = seen.lock().await;
        for (name, _) in &paced {
            let Some(created) = acked.get(name) else {
                continue;
            };
            for member in 0..args.members as usize {
                if let Some(at) = seen.get(&(member, name.clone())) {
                    latency.push(at.saturating_duration_since(*created));
                }
            }
        }
    }
    Ok((latency, paced_pairs))
}

/// What the burst took.
struct Burst {
    /// When the API server had accepted the last template, after the first create.
    accepted: Duration,
    /// When the last binding reported FullyApplied, after the first create.
    elapsed: Duration,
    /// (workload, member) pairs placed, of the workloads that reported FullyApplied.
    pairs: usize,
    /// Workloads that reported FullyApplied before [`TIMEOUT`].
    applied: usize,
    /// CPU seconds per process, the control plane's total and the member-sims'.
    cpu: (Vec<(String, f64)>, f64, f64),
    rss_before: f64,
    rss_after: f64,
    /// "name before → after" per process.
    rss_detail: String,
}

/// 3. Burst: time until all applied, CPU per (workload × member), RSS.
async fn measure_burst(
    federation: &Federation,
    api: &Api<Deployment>,
    applied: &Applied,
    setup: &str,
    args: &Args,
) -> anyhow::Result<Burst> {
    let rss_before = federation.rss_mib();
    let rss_each_before = federation.rss_each();
    let cpu_before = federation.cpu_seconds();
    progress(setup, "burst");
    let burst = batch("burst", args.workloads);
    let start = Instant::now();
    create_burst(api, &burst, args.divided_replicas).await?;
    let accepted = start.elapsed();
    let reached = wait_applied(applied, &burst).await;
    let elapsed = reached.last.saturating_duration_since(start);
    let cpu_after = federation.cpu_seconds();
    progress(setup, "burst applied");
    let rss_after = federation.rss_mib();
    let rss_detail = federation
        .rss_each()
        .iter()
        .zip(&rss_each_before)
        .map(|((name, after), (_, before))| format!("{name} {before:.0} → {after:.0}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(Burst {
        accepted,
        elapsed,
        pairs: reached.pairs,
        applied: reached.applied,
        cpu: cpu_used(&cpu_before, &cpu_after),
        rss_before,
        rss_after,
        rss_detail,
    })
}

/// The report's rows, from the three measurements.
fn rows(
    args: &Args,
    idle: &Idle,
    latency: &Samples,
    paced_pairs: usize,
    burst: &Burst,
) -> Vec<Row> {
    let members = args.members;
    let Burst {
        accepted,
        elapsed,
        pairs,
        applied,
        rss_before,
        rss_after,
        ..
    } = *burst;
    let (used, total, members_cpu) = &burst.cpu;
    let per_pair_ms = |seconds: f64| seconds * 1000.0 / (pairs.max(1) as f64);
    let cpu_detail = used
        .iter()
        .map(|(name, s)| format!("{name} {:.2}", per_pair_ms(*s)))
        .collect::<Vec<_>>()
        .join(", ");
    let half = args.workloads / 2;
    vec![
        Row {
            name: format!(
                "all applied, {members} members, burst of {} ({} Duplicated, {half} Divided)",
                args.workloads,
                args.workloads - half
            ),
            ops_per_sec: Some(applied as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE)),
            p50_ms: None,
            p99_ms: Some(format!("{:.0}", elapsed.as_secs_f64() * 1000.0)),
            target: "–".into(),
            note: if applied == usize::try_from(args.workloads).unwrap_or(usize::MAX) {
                format!(
                    "every ResourceBinding FullyApplied {:.1} s after the first create ({pairs} (workload, member) \
                     pairs; the last template accepted after {:.1} s); ops/s is workloads per second",
                    elapsed.as_secs_f64(),
                    accepted.as_secs_f64()
                )
            } else {
                format!(
                    "**only {applied} of {} ResourceBindings FullyApplied within {} s** (the last {:.1} s after the \
                     first create; {pairs} (workload, member) pairs; the last template accepted after {:.1} s); \
                     ops/s is workloads per second of those; the CPU row divides by their pairs, so it is an upper bound",
                    args.workloads,
                    TIMEOUT.as_secs(),
                    elapsed.as_secs_f64(),
                    accepted.as_secs_f64()
                )
            },
        },
        Row {
            name: format!(
                "distribution latency, {members} members, {} workloads at {}/s",
                args.paced, args.rate
            ),
            ops_per_sec: None,
            p50_ms: Some(ms(latency.quantile(0.5))),
            p99_ms: Some(ms(latency.quantile(0.99))),
            target: "P99 ≤ 200 ms (Karmada: Push P99 1,298 ms)".into(),
            note: format!(
                "P90 {} ms over {} (workload, member) pairs ({paced_pairs} placed)",
                ms(latency.quantile(0.9)),
                latency.len()
            ),
        },
        Row {
            name: format!("control-plane CPU per (workload × member), {members} members"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "≤ 1 ms".into(),
            note: format!(
                "{:.2} ms ({cpu_detail}); member-sims {:.2} ms; over the burst's {pairs} pairs",
                per_pair_ms(*total),
                per_pair_ms(*members_cpu)
            ),
        },
        Row {
            name: format!(
                "control-plane RSS, {members} members, burst of {}",
                args.workloads
            ),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "–".into(),
            note: format!(
                "{rss_before:.0} → {rss_after:.0} MiB ({}), {} workloads held before the burst",
                burst.rss_detail, args.paced
            ),
        },
        Row {
            name: format!("cluster status collection, {members} members, idle"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "–".into(),
            note: format!(
                "controller-manager {:.1} % of one core over {} s with Karmada's 10 s \
                 status period ({}; member-sim {:.1} %)",
                idle.controller_manager, args.idle_seconds, idle.detail, idle.members
            ),
        },
    ]
}

async fn measure(binary: &std::path::Path, args: &Args) -> anyhow::Result<Vec<Row>> {
    let logs = LogDir::from_env()?;
    let started = Federation::start(
        binary,
        args.members,
        Mode::Push,
        Layout::Processes,
        "10s",
        logs.path(),
    )
    .await;
    let federation = match started {
        Ok(f) => f,
        Err(err) => return Err(err.context(log_tails(logs.path())?)),
    };
    let setup = format!("{} members, scale", args.members);

    progress(&setup, "idle");
    let idle = measure_idle(&federation, args).await;

    create_policies(&federation).await?;
    let seen: Seen = Arc::default();
    let applied: Applied = Arc::default();
    let stop = tokio_util::sync::CancellationToken::new();
    watch_members(
        &federation,
        crate::workload_kind::WorkloadKind::Deployment,
        seen.clone(),
        &stop,
    );
    watch_applied(&federation.karmada, applied.clone(), &stop);
    let api: Api<Deployment> = Api::namespaced(federation.karmada.clone(), NAMESPACE);

    progress(&setup, "paced batch");
    let (latency, paced_pairs) = measure_paced(&api, &seen, &applied, args).await?;

    let burst = measure_burst(&federation, &api, &applied, &setup, args).await;
    stop.cancel();
    Ok(rows(args, &idle, &latency, paced_pairs, &burst?))
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.workloads < 2 || args.paced == 0 {
        bail!("--workloads must be at least 2 and --paced at least 1");
    }
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    let rows = measure(&binary, &args).await.context("scale benchmark")?;
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Measured on {} on {} with `cargo build --release --bins -p karmada -p karmadactl -p bench && \
         ./target/release/karmada-bench scale --members {} --workloads {} --paced {} --rate {}`.\n\
         Real processes: API server on the embedded store, controller-manager (Karmada's default 10 s cluster \
         status period), scheduler, and one member-sim process in scale mode simulating every member (3 nodes \
         each), joined in Push mode. Policies: every other workload Duplicated to every member, the others \
         Divided ({} replicas, weighted by available replicas). The idle row is measured first, with the members \
         joined and nothing propagated; the paced batch then measures distribution latency (create acknowledged \
         → the member's watch event); the burst is timed until every ResourceBinding reports FullyApplied, and \
         its CPU is divided by the (workload, member) pairs placed.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().date(),
        args.members,
        args.workloads,
        args.paced,
        args.rate,
        args.divided_replicas,
    );
    report::write_section(&args.report, "Scale", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
