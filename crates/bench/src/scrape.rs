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
use kube::Client;

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

/// What one scrape of a path costs.
struct Cost {
    bytes: usize,
    cpu_ms: f64,
    wall_ms: f64,
    series: usize,
}

/// What was measured.
struct Measured {
    metrics: Cost,
    placements: Cost,
    series: Vec<(&'static str, usize)>,
    /// The machine's 1-minute load average while the scrapes ran (other builds share it).
    load: String,
}

/// The controller-manager's CPU and the bytes per scrape of `path`: `scrapes` back to back, less its CPU over an
/// idle stretch of 5 s.
async fn scrape_cost(
    process: &Process,
    address: &str,
    path: &str,
    scrapes: u32,
) -> anyhow::Result<Cost> {
    let idle_cpu = process.cpu_seconds();
    let idle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle_rate = (process.cpu_seconds() - idle_cpu) / idle_started.elapsed().as_secs_f64();
    let cpu_before = process.cpu_seconds();
    let started = Instant::now();
    let mut bytes = 0;
    let mut last = String::new();
    for _ in 0..scrapes {
        last = http_get(address, path).await?;
        bytes += last.len();
    }
    let wall = started.elapsed();
    let cpu = process.cpu_seconds() - cpu_before - idle_rate * wall.as_secs_f64();
    let count = f64::from(scrapes);
    Ok(Cost {
        bytes: bytes / usize::try_from(scrapes.max(1))?,
        cpu_ms: cpu.max(0.0) / count * 1000.0,
        wall_ms: wall.as_secs_f64() * 1000.0 / count,
        series: series(&last),
    })
}

async fn create_workloads(karmada: &Client, workloads: u32) -> anyhow::Result<()> {
    let kind = crate::workload_kind::WorkloadKind::Deployment;
    crate::propagation::create_namespace_and_policy(karmada, kind).await?;
    let names: Vec<String> = (0..workloads).map(|i| format!("scrape-{i:05}")).collect();
    crate::propagation::create_burst(&kind.api(karmada, "bench"), kind, &names).await
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
            &http_get(&cm, "/metrics/placements").await?,
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

    let metrics = scrape_cost(&controller_manager, &cm, "/metrics", args.scrapes).await?;
    let placements = scrape_cost(
        &controller_manager,
        &cm,
        "/metrics/placements",
        args.scrapes,
    )
    .await?;
    let member = crate::process::client(&sim.kubeconfig(&sim.names[0])).await?;
    let measured = Measured {
        series: vec![
            ("karmada-controller-manager /metrics", metrics.series),
            (
                "karmada-controller-manager /metrics/placements",
                placements.series,
            ),
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
        metrics,
        placements,
        load: report::load_average(),
    };
    drop(controller_manager);
    Ok(measured)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    let measured = measure(&binary, &args).await?;
    let mut rows = Vec::new();
    for (path, cost, target_cpu, target_bytes) in [
        ("/metrics", &measured.metrics, "≤ 5 ms", "≤ 500 KiB"),
        ("/metrics/placements", &measured.placements, "–", "–"),
    ] {
        rows.push(Row {
            name: format!("controller-manager {path}: CPU per scrape"),
            ops_per_sec: None,
            p50_ms: Some(format!("{:.2}", cost.cpu_ms)),
            p99_ms: None,
            target: target_cpu.into(),
            note: format!(
                "mean of {} back-to-back scrapes, idle CPU subtracted; {:.1} ms wall per scrape",
                args.scrapes, cost.wall_ms
            ),
        });
        rows.push(Row {
            name: format!("controller-manager {path}: bytes per scrape"),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: target_bytes.into(),
            note: format!(
                "{:.0} KiB uncompressed, {} series",
                cost.bytes as f64 / 1024.0,
                cost.series
            ),
        });
    }
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
         text). The p50 column holds the mean CPU ms per scrape. The per-workload placement series \
         (`karmada_binding_cluster_replicas`, one per workload and member) are served apart on \
         `/metrics/placements`, which `local-up --monitoring` scrapes four times less often. The machine's load \
         average was {} when the scrapes ended (other developers' builds share it).\n\n{table}",
        report::machine(),
        jiff::Zoned::now().date(),
        args.members,
        args.workloads,
        args.scrapes,
        measured.load,
    );
    report::write_section(&args.report, "Metrics scrape cost", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
