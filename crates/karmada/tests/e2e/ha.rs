//! The highly available control plane: a 3-member etcd cluster with two `karmada apiserver`
//! replicas (and `karmada lb` in front), faults injected with SIGKILL, and `karmadactl backup` /
//! `restore` under write load on both backends. Needs Debian's `etcd` (scripts/setup.sh installs
//! it); without it the tests fail saying so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client};
use store_etcd::launch::{MemberCommand, initial_cluster};
use test_fixtures::free_ports;

use crate::harness::{Run, bin, karmadactl};

const READY: Duration = Duration::from_secs(60);

/// A local etcd cluster; every member is killed on drop.
struct EtcdCluster {
    members: Vec<Option<Child>>,
    urls: Vec<String>,
    _dir: tempfile::TempDir,
}

impl EtcdCluster {
    fn start(size: usize) -> EtcdCluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let ports = free_ports(size * 2);
        let names: Vec<String> = (0..size).map(|i| format!("m{i}")).collect();
        let peers: Vec<String> = ports
            .chunks(2)
            .map(|p| format!("http://127.0.0.1:{}", p[1]))
            .collect();
        let initial = initial_cluster(
            names
                .iter()
                .zip(&peers)
                .map(|(n, p)| (n.as_str(), p.as_str())),
        );
        let mut members = Vec::new();
        let mut urls = Vec::new();
        for ((name, p), peer) in names.iter().zip(ports.chunks(2)).zip(&peers) {
            let url = format!("http://127.0.0.1:{}", p[0]);
            let log = std::fs::File::create(dir.path().join(format!("{name}.log"))).expect("log");
            let child = MemberCommand::new(name, dir.path().join(name), &url, peer)
                .initial_cluster(&initial)
                .cluster_token(format!("ha-{}", ports[0]))
                .command("etcd")
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "cannot run `etcd` ({e}): install Debian's etcd-server (scripts/setup.sh \
                         does) to run the HA tests"
                    )
                });
            members.push(Some(child));
            urls.push(url);
        }
        EtcdCluster {
            members,
            urls,
            _dir: dir,
        }
    }

    fn servers(&self) -> String {
        self.urls.join(",")
    }

    fn sigkill(&mut self, index: usize) {
        if let Some(mut child) = self.members[index].take() {
            child.kill().expect("SIGKILL etcd");
            child.wait().expect("reap etcd");
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            self.sigkill(index);
        }
    }
}

/// A `karmada` process (API server replica or lb) with its stdin held; killed on drop.
struct Proc {
    child: Option<Child>,
    log: PathBuf,
}

impl Proc {
    fn spawn(args: &[String], log: PathBuf) -> Proc {
        let file = std::fs::File::create(&log).expect("log");
        let child = Command::new(env!("CARGO_BIN_EXE_karmada"))
            .args(args)
            .arg("--exit-with-stdin")
            .stdin(Stdio::piped())
            .stdout(file.try_clone().expect("log"))
            .stderr(file)
            .spawn()
            .expect("spawn karmada");
        Proc {
            child: Some(child),
            log,
        }
    }

    fn sigkill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL");
            child.wait().expect("reap");
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().expect("polling the child")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.sigkill();
    }
}

/// Two API server replicas on `etcd` sharing one PKI, and an lb in front of them.
struct Plane {
    dir: tempfile::TempDir,
    replicas: Vec<Proc>,
    lb: Proc,
    ports: Vec<u16>,
    lb_port: u16,
}

impl Plane {
    async fn start(etcd: &EtcdCluster, count: usize) -> Plane {
        let dir = tempfile::tempdir().expect("tempdir");
        let ports = free_ports(count + 1);
        let mut replicas = Vec::new();
        for (i, port) in ports[..count].iter().enumerate() {
            let data = dir.path().join(format!("replica-{i}"));
            let args = [
                "apiserver".to_string(),
                "--data-dir".into(),
                data.display().to_string(),
                "--pki-dir".into(),
                dir.path().join("pki").display().to_string(),
                "--secure-port".into(),
                port.to_string(),
                format!("--etcd-servers={}", etcd.servers()),
            ];
            let mut proc = Proc::spawn(&args, dir.path().join(format!("replica-{i}.log")));
            // One at a time: the first creates the certificates the others share.
            wait_ready(&data.join("karmada-apiserver.config"), &mut proc).await;
            replicas.push(proc);
        }
        let lb_port = ports[count];
        let mut args = vec![
            "lb".to_string(),
            "--listen".into(),
            format!("127.0.0.1:{lb_port}"),
        ];
        for port in &ports[..count] {
            args.push("--backend".into());
            args.push(format!("127.0.0.1:{port}"));
        }
        let lb = Proc::spawn(&args, dir.path().join("lb.log"));
        let mut plane = Plane {
            dir,
            replicas,
            lb,
            ports: ports[..count].to_vec(),
            lb_port,
        };
        let text = std::fs::read_to_string(plane.kubeconfig(0)).expect("kubeconfig");
        let via_lb = text.replace(&format!(":{}", plane.ports[0]), &format!(":{lb_port}"));
        std::fs::write(plane.lb_kubeconfig(), via_lb).expect("write lb kubeconfig");
        wait_ready(&plane.lb_kubeconfig(), &mut plane.lb).await;
        plane
    }

