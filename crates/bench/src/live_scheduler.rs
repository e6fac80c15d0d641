//! The live scheduler stage: `karmada_controllers::scheduler::run` against an in-process API server (memory
//! store), scheduling a burst of ResourceBindings named to a 5-plugin SchedulerProfile over 10 and 100 member
//! clusters, without and with the members' scheduler estimators (in-process gRPC servers on loopback, one per
//! member, each answering from 10 nodes with pods). Measures bindings/s from the scheduler's start until every
//! binding is scheduled, the Select step's latency (which includes the wait for the estimators) from the
//! scheduler's own histogram, and, apart, one estimator round (every member asked at once) exactly.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use karmada_apiserver::server::{ApiServer, ApiServerOptions};
use karmada_controllers::runtime::resources;
use karmada_controllers::scheduler::{SchedulerConfig, SchedulerMetrics, run as run_scheduler};
use karmada_scheduler_estimator::metrics::EstimatorMetrics;
use karmada_scheduler_estimator::{
    EstimatorClientConfig, EstimatorClients, EstimatorService, MemberState,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::report::{self, Row};
use crate::stats::{Samples, ms};

#[derive(clap::Args)]
pub struct Args {
    /// Member cluster counts.
    #[arg(long, value_delimiter = ',', default_value = "10,100")]
    pub members: Vec<usize>,
    /// Bindings in each burst.
    #[arg(long, default_value_t = 2000)]
    pub bindings: usize,
    /// Estimator rounds timed apart (0: none).
    #[arg(long, default_value_t = 500)]
    pub rounds: usize,
    /// Replica requirement shapes the bindings cycle through (1: every binding asks for the same).
    #[arg(long, default_value_t = 8)]
    pub shapes: usize,
    /// Which bursts to run: without estimators (false), with them (true).
    #[arg(long, value_delimiter = ',', default_value = "false,true")]
    pub with_estimators: Vec<bool>,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: std::path::PathBuf,
}

const PROFILE: &str = "bench-five-plugins";
const NAMESPACE: &str = "bench";

async fn create(
    client: &kube::Client,
    resource: &kube::api::ApiResource,
    namespace: Option<&str>,
    object: Value,
) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    api.create(&PostParams::default(), &serde_json::from_value(object)?)
        .await?;
    Ok(())
}

fn cluster_name(i: usize) -> String {
    format!("member-{i:03}")
}

/// A control plane with `members` Ready clusters, the profile, and `bindings` bindings waiting.
async fn control_plane(
    members: usize,
    bindings: usize,
    shapes: usize,
    cancel: &CancellationToken,
) -> anyhow::Result<kube::Client> {
    let store: Arc<dyn store::Store> = Arc::new(store::memory::MemoryStore::new());
    let server = ApiServer::new(
        store,
        ApiServerOptions {
            cancel: cancel.clone(),
            ..ApiServerOptions::default()
        },
    )
    .await?;
    let client = kube::Client::new(karmada_apiserver::router::router(server), "default");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?,
        )
        .await?;
    let clusters = resources::cluster();
    let cluster_api: Api<DynamicObject> = Api::all_with(client.clone(), &clusters);
    for i in 0..members {
        let name = cluster_name(i);
        create(&client, &clusters, None, json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "labels": {"tier": if i % 2 == 0 { "gold" } else { "silver" }},
                         "annotations": {"cluster.karmada.io/api-latency": format!("{}ms", 2 + i % 20)}},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"}
        }))
        .await?;
        cluster_api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": {
                "kubernetesVersion": "v1.31.0",
                "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ready",
                                "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "apiEnablements": [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
                "resourceSummary": {"allocatable": {"cpu": "160", "memory": "640Gi", "pods": "1100"},
                                    "allocated": {"cpu": "20", "memory": "80Gi", "pods": "100"}}}})))
            .await?;
    }
    create(&client, &resources::scheduler_profile(), None, json!({
        "apiVersion": "scheduling.karmada.io/v1alpha1", "kind": "SchedulerProfile",
        "metadata": {"name": PROFILE},
        "spec": {"plugins": {"schedule": {
            "disabled": [{"name": "*"}],
            "enabled": [{"name": "APIEnablement"}, {"name": "TaintToleration"}, {"name": "ClusterAffinity", "weight": 2},
                        {"name": "ClusterLocality", "weight": 5}, {"name": "ClusterLatency", "weight": 3}]}},
                 "pluginConfig": [{"name": "ClusterLatency", "args": {"thresholdMilliseconds": 100}}]}
    }))
    .await?;
    let binding = resources::resource_binding();
    for i in 0..bindings {
        create(&client, &binding, Some(NAMESPACE), json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": format!("web-{i}-deployment"), "namespace": NAMESPACE,
                         "labels": {"propagationpolicy.karmada.io/permanent-id": "bench"}},
            "spec": {
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE,
                             "name": format!("web-{i}"), "uid": format!("uid-{i}")},
                "replicas": 10,
                "replicaRequirements": requirements(i % shapes.max(1)),
                "schedulerName": PROFILE,
                "placement": {"clusterAffinity": {"labelSelector": {"matchExpressions": [
                                  {"key": "tier", "operator": "In", "values": ["gold", "silver"]}]}},
                              "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
            }
        }))
        .await?;
    }
    Ok(client)
}

