//! Scrape cost: what one Prometheus scrape of the controller-manager's `/metrics` costs it (bytes and CPU) with
//! 1,000 workloads on 10 members, and how many series each component exposes.
//!
//! Real processes: the API server (embedded store), the controller-manager and the scheduler, one member-sim
//! process in scale mode simulating the members, joined in Push mode. One PropagationPolicy duplicates every
//! Deployment to every member, so each binding has a placement series per member. Once every binding's placement
//! shows in the controller-manager's metrics and it has settled, its CPU is read over an idle stretch and over a
//! stretch of back-to-back scrapes; the difference per scrape is the scrape's cost.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::Api;

use crate::process::{
    Launcher, LogDir, Process, bench_log_level, join_push, karmada_binary, start_apiserver,
    start_component, start_member_sim, wait_clusters_ready, wait_for_file,
};
use crate::report::{self, Row};

#[derive(clap::Args)]
pub struct Args {
    /// Member clusters.
    #[arg(long, default_value_t = 10)]
    pub members: u32,
    /// Deployments, each duplicated to every member.
    #[arg(long, default_value_t = 1000)]
    pub workloads: u32,
    /// Scrapes measured back to back.
    #[arg(long, default_value_t = 50)]
    pub scrapes: u32,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one); `karmadactl` is looked up beside it.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
}

const TIMEOUT: Duration = Duration::from_secs(600);
/// The controller-manager counts as settled once it uses less CPU than this over a second.
const SETTLED_CPU: f64 = 0.05;

/// A plain HTTP/1.0 GET of `path` from `address`: the body.
async fn http_get(address: &str, path: &str) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes())
        .await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let text = String::from_utf8(response)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no HTTP header")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        bail!("GET {path}: {head}");
    }
    Ok(body.to_string())
}

/// Sample lines (one per series) of an exposition.
fn series(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count()
}

fn series_of(text: &str, name: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .count()
}

async fn api_metrics(client: &Client) -> anyhow::Result<String> {
    crate::api_requests::metrics_text(client).await
}

