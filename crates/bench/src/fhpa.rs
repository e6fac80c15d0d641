//! FederatedHPA benchmark: the CPU of one evaluation round of 1,000 FederatedHPAs over 10 members, on one
//! thread. Per FederatedHPA and member the round decodes the answers the controller receives (the member's
//! workload, its pods list and its PodMetrics list, as JSON bytes in the shape member-sim serves) and folds them
//! into the observation with the controller's own code (`add_member`); then the pure evaluation decides
//! (replica calculation, stabilization, policies, status). The HTTP requests themselves are not in it.

use std::time::Instant;

use jiff::{SignedDuration, Timestamp};
use karmada_api::autoscaling::FederatedHPA;
use karmada_controllers::federatedhpa::controller::add_member;
use karmada_controllers::federatedhpa::evaluate::{self, EvaluationConfig, Observation};
use karmada_controllers::federatedhpa::normalize::History;
use kube::api::{DynamicObject, ObjectList};
use serde_json::{Value, json};

use crate::report::{self, Row};

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value_t = 1_000)]
    pub fhpas: usize,
    #[arg(long, default_value_t = 10)]
    pub members: usize,
    /// Pods of each workload in each member.
    #[arg(long, default_value_t = 2)]
    pub pods_per_member: usize,
    /// Rounds measured (after one warm-up round).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: std::path::PathBuf,
}

fn hpa(i: usize) -> FederatedHPA {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "FederatedHPA",
        "metadata": {"name": format!("app-{i}"), "namespace": "bench"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": format!("app-{i}")},
                 "minReplicas": 2, "maxReplicas": 100,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                              "target": {"type": "Utilization", "averageUtilization": 50}}}]}
    }))
    .unwrap_or_default()
}

/// What one member answers for workload `i`: the workload, its pods and their metrics, as bytes.
struct Answers {
    pods_per_member: usize,
    workload: Vec<u8>,
    pods: Vec<u8>,
    metrics: Vec<u8>,
}

fn answers(i: usize, member: usize, pods: usize, now: Timestamp) -> anyhow::Result<Answers> {
    let started = (now - SignedDuration::from_mins(30)).to_string();
    let sampled = (now - SignedDuration::from_secs(5)).to_string();
    let app = format!("app-{i}");
    let names: Vec<String> = (0..pods)
        .map(|p| format!("{app}-7d9f8-{member}x{p}"))
        .collect();
    let pod = |name: &String| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "uid": format!("uid-{name}"), "resourceVersion": "42",
                         "labels": {"app": app, "pod-template-hash": "7d9f8"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-7d9f8"),
                                              "uid": "rs-uid", "controller": true}]},
            "spec": {"nodeName": format!("member{member}-node-0"),
                     "containers": [{"name": "main", "image": "nginx:1.27",
                                     "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]},
            "status": {"phase": "Running", "startTime": started, "podIP": "10.100.0.7",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started},
                                      {"type": "PodScheduled", "status": "True", "lastTransitionTime": started}]}})
    };
    let metric = |(k, name): (usize, &String)| {
        json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
            "metadata": {"name": name, "namespace": "bench", "labels": {"app": app}},
            "timestamp": sampled, "window": "15s",
            "containers": [{"name": "main", "usage": {"cpu": format!("{}m", 400 + 10 * ((i + member + k) % 7)),
                                                       "memory": "180Mi"}}]})
    };
    let list = |kind: &str, items: Vec<Value>| {
        serde_json::to_vec(
            &json!({"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "42"}, "items": items}),
        )
    };
    Ok(Answers {
        pods_per_member: pods,
        workload: serde_json::to_vec(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": app, "namespace": "bench", "resourceVersion": "42"},
            "spec": {"replicas": pods, "selector": {"matchLabels": {"app": app}}}}))?,
        pods: list("PodList", names.iter().map(pod).collect())?,
        metrics: list(
            "PodMetricsList",
            names.iter().enumerate().map(metric).collect(),
        )?,
    })
}

/// CPU seconds this thread has used (`/proc/thread-self/stat`, 100 ticks a second).
fn thread_cpu_seconds() -> anyhow::Result<f64> {
    use anyhow::Context;
    let stat = std::fs::read_to_string("/proc/thread-self/stat")?;
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<f64> {
        Ok(fields.get(i).context("stat field")?.parse::<f64>()?)
    };
    Ok((ticks(11)? + ticks(12)?) / 100.0)
}

