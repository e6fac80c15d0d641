//! API server benchmark: create, update, get, list and watch fan-out over HTTPS at two scales,
//! the raw store's commit rate in the same run, and the server's memory holding the objects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client};

use crate::report::{self, Row};
use crate::stats::{Samples, ms};

#[derive(clap::Args)]
pub struct Args {
    /// Objects in the large phase.
    #[arg(long, default_value_t = 100_000)]
    pub large: usize,
    /// Objects in the small phase.
    #[arg(long, default_value_t = 1_000)]
    pub small: usize,
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Concurrent watchers for the fan-out measurement.
    #[arg(long, default_value_t = 100)]
    pub watchers: usize,
    /// Where to write the report.
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one).
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
}

const VALUE_SIZE: usize = 1024;
const NAMESPACES: usize = 10;

struct ServerProcess {
    child: Child,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServerProcess {
    fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0.0);
        kb / 1024.0
    }
}

async fn start_server(binary: &Path) -> anyhow::Result<ServerProcess> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let log = std::fs::File::create(dir.path().join("server.log"))?;
    let child = Command::new(binary)
        .args([
            "apiserver",
            "--secure-port",
            "0",
            "--exit-with-stdin",
            "--data-dir",
        ])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let server = ServerProcess {
        child,
        kubeconfig: data.join("karmada-apiserver.config"),
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if server.kubeconfig.exists()
            && let Ok(c) = client(&server.kubeconfig).await
            && c.apiserver_version().await.is_ok()
        {
            return Ok(server);
        }
        if Instant::now() > deadline {
            bail!("server did not start");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn client(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    Ok(Client::try_from(config)?)
}

fn configmap(name: &str, seq: usize) -> ConfigMap {
    let mut data = BTreeMap::new();
    let filler = "x".repeat(VALUE_SIZE - 16);
    data.insert("payload".to_string(), format!("{seq:015}-{filler}"));
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

fn ns_of(i: usize) -> String {
    format!("bench-{}", i % NAMESPACES)
}

/// Runs `total` operations spread over the clients; returns (ops/s, latencies).
async fn drive<F, Fut>(clients: &[Client], total: usize, op: F) -> anyhow::Result<(f64, Samples)>
where
    F: Fn(Client, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let start = Instant::now();
    let per = total.div_ceil(clients.len());
    let mut tasks = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        let op = op.clone();
        let client = client.clone();
        tasks.spawn(async move {
            let mut samples = Samples::default();
            for i in (c * per)..((c + 1) * per).min(total) {
                let t = Instant::now();
                op(client.clone(), i).await?;
                samples.push(t.elapsed());
            }
            anyhow::Ok(samples)
        });
    }
    let mut all = Samples::default();
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    Ok((total as f64 / start.elapsed().as_secs_f64(), all))
}

fn row(name: String, rate: Option<f64>, s: Option<&Samples>, target: &str, note: String) -> Row {
    Row {
        name,
        ops_per_sec: rate,
        p50_ms: s.map(|s| ms(s.quantile(0.5))),
        p99_ms: s.map(|s| ms(s.quantile(0.99))),
        target: target.into(),
        note,
    }
}

async fn raw_store(rows: &mut Vec<Row>, clients: usize, total: usize) -> anyhow::Result<f64> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn store::Store> = Arc::new(store::redb_backend::RedbStore::open(
        &dir.path().join("raw.redb"),
        Default::default(),
    )?);
    let result = store::bench::raw_create_rate(store, clients, total, VALUE_SIZE).await;
    rows.push(Row {
        name: format!("raw store create ({total} keys, {clients} writers)"),
        ops_per_sec: Some(result.ops_per_sec),
        p50_ms: Some(ms(result.p50)),
        p99_ms: Some(ms(result.p99)),
        target: "–".into(),
        note: "redb, durable commit, group commit".into(),
    });
    Ok(result.ops_per_sec)
}

async fn phase(
    rows: &mut Vec<Row>,
    clients: &[Client],
    n: usize,
    offset: usize,
    raw_rate: f64,
) -> anyhow::Result<()> {
    let label = if n >= 1000 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    };
    let (rate, s) = drive(clients, n, move |c, i| async move {
        let i = i + offset;
        Api::<ConfigMap>::namespaced(c, &ns_of(i))
            .create(&PostParams::default(), &configmap(&format!("cm-{i}"), i))
            .await?;
        Ok(())
    })
    .await?;
    rows.push(row(
        format!("create ConfigMap 1 KiB ({label} objects)"),
        Some(rate),
        Some(&s),
        "≥ 2,000/s, p99 ≤ 25 ms",
        format!("{:.0}% of raw store rate", 100.0 * rate / raw_rate),
    ));

    let (rate, s) = drive(clients, n, move |c, i| async move {
        let i = i + offset;
        let api = Api::<ConfigMap>::namespaced(c, &ns_of(i));
        let mut cm = configmap(&format!("cm-{i}"), i + 1);
        cm.metadata.resource_version = None;
        api.replace(&format!("cm-{i}"), &PostParams::default(), &cm)
            .await?;
        Ok(())
    })
    .await?;
    rows.push(row(
        format!("update ConfigMap ({label})"),
        Some(rate),
        Some(&s),
        "p99 ≤ 25 ms",
        String::new(),
    ));

    let (rate, s) = drive(clients, n, move |c, i| async move {
        let i = i + offset;
        Api::<ConfigMap>::namespaced(c, &ns_of(i))
            .get(&format!("cm-{i}"))
            .await?;
        Ok(())
    })
    .await?;
    rows.push(row(
        format!("get ConfigMap ({label})"),
        Some(rate),
        Some(&s),
        "–",
        String::new(),
    ));
    Ok(())
}

