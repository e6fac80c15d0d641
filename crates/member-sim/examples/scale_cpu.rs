//! CPU cost of scale mode per Deployment: one in-process scale-mode cluster, N one-replica
//! Deployments created at a fixed rate (as Karmada's execution controller does), then waits until
//! every one reports an available replica. Prints the process's CPU time (user + system, from
//! `/proc/self/stat`: server, controllers and this client together) per Deployment.
//!
//! `cargo run -p member-sim --example scale_cpu -- 300 1000` (counts; rate with `--rate 50`).
//!
//! With `--pure`, no server: the same arrivals fed straight to the pure controller, one pass per
//! create and one per status echo, timing the from-scratch pass ([`scale_mode::reconcile`])
//! against the incremental one ([`ScaleModeState`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{ListParams, PostParams};
use member_sim::SimConfig;
use member_sim::objects::{ObjectKey, Objects, Write};
use member_sim::runtime::{ClusterOptions, cluster};
use member_sim::scale_mode::{self, ScaleModeState};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const READY_TIMEOUT: Duration = Duration::from_secs(900);

/// utime + stime of this process, in seconds.
fn cpu_seconds() -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<f64> {
        Ok(fields.get(i).context("stat field")?.parse::<f64>()?)
    };
    // utime and stime are fields 14 and 15 of stat(5); after the name they are 11 and 12 (0-based).
    Ok((ticks(11)? + ticks(12)?) / 100.0)
}

fn deployment(name: &str) -> anyhow::Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "web",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }]},
            },
        },
    }))?)
}

async fn measure(count: usize, rate: f64) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let cancel = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let running = cluster::start(
        ClusterOptions {
            config: SimConfig {
                name: "bench".into(),
                nodes: 3,
                // Room for every Deployment: the default 110 pods a node would cap N at 330.
                node_pods: "1000".into(),
                ..SimConfig::default()
            },
            scale_mode: true,
            store: Arc::new(store::memory::MemoryStore::new()),
            listener,
            tls: None,
            authn: Arc::new(apiserver_auth::authn::Authenticator::new(None)),
            service_account_tokens: None,
            faults_path: dir.path().join("faults"),
            dns: None,
        },
        cancel.clone(),
    )
    .await?;
    let api: Api<Deployment> = Api::namespaced(running.client.clone(), "default");
    let cpu_start = cpu_seconds()?;
    let started = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / rate);
    for i in 0..count {
        let due = started + interval * u32::try_from(i)?;
        tokio::time::sleep_until(due.into()).await;
        api.create(&PostParams::default(), &deployment(&format!("d{i}"))?)
            .await?;
    }
    let created = started.elapsed();
    loop {
        let listed = api.list(&ListParams::default()).await?;
        let ready = listed
            .items
            .iter()
            .filter(|d| d.status.as_ref().and_then(|s| s.available_replicas) == Some(1))
            .count();
        if ready == count {
            break;
        }
        if started.elapsed() > READY_TIMEOUT {
            bail!("only {ready} of {count} Deployments available");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cpu = cpu_seconds()? - cpu_start;
    println!(
        "N={count} rate={rate}/s: created in {:.1} s, all available after {:.1} s; \
         process CPU {cpu:.2} s = {:.2} ms per Deployment",
        created.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        cpu * 1000.0 / count as f64,
    );
    cancel.cancel();
    running.stop().await;
    Ok(())
}

/// Seconds spent in `pass` while `count` Deployments arrive one per pass, each followed by a
/// pass that sees its status write echoed back.
fn pure_passes(
    count: usize,
    mut pass: impl FnMut(&Objects, &std::collections::BTreeSet<ObjectKey>) -> Vec<Write>,
) -> anyhow::Result<f64> {
    let config = SimConfig {
        node_pods: "1000".into(),
        ..SimConfig::default()
    };
    let now = jiff::Timestamp::now();
    let mut objects = Objects::new();
    for object in member_sim::nodes::initial_objects(&config, now)? {
        objects.apply(&Write::Create(object), now)?;
    }
    let mut changed: std::collections::BTreeSet<ObjectKey> =
        objects.iter().map(|(key, _)| key.clone()).collect();
    let mut spent = Duration::ZERO;
    for i in 0..count {
        let object = serde_json::to_value(deployment(&format!("d{i}"))?)?;
        changed.insert(ObjectKey::of(&object));
        objects.apply(&Write::Create(object), now)?;
        for _ in 0..2 {
            let started = Instant::now();
            let writes = pass(&objects, &changed);
            spent += started.elapsed();
            changed.clear();
            for write in writes {
                changed.insert(write.key());
                objects.apply(&write, now)?;
            }
        }
    }
    Ok(spent.as_secs_f64())
}

fn measure_pure(count: usize) -> anyhow::Result<()> {
    let faults = member_sim::Faults::default();
    let now = jiff::Timestamp::now();
    let full = pure_passes(count, |objects, _| {
        scale_mode::reconcile(objects, &faults, now).writes
    })?;
    let mut state = ScaleModeState::new();
    let incremental = pure_passes(count, |objects, changed| {
        state.reconcile(objects, changed, &faults, now).writes
    })?;
    println!(
        "pure N={count}: from-scratch passes {:.3} ms per Deployment, incremental {:.3} ms",
        full * 1000.0 / count as f64,
        incremental * 1000.0 / count as f64,
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut rate = 50.0;
    let mut pure = false;
    let mut counts = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--pure" {
            pure = true;
        } else if arg == "--rate" {
            rate = args.next().context("--rate needs a value")?.parse()?;
        } else {
            counts.push(arg.parse::<usize>()?);
        }
    }
    if counts.is_empty() {
        counts = vec![300, 1000];
    }
    for count in counts {
        if pure {
            measure_pure(count)?;
        } else {
            measure(count, rate).await?;
        }
    }
    Ok(())
}
