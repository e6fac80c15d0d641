//! member-sim benchmark: memory of one idle simulated cluster, memory per 1,000 simulated nodes
//! in scale mode, the time for 100 clusters to start in one process, and the CPU a scale-mode
//! cluster spends per Deployment while Deployments arrive at a steady rate.
//!
//! Every measurement runs its own `karmada member-sim` process and reads its RSS from
//! `/proc/PID/status` once the clusters serve and a settling period has passed (so the first
//! lease renewals and status writes are included).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::process::{Process, client, cpu_seconds};
use crate::report::{self, Row};

#[derive(clap::Args)]
pub struct Args {
    /// Clusters started together in one process.
    #[arg(long, default_value_t = 100)]
    pub count: u32,
    /// Node counts measured in scale mode (memory per 1,000 nodes is fitted across them).
    #[arg(long, value_delimiter = ',', default_value = "1000,5000")]
    pub scale_nodes: Vec<u32>,
    /// How long each process runs after it is ready before its memory is read.
    #[arg(long, default_value_t = 3)]
    pub settle_seconds: u64,
    /// Where to write the report.
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one).
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
    /// Deployment counts for the scale-mode CPU measurement (empty: skip it).
    #[arg(long, value_delimiter = ',', default_value = "300,1000")]
    pub scale_deployments: Vec<u32>,
    /// Deployments created per second in that measurement.
    #[arg(long, default_value_t = 50.0)]
    pub create_rate: f64,
}

const START_TIMEOUT: Duration = Duration::from_secs(600);

struct SimProcess {
    process: Process,
    dir: tempfile::TempDir,
}

impl SimProcess {
    fn spawn(binary: &Path, args: &[String]) -> anyhow::Result<SimProcess> {
        let dir = tempfile::tempdir()?;
        let process = Process::spawn(
            Command::new(binary)
                .args(["member-sim", "--exit-with-stdin", "--data-dir"])
                .arg(dir.path().join("data"))
                .args(args)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::piped()),
            &dir.path().join("member-sim.log"),
        )
        .with_context(|| format!("starting {}", binary.display()))?;
        Ok(SimProcess { process, dir })
    }

    fn kubeconfig(&self, name: &str) -> PathBuf {
        self.dir.path().join("data").join(format!("{name}.config"))
    }

    fn rss_mib(&self) -> f64 {
        self.process.rss_mib()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("member-sim.log")).unwrap_or_default()
    }

    /// Waits until every named cluster has written its kubeconfig and the first one answers
    /// `/version`; returns the time since `started`.
    async fn wait_ready(&mut self, names: &[String], started: Instant) -> anyhow::Result<Duration> {
        let deadline = started + START_TIMEOUT;
        loop {
            if let Some(status) = self.process.try_wait()? {
                bail!("member-sim exited ({status}); log:\n{}", self.log());
            }
            if names.iter().all(|name| self.kubeconfig(name).exists()) {
                let elapsed = started.elapsed();
                let client = client(&self.kubeconfig(&names[0])).await?;
                client.apiserver_version().await?;
                return Ok(elapsed);
            }
            if Instant::now() > deadline {
                bail!("member-sim did not start; log:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Starts one process, waits until it serves and settles; returns (start time, RSS MiB).
async fn measure(
    binary: &Path,
    args: &[String],
    names: &[String],
    settle: Duration,
) -> anyhow::Result<(Duration, f64)> {
    let started = Instant::now();
    let mut process = SimProcess::spawn(binary, args)?;
    let ready = process.wait_ready(names, started).await?;
    tokio::time::sleep(settle).await;
    Ok((ready, process.rss_mib()))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn row(name: String, target: &str, note: String) -> Row {
    Row {
        name,
        ops_per_sec: None,
        p50_ms: None,
        p99_ms: None,
        target: target.into(),
        note,
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = match &args.karmada_binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("exe dir")?
            .join("karmada"),
    };
    let settle = Duration::from_secs(args.settle_seconds);
    let mut rows = Vec::new();

    let one = strings(&["idle"]);
    let (start_one, rss_idle) =
        measure(&binary, &strings(&["--name", "idle"]), &one, settle).await?;
    rows.push(row(
        "RSS of one idle member-sim (3 nodes, own API server)".into(),
        "–",
        format!("{rss_idle:.1} MiB; ready in {} ms", start_one.as_millis()),
    ));

    let scale = strings(&["scale"]);
    let scale_args = |nodes: u32| {
        strings(&[
            "--name",
            "scale",
            "--scale-mode",
            "--nodes",
            &nodes.to_string(),
        ])
    };
    let (_, rss_base) = measure(&binary, &scale_args(3), &scale, settle).await?;
    let mut per_thousand = Vec::new();
    for &nodes in &args.scale_nodes {
        let (ready, rss) = measure(&binary, &scale_args(nodes), &scale, settle).await?;
        let per_1000 = (rss - rss_base) / (f64::from(nodes.saturating_sub(3)).max(1.0) / 1000.0);
        per_thousand.push(per_1000);
        rows.push(row(
            format!("scale mode, {nodes} nodes"),
            "–",
            format!(
                "{rss:.1} MiB ({per_1000:.1} MiB per 1,000 nodes over the 3-node {rss_base:.1} MiB); ready in {} ms",
                ready.as_millis()
            ),
        ));
    }

    let names: Vec<String> = (1..=args.count).map(|i| format!("member{i}")).collect();
    let count = args.count.to_string();
    let (start_all, rss_all) = measure(
        &binary,
        &strings(&["--count", &count, "--name-prefix", "member"]),
        &names,
        settle,
    )
    .await?;
    rows.push(row(
        format!("{} clusters in one process (3 nodes each)", args.count),
        "seconds",
        format!(
            "all kubeconfigs written {:.2} s after launch; RSS {rss_all:.0} MiB ({:.1} MiB per cluster)",
            start_all.as_secs_f64(),
            rss_all / f64::from(args.count.max(1)),
        ),
    ));

    for &count in &args.scale_deployments {
        let (cpu, elapsed) = scale_cpu(&binary, count, args.create_rate).await?;
        rows.push(row(
            format!(
                "scale mode, CPU per Deployment ({count} Deployments at {}/s)",
                args.create_rate
            ),
            "–",
            format!(
                "{:.2} ms (member-sim process user+system {cpu:.2} s; all available after {:.1} s)",
                cpu * 1000.0 / f64::from(count.max(1)),
                elapsed.as_secs_f64()
            ),
        ));
    }

    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `cargo build --release --bins && ./target/release/karmada-bench member-sim`\n\n\
         Machine: {}. Date: {}. Each measurement is its own `karmada member-sim` process (in-memory store, HTTPS), \
         read {} s after its clusters serve. Scale mode computes workload status from capacity without Pod objects; \
         its Nodes and heartbeat Leases are real objects in the cluster's API server.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
        args.settle_seconds,
    );
    report::write_section(&args.report, "member-sim", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}

fn scale_deployment(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]},
            },
        },
    })
}