/// The `shape`th replica requirements: CPU and memory requests of different sizes.
fn requirements(shape: usize) -> Value {
    json!({"resourceRequest": {"cpu": format!("{}m", 100 * (1 + shape % 4)),
                               "memory": format!("{}Mi", 128 * (1 + shape / 4))},
           "namespace": NAMESPACE})
}

/// One estimator per member, each with 10 nodes (64 cpu, 256 GiB, 250 pods) running 20 pods: room for the
/// whole burst on every member, so that no binding is refused for want of room.
async fn estimators(
    members: usize,
    cache_ttl: Duration,
    cancel: &CancellationToken,
) -> anyhow::Result<Arc<EstimatorClients>> {
    let mut addresses = HashMap::new();
    for i in 0..members {
        let name = cluster_name(i);
        let state = Arc::new(MemberState::new());
        let nodes: Vec<Node> = (0..10)
            .map(|n| {
                serde_json::from_value(json!({"metadata": {"name": format!("{name}-node-{n}"), "labels": {"zone": "a"}},
                    "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"}}}))
            })
            .collect::<Result<_, _>>()?;
        let pods: Vec<Pod> = (0..20)
            .map(|p| {
                serde_json::from_value(json!({"metadata": {"name": format!("pod-{p}"), "namespace": "default"},
                    "spec": {"nodeName": format!("{name}-node-{}", p % 10),
                             "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]},
                    "status": {"phase": "Running"}}))
            })
            .collect::<Result<_, _>>()?;
        state.replace_nodes(nodes);
        state.replace_pods(pods);
        state.replace_quotas([]);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        addresses.insert(name.clone(), listener.local_addr()?.to_string());
        let service =
            EstimatorService::new(&name, state, None, false, EstimatorMetrics::unregistered());
        tokio::spawn(karmada_scheduler_estimator::serve(
            listener,
            service,
            cancel.child_token(),
        ));
    }
    Ok(EstimatorClients::fixed(
        addresses,
        EstimatorClientConfig {
            cache_ttl,
            ..EstimatorClientConfig::default()
        },
    ))
}

