//! Clusters benchmark: how long `karmadactl join` takes and how long until the joined cluster is Ready, then
//! what collecting the status of N Push clusters costs the control plane at the default 10 s period.
//!
//! Real processes: `karmada apiserver` (embedded store), `karmada controller-manager` with its default cluster
//! status settings, and one `karmada member-sim --count N` process. The members are joined one after another;
//! a watch on Clusters notes when each first turns Ready. CPU is utime + stime from `/proc/PID/stat` over a
//! measured interval (idle with no cluster, then with all N Ready); RSS is `VmRSS`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use futures::StreamExt;
use kube::Client;
use kube::runtime::watcher;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::process::{
    Launcher, LogDir, Process, cluster_api, is_ready, join_push, karmada_binary, start_apiserver,
    start_component, start_member_sim,
};
use crate::report::{self, Row};
use crate::stats::{Samples, ms};

#[derive(clap::Args)]
pub struct Args {
    /// Member clusters to join (one member-sim process simulates them all).
    #[arg(long, default_value_t = 100)]
    pub members: u32,
    /// Seconds over which CPU is measured with every cluster Ready.
    #[arg(long, default_value_t = 60)]
    pub interval: u64,
    /// Seconds over which the idle CPU (no cluster) is measured.
    #[arg(long, default_value_t = 20)]
    pub idle_interval: u64,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one); `karmadactl` is looked up beside it.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
}

const START_TIMEOUT: Duration = Duration::from_secs(120);
const READY_TIMEOUT: Duration = Duration::from_secs(600);
/// Karmada's published cluster_register P99 (v1.3 test report, 5,000-node clusters).
const KARMADA_REGISTER_P99_MS: f64 = 6904.0;

/// User + system CPU time of a process so far, in clock ticks.
fn cpu_ticks(process: &Process) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", process.id())).unwrap_or_default();
    // The command name may contain spaces: fields are counted after its closing parenthesis.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat(5); the state (field 3) is index 0 here.
    field(11) + field(12)
}

fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// CPU used by each process over `interval`, as a fraction of one core.
async fn cpu_over(processes: &[&Process], interval: Duration) -> Vec<f64> {
    let before: Vec<u64> = processes.iter().map(|p| cpu_ticks(p)).collect();
    let started = Instant::now();
    tokio::time::sleep(interval).await;
    let seconds = started.elapsed().as_secs_f64();
    let hz = clock_ticks_per_second();
    processes
        .iter()
        .zip(before)
        .map(|(p, b)| cpu_ticks(p).saturating_sub(b) as f64 / hz / seconds)
        .collect()
}

/// When each cluster was first seen Ready.
type ReadyAt = Arc<Mutex<HashMap<String, Instant>>>;

fn watch_ready(client: &Client, ready_at: ReadyAt, stop: CancellationToken) {
    let api = cluster_api(client);
    tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                event = events.next() => event,
            };
            let Some(Ok(event)) = event else {
                continue;
            };
            if let watcher::Event::Apply(cluster) | watcher::Event::InitApply(cluster) = event
                && is_ready(&cluster)
                && let Some(name) = cluster.metadata.name.clone()
            {
                ready_at
                    .lock()
                    .await
                    .entry(name)
                    .or_insert_with(Instant::now);
            }
        }
    });
}

struct Measured {
    join: Samples,
    join_to_ready: Samples,
    idle_cpu: Vec<f64>,
    busy_cpu: Vec<f64>,
    idle_rss: Vec<f64>,
    busy_rss: Vec<f64>,
    member_sim_cpu: f64,
}

/// Joins every member one after another; returns how long each `karmadactl join` took and when it started.
async fn join_all(
    launcher: &Launcher,
    kubeconfig: &Path,
    names: &[String],
    member_kubeconfig: impl Fn(&str) -> PathBuf,
) -> anyhow::Result<(Samples, HashMap<String, Instant>)> {
    let karmadactl = launcher.karmadactl();
    let mut join = Samples::default();
    let mut join_started = HashMap::new();
    for name in names {
        let started = Instant::now();
        join_push(&karmadactl, name, kubeconfig, &member_kubeconfig(name)).await?;
        join.push(started.elapsed());
        join_started.insert(name.clone(), started);
    }
    Ok((join, join_started))
}