/// One scale-mode cluster; `count` one-replica Deployments created at `rate` per second, as
/// Karmada's execution controller propagates them. Returns the member-sim process's CPU seconds
/// from the first create until every Deployment reports an available replica, and that time.
async fn scale_cpu(binary: &Path, count: u32, rate: f64) -> anyhow::Result<(f64, Duration)> {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Api, ListParams, PostParams};

    let names = strings(&["scale"]);
    // Room for every replica: 110 pods a node would stop at 330.
    let args = strings(&["--name", "scale", "--scale-mode", "--node-pods", "1000"]);
    let started = Instant::now();
    let mut process = SimProcess::spawn(binary, &args)?;
    process.wait_ready(&names, started).await?;
    let deployments: Api<Deployment> =
        Api::namespaced(client(&process.kubeconfig("scale")).await?, "default");
    let pid = process.process.id();
    let cpu_before = cpu_seconds(pid)?;
    let started = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / rate.max(0.001));
    for i in 0..count {
        tokio::time::sleep_until((started + interval * i).into()).await;
        let deployment: Deployment = serde_json::from_value(scale_deployment(&format!("d{i}")))?;
        deployments
            .create(&PostParams::default(), &deployment)
            .await?;
    }
    let deadline = started + START_TIMEOUT;
    loop {
        let listed = deployments.list(&ListParams::default()).await?;
        let available = listed
            .items
            .iter()
            .filter(|d| d.status.as_ref().and_then(|s| s.available_replicas) == Some(1))
            .count();
        if available == count as usize {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "{available} of {count} Deployments available; log:\n{}",
                process.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok((cpu_seconds(pid)? - cpu_before, started.elapsed()))
}