    fn kubeconfig(&self, replica: usize) -> PathBuf {
        self.dir
            .path()
            .join(format!("replica-{replica}"))
            .join("karmada-apiserver.config")
    }

    fn lb_kubeconfig(&self) -> PathBuf {
        self.dir.path().join("lb.config")
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for (i, r) in self.replicas.iter().enumerate() {
            out.push_str(&format!("--- replica {i}\n{}\n", tail(&r.log(), 30)));
        }
        out.push_str(&format!(
            "--- lb (port {})\n{}\n",
            self.lb_port,
            tail(&self.lb.log(), 30)
        ));
        out
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

async fn client(kubeconfig: &Path) -> Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

/// Polls `/readyz` through `kubeconfig` until it answers; fails with the process log, at once if it exited.
async fn wait_ready(kubeconfig: &Path, proc: &mut Proc) {
    let deadline = Instant::now() + READY;
    loop {
        if let Some(status) = proc.exited() {
            panic!(
                "exited ({status}) before it was ready; log:\n{}",
                proc.log()
            );
        }
        if kubeconfig.exists() {
            let c = client(kubeconfig).await;
            let req = http::Request::get("/readyz")
                .body(Vec::new())
                .expect("request");
            if let Ok(body) = c.request_text(req).await
                && body.trim() == "ok"
            {
                return;
            }
        }
        assert!(Instant::now() < deadline, "not ready; log:\n{}", proc.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn config_map(name: &str, seq: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some([("seq".to_string(), seq.to_string())].into()),
        ..Default::default()
    }
}

fn rv(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("numeric resourceVersion")
}

/// Every ConfigMap in `default` as name → resourceVersion.
async fn stored(api: &Api<ConfigMap>) -> BTreeMap<String, u64> {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|cm| (cm.metadata.name.clone().unwrap_or_default(), rv(cm)))
        .collect()
}

#[test]
fn a_write_through_one_replica_is_watched_on_the_other_with_the_same_resource_version() {
    let etcd = EtcdCluster::start(3);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let plane = Plane::start(&etcd, 2).await;
        let a: Api<ConfigMap> = Api::default_namespaced(client(&plane.kubeconfig(0)).await);
        let b: Api<ConfigMap> = Api::default_namespaced(client(&plane.kubeconfig(1)).await);
        let start = b.list(&ListParams::default()).await.expect("list on b");
        let from = start.metadata.resource_version.clone().expect("list rv");
        let mut watch = b
            .watch(&WatchParams::default(), &from)
            .await
            .expect("watch on b")
            .boxed();
        let created = a
            .create(&PostParams::default(), &config_map("shared", 1))
            .await
            .expect("create on a");
        let seen = tokio::time::timeout(READY, async {
            loop {
                match watch.try_next().await.expect("watch event") {
                    Some(WatchEvent::Added(cm))
                        if cm.metadata.name.as_deref() == Some("shared") =>
                    {
                        return cm;
                    }
                    Some(_) => {}
                    None => panic!("watch ended"),
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("b never reported the write; logs:\n{}", plane.logs()));
        assert_eq!(
            rv(&seen),
            rv(&created),
            "both replicas name the write alike"
        );
        assert_eq!(rv(&b.get("shared").await.expect("get on b")), rv(&created));
        // An update through b with a's resourceVersion is a valid compare-and-swap.
        let mut update = created.clone();
        update.data = Some([("seq".to_string(), "2".to_string())].into());
        let updated = b
            .replace("shared", &PostParams::default(), &update)
            .await
            .expect("replace on b with a's resourceVersion");
        assert!(rv(&updated) > rv(&created));
        let stale = a.replace("shared", &PostParams::default(), &update).await;
        assert!(
            matches!(stale, Err(kube::Error::Api(ref s)) if s.code == 409),
            "a stale resourceVersion is a conflict on the other replica: {stale:?}"
        );
    });
}

#[test]
fn sigkill_of_an_etcd_member_under_write_load_loses_no_acknowledged_write() {
    let mut etcd = EtcdCluster::start(3);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let plane = Plane::start(&etcd, 2).await;
        let acked: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let stop = tokio_util::sync::CancellationToken::new();
        let mut writers = tokio::task::JoinSet::new();
        for w in 0..2 {
            let api: Api<ConfigMap> = Api::default_namespaced(client(&plane.kubeconfig(w)).await);
            let acked = acked.clone();
            let stop = stop.clone();
            writers.spawn(async move {
                let mut failures = 0usize;
                for i in 0.. {
                    if stop.is_cancelled() {
                        break;
                    }
                    let name = format!("load-{w}-{i}");
                    match api
                        .create(&PostParams::default(), &config_map(&name, i))
                        .await
                    {
                        Ok(cm) => {
                            acked.lock().expect("lock").insert(name, rv(&cm));
                        }
                        // Unacknowledged: it may or may not have landed; the next name goes on.
                        Err(_) => {
                            failures += 1;
                            // Back off while etcd elects a new leader (bounded by the test's deadline).
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
                failures
            });
        }
        let count = || acked.lock().expect("lock").len();
        let deadline = Instant::now() + Duration::from_secs(120);
        while count() < 100 {
            assert!(
                Instant::now() < deadline,
                "no write load; logs:\n{}",
                plane.logs()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The member the replicas talk to first.
        etcd.sigkill(0);
        let at_kill = count();
        while count() < at_kill + 100 {
            assert!(
                Instant::now() < deadline,
                "writes did not continue after the member died ({} after); logs:\n{}",
                count() - at_kill,
                plane.logs()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.cancel();
        while writers.join_next().await.is_some() {}

        let acked = acked.lock().expect("lock").clone();
        for replica in 0..2 {
            let api: Api<ConfigMap> =
                Api::default_namespaced(client(&plane.kubeconfig(replica)).await);
            let stored = stored(&api).await;
            for (name, version) in &acked {
                assert_eq!(
                    stored.get(name),
                    Some(version),
                    "acknowledged {name} is on replica {replica} unchanged"
                );
            }
        }
    });
}

#[test]
fn a_watcher_whose_replica_is_killed_resumes_on_the_other_without_gap_or_repeat() {
    const WRITES: usize = 150;
    let etcd = EtcdCluster::start(3);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let mut plane = Plane::start(&etcd, 2).await;
        let writer_api: Api<ConfigMap> =
            Api::default_namespaced(client(&plane.kubeconfig(0)).await);
        let on_b: Api<ConfigMap> = Api::default_namespaced(client(&plane.kubeconfig(1)).await);
        let via_lb: Api<ConfigMap> = Api::default_namespaced(client(&plane.lb_kubeconfig()).await);
        let mut last = on_b
            .list(&ListParams::default())
            .await
            .expect("list")
            .metadata
            .resource_version
            .expect("rv");
        let writer = tokio::spawn(async move {
            for seq in 0..WRITES {
                let name = format!("seq-{seq}");
                // The writer's replica stays up: every write must succeed, once.
                writer_api
                    .create(&PostParams::default(), &config_map(&name, seq))
                    .await
                    .unwrap_or_else(|e| panic!("write {seq}: {e}"));
            }
        });

        let mut seen: Vec<usize> = Vec::new();
        let mut watch = on_b
            .watch(&WatchParams::default(), &last)
            .await
            .expect("watch on b")
            .boxed();
        let mut killed = false;
        let mut rewatches = 0;
        let deadline = Instant::now() + Duration::from_secs(120);
        while seen.len() < WRITES {
            assert!(
                Instant::now() < deadline,
                "stuck after {} events; logs:\n{}",
                seen.len(),
                plane.logs()
            );
            if !killed && seen.len() >= WRITES / 3 {
                plane.replicas[1].sigkill();
                killed = true;
            }
            let next = tokio::time::timeout(Duration::from_secs(30), watch.next()).await;
            match next {
                Ok(Some(Ok(WatchEvent::Added(cm)))) => {
                    let seq = cm.data.as_ref().and_then(|d| d.get("seq")).expect("seq");
                    seen.push(seq.parse().expect("number"));
                    last = cm.metadata.resource_version.clone().expect("rv");
                }
                Ok(Some(Ok(WatchEvent::Bookmark(b)))) => last = b.metadata.resource_version,
                Ok(Some(Ok(WatchEvent::Error(e)))) => panic!("watch error event: {e:?}"),
                Ok(Some(Ok(_))) => {}
                // The replica died under the stream (or the stream ended): re-watch from the last
                // resourceVersion, through the lb, which must skip the dead replica.
                Ok(Some(Err(_))) | Ok(None) | Err(_) => {
                    rewatches += 1;
                    assert!(
                        rewatches < 20,
                        "re-watching keeps failing; logs:\n{}",
                        plane.logs()
                    );
                    match via_lb.watch(&WatchParams::default(), &last).await {
                        Ok(stream) => watch = stream.boxed(),
                        Err(e) => panic!("re-watch from {last} through the lb: {e}"),
                    }
                }
            }
        }
        writer.await.expect("writer");
        assert!(killed && rewatches >= 1, "the watcher had to move");
        let expected: Vec<usize> = (0..WRITES).collect();
        assert_eq!(
            seen, expected,
            "every write once, in order, across the move"
        );
    });
}

// --- backup and restore through karmadactl ---------------------------------------------------

/// Stops a control plane started with `karmadactl init` (detached) when the test ends.
struct Deinit(PathBuf);

impl Drop for Deinit {
    fn drop(&mut self) {
        let _ = karmadactl(&[
            "deinit",
            "--force",
            "--karmada-data",
            &self.0.display().to_string(),
        ]);
    }
}

/// Starts a plane with `karmadactl init EXTRA`, returns its kubeconfig.
fn init(data: &Path, extra: &[&str]) -> PathBuf {
    let port = test_fixtures::free_port().to_string();
    let mut args = vec![
        "init",
        "--karmada-data",
        data.to_str().expect("utf-8"),
        "--port",
        &port,
    ];
    args.extend_from_slice(extra);
    let out = karmadactl(&args);
    out.success();
    data.join("karmada-apiserver.config")
}

/// Runs a write load on `kubeconfig`, takes a backup in the middle of it, and returns the
/// objects acknowledged before the backup began and the highest resourceVersion any write got.
async fn backup_under_load(
    data: &Path,
    kubeconfig: &Path,
    out: &Path,
) -> (BTreeMap<String, u64>, u64) {
    let api: Api<ConfigMap> = Api::default_namespaced(client(kubeconfig).await);
    let acked: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let stop = tokio_util::sync::CancellationToken::new();
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..3 {
        let (api, acked, stop) = (api.clone(), acked.clone(), stop.clone());
        writers.spawn(async move {
            for i in 0.. {
                if stop.is_cancelled() {
                    break;
                }
                let name = format!("bk-{w}-{i}");
                let cm = api
                    .create(&PostParams::default(), &config_map(&name, i))
                    .await
                    .expect("write under backup");
                acked.lock().expect("lock").insert(name, rv(&cm));
            }
        });
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().expect("lock").len() < 150 {
        assert!(Instant::now() < deadline, "no write load");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = acked.lock().expect("lock").clone();
    let data_s = data.display().to_string();
    let out_s = out.display().to_string();
    let backup = tokio::task::spawn_blocking(move || {
        karmadactl(&["backup", "--karmada-data", &data_s, "-o", &out_s])
    })
    .await
    .expect("backup task");
    let at_backup_end = acked.lock().expect("lock").len();
    // Keep writing a little after the backup, so the plane moves past it.
    while acked.lock().expect("lock").len() < at_backup_end + 50 {
        assert!(Instant::now() < deadline, "writes stopped after the backup");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    while writers.join_next().await.is_some() {}
    assert!(backup.success().contains("written to"), "{}", backup.stdout);
    let newest = acked
        .lock()
        .expect("lock")
        .values()
        .copied()
        .max()
        .expect("writes");
    (before, newest)
}

/// The restored plane has every object of `before` and sends a watcher at `old` (a
/// resourceVersion from before the restore) away with 410; new writes go above it.
async fn check_restored(kubeconfig: &Path, before: &BTreeMap<String, u64>, old: u64) {
    let api: Api<ConfigMap> = Api::default_namespaced(client(kubeconfig).await);
    let stored = stored(&api).await;
    let missing: Vec<&String> = before.keys().filter(|n| !stored.contains_key(*n)).collect();
    assert!(
        missing.is_empty(),
        "acknowledged before the backup but not restored: {missing:?}"
    );
    let watch = api.watch(&WatchParams::default(), &old.to_string()).await;
    let expired = match watch {
        Err(kube::Error::Api(s)) => s.code == 410,
        Ok(stream) => {
            let mut stream = stream.boxed();
            matches!(
                tokio::time::timeout(READY, stream.next()).await,
                Ok(Some(Ok(WatchEvent::Error(ref e)))) if e.code == 410
            )
        }
        Err(_) => false,
    };
    assert!(
        expired,
        "a watch from resourceVersion {old} (before the restore) gets 410"
    );
    let fresh = api
        .create(&PostParams::default(), &config_map("after-restore", 0))
        .await
        .expect("write after restore");
    assert!(
        rv(&fresh) > old,
        "new resourceVersions are above every old one"
    );
}

#[test]
fn etcd_backup_under_write_load_restores_every_acknowledged_object() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (first, second) = (tmp.path().join("first"), tmp.path().join("second"));
    let _cleanup = (Deinit(first.clone()), Deinit(second.clone()));
    let kubeconfig = init(
        &first,
        &["--etcd-replicas", "3", "--karmada-apiserver-replicas", "2"],
    );
    let file = tmp.path().join("plane.backup");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (before, newest) = rt.block_on(backup_under_load(&first, &kubeconfig, &file));
    karmadactl(&[
        "deinit",
        "--force",
        "--karmada-data",
        first.to_str().expect("utf-8"),
    ])
    .success();

    let restored = karmadactl(&[
        "restore",
        "-f",
        file.to_str().expect("utf-8"),
        "--karmada-data",
        second.to_str().expect("utf-8"),
        "--etcd-replicas",
        "3",
    ]);
    assert!(
        restored.success().contains("restored the etcd store"),
        "{}",
        restored.stdout
    );
    let kubeconfig = init(&second, &["--karmada-apiserver-replicas", "2"]);
    rt.block_on(check_restored(&kubeconfig, &before, newest));
}

#[test]
fn embedded_backup_under_write_load_restores_every_acknowledged_object() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (first, second) = (tmp.path().join("first"), tmp.path().join("second"));
    let _cleanup = (Deinit(first.clone()), Deinit(second.clone()));
    let kubeconfig = init(&first, &[]);
    let file = tmp.path().join("plane.backup");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (before, newest) = rt.block_on(backup_under_load(&first, &kubeconfig, &file));

    // A damaged file is refused before anything is written.
    let mut bytes = std::fs::read(&file).expect("backup");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    let damaged = tmp.path().join("damaged.backup");
    std::fs::write(&damaged, &bytes).expect("write");
    let third = tmp.path().join("third");
    let refused = karmadactl(&[
        "restore",
        "-f",
        damaged.to_str().expect("utf-8"),
        "--karmada-data",
        third.to_str().expect("utf-8"),
    ]);
    assert!(refused.failure().contains("corrupt"), "{}", refused.stderr);
    assert!(!third.join("store.redb").exists(), "nothing half-restored");

    let restored = karmadactl(&[
        "restore",
        "-f",
        file.to_str().expect("utf-8"),
        "--karmada-data",
        second.to_str().expect("utf-8"),
    ]);
    assert!(
        restored.success().contains("restored the embedded store"),
        "{}",
        restored.stdout
    );
    // The first plane still runs: the restored one is independent of it.
    let kubeconfig = init(&second, &[]);
    rt.block_on(check_restored(&kubeconfig, &before, newest));
}

#[test]
fn ha_init_without_etcd_says_how_to_get_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("plane");
    let _cleanup = Deinit(data.clone());
    let empty = tmp.path().join("empty-path");
    std::fs::create_dir_all(&empty).expect("dir");
    let out = Run::from(
        Command::new(bin("karmadactl"))
            .args(["init", "--etcd-replicas", "3", "--karmada-data"])
            .arg(&data)
            .env("PATH", &empty)
            .output()
            .expect("run karmadactl"),
    );
    let err = out.failure();
    assert!(
        err.contains("apt-get install etcd-server") && err.contains("--etcd-servers"),
        "{err}"
    );
}