/// Share of observations at or under `le` seconds, and the smallest bucket bound holding 99 %, of one
/// histogram series in a text exposition.
fn histogram_quantiles(text: &str, metric: &str, label: &str) -> Option<(f64, String)> {
    let mut buckets: Vec<(f64, u64)> = Vec::new();
    let mut count = 0u64;
    for line in text.lines() {
        let count_line = line.starts_with(&format!("{metric}_count{{"))
            || line.starts_with(&format!("{metric}_count "));
        if count_line && line.contains(label) {
            count = line.rsplit(' ').next()?.parse().ok()?;
        }
        if line.starts_with(&format!("{metric}_bucket{{")) && line.contains(label) {
            let le = line.split("le=\"").nth(1)?.split('"').next()?;
            let value: u64 = line.rsplit(' ').next()?.parse().ok()?;
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            buckets.push((bound, value));
        }
    }
    if count == 0 {
        return None;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let within_2ms = buckets
        .iter()
        .filter(|(b, _)| *b <= 0.002)
        .map(|(_, v)| *v)
        .max()
        .unwrap_or(0);
    let p99 = buckets
        .iter()
        .find(|(_, v)| (*v as f64) >= 0.99 * count as f64)
        .map(|(b, _)| {
            if b.is_finite() {
                format!("≤ {:.0} ms", b * 1000.0)
            } else {
                "> max bucket".into()
            }
        })
        .unwrap_or_default();
    Some((within_2ms as f64 / count as f64, p99))
}

/// CPU time (user + system) this process has used, from /proc/self/stat.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

struct Outcome {
    per_second: f64,
    per_cpu_second: Option<f64>,
    select_within_2ms: f64,
    select_p99: String,
    e2e_p99: String,
    /// Share of decisions that waited ≤ 2 ms for the estimators, the bucket bound holding 99 %, and how many
    /// decisions asked them.
    estimator_wait: Option<(f64, String, u64)>,
    /// From the scheduler's start to its first binding scheduled (5 ms polls).
    first_decision: Option<Duration>,
    /// Cluster answers decisions had to ask for themselves (none kept or asked ahead).
    asked_by_decisions: Option<u64>,
}

async fn burst(
    members: usize,
    bindings: usize,
    shapes: usize,
    with_estimators: bool,
) -> anyhow::Result<Outcome> {
    let cancel = CancellationToken::new();
    let client = control_plane(members, bindings, shapes, &cancel).await?;
    let estimators = if with_estimators {
        Some(estimators(members, EstimatorClientConfig::default().cache_ttl, &cancel).await?)
    } else {
        None
    };
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = SchedulerMetrics::register(&mut registry);
    let clients = estimators.clone();
    let config = SchedulerConfig {
        estimators,
        ..SchedulerConfig::default()
    };
    let cpu_before = process_cpu_seconds();
    let started = Instant::now();
    let scheduler = tokio::spawn(run_scheduler(
        client,
        config,
        metrics.clone(),
        cancel.child_token(),
    ));
    let target = u64::try_from(bindings)?;
    let mut first_decision = None;
    while metrics.attempts("scheduled", "ReconcileSchedule") < target {
        if first_decision.is_none() && metrics.attempts("scheduled", "ReconcileSchedule") > 0 {
            first_decision = Some(started.elapsed());
        }
        if started.elapsed() > Duration::from_secs(600) {
            anyhow::bail!(
                "only {} of {bindings} scheduled in 10 minutes",
                metrics.attempts("scheduled", "ReconcileSchedule")
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    let cpu = process_cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)?;
    cancel.cancel();
    let _ = scheduler.await;
    let (select_within_2ms, select_p99) = histogram_quantiles(
        &text,
        "karmada_scheduler_scheduling_algorithm_duration_seconds",
        "schedule_step=\"Select\"",
    )
    .unwrap_or((0.0, "–".into()));
    let (_, e2e_p99) = histogram_quantiles(
        &text,
        "karmada_scheduler_e2e_scheduling_duration_seconds",
        "result=\"scheduled\"",
    )
    .unwrap_or((0.0, "–".into()));
    const WAIT: &str = "karmada_scheduler_estimator_wait_duration_seconds";
    let asked = text
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{WAIT}_count ")))
        .and_then(|n| n.trim().parse::<u64>().ok());
    let estimator_wait = histogram_quantiles(&text, WAIT, "")
        .zip(asked)
        .map(|((within, p99), asked)| (within, p99, asked));
    Ok(Outcome {
        per_second: bindings as f64 / elapsed.as_secs_f64(),
        per_cpu_second: cpu.filter(|c| *c > 0.0).map(|c| bindings as f64 / c),
        select_within_2ms,
        select_p99,
        e2e_p99,
        estimator_wait,
        first_decision,
        asked_by_decisions: clients.map(|c| c.asked_by_decisions()),
    })
}

/// One estimator round (every member asked at once, nothing reused), `rounds` times.
async fn estimator_rounds(members: usize, rounds: usize) -> anyhow::Result<Samples> {
    let cancel = CancellationToken::new();
    let clients = estimators(members, Duration::ZERO, &cancel).await?;
    let names: Vec<Arc<str>> = (0..members).map(|i| Arc::from(cluster_name(i))).collect();
    let requirements: karmada_api::ReplicaRequirements = serde_json::from_value(
        json!({"resourceRequest": {"cpu": "100m", "memory": "128Mi"}, "namespace": NAMESPACE}),
    )?;
    // Connections are made on first use.
    let first = clients.estimates(&names, Some(&requirements)).await;
    anyhow::ensure!(
        first.len() == members,
        "{} of {members} estimators answered",
        first.len()
    );
    let mut samples = Samples::default();
    for _ in 0..rounds {
        let started = Instant::now();
        let answers = clients.estimates(&names, Some(&requirements)).await;
        samples.push(started.elapsed());
        anyhow::ensure!(answers.len() == members, "an estimator did not answer");
    }
    cancel.cancel();
    Ok(samples)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for &members in &args.members {
        for &with_estimators in &args.with_estimators {
            let outcome = burst(members, args.bindings, args.shapes, with_estimators).await?;
            rows.push(Row {
                name: format!(
                    "live scheduler, 5-plugin profile, {members} members{}",
                    if with_estimators { ", with estimators" } else { "" }
                ),
                ops_per_sec: Some(outcome.per_second),
                p50_ms: None,
                p99_ms: None,
                target: "≥ 500 bindings/s".into(),
                note: format!(
                    "{} bindings of {} requirement shapes; {} per CPU-second of the process (API server included); first binding scheduled {} after the start; Select step{} P99 {} ({:.1} % within 2 ms); e2e P99 {} (Karmada's buckets){}{}",
                    args.bindings,
                    args.shapes,
                    outcome.per_cpu_second.map_or_else(|| "–".to_string(), |r| format!("{r:.0}")),
                    outcome.first_decision.map_or_else(|| "–".to_string(), |d| format!("{:.0} ms", d.as_secs_f64() * 1000.0)),
                    if with_estimators { " (with the estimators' round)" } else { "" },
                    outcome.select_p99,
                    outcome.select_within_2ms * 100.0,
                    outcome.e2e_p99,
                    outcome.estimator_wait.as_ref().map_or_else(String::new, |(within, p99, asked)| format!(
                        "; wait for the estimators P99 {p99} ({:.1} % of {asked} decisions within 2 ms: target ≤ 2 ms P99)",
                        within * 100.0
                    )),
                    outcome.asked_by_decisions.map_or_else(String::new, |n| format!(
                        "; {n} cluster answers asked by decisions themselves (the rest kept or asked ahead)"
                    )),
                ),
            });
        }
        if args.rounds == 0 {
            continue;
        }
        let samples = estimator_rounds(members, args.rounds).await?;
        rows.push(Row {
            name: format!("estimator round, {members} members asked at once"),
            ops_per_sec: None,
            p50_ms: Some(ms(samples.quantile(0.5))),
            p99_ms: Some(ms(samples.quantile(0.99))),
            target: "≤ 2 ms P99 per binding".into(),
            note: format!(
                "{} rounds over gRPC on loopback, 10 nodes and 20 pods per member",
                args.rounds
            ),
        });
    }
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `cargo build --release -p bench -p karmada -p karmadactl && ./target/release/karmada-bench live-scheduler`\n\n\
         Machine: {}. Date: {}. Load average at the end: {}. The scheduler runner (watch, queue, profile, core, Karmada's two patches per binding) \
         against an in-process API server on the memory store, in one process: a burst of bindings waiting when it \
         starts, each naming a SchedulerProfile of five plugins (APIEnablement, TaintToleration, ClusterAffinity, \
         ClusterLocality, ClusterLatency) and dividing 10 replicas by available replicas over every member. \
         bindings/s runs from the scheduler's start to the last binding scheduled (the API server's work included). \
         With estimators, every feasible member's estimator is consulted per binding (in-process gRPC servers on \
         loopback; an answer is reused for the same requirements for the default 1 s, less what was placed \
         meanwhile, and bounded for other requirements by what those replicas can take; the bindings waiting at \
         the start are asked about, one round per kind of binding, before the workers start, and a binding \
         queued later is asked about when it is queued); the wait for the \
         estimators is the scheduler's own histogram of it (with a bucket at 2 ms), which the Select step also \
         includes; the first binding's time after the start includes the rounds asked ahead. The estimator rounds are timed apart, without the scheduler running and without reuse. \
         Everything shares the machine's cores: per CPU-second of the process is what the stage costs, \
         whatever else runs.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
        report::load_average(),
    );
    report::write_section(&args.report, "Live scheduler and estimators", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
