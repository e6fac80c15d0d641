//! `karmada member-sim` driven by the real kubectl: workloads behave like Kubernetes' (rollout,
//! scheduling failures, rolling-update order, StatefulSet ordinals), nodes are Ready with the
//! configured version, and every fault is visible to a client until `clear`.
//!
//! Each test runs its own member-sim process (`--exit-with-stdin`, so it dies with the test)
//! and waits on conditions with deadlines, never on fixed sleeps.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Run, rows};

const START_TIMEOUT: Duration = Duration::from_secs(60);
const CONDITION_TIMEOUT: Duration = Duration::from_secs(60);

/// One `karmada member-sim` process with its data directory.
struct MemberSim {
    child: Child,
    dir: tempfile::TempDir,
    names: Vec<String>,
}

impl MemberSim {
    /// One cluster `name` with a visible pod startup delay, plus `extra` flags.
    fn start(name: &str, extra: &[&str]) -> MemberSim {
        let mut args = vec!["--name", name, "--pod-startup-delay", "1s"];
        args.extend_from_slice(extra);
        Self::spawn(&args, vec![name.to_string()])
    }

    fn spawn(args: &[&str], names: Vec<String>) -> MemberSim {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = std::fs::File::create(dir.path().join("member-sim.log")).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_karmada"))
            .args(["member-sim", "--exit-with-stdin", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("spawn karmada member-sim");
        let sim = MemberSim { child, dir, names };
        for name in &sim.names {
            sim.wait_for(&format!("cluster {name} to serve"), START_TIMEOUT, || {
                sim.kubeconfig(name).exists()
                    && sim
                        .kubectl_in(name, &["get", "--raw", "/readyz"])
                        .stdout
                        .trim()
                        == "ok"
            });
        }
        sim
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn kubeconfig(&self, name: &str) -> PathBuf {
        self.data().join(format!("{name}.config"))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("member-sim.log")).unwrap_or_default()
    }

    fn kubectl(&self, args: &[&str]) -> Run {
        self.kubectl_in(&self.names[0], args)
    }

    fn kubectl_in(&self, name: &str, args: &[&str]) -> Run {
        Run::from(
            kubectl_command(&self.kubeconfig(name), &self.dir.path().join("cache"), args)
                .output()
                .expect("run kubectl"),
        )
    }

    fn apply(&self, manifest: &str) {
        let mut child = kubectl_command(
            &self.kubeconfig(&self.names[0]),
            &self.dir.path().join("cache"),
            &["apply", "-f", "-"],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(manifest.as_bytes())
            .expect("write manifest");
        Run::from(child.wait_with_output().expect("kubectl apply")).success();
    }

    fn get_json(&self, args: &[&str]) -> Value {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        self.kubectl(&full).json()
    }

    /// `karmada member-sim fault` for the first cluster.
    fn fault(&self, words: &[&str]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_karmada"));
        command
            .args(["member-sim", "fault", "--data-dir"])
            .arg(self.data())
            .args(["--name", &self.names[0]])
            .args(words);
        Run::from(command.output().expect("run karmada member-sim fault"))
    }

    /// Polls `condition` until it holds; fails with the log after `timeout`.
    #[track_caller]
    fn wait_for(&self, what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + timeout;
        while !condition() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for MemberSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl_command(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("kubectl");
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args);
    command
}

fn deployment(name: &str, replicas: u32, cpu: &str, image: &str, extra_spec: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
{extra_spec}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: main
        image: {image}
        resources:
          requests: {{cpu: "{cpu}", memory: 64Mi}}
"#
    )
}

fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

#[test]
fn nodes_are_ready_with_the_configured_version_and_topology() {
    let sim = MemberSim::start(
        "edge",
        &[
            "--nodes",
            "2",
            "--kubernetes-version",
            "v1.29.5",
            "--region",
            "eu-west",
            "--zone",
            "eu-west-1b",
        ],
    );
    let version = sim.kubectl(&["get", "--raw", "/version"]).json();
    assert_eq!(version["gitVersion"], "v1.29.5");
    assert_eq!(
        (version["major"].as_str(), version["minor"].as_str()),
        (Some("1"), Some("29"))
    );

    let table = sim
        .kubectl(&["get", "nodes", "--no-headers"])
        .success()
        .to_string();
    let nodes = rows(&table);
    assert_eq!(nodes.len(), 2, "{table}");
    for (index, row) in nodes.iter().enumerate() {
        assert_eq!(row[0], format!("edge-node-{index}"), "{table}");
        assert_eq!(row[1], "Ready", "{table}");
        assert_eq!(row.last().map(String::as_str), Some("v1.29.5"), "{table}");
    }
    let node = sim.get_json(&["node", "edge-node-0"]);
    assert_eq!(
        node["metadata"]["labels"]["topology.kubernetes.io/zone"],
        "eu-west-1b"
    );
    assert_eq!(
        node["metadata"]["labels"]["topology.kubernetes.io/region"],
        "eu-west"
    );
    assert_eq!(node["status"]["allocatable"]["cpu"], "8");
    let leases = sim
        .kubectl(&["get", "leases", "-n", "kube-node-lease", "-o", "name"])
        .success()
        .to_string();
    assert_eq!(leases.lines().count(), 2, "{leases}");
}

#[test]
fn a_deployment_rolls_out_onto_nodes() {
    let sim = MemberSim::start("member1", &[]);
    sim.apply(&deployment("web", 3, "500m", "nginx:1.25", ""));
    sim.kubectl(&["rollout", "status", "deploy/web", "--timeout=60s"])
        .success();

    let table = sim
        .kubectl(&["get", "pods", "-l", "app=web", "-o", "wide", "--no-headers"])
        .success()
        .to_string();
    let pods = rows(&table);
    assert_eq!(pods.len(), 3, "{table}");
    for pod in &pods {
        assert_eq!(pod[1], "1/1", "{table}");
        assert_eq!(pod[2], "Running", "{table}");
        assert!(
            pod[5].starts_with("10.244."),
            "pod IP in the pod CIDR: {table}"
        );
        assert!(
            pod[6].starts_with("member1-node-"),
            "bound to a node: {table}"
        );
    }
    let status = &sim.get_json(&["deploy", "web"])["status"];
    for field in [
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
    ] {
        assert_eq!(status[field], 3, "{field}: {status}");
    }
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(
        condition(&sim.get_json(&["deploy", "web"]), "Available").expect("Available")["status"],
        "True"
    );
}

#[test]
fn a_deployment_that_does_not_fit_leaves_pending_pods_and_says_why() {
    let sim = MemberSim::start("member1", &["--nodes", "2", "--node-cpu", "2"]);
    // Two 1.5-CPU pods fit (one a node); the other two cannot.
    sim.apply(&deployment(
        "big",
        4,
        "1500m",
        "nginx:1.25",
        "  progressDeadlineSeconds: 3",
    ));
    sim.wait_for("the deadline to pass unmet", CONDITION_TIMEOUT, || {
        let deploy = sim.get_json(&["deploy", "big"]);
        condition(&deploy, "Progressing").is_some_and(|c| c["reason"] == "ProgressDeadlineExceeded")
    });
    let deploy = sim.get_json(&["deploy", "big"]);
    let available = condition(&deploy, "Available").expect("Available condition");
    assert_eq!(available["status"], "False", "{deploy}");
    assert_eq!(
        available["reason"], "MinimumReplicasUnavailable",
        "{deploy}"
    );
    let progressing = condition(&deploy, "Progressing").expect("Progressing condition");
    assert_eq!(progressing["status"], "False", "{deploy}");
    assert_eq!(deploy["status"]["availableReplicas"], 2, "{deploy}");
    assert_eq!(deploy["status"]["unavailableReplicas"], 2, "{deploy}");

    let pods = sim.get_json(&["pods", "-l", "app=big"]);
    let pending: Vec<&Value> = pods["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|p| p["status"]["phase"] == "Pending")
        .collect();
    assert_eq!(pending.len(), 2, "{pods}");
    for pod in pending {
        assert!(pod["spec"]["nodeName"].is_null(), "{pod}");
        let scheduled = condition(pod, "PodScheduled").expect("PodScheduled");
        assert_eq!(scheduled["status"], "False");
        assert_eq!(scheduled["reason"], "Unschedulable");
        let message = scheduled["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("0/2 nodes are available") && message.contains("Insufficient cpu"),
            "{message}"
        );
    }
    let described = sim
        .kubectl(&["get", "pods", "-l", "app=big", "--no-headers"])
        .success()
        .to_string();
    assert_eq!(
        rows(&described)
            .iter()
            .filter(|r| r[2] == "Pending")
            .count(),
        2,
        "{described}"
    );
}

/// Latest `spec.replicas` per ReplicaSet name from a `kubectl get rs -w` line stream.
fn replica_history(output: &str) -> Vec<(String, i64)> {
    output
        .lines()
        .filter_map(|line| {
            let mut cells = line.split_whitespace();
            let name = cells.next()?.to_string();
            let replicas = cells.next()?.parse().ok()?;
            Some((name, replicas))
        })
        .collect()
}

#[test]
fn a_rolling_update_surges_new_pods_before_removing_old_ones() {
    let sim = MemberSim::start("member1", &[]);
    let strategy =
        "  strategy:\n    type: RollingUpdate\n    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}";
    sim.apply(&deployment("roll", 4, "100m", "nginx:1.25", strategy));
    sim.kubectl(&["rollout", "status", "deploy/roll", "--timeout=60s"])
        .success();
    let old_rs = sim.get_json(&["rs", "-l", "app=roll"])["items"][0]["metadata"]["name"]
        .as_str()
        .expect("old ReplicaSet")
        .to_string();

    let mut watch = kubectl_command(
        &sim.kubeconfig("member1"),
        &sim.dir.path().join("cache"),
        &[
            "get",
            "rs",
            "-l",
            "app=roll",
            "-w",
            "--no-headers",
            "-o",
            "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn kubectl watch");
    sim.kubectl(&["set", "image", "deploy/roll", "main=nginx:1.26"])
        .success();
    sim.kubectl(&["rollout", "status", "deploy/roll", "--timeout=60s"])
        .success();
    let replicasets = sim.get_json(&["rs", "-l", "app=roll"]);
    let _ = watch.kill();
    let output = watch.wait_with_output().expect("watch output");
    let history = replica_history(&String::from_utf8_lossy(&output.stdout));

    let new_rs = replicasets["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|rs| rs["metadata"]["name"] != old_rs.as_str())
        .expect("a new ReplicaSet");
    assert_eq!(new_rs["spec"]["replicas"], 4);
    assert_eq!(
        new_rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let old = replicasets["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|rs| rs["metadata"]["name"] == old_rs.as_str())
        .expect("old ReplicaSet kept as history");
    assert_eq!(old["spec"]["replicas"], 0);

    // maxSurge 1, maxUnavailable 0: the new set grows first, the total never exceeds 5, and
    // the old set shrinks one at a time only after the new one has grown.
    let mut latest = std::collections::BTreeMap::new();
    let mut first_new_growth = None;
    let mut first_old_shrink = None;
    for (step, (name, replicas)) in history.iter().enumerate() {
        latest.insert(name.clone(), *replicas);
        let total: i64 = latest.values().sum();
        assert!(
            total <= 5,
            "more than replicas+maxSurge at step {step}: {history:?}"
        );
        if *name != old_rs && *replicas > 0 && first_new_growth.is_none() {
            first_new_growth = Some(step);
        }
        if *name == old_rs && *replicas < 4 && first_old_shrink.is_none() {
            first_old_shrink = Some(step);
        }
    }
    let (grow, shrink) = (
        first_new_growth.expect("new set grew"),
        first_old_shrink.expect("old set shrank"),
    );
    assert!(
        grow < shrink,
        "the new ReplicaSet must surge before the old one shrinks: {history:?}"
    );
    let pods = sim.get_json(&["pods", "-l", "app=roll"]);
    let hash = new_rs["metadata"]["labels"]["pod-template-hash"].clone();
    assert_eq!(pods["items"].as_array().expect("items").len(), 4, "{pods}");
    assert!(
        pods["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|p| p["metadata"]["labels"]["pod-template-hash"] == hash)
    );
}

#[test]
fn statefulset_pods_come_up_in_ordinal_order_with_their_claims() {
    let sim = MemberSim::start("member1", &[]);
    sim.apply(
        r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 3
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres:16
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"#,
    );
    sim.kubectl(&["rollout", "status", "sts/db", "--timeout=60s"])
        .success();
    let pods = sim.get_json(&["pods", "-l", "app=db"]);
    let items = pods["items"].as_array().expect("items");
    assert_eq!(items.len(), 3, "{pods}");
    let time = |pod: &Value, pointer: &str| {
        pod.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    for ordinal in 0..3 {
        let pod = items
            .iter()
            .find(|p| p["metadata"]["name"] == format!("db-{ordinal}"))
            .expect("pod by ordinal");
        assert_eq!(pod["status"]["phase"], "Running");
        let volume = &pod["spec"]["volumes"].as_array().expect("volumes")[0];
        assert_eq!(
            volume["persistentVolumeClaim"]["claimName"],
            format!("data-db-{ordinal}")
        );
        if ordinal > 0 {
            // OrderedReady: pod N is created only once pod N-1 is Ready (1s startup delay).
            let previous = items
                .iter()
                .find(|p| p["metadata"]["name"] == format!("db-{}", ordinal - 1))
                .expect("previous");
            let ready_at = condition(previous, "Ready")
                .map(|c| {
                    c["lastTransitionTime"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .unwrap_or_default();
            let created = time(pod, "/metadata/creationTimestamp");
            assert!(
                created >= ready_at,
                "db-{ordinal} created at {created}, before db-{} was Ready at {ready_at}",
                ordinal - 1
            );
            assert!(
                created > time(previous, "/metadata/creationTimestamp"),
                "{pods}"
            );
        }
    }
    let claims = sim.get_json(&["pvc"]);
    let mut bound: Vec<(String, String)> = claims["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|c| {
            (
                c["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                c["status"]["phase"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    bound.sort();
    assert_eq!(
        bound,
        (0..3)
            .map(|i| (format!("data-db-{i}"), "Bound".to_string()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn each_fault_is_visible_to_clients_until_cleared() {
    let sim = MemberSim::start("member1", &[]);
    let readyz = || sim.kubectl(&["get", "--raw", "/readyz"]);

    // Bad input: the accepted forms, nothing written.
    let refused = sim.fault(&["latency", "soon"]);
    assert!(
        refused
            .failure()
            .contains("accepted forms: notready | unreachable"),
        "{}",
        refused.stderr
    );
    assert!(!sim.data().join("member1.faults.json").exists());

    sim.fault(&["notready"]).success();
    sim.wait_for("readyz to fail", CONDITION_TIMEOUT, || !readyz().ok());
    assert!(!sim.kubectl(&["get", "--raw", "/healthz"]).ok());
    sim.kubectl(&["get", "ns", "default"]).success();
    sim.fault(&["clear"]).success();
    sim.wait_for("readyz to recover", CONDITION_TIMEOUT, || readyz().ok());

    sim.fault(&["error-rate", "1"]).success();
    sim.wait_for("requests to fail", CONDITION_TIMEOUT, || {
        sim.kubectl(&["get", "--raw", "/api/v1/namespaces"])
            .stderr
            .contains("InternalError")
    });
    sim.fault(&["clear"]).success();
    sim.wait_for("requests to succeed", CONDITION_TIMEOUT, || {
        sim.kubectl(&["get", "--raw", "/api/v1/namespaces"]).ok()
    });

    sim.fault(&["latency", "700ms"]).success();
    sim.wait_for("answers to be delayed", CONDITION_TIMEOUT, || {
        let started = Instant::now();
        sim.kubectl(&["get", "--raw", "/version"]).ok()
            && started.elapsed() >= Duration::from_millis(700)
    });
    sim.fault(&["clear"]).success();

    sim.fault(&["unreachable"]).success();
    sim.wait_for("requests to time out", CONDITION_TIMEOUT, || {
        let run = sim.kubectl(&["get", "--raw", "/version", "--request-timeout=1s"]);
        !run.ok()
            && (run.stderr.contains("deadline")
                || run.stderr.contains("Timeout")
                || run.stderr.contains("timeout"))
    });
    sim.fault(&["clear"]).success();
    sim.wait_for("answers again", CONDITION_TIMEOUT, || {
        sim.kubectl(&["get", "--raw", "/version", "--request-timeout=2s"])
            .ok()
    });

    sim.fault(&["node-notready", "member1-node-1"]).success();
    let node_ready = |name: &str| {
        let node = sim.get_json(&["node", name]);
        condition(&node, "Ready").map(|c| c["status"].as_str().unwrap_or_default().to_string())
    };
    sim.wait_for("the node to turn NotReady", CONDITION_TIMEOUT, || {
        node_ready("member1-node-1").as_deref() == Some("False")
    });
    assert_eq!(node_ready("member1-node-0").as_deref(), Some("True"));
    sim.fault(&["clear"]).success();
    sim.wait_for("the node to recover", CONDITION_TIMEOUT, || {
        node_ready("member1-node-1").as_deref() == Some("True")
    });

    sim.apply(&deployment("app", 2, "100m", "nginx:1.25", ""));
    sim.kubectl(&["rollout", "status", "deploy/app", "--timeout=60s"])
        .success();
    let ready = || {
        sim.get_json(&["deploy", "app"])["status"]["readyReplicas"]
            .as_i64()
            .unwrap_or(0)
    };
    sim.fault(&["crash", "app"]).success();
    sim.wait_for(
        "the crashed workload's pods to be unready",
        CONDITION_TIMEOUT,
        || ready() == 0,
    );
    sim.fault(&["clear"]).success();
    sim.wait_for("the workload to recover", CONDITION_TIMEOUT, || {
        ready() == 2
    });
    sim.kubectl(&["rollout", "status", "deploy/app", "--timeout=60s"])
        .success();
}

#[test]
fn count_runs_several_clusters_each_with_its_own_kubeconfig() {
    let sim = MemberSim::spawn(
        &["--count", "2", "--name-prefix", "m", "--nodes", "1"],
        vec!["m1".to_string(), "m2".to_string()],
    );
    for name in ["m1", "m2"] {
        let config: Value = serde_json::from_str(
            &std::fs::read_to_string(sim.kubeconfig(name)).expect("kubeconfig"),
        )
        .expect("kubeconfig is JSON");
        assert_eq!(config["current-context"], name);
        let nodes = sim
            .kubectl_in(name, &["get", "nodes", "-o", "name"])
            .success()
            .to_string();
        assert_eq!(nodes.trim(), format!("node/{name}-node-0"));
    }
    let server = |name: &str| {
        let config: Value = serde_json::from_str(
            &std::fs::read_to_string(sim.kubeconfig(name)).expect("kubeconfig"),
        )
        .expect("json");
        config["clusters"][0]["cluster"]["server"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_ne!(
        server("m1"),
        server("m2"),
        "each cluster listens on its own port"
    );
}

impl MemberSim {
    /// `karmada member-sim load` for the first cluster.
    fn load(&self, args: &[&str]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_karmada"));
        command
            .args(["member-sim", "load", "--data-dir"])
            .arg(self.data())
            .args(["--name", &self.names[0]])
            .args(args);
        Run::from(command.output().expect("run karmada member-sim load"))
    }
}

/// `(name, cpu, memory)` rows of `kubectl top pods|nodes --no-headers`; none while it fails
/// (kubectl says "metrics not available yet" until the pods run).
fn top_rows(run: Run) -> Vec<Vec<String>> {
    if run.ok() {
        rows(&run.stdout)
    } else {
        Vec::new()
    }
}

#[test]
fn kubectl_top_shows_the_load_set_on_matching_pods() {
    let sim = MemberSim::start("member1", &["--nodes", "1"]);
    sim.apply(&deployment("web", 2, "100m", "nginx:1.25", ""));
    sim.apply(&deployment("db", 1, "100m", "nginx:1.25", ""));
    for name in ["deploy/web", "deploy/db"] {
        sim.kubectl(&["rollout", "status", name, "--timeout=60s"])
            .success();
    }
    let refused = sim.load(&["--selector", "app=web", "--cpu", "lots"]);
    let message = refused.failure();
    assert!(message.contains("expected a quantity"), "{message}");

    sim.load(&[
        "--selector",
        "app=web",
        "--cpu",
        "400m",
        "--memory",
        "128Mi",
    ])
    .success();
    sim.wait_for("web pods at 400m", CONDITION_TIMEOUT, || {
        let pods = top_rows(sim.kubectl(&["top", "pods", "-l", "app=web", "--no-headers"]));
        pods.len() == 2 && pods.iter().all(|p| p[1] == "400m" && p[2] == "128Mi")
    });
    let db = top_rows(sim.kubectl(&["top", "pods", "-l", "app=db", "--no-headers"]));
    assert_eq!(db.len(), 1, "{db:?}");
    assert_eq!(db[0][1], "0m", "no load set on db: {db:?}");
    let nodes = top_rows(sim.kubectl(&["top", "nodes", "--no-headers"]));
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    assert_eq!(nodes[0][1], "800m", "the node sums its pods: {nodes:?}");

    // The API itself, as the HPA reads it: one pod by name, and discovery lists only get and list.
    let pod = &db[0][0];
    let one = sim
        .kubectl(&[
            "get",
            "--raw",
            &format!("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/{pod}"),
        ])
        .json();
    assert_eq!(one["kind"], "PodMetrics");
    assert_eq!(one["containers"][0]["name"], "main");
    let resources = sim
        .kubectl(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1"])
        .json();
    let pods = resources["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "pods"))
        .expect("pods listed");
    assert_eq!(pods["verbs"], serde_json::json!(["get", "list"]));
    let write = sim.kubectl(&[
        "delete",
        "--raw",
        &format!("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/{pod}"),
    ]);
    let message = write.failure();
    assert!(message.contains("read-only"), "{message}");

    sim.load(&["--selector", "app=web", "--cpu", "50m"])
        .success();
    sim.wait_for("web pods at 50m", CONDITION_TIMEOUT, || {
        let pods = top_rows(sim.kubectl(&["top", "pods", "-l", "app=web", "--no-headers"]));
        pods.len() == 2 && pods.iter().all(|p| p[1] == "50m")
    });
}

#[test]
fn kubectl_get_raw_reads_the_custom_metrics_a_load_sets() {
    let sim = MemberSim::start("member1", &["--nodes", "1"]);
    sim.apply(&deployment("web", 2, "100m", "nginx:1.25", ""));
    sim.apply(&deployment("db", 1, "100m", "nginx:1.25", ""));
    for name in ["deploy/web", "deploy/db"] {
        sim.kubectl(&["rollout", "status", name, "--timeout=60s"])
            .success();
    }
    let refused = sim.load(&["--selector", "app=web", "--metric", "rps"]);
    let message = refused.failure();
    assert!(message.contains("expected NAME=QUANTITY"), "{message}");
    sim.load(&[
        "--selector",
        "app=web",
        "--metric",
        "http_requests_per_second=50",
        "--metric",
        "queue_depth=1500m",
    ])
    .success();
    sim.load(&[
        "--selector",
        "app=db",
        "--metric",
        "http_requests_per_second=7",
    ])
    .success();

    let base = "/apis/custom.metrics.k8s.io/v1beta2";
    let raw = |path: &str| sim.kubectl(&["get", "--raw", path]);
    sim.wait_for("discovery to list the metrics", CONDITION_TIMEOUT, || {
        let document = raw(base);
        document.ok() && {
            let names: Vec<String> = document.json()["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["name"].as_str().map(str::to_string))
                .collect();
            names == ["pods/http_requests_per_second", "pods/queue_depth"]
        }
    });
    let list = raw(&format!(
        "{base}/namespaces/default/pods/*/http_requests_per_second?labelSelector=app%3Dweb"
    ))
    .json();
    assert_eq!(list["kind"], "MetricValueList", "{list}");
    assert_eq!(list["apiVersion"], "custom.metrics.k8s.io/v1beta2");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{list}");
    for item in items {
        assert_eq!(item["value"], "50", "{item}");
        assert_eq!(item["describedObject"]["kind"], "Pod");
        assert_eq!(item["describedObject"]["namespace"], "default");
        assert!(
            item["describedObject"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("web-")),
            "{item}"
        );
        assert_eq!(
            item["metric"],
            serde_json::json!({"name": "http_requests_per_second", "selector": null})
        );
        assert!(
            item["timestamp"].is_string() && item["windowSeconds"].is_i64(),
            "{item}"
        );
    }
    let all = raw(&format!(
        "{base}/namespaces/default/pods/*/http_requests_per_second"
    ))
    .json();
    assert_eq!(all["items"].as_array().map(Vec::len), Some(3), "{all}");

    // One pod by name, the v1beta1 shape, and the series selector (the series have no labels).
    let pod = items[0]["describedObject"]["name"].as_str().expect("name");
    let one = raw(&format!(
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/{pod}/queue_depth?metricLabelSelector=%21env"
    ))
    .json();
    assert_eq!(one["items"][0]["metricName"], "queue_depth", "{one}");
    assert_eq!(one["items"][0]["value"], "1500m", "{one}");
    assert_eq!(
        one["items"][0]["selector"]["matchExpressions"][0]["operator"], "DoesNotExist",
        "{one}"
    );

    // Bad input: an unknown metric is a 404, a malformed selector a 400 naming its parameter.
    let unknown = raw(&format!("{base}/namespaces/default/pods/*/nonexistent"));
    let unknown = unknown.failure();
    assert!(
        unknown.contains("NotFound")
            && unknown.contains("could not find the metric nonexistent for pods"),
        "{unknown}"
    );
    let malformed = raw(&format!(
        "{base}/namespaces/default/pods/*/queue_depth?labelSelector=app+in+%28web"
    ));
    let malformed = malformed.failure();
    assert!(
        malformed.contains("BadRequest") && malformed.contains("labelSelector \"app in (web\""),
        "{malformed}"
    );
}