async fn list_phase(rows: &mut Vec<Row>, client: &Client, per_ns: usize) -> anyhow::Result<()> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns_of(0));
    let mut s = Samples::default();
    for _ in 0..10 {
        let t = Instant::now();
        let list = api.list(&ListParams::default()).await?;
        s.push(t.elapsed());
        if list.items.len() < per_ns {
            bail!(
                "list returned {} items, expected {per_ns}",
                list.items.len()
            );
        }
    }
    rows.push(row(
        format!("LIST {per_ns} ConfigMaps (one namespace)"),
        None,
        Some(&s),
        "≤ 300 ms",
        "10 lists".into(),
    ));
    Ok(())
}

async fn watch_phase(
    rows: &mut Vec<Row>,
    clients: &[Client],
    watchers: usize,
    events: usize,
) -> anyhow::Result<()> {
    let ns = "bench-watch";
    let writer = Api::<ConfigMap>::namespaced(clients[0].clone(), ns);
    let mut tasks = tokio::task::JoinSet::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(watchers);
    let rv = writer
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    for w in 0..watchers {
        let api = Api::<ConfigMap>::namespaced(clients[w % clients.len()].clone(), ns);
        let ready = ready_tx.clone();
        let rv = rv.clone();
        tasks.spawn(async move {
            let mut stream = api
                .watch(&WatchParams::default().timeout(120), &rv)
                .await?
                .boxed();
            ready.send(()).await.ok();
            // Receipt times by name; compared with the writer's acknowledgements afterwards,
            // since an event may well arrive before the writer has seen its own response.
            let mut received = Vec::with_capacity(events);
            while let Some(ev) = stream.try_next().await? {
                if let WatchEvent::Added(cm) = ev {
                    received.push((cm.metadata.name.unwrap_or_default(), Instant::now()));
                    if received.len() == events {
                        break;
                    }
                }
            }
            anyhow::Ok(received)
        });
    }
    drop(ready_tx);
    for _ in 0..watchers {
        ready_rx.recv().await.context("watcher failed to start")?;
    }
    let start = Instant::now();
    let mut acked = std::collections::HashMap::new();
    for i in 0..events {
        let name = format!("w-{i}");
        writer
            .create(&PostParams::default(), &configmap(&name, i))
            .await?;
        acked.insert(name, Instant::now());
    }
    let mut all = Samples::default();
    let mut delivered = 0;
    while let Some(r) = tasks.join_next().await {
        for (name, at) in r?? {
            delivered += 1;
            if let Some(ack) = acked.get(&name) {
                all.push(at.saturating_duration_since(*ack));
            }
        }
    }
    rows.push(row(
        format!("watch fan-out: {events} writes × {watchers} watchers"),
        Some(delivered as f64 / start.elapsed().as_secs_f64()),
        Some(&all),
        "event ≤ 10 ms p99 after the write",
        format!(
            "{delivered} of {} deliveries; latency from the writer's ack to each watcher's receipt (0 when the event came first)",
            events * watchers
        ),
    ));
    Ok(())
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = match &args.karmada_binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("exe dir")?
            .join("karmada"),
    };
    let mut rows = Vec::new();
    let raw_rate = raw_store(&mut rows, args.clients, 20_000).await?;

    let server = start_server(&binary).await?;
    let mut clients = Vec::new();
    for _ in 0..args.clients {
        clients.push(client(&server.kubeconfig).await?);
    }
    let ns_api = Api::<Namespace>::all(clients[0].clone());
    for i in 0..NAMESPACES {
        ns_api
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        name: Some(ns_of(i)),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await?;
    }
    ns_api
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some("bench-watch".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await?;
    let rss_empty = server.rss_mib();

    phase(&mut rows, &clients, args.small, 0, raw_rate).await?;
    list_phase(&mut rows, &clients[0], args.small / NAMESPACES).await?;
    watch_phase(&mut rows, &clients, args.watchers, 200).await?;
    phase(
        &mut rows,
        &clients,
        args.large - args.small,
        args.small,
        raw_rate,
    )
    .await?;
    let rss_full = server.rss_mib();
    list_phase(&mut rows, &clients[0], args.large / NAMESPACES).await?;
    let rss_after_lists = server.rss_mib();
    rows.push(Row {
        name: format!("server RSS holding {} ConfigMaps of 1 KiB", args.large),
        ops_per_sec: None,
        p50_ms: None,
        p99_ms: None,
        target: "≤ 300 MB".into(),
        note: format!(
            "{rss_full:.0} MiB after creating, updating and reading them; {rss_after_lists:.0} MiB after ten LISTs of {} (empty server: {rss_empty:.0} MiB)",
            args.large / NAMESPACES
        ),
    });

    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `cargo build --release --bins && ./target/release/karmada-bench apiserver`\n\n\
         Machine: {}. Date: {}. Server: `karmada apiserver` (release) on the embedded redb store, HTTPS with the admin \
         client certificate, {} concurrent clients (kube-rs, one connection each). Karmada's own SLO for these calls is \
         p99 ≤ 1 s (reference/karmada.md §8).\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
        args.clients,
    );
    report::write_section(&args.report, "API server and store", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
