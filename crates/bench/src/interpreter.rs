//! Resource interpreter benchmark: the cost of one call of GetReplicas and AggregateStatus through a Lua
//! customization (the bundled CloneSet scripts) with warm VMs, beside the native interpreter's Deployment for
//! scale. One thread; every call timed on its own.

use std::time::{Duration, Instant};

use karmada_api::work::AggregatedStatusItem;
use karmada_interpreter::Interpreter;
use serde_json::{Value, json};

use crate::report::{self, Row};
use crate::stats::Samples;

#[derive(clap::Args)]
pub struct Args {
    /// Timed calls per measurement (after a tenth as many warm-up calls).
    #[arg(long, default_value_t = 20_000)]
    pub calls: usize,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: std::path::PathBuf,
}

fn workload(api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": "web", "namespace": "shop", "generation": 3, "labels": {"app": "web"}},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                       "ports": [{"containerPort": 80}],
                                       "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                                       "envFrom": [{"configMapRef": {"name": "web-config"}}]}]}}}})
}

fn items(clusters: usize) -> Vec<AggregatedStatusItem> {
    (0..clusters)
        .map(|i| AggregatedStatusItem {
            cluster_name: format!("member{i}"),
            status: Some(json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2,
                                "updatedReadyReplicas": 2, "observedGeneration": 3, "generation": 3,
                                "updateRevision": "web-7d9", "labelSelector": "app=web"})),
            applied: true,
            ..AggregatedStatusItem::default()
        })
        .collect()
}

/// Times `calls` runs of `call` after a warm-up; the samples and the calls per second of the whole run.
fn measure(calls: usize, mut call: impl FnMut()) -> (Samples, f64) {
    for _ in 0..calls / 10 {
        call();
    }
    let mut samples = Samples::default();
    let started = Instant::now();
    for _ in 0..calls {
        let one = Instant::now();
        call();
        samples.push(one.elapsed());
    }
    (samples, calls as f64 / started.elapsed().as_secs_f64())
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let calls = args.calls.max(10);
    let rows = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<Row>> {
        let interpreter = Interpreter::with_bundled();
        let clone_set = workload("apps.kruise.io/v1alpha1", "CloneSet");
        let deployment = workload("apps/v1", "Deployment");
        for object in [&clone_set, &deployment] {
            // Both must answer, or the timings would be of errors.
            anyhow::ensure!(
                interpreter
                    .get_replicas(object)
                    .map_err(|e| anyhow::anyhow!("{e}"))?
                    .replicas
                    == 6
            );
        }
        let mut rows = Vec::new();
        let mut row = |name: String, target: &str, (samples, rate): (Samples, f64), note: &str| {
            let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1000.0);
            rows.push(Row {
                name,
                ops_per_sec: Some(rate),
                p50_ms: Some(ms(samples.quantile(0.5))),
                p99_ms: Some(ms(samples.quantile(0.99))),
                target: target.into(),
                note: format!(
                    "p50 {}, p99 {}; {note}",
                    us(samples.quantile(0.5)),
                    us(samples.quantile(0.99))
                ),
            });
        };
        row(
            "GetReplicas, Lua (CloneSet)".into(),
            "p99 ≤ 50 µs",
            measure(calls, || {
                let _ = interpreter.get_replicas(&clone_set);
            }),
            "replicas and accuratePodRequirements",
        );
        row(
            "GetReplicas, native (Deployment)".into(),
            "–",
            measure(calls, || {
                let _ = interpreter.get_replicas(&deployment);
            }),
            "for scale",
        );
        for clusters in [2, 10] {
            let statuses = items(clusters);
            row(
                format!("AggregateStatus, Lua (CloneSet), {clusters} clusters"),
                "p99 ≤ 50 µs",
                measure(calls, || {
                    let _ = interpreter.aggregate_status(&clone_set, &statuses);
                }),
                "template crosses lazily, items built as tables, result back to JSON",
            );
            row(
                format!("AggregateStatus, native (Deployment), {clusters} clusters"),
                "–",
                measure(calls, || {
                    let _ = interpreter.aggregate_status(&deployment, &statuses);
                }),
                "for scale",
            );
        }
        Ok(rows)
    })
    .await??;
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `cargo run -p bench -- interpreter` (or the release binary: `karmada-bench interpreter`)\n\n\
         Machine: {}. Date: {}. Load average at the end: {}. One thread calls the layered interpreter (customization > \
         bundled > native) {calls} times per row after a tenth as many warm-up calls; each call is timed on its own. \
         The Lua rows run the bundled OpenKruise CloneSet customization in a warm pooled VM (scripts compiled once \
         per VM); the native rows are the built-in Deployment interpreter on the same object, for scale. Karmada runs \
         each Lua script afresh on every call (its issues #5238 and #7597 report the cost). Build: {}.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
        report::load_average(),
        if cfg!(debug_assertions) {
            "debug profile (the interpreter and its dependencies at opt-level 1) — a release build is faster; the \
             figures are an upper bound"
        } else {
            "release"
        },
    );
    report::write_section(
        &args.report,
        "Resource interpreter (Lua customizations)",
        &body,
    )?;
    println!("wrote {}", report::relative_to_cwd(&args.report));
    Ok(())
}