/// What was measured.
struct Measured {
    bytes: usize,
    cpu_ms: f64,
    wall_ms: f64,
    series: Vec<(&'static str, usize)>,
    placement_series: usize,
}

async fn create_workloads(karmada: &Client, workloads: u32) -> anyhow::Result<()> {
    crate::propagation::create_namespace_and_policy(karmada).await?;
    let names: Vec<String> = (0..workloads).map(|i| format!("scrape-{i:05}")).collect();
    let deployments: Api<Deployment> = Api::namespaced(karmada.clone(), "bench");
    crate::propagation::create_burst(&deployments, &names).await
}

async fn measure(binary: &std::path::Path, args: &Args) -> anyhow::Result<Measured> {
    let logs = LogDir::from_env()?;
    let launcher = Launcher::new(binary, logs.path(), &bench_log_level());
    let dir = tempfile::tempdir()?;
    let apiserver = start_apiserver(&launcher, dir.path().join("karmada"), TIMEOUT).await?;
    let sim = start_member_sim(
        &launcher,
        dir.path().join("members"),
        args.members,
        &[],
        TIMEOUT,
    )
    .await?;
    let address_file = |name: &str| dir.path().join(format!("{name}.metrics"));
    let cm_file = address_file("controller-manager");
    let scheduler_file = address_file("scheduler");
    let controller_manager: Process = start_component(
        &launcher,
        "controller-manager",
        &apiserver.kubeconfig,
        "127.0.0.1:0",
        &["--metrics-address-file", &cm_file.to_string_lossy()],
    )?;
    let _scheduler = start_component(
        &launcher,
        "scheduler",
        &apiserver.kubeconfig,
        "127.0.0.1:0",
        &["--metrics-address-file", &scheduler_file.to_string_lossy()],
    )?;
    let karmadactl = launcher.karmadactl();
    for name in &sim.names {
        join_push(
            &karmadactl,
            name,
            &apiserver.kubeconfig,
            &sim.kubeconfig(name),
        )
        .await?;
    }
    wait_clusters_ready(&apiserver.client, sim.names.len(), TIMEOUT).await?;
    wait_for_file(&cm_file, "controller-manager metrics address", TIMEOUT).await?;
    wait_for_file(&scheduler_file, "scheduler metrics address", TIMEOUT).await?;
    let read = |path: &PathBuf| -> anyhow::Result<String> {
        Ok(std::fs::read_to_string(path)?.trim().to_string())
    };
    let cm = read(&cm_file)?;
    let scheduler = read(&scheduler_file)?;

    eprintln!("creating {} workloads", args.workloads);
    create_workloads(&apiserver.client, args.workloads).await?;
    let expected = usize::try_from(args.workloads * args.members)?;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let placed = series_of(
            &http_get(&cm, "/metrics").await?,
            "karmada_binding_cluster_replicas",
        );
        if placed >= expected {
            break;
        }
        if Instant::now() > deadline {
            bail!("{placed} of {expected} placements in the controller-manager's metrics");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    eprintln!("every placement recorded; waiting for the controller-manager to settle");
    loop {
        let before = controller_manager.cpu_seconds();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rate = (controller_manager.cpu_seconds() - before) / 2.0;
        if rate < SETTLED_CPU {
            break;
        }
        if Instant::now() > deadline {
            bail!("the controller-manager did not settle ({rate:.2} cores)");
        }
    }

    // Idle, then scraped back to back for about as long.
    let idle_cpu = controller_manager.cpu_seconds();
    let idle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle_rate =
        (controller_manager.cpu_seconds() - idle_cpu) / idle_started.elapsed().as_secs_f64();
    let cpu_before = controller_manager.cpu_seconds();
    let started = Instant::now();
    let mut bytes = 0;
    for _ in 0..args.scrapes {
        bytes += http_get(&cm, "/metrics").await?.len();
    }
    let wall = started.elapsed();
    let cpu = controller_manager.cpu_seconds() - cpu_before - idle_rate * wall.as_secs_f64();
    let scrapes = f64::from(args.scrapes);

    let cm_text = http_get(&cm, "/metrics").await?;
    let member = crate::process::client(&sim.kubeconfig(&sim.names[0])).await?;
    let measured = Measured {
        bytes: bytes / usize::try_from(args.scrapes)?,
        cpu_ms: (cpu.max(0.0) / scrapes) * 1000.0,
        wall_ms: wall.as_secs_f64() * 1000.0 / scrapes,
        placement_series: series_of(&cm_text, "karmada_binding_cluster_replicas"),
        series: vec![
            ("karmada-controller-manager", series(&cm_text)),
            (
                "karmada-scheduler",
                series(&http_get(&scheduler, "/metrics").await?),
            ),
            (
                "karmada-apiserver",
                series(&api_metrics(&apiserver.client).await?),
            ),
            (
                "member-sim (one member)",
                series(&api_metrics(&member).await?),
            ),
        ],
    };
    drop(controller_manager);
    Ok(measured)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    let measured = measure(&binary, &args).await?;
    let mut rows = vec![
        Row {
            name: "controller-manager scrape: CPU".into(),
            ops_per_sec: None,
            p50_ms: Some(format!("{:.2}", measured.cpu_ms)),
            p99_ms: None,
            target: "≤ 5 ms".into(),
            note: format!(
                "mean of {} back-to-back scrapes, idle CPU subtracted; wall time {:.1} ms per scrape",
                args.scrapes, measured.wall_ms
            ),
        },
        Row {
            name: "controller-manager scrape: bytes".into(),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "≤ 500 KiB".into(),
            note: format!(
                "{:.0} KiB uncompressed, {} of the series are karmada_binding_cluster_replicas",
                measured.bytes as f64 / 1024.0,
                measured.placement_series
            ),
        },
    ];
    for (component, count) in &measured.series {
        rows.push(Row {
            name: format!("series: {component}"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: "–".into(),
            note: format!("{count}"),
        });
    }
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Measured on {} on {} with `cargo build --release --bins -p karmada -p karmadactl -p bench && \
         ./target/release/karmada-bench scrape`.\n\
         Real processes: API server (embedded store), controller-manager, scheduler, one member-sim process (scale \
         mode) simulating {} members joined in Push mode; {} Deployments each duplicated to every member. CPU is the \
         controller-manager's utime + stime from /proc over {} back-to-back scrapes of its `/metrics`, less its CPU \
         over an idle stretch; bytes are the uncompressed exposition (Prometheus asks for gzip; we serve plain \
         text). The p50 column holds the mean CPU ms per scrape.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().date(),
        args.members,
        args.workloads,
        args.scrapes,
    );
    report::write_section(&args.report, "Metrics scrape cost", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