/// Waits until the watch has seen `count` clusters Ready.
async fn wait_ready_seen(ready_at: &ReadyAt, count: usize) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let ready = ready_at.lock().await.len();
        if ready >= count {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {ready}/{count} clusters turned Ready");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Per cluster, from the start of its join to the watch seeing it Ready.
async fn join_to_ready(ready_at: &ReadyAt, join_started: &HashMap<String, Instant>) -> Samples {
    let ready_at = ready_at.lock().await;
    let mut samples = Samples::default();
    for (name, started) in join_started {
        if let Some(at) = ready_at.get(name) {
            samples.push(at.saturating_duration_since(*started));
        }
    }
    samples
}

async fn measure(binary: &Path, args: &Args) -> anyhow::Result<Measured> {
    let logs = LogDir::temp()?;
    let launcher = Launcher::new(binary, logs.path(), "warn");
    let apiserver = start_apiserver(&launcher, logs.path().join("karmada"), START_TIMEOUT).await?;
    let member_sim = start_member_sim(
        &launcher,
        logs.path().join("members"),
        args.members,
        &[],
        START_TIMEOUT,
    )
    .await?;
    // Default cluster status settings: a 10 s period and Karmada's thresholds.
    let controller_manager = start_component(
        &launcher,
        "controller-manager",
        &apiserver.kubeconfig,
        "127.0.0.1:0",
        &[],
    )?;
    // Let it start and settle before the idle measurement.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let control_plane = [&controller_manager, &apiserver.process];
    let idle_cpu = cpu_over(&control_plane, Duration::from_secs(args.idle_interval)).await;
    let idle_rss: Vec<f64> = control_plane.iter().map(|p| p.rss_mib()).collect();

    let ready_at: ReadyAt = Arc::default();
    let stop = CancellationToken::new();
    // Stops the watch on every exit path, errors included.
    let _stop_on_exit = stop.clone().drop_guard();
    watch_ready(&apiserver.client, ready_at.clone(), stop.clone());
    let (join, join_started) = join_all(
        &launcher,
        &apiserver.kubeconfig,
        &member_sim.names,
        |name| member_sim.kubeconfig(name),
    )
    .await?;
    wait_ready_seen(&ready_at, member_sim.names.len()).await?;
    let join_to_ready = join_to_ready(&ready_at, &join_started).await;

    // Skip one status period so the first full round of every cluster is not counted twice.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let measured = [&controller_manager, &apiserver.process, &member_sim.process];
    let busy = cpu_over(&measured, Duration::from_secs(args.interval)).await;
    let busy_rss: Vec<f64> = control_plane.iter().map(|p| p.rss_mib()).collect();
    Ok(Measured {
        join,
        join_to_ready,
        idle_cpu,
        busy_cpu: busy[..2].to_vec(),
        idle_rss,
        busy_rss,
        member_sim_cpu: busy[2],
    })
}

fn rows(args: &Args, m: &Measured) -> Vec<Row> {
    let n = args.members;
    let percent = |f: f64| format!("{:.1} %", f * 100.0);
    let ready_p99 = m.join_to_ready.quantile(0.99).as_secs_f64() * 1000.0;
    vec![
        Row {
            name: format!("`karmadactl join`, {n} members one after another"),
            ops_per_sec: None,
            p50_ms: Some(ms(m.join.quantile(0.5))),
            p99_ms: Some(ms(m.join.quantile(0.99))),
            target: "Karmada cluster_register P99 6,904 ms".into(),
            note: format!(
                "P90 {} ms; Cluster, Secret and execution namespace created",
                ms(m.join.quantile(0.9))
            ),
        },
        Row {
            name: format!("join → Ready, {n} members"),
            ops_per_sec: None,
            p50_ms: Some(ms(m.join_to_ready.quantile(0.5))),
            p99_ms: Some(ms(m.join_to_ready.quantile(0.99))),
            target: "Karmada cluster_register P99 6,904 ms".into(),
            note: format!(
                "from the start of `join` to the watch seeing Ready=True; P99 is {:.2}× Karmada's (which includes \
                 status collection of 5,000-node clusters)",
                ready_p99 / KARMADA_REGISTER_P99_MS
            ),
        },
        Row {
            name: format!("status collection CPU, {n} Push clusters, 10 s period"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "–".into(),
            note: format!(
                "controller-manager {} of one core (idle, no cluster: {}); API server {} (idle {}); member-sims {} \
                 over {} s",
                percent(m.busy_cpu[0]),
                percent(m.idle_cpu[0]),
                percent(m.busy_cpu[1]),
                percent(m.idle_cpu[1]),
                percent(m.member_sim_cpu),
                args.interval
            ),
        },
        Row {
            name: format!("control-plane RSS, {n} Push clusters"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "–".into(),
            note: format!(
                "controller-manager {:.0} MiB (no cluster: {:.0}); API server {:.0} MiB (no cluster: {:.0}); {:.2} \
                 MiB per cluster in the controller-manager",
                m.busy_rss[0],
                m.idle_rss[0],
                m.busy_rss[1],
                m.idle_rss[1],
                (m.busy_rss[0] - m.idle_rss[0]) / f64::from(n.max(1))
            ),
        },
    ]
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    let measured = measure(&binary, &args).await?;
    let table = report::render(&rows(&args, &measured));
    println!("{table}");
    let body = format!(
        "Measured on {} on {} with `cargo build --release --bins -p karmada -p karmadactl -p bench && \
         ./target/release/karmada-bench clusters`.\n\
         Real processes: API server on the embedded store, controller-manager with the default cluster status \
         settings (10 s period), one member-sim process simulating {} clusters (3 nodes each) joined in Push mode \
         one after another with `karmadactl join`. CPU is utime + stime from /proc over the interval, as a share of \
         one core. Karmada's published cluster registration P99 is 6.9 s (v1.3 report, 5,000-node members).\n\n{table}",
        report::machine(),
        jiff::Zoned::now().date(),
        args.members,
    );
    report::write_section(&args.report, "Clusters", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
