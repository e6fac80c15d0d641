//! API server benchmark: create, update, get, list and watch fan-out over HTTPS at two scales,
//! the raw store's commit rate in the same run, and the server's memory holding the objects.
//!
//! It runs once per backend (`--backends embedded,etcd`): on the embedded redb store, and on a
//! single local etcd member (Debian's `etcd`, started by the benchmark on free ports) with the
//! raw etcd write rate measured through the same store trait. With both, the report puts them
//! side by side, row for row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client};

use store_etcd::launch::{MemberCommand, free_loopback_ports};

use crate::process::{Process, client};
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
    /// Store backends to measure, in order; with both, the report shows them side by side.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "embedded,etcd"
    )]
    pub backends: Vec<Backend>,
}

/// The API server's store in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The embedded redb store.
    Embedded,
    /// One local etcd member (`--etcd-servers`).
    Etcd,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Embedded => "embedded",
            Backend::Etcd => "etcd",
        }
    }
}

const VALUE_SIZE: usize = 1024;
const NAMESPACES: usize = 10;

struct ServerProcess {
    process: Process,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl ServerProcess {
    fn rss_mib(&self) -> f64 {
        self.process.rss_mib()
    }
}

/// A throwaway single-member etcd on free loopback ports; killed on drop.
struct EtcdProcess {
    process: Process,
    url: String,
    _dir: tempfile::TempDir,
}

impl EtcdProcess {
    async fn start() -> anyhow::Result<EtcdProcess> {
        let dir = tempfile::tempdir()?;
        let ports = free_loopback_ports(2)?;
        let url = format!("http://127.0.0.1:{}", ports[0]);
        let peer = format!("http://127.0.0.1:{}", ports[1]);
        let process = Process::spawn(
            &mut MemberCommand::new("bench", dir.path().join("data"), &url, &peer).command("etcd"),
            &dir.path().join("etcd.log"),
        )
        .context("starting etcd (install Debian's etcd-server, e.g. scripts/setup.sh)")?;
        let etcd = EtcdProcess {
            process,
            url,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = match store_etcd::EtcdStore::connect(etcd.options("")).await {
                Ok(s) => store::Store::current_revision(&s).await.is_ok(),
                Err(_) => false,
            };
            if ready {
                return Ok(etcd);
            }
            if Instant::now() > deadline {
                bail!("etcd did not start");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn options(&self, prefix: &str) -> store_etcd::EtcdOptions {
        store_etcd::EtcdOptions {
            endpoints: vec![self.url.clone()],
            prefix: prefix.to_string(),
            ..store_etcd::EtcdOptions::default()
        }
    }

    fn rss_mib(&self) -> f64 {
        self.process.rss_mib()
    }
}

async fn start_server(binary: &Path, extra: &[String]) -> anyhow::Result<ServerProcess> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let process = Process::spawn(
        Command::new(binary)
            .args([
                "apiserver",
                "--secure-port",
                "0",
                "--exit-with-stdin",
                "--data-dir",
            ])
            .arg(&data)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped()),
        &dir.path().join("server.log"),
    )
    .with_context(|| format!("starting {}", binary.display()))?;
    let server = ServerProcess {
        process,
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

/// The raw etcd write rate through the store trait (one transaction per create), in its own
/// prefix of the etcd the API server then uses.
async fn raw_etcd(
    rows: &mut Vec<Row>,
    etcd: &EtcdProcess,
    clients: usize,
    total: usize,
) -> anyhow::Result<f64> {
    let store: Arc<dyn store::Store> =
        Arc::new(store_etcd::EtcdStore::connect(etcd.options("/raw-bench/")).await?);
    let result = store::bench::raw_create_rate(store, clients, total, VALUE_SIZE).await;
    rows.push(Row {
        name: format!("raw store create ({total} keys, {clients} writers)"),
        ops_per_sec: Some(result.ops_per_sec),
        p50_ms: Some(ms(result.p50)),
        p99_ms: Some(ms(result.p99)),
        target: "–".into(),
        note: "etcd 1 member, a txn per create (etcd batches commits)".into(),
    });
    Ok(result.ops_per_sec)
}

async fn raw_store(rows: &mut Vec<Row>, clients: usize, total: usize) -> anyhow::Result<f64> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn store::Store> = Arc::new(store::redb_backend::RedbStore::open(
        dir.path().join("raw.redb"),
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
    if args.backends.is_empty() {
        bail!("--backends: name at least one of embedded, etcd");
    }
    let mut results = Vec::new();
    for backend in &args.backends {
        println!("measuring the {} backend", backend.name());
        let rows = run_backend(&args, &binary, *backend).await?;
        println!("{}", report::render(&rows));
        results.push((*backend, rows));
    }
    let table = match results.as_slice() {
        [(first, a), (second, b)] => side_by_side((*first, a), (*second, b)),
        _ => results
            .iter()
            .map(|(backend, rows)| format!("{}:\n\n{}", backend.name(), report::render(rows)))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    println!("{table}");
    let backends = args
        .backends
        .iter()
        .map(|b| b.name())
        .collect::<Vec<_>>()
        .join(",");
    let body = format!(
        "Command: `cargo build --release --bins && ./target/release/karmada-bench apiserver --backends {backends}`\n\n\
         Machine: {}. Date: {}. Server: `karmada apiserver` (release), HTTPS with the admin client certificate, {} \
         concurrent clients (kube-rs, one connection each), on the embedded redb store and on etcd (one local member \
         of Debian's etcd {}, `--etcd-servers`); the raw rows are each store's own create rate through the store trait, \
         measured in the same run. The machine is shared with other work, so absolute figures vary between runs. \
         Karmada's own SLO for these calls is p99 ≤ 1 s \
         (docs/karmada.md, \"Published scalability figures\").\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
        args.clients,
        etcd_version(),
    );
    report::write_section(&args.report, "API server and store", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}

fn etcd_version() -> String {
    Command::new("etcd")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find_map(|l| l.strip_prefix("etcd Version: ").map(str::to_string))
        })
        .unwrap_or_else(|| "(version unknown)".into())
}

/// Every measurement of one backend.
async fn run_backend(args: &Args, binary: &Path, backend: Backend) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let etcd = match backend {
        Backend::Embedded => None,
        Backend::Etcd => Some(EtcdProcess::start().await?),
    };
    let (raw_rate, extra) = match &etcd {
        None => (
            raw_store(&mut rows, args.clients, 20_000).await?,
            Vec::new(),
        ),
        Some(etcd) => (
            raw_etcd(&mut rows, etcd, args.clients, 20_000).await?,
            vec![format!("--etcd-servers={}", etcd.url)],
        ),
    };

    let server = start_server(binary, &extra).await?;
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
    let etcd_note = etcd
        .as_ref()
        .map(|e| format!("; etcd itself: {:.0} MiB", e.rss_mib()))
        .unwrap_or_default();
    rows.push(Row {
        name: format!("server RSS holding {} ConfigMaps of 1 KiB", args.large),
        ops_per_sec: None,
        p50_ms: None,
        p99_ms: None,
        target: "≤ 300 MB".into(),
        note: format!(
            "{rss_full:.0} MiB after creating, updating and reading them; {rss_after_lists:.0} MiB after ten LISTs of {} (empty server: {rss_empty:.0} MiB){etcd_note}",
            args.large / NAMESPACES
        ),
    });
    drop(server);
    Ok(rows)
}

/// One table, one row per measurement, the two backends' figures next to each other. Both runs
/// produce the same measurements in the same order.
fn side_by_side(a: (Backend, &[Row]), b: (Backend, &[Row])) -> String {
    let (an, bn) = (a.0.name(), b.0.name());
    let mut out = format!(
        "| measurement | {an} ops/s | {an} p50 ms | {an} p99 ms | {bn} ops/s | {bn} p50 ms | {bn} p99 ms | target | note |\n\
         |---|---:|---:|---:|---:|---:|---:|---|---|\n"
    );
    let rate = |r: &Row| {
        r.ops_per_sec
            .map(|v| format!("{v:.0}"))
            .unwrap_or_else(|| "–".into())
    };
    let cell = |v: &Option<String>| v.clone().unwrap_or_else(|| "–".into());
    for (x, y) in a.1.iter().zip(b.1.iter()) {
        let note = match (x.note.is_empty(), y.note.is_empty()) {
            (true, true) => String::new(),
            _ if x.note == y.note => x.note.clone(),
            (false, true) => format!("{an}: {}", x.note),
            (true, false) => format!("{bn}: {}", y.note),
            (false, false) => format!("{an}: {}; {bn}: {}", x.note, y.note),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            x.name,
            rate(x),
            cell(&x.p50_ms),
            cell(&x.p99_ms),
            rate(y),
            cell(&y.p50_ms),
            cell(&y.p99_ms),
            x.target,
            note
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, rate: Option<f64>, note: &str) -> Row {
        Row {
            name: name.into(),
            ops_per_sec: rate,
            p50_ms: rate.map(|_| "1.0".into()),
            p99_ms: None,
            target: "t".into(),
            note: note.into(),
        }
    }

    #[test]
    fn backends_share_one_row_per_measurement() {
        let a = [row("create", Some(2000.0), "a note"), row("rss", None, "")];
        let b = [row("create", Some(900.4), ""), row("rss", None, "b note")];
        let table = side_by_side((Backend::Embedded, &a), (Backend::Etcd, &b));
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("embedded ops/s") && lines[0].contains("etcd ops/s"));
        assert_eq!(
            lines[2],
            "| create | 2000 | 1.0 | – | 900 | 1.0 | – | t | embedded: a note |"
        );
        assert_eq!(
            lines[3],
            "| rss | – | – | – | – | – | – | t | etcd: b note |"
        );
    }
}