/// One round: every FederatedHPA observed and evaluated; returns how many decided to scale.
fn round(
    hpas: &[FederatedHPA],
    members: &[Vec<Answers>],
    histories: &mut [History],
    config: &EvaluationConfig,
    now: Timestamp,
) -> anyhow::Result<usize> {
    let mut scaled = 0;
    let total: usize = members.len()
        * members
            .first()
            .map_or(0, |m| m.first().map_or(0, |a| a.pods_per_member));
    for (i, hpa) in hpas.iter().enumerate() {
        let mut observation = Observation {
            template_replicas: Some(i32::try_from(total).unwrap_or(i32::MAX)),
            ..Observation::default()
        };
        for (m, member) in members.iter().enumerate() {
            let answers = &member[i];
            let workload: DynamicObject = serde_json::from_slice(&answers.workload)?;
            let replicas = workload
                .data
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let pods: ObjectList<DynamicObject> = serde_json::from_slice(&answers.pods)?;
            let metrics: ObjectList<DynamicObject> = serde_json::from_slice(&answers.metrics)?;
            add_member(
                &mut observation,
                &format!("member{m}"),
                replicas,
                &pods.items,
                &metrics.items,
            );
        }
        let decision = evaluate::evaluate(hpa, &observation, &mut histories[i], config, now);
        scaled += usize::from(decision.scale_to.is_some());
    }
    Ok(scaled)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let (fhpas, members, pods, rounds) = (
        args.fhpas.max(1),
        args.members.max(1),
        args.pods_per_member.max(1),
        args.rounds.max(1),
    );
    let (cpu, wall, scaled) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let now = Timestamp::now();
        let hpas: Vec<FederatedHPA> = (0..fhpas).map(hpa).collect();
        let answers = (0..members)
            .map(|m| (0..fhpas).map(|i| answers(i, m, pods, now)).collect())
            .collect::<anyhow::Result<Vec<Vec<Answers>>>>()?;
        let config = EvaluationConfig::default();
        let mut histories = vec![History::default(); fhpas];
        let scaled = round(&hpas, &answers, &mut histories, &config, now)?;
        // Every FederatedHPA must have found its metric, or the rounds would time the error path.
        anyhow::ensure!(
            scaled == fhpas,
            "only {scaled} of {fhpas} FederatedHPAs decided to scale"
        );
        let (mut cpu, mut wall) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let cpu_before = thread_cpu_seconds()?;
            let started = Instant::now();
            round(&hpas, &answers, &mut histories, &config, now)?;
            wall.push(started.elapsed().as_secs_f64());
            cpu.push(thread_cpu_seconds()? - cpu_before);
        }
        Ok((cpu, wall, scaled))
    })
    .await??;
    let median = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    };
    let max = |values: &[f64]| values.iter().copied().fold(0.0, f64::max);
    let rows = vec![Row {
        name: format!(
            "one round, {fhpas} FederatedHPAs × {members} members ({} pods)",
            fhpas * members * pods
        ),
        ops_per_sec: Some(fhpas as f64 / median(&wall)),
        p50_ms: Some(format!("{:.0}", median(&cpu) * 1000.0)),
        p99_ms: Some(format!("{:.0}", max(&cpu) * 1000.0)),
        target: "≤ 1 s CPU per round (15 s period)".into(),
        note: format!(
            "CPU per round: median {:.3} s, max {:.3} s over {rounds} rounds; wall median {:.3} s; \
             {scaled} of {fhpas} recommend a scale",
            median(&cpu),
            max(&cpu),
            median(&wall)
        ),
    }];
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `cargo run -p bench -- fhpa` (or the release binary: `karmada-bench fhpa`)\n\n\
         Machine: {}. Date: {}. Load average at the end: {}. One thread runs the FederatedHPA controller's per-round \
         work for {fhpas} FederatedHPAs over {members} members with {pods} pods each per member: decoding each \
         member's workload, pods list and PodMetrics list (JSON bytes as member-sim serves them) and folding them \
         into the observation with the controller's own `add_member`, then the pure evaluation (kube's HPA \
         algorithm, stabilization, policies, status). The HTTP requests are not included. ops/s is FederatedHPAs \
         evaluated per second of wall time; the p50 and p99 columns hold the median and the maximum CPU ms per \
         round (thread CPU time, 10 ms resolution). Build: {}.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
        report::load_average(),
        if cfg!(debug_assertions) {
            "debug profile (dependencies at opt-level 1) — a release build is faster; the figures are an upper bound"
        } else {
            "release"
        },
    );
    report::write_section(&args.report, "FederatedHPA evaluation round", &body)?;
    println!("wrote {}", report::relative_to_cwd(&args.report));
    Ok(())
}
