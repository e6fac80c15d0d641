//! Clusters end to end: a control plane, two member API servers (plain `karmada apiserver` processes),
//! `karmada controller-manager`, and `karmadactl join|get|cordon|taint|unjoin` as a user runs them; a member
//! stopped and restarted on the same port for the health path; bad input leaving nothing behind.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use test_fixtures::free_port;

use crate::harness::{
    Owned, Run, Server, bin, cluster_json, field_managers, ready_status, wait_within,
};

const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `check` until it returns `Some`, failing with `what` and the last observation after the deadline.
#[track_caller]
fn wait_for<T>(what: &str, check: impl FnMut() -> Result<T, String>) -> T {
    wait_within(DEADLINE, what, check)
}

/// A member cluster: a `karmada apiserver` on a fixed port, so that it can be stopped and started again at the
/// endpoint the Cluster records.
struct Member {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Member {
    fn start() -> Member {
        let mut m = Member {
            dir: tempfile::tempdir().expect("tempdir"),
            port: free_port(),
            child: None,
        };
        m.up();
        m
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir
            .path()
            .join("data")
            .join("karmada-apiserver.config")
    }

    fn up(&mut self) {
        let _ = std::fs::remove_file(self.kubeconfig());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("member.log"))
            .expect("log");
        let child = Command::new(bin("karmada"))
            .args([
                "apiserver",
                "--exit-with-stdin",
                "--secure-port",
                &self.port.to_string(),
                "--data-dir",
            ])
            .arg(self.dir.path().join("data"))
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn member apiserver");
        self.child = Some(child);
        let kubeconfig = self.kubeconfig();
        wait_for("member apiserver ready", || {
            if !kubeconfig.exists() {
                return Err("no kubeconfig yet".into());
            }
            let out = Run::from(
                Command::new("kubectl")
                    .arg("--kubeconfig")
                    .arg(&kubeconfig)
                    .args(["get", "--raw", "/readyz"])
                    .output()
                    .expect("kubectl"),
            );
            if out.ok() { Ok(()) } else { Err(out.stderr) }
        });
    }

    fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.down();
    }
}

/// `karmada controller-manager` with small periods and thresholds.
struct ControllerManager {
    _process: Owned,
    log: PathBuf,
}

impl ControllerManager {
    fn start(karmada: &Server) -> ControllerManager {
        let log = karmada.dir.path().join("controller-manager.log");
        let file = std::fs::File::create(&log).expect("log");
        let child = Command::new(bin("karmada"))
            .arg("controller-manager")
            .arg("--kubeconfig")
            .arg(&karmada.kubeconfig)
            .args([
                "--cluster-status-update-frequency",
                "1s",
                "--cluster-failure-threshold",
                "1s",
                "--cluster-success-threshold",
                "1s",
                "--cluster-monitor-period",
                "300ms",
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--exit-with-stdin",
            ])
            .stdin(Stdio::piped())
            .stdout(file.try_clone().expect("log"))
            .stderr(file)
            .spawn()
            .expect("spawn controller-manager");
        ControllerManager {
            _process: Owned(child),
            log,
        }
    }

    fn log(&self) -> String {
        let mut s = String::new();
        let _ = std::fs::File::open(&self.log).and_then(|mut f| f.read_to_string(&mut s));
        s
    }

    /// GET /metrics, at the address the controller-manager logged (it binds port 0).
    fn metrics(&self) -> Result<String, String> {
        crate::harness::metrics_from_log(&self.log())
    }
}

fn karmadactl(karmada: &Server, args: &[&str]) -> Run {
    Run::from(
        Command::new(bin("karmadactl"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&karmada.kubeconfig)
            .output()
            .expect("run karmadactl"),
    )
}

fn join(karmada: &Server, name: &str, member: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "join",
        name,
        "--cluster-kubeconfig",
        member.to_str().expect("utf8"),
    ];
    args.extend_from_slice(extra);
    karmadactl(karmada, &args)
}

fn taint_keys(cluster: &serde_json::Value) -> Vec<String> {
    cluster["spec"]["taints"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["key"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn row_of<'a>(rows: &'a [Vec<String>], name: &str) -> Option<&'a Vec<String>> {
    rows.iter()
        .find(|r| r.first().map(String::as_str) == Some(name))
}

#[test]
fn join_health_cordon_taint_and_unjoin() {
    let karmada = Server::start();
    let mut member1 = Member::start();
    let member2 = Member::start();
    let cm = ControllerManager::start(&karmada);

    let out = join(
        &karmada,
        "member1",
        &member1.kubeconfig(),
        &["--cluster-region", "eu", "--cluster-zones", "z1,z2"],
    );
    assert!(
        out.success()
            .contains("cluster(member1) is joined successfully"),
        "{}",
        out.stdout
    );
    // --cluster-namespace puts the credentials elsewhere, in the control plane and in the member.
    join(
        &karmada,
        "member2",
        &member2.kubeconfig(),
        &["--cluster-namespace", "member-creds"],
    )
    .success();
    let secret_ref =
        cluster_json(&karmada, "member2").expect("member2")["spec"]["secretRef"].clone();
    assert_eq!(
        secret_ref,
        serde_json::json!({"namespace": "member-creds", "name": "member2"})
    );
    karmada
        .kubectl(&["get", "secret", "-n", "member-creds", "member2"])
        .success();
    // karmadactl names itself, so the Cluster it created is recorded under its field manager.
    let cluster = karmada
        .kubectl(&[
            "get",
            "cluster",
            "member2",
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .json();
    let managers = field_managers(&cluster);
    assert!(
        managers.iter().any(|(manager, _)| manager == "karmadactl"),
        "{managers:?}"
    );
    let member2_sa = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(member2.kubeconfig())
        .args([
            "get",
            "serviceaccount",
            "-n",
            "member-creds",
            "karmada-member2",
        ])
        .output()
        .expect("kubectl");
    assert!(member2_sa.status.success(), "{member2_sa:?}");
    let bad_namespace = join(
        &karmada,
        "member3",
        &member2.kubeconfig(),
        &["--cluster-namespace", "Not_A_Namespace"],
    );
    assert!(
        bad_namespace
            .failure()
            .contains("RFC 1123 label such as karmada-cluster"),
        "{}",
        bad_namespace.stderr
    );

    // The member got its ServiceAccount and RBAC; the control plane its Secret and Cluster.
    let member1_kubeconfig = member1.kubeconfig();
    let member_kubectl = |args: &[&str]| {
        Run::from(
            Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&member1_kubeconfig)
                .args(args)
                .output()
                .expect("kubectl"),
        )
    };
    member_kubectl(&[
        "get",
        "serviceaccount",
        "-n",
        "karmada-cluster",
        "karmada-member1",
    ])
    .success();
    member_kubectl(&[
        "get",
        "clusterrolebinding",
        "karmada-controller-manager:karmada-member1",
    ])
    .success();
    // As Karmada: the control plane's Secret holds the CA and a token of that ServiceAccount, which the member
    // issued into a token Secret of the same name; the member authenticates it as the ServiceAccount.
    let stored = karmada
        .kubectl(&[
            "get",
            "secret",
            "-n",
            "karmada-cluster",
            "member1",
            "-o",
            "json",
        ])
        .json();
    let keys: Vec<&String> = stored["data"].as_object().expect("data").keys().collect();
    assert_eq!(keys, ["caBundle", "token"], "{stored}");
    let token = String::from_utf8(
        base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            stored["data"]["token"].as_str().expect("token"),
        )
        .expect("base64"),
    )
    .expect("utf-8");
    member_kubectl(&["get", "secret", "-n", "karmada-cluster", "karmada-member1"]).success();
    member_kubectl(&["config", "set-credentials", "joined", "--token", &token]).success();
    let whoami = member_kubectl(&["--user=joined", "auth", "whoami"])
        .success()
        .to_string();
    assert!(
        whoami.contains("system:serviceaccount:karmada-cluster:karmada-member1"),
        "{whoami}"
    );
    let c = cluster_json(&karmada, "member1").expect("cluster");
    assert_eq!(c["spec"]["syncMode"], "Push");
    assert_eq!(c["spec"]["region"], "eu");
    assert_eq!(c["spec"]["zones"], serde_json::json!(["z1", "z2"]));
    assert!(
        !c["spec"]["id"].as_str().unwrap_or("").is_empty(),
        "id is the member's kube-system uid: {c}"
    );

    // Both become Ready; the controller adds the finalizer and the execution namespace.
    for name in ["member1", "member2"] {
        wait_for(
            &format!("{name} Ready with version and no health taint"),
            || {
                let c = cluster_json(&karmada, name)?;
                let ready = ready_status(&c);
                let version = c["status"]["kubernetesVersion"].as_str().unwrap_or("");
                if ready.0 == "True" && !version.is_empty() && taint_keys(&c).is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "{ready:?} version {version:?} taints {:?}\n{}",
                        taint_keys(&c),
                        cm.log()
                    ))
                }
            },
        );
        let ns = karmada
            .kubectl(&["get", "ns", &format!("karmada-es-{name}"), "-o", "json"])
            .json();
        assert_eq!(ns["metadata"]["labels"]["karmada.io/system"], "true");
        let c = cluster_json(&karmada, name).expect("cluster");
        assert!(
            c["metadata"]["finalizers"]
                .to_string()
                .contains("karmada.io/cluster-controller"),
            "{c}"
        );
        assert!(
            c["metadata"]["annotations"]["cluster.karmada.io/api-latency"]
                .as_str()
                .is_some_and(|v| v.ends_with("ms")),
            "{c}"
        );
        assert!(
            c["status"]["nodeSummary"]["totalNum"].as_i64().is_some(),
            "{c}"
        );
        let complete = c["status"]["conditions"].to_string();
        assert!(complete.contains("CompleteAPIEnablements"), "{complete}");
    }

    // The cluster gauges are on /metrics.
    wait_for("cluster gauges", || {
        let body = cm.metrics()?;
        let want = [
            "karmada_cluster_ready{cluster_name=\"member1\"} 1",
            "cluster_ready_state{member_cluster=\"member2\"} 1",
            "cluster_node_number{member_cluster=\"member1\"}",
        ];
        if want.iter().all(|w| body.contains(w)) {
            Ok(())
        } else {
            Err(body)
        }
    });

    // karmadactl and kubectl print the same table.
    for out in [
        karmadactl(&karmada, &["get", "clusters"])
            .success()
            .to_string(),
        karmada.kubectl(&["get", "clusters"]).success().to_string(),
    ] {
        let rows = crate::harness::rows(&out);
        assert_eq!(
            rows[0],
            vec!["NAME", "VERSION", "MODE", "READY", "AGE"],
            "{out}"
        );
        for name in ["member1", "member2"] {
            let row = row_of(&rows, name).unwrap_or_else(|| panic!("{name} missing:\n{out}"));
            assert!(row[1].starts_with('v'), "{out}");
            assert_eq!(&row[2..4], ["Push", "True"], "{out}");
        }
    }
    let karmadactl_out = karmadactl(&karmada, &["get", "clusters", "-o", "wide"])
        .success()
        .to_string();
    assert!(
        karmadactl_out
            .lines()
            .next()
            .unwrap_or("")
            .contains("API-ENDPOINT"),
        "{karmadactl_out}"
    );
    let as_json: serde_json::Value =
        serde_json::from_str(karmadactl(&karmada, &["get", "clusters", "-o", "json"]).success())
            .expect("json");
    assert_eq!(as_json["items"].as_array().map(Vec::len), Some(2));

    // cordon / uncordon / taint.
    assert!(
        karmadactl(&karmada, &["cordon", "member2"])
            .success()
            .contains("cluster/member2 cordoned")
    );
    assert_eq!(
        taint_keys(&cluster_json(&karmada, "member2").expect("c")),
        vec!["cluster.karmada.io/unschedulable"]
    );
    karmadactl(&karmada, &["uncordon", "member2"]).success();
    karmadactl(&karmada, &["taint", "member2", "dedicated=gpu:NoSchedule"]).success();
    assert_eq!(
        taint_keys(&cluster_json(&karmada, "member2").expect("c")),
        vec!["dedicated"]
    );
    let bad = karmadactl(&karmada, &["taint", "member2", "dedicated=gpu"]);
    assert!(
        bad.failure().contains("KEY[=VALUE]:EFFECT"),
        "{}",
        bad.stderr
    );
    karmadactl(&karmada, &["taint", "member2", "dedicated:NoSchedule-"]).success();
    assert!(taint_keys(&cluster_json(&karmada, "member2").expect("c")).is_empty());

    // Stop member1: Ready turns False and the unreachable taint appears; start it again: Ready, no taint.
    member1.down();
    wait_for("member1 not ready and tainted unreachable", || {
        let c = cluster_json(&karmada, "member1")?;
        let ready = ready_status(&c);
        if ready == ("False".into(), "ClusterNotReachable".into())
            && taint_keys(&c) == ["cluster.karmada.io/unreachable"]
        {
            Ok(())
        } else {
            Err(format!("{ready:?} taints {:?}", taint_keys(&c)))
        }
    });
    member1.up();
    wait_for("member1 ready again without taints", || {
        let c = cluster_json(&karmada, "member1")?;
        let ready = ready_status(&c);
        if ready.0 == "True" && taint_keys(&c).is_empty() {
            Ok(())
        } else {
            Err(format!("{ready:?} {:?}", taint_keys(&c)))
        }
    });

    // --dry-run names what unjoin would delete, and deletes none of it.
    let dry = karmadactl(
        &karmada,
        &[
            "unjoin",
            "member1",
            "--dry-run",
            "--cluster-kubeconfig",
            member1_kubeconfig.to_str().expect("utf-8 path"),
        ],
    );
    let planned = dry.success().to_string();
    for line in [
        "would delete cluster member1 in karmada",
        "would delete secret karmada-cluster/member1 in karmada",
        "would delete serviceaccount karmada-cluster/karmada-member1 in the member cluster",
        "would delete namespace karmada-cluster in the member cluster",
    ] {
        assert!(planned.contains(line), "{line:?} missing from:\n{planned}");
    }
    karmada.kubectl(&["get", "cluster", "member1"]).success();
    karmada
        .kubectl(&["get", "secret", "-n", "karmada-cluster", "member1"])
        .success();
    member_kubectl(&["get", "namespace", "karmada-cluster"]).success();

    // unjoin removes the Cluster, its Secret and its execution namespace; given the member's kubeconfig, also what
    // join created there, so the token it stored stops working.
    let out = karmadactl(
        &karmada,
        &[
            "unjoin",
            "member1",
            "--wait",
            "--cluster-kubeconfig",
            member1_kubeconfig.to_str().expect("utf-8 path"),
        ],
    );
    assert!(
        out.success().contains("unjoined successfully"),
        "{}\n{}",
        out.stdout,
        cm.log()
    );
    assert!(!karmada.kubectl(&["get", "cluster", "member1"]).ok());
    assert!(
        !karmada
            .kubectl(&["get", "secret", "-n", "karmada-cluster", "member1"])
            .ok()
    );
    assert!(!karmada.kubectl(&["get", "ns", "karmada-es-member1"]).ok());
    karmada.kubectl(&["get", "cluster", "member2"]).success();
    for gone in [
        &[
            "get",
            "clusterrolebinding",
            "karmada-controller-manager:karmada-member1",
        ][..],
        &[
            "get",
            "clusterrole",
            "karmada-controller-manager:karmada-member1",
        ],
        &[
            "get",
            "serviceaccount",
            "-n",
            "karmada-cluster",
            "karmada-member1",
        ],
    ] {
        assert!(!member_kubectl(gone).ok(), "{gone:?} still in the member");
    }
    // (The member's restart above rewrote its kubeconfig.)
    member_kubectl(&["config", "set-credentials", "joined", "--token", &token]).success();
    let revoked = member_kubectl(&["--user=joined", "get", "namespaces"])
        .failure()
        .to_string();
    assert!(revoked.contains("Unauthorized"), "{revoked}");
}

#[test]
fn bad_join_input_gets_clear_errors_and_leaves_nothing_behind() {
    let karmada = Server::start();
    let member = Member::start();

    let invalid = join(&karmada, "Member_1", &member.kubeconfig(), &[]);
    assert!(
        invalid
            .failure()
            .contains("invalid cluster name \"Member_1\""),
        "{}",
        invalid.stderr
    );
    let long = "a".repeat(49);
    assert!(
        join(&karmada, &long, &member.kubeconfig(), &[])
            .failure()
            .contains("at most 48 characters")
    );

    let malformed = karmada.file("malformed.config", "clusters: [this is: not a kubeconfig");
    let out = join(&karmada, "m1", &malformed, &[]);
    assert!(
        out.failure()
            .contains(&format!("cluster kubeconfig {}", malformed.display())),
        "{}",
        out.stderr
    );

    // A kubeconfig whose server nothing listens on.
    let text = std::fs::read_to_string(member.kubeconfig()).expect("read");
    let dead = format!("127.0.0.1:{}", free_port());
    let unreachable = karmada.file(
        "unreachable.config",
        &text.replace(&format!("127.0.0.1:{}", member.port), &dead),
    );
    let out = join(&karmada, "m1", &unreachable, &[]);
    let err = out.failure();
    assert!(
        err.contains("cannot reach the member cluster") && err.contains(&dead),
        "{err}"
    );

    join(&karmada, "m1", &member.kubeconfig(), &[]).success();
    let dup = join(&karmada, "m1", &member.kubeconfig(), &[]);
    assert!(
        dup.failure().contains("cluster \"m1\" already exists"),
        "{}",
        dup.stderr
    );

    // A failure after the first write rolls back: a Secret in the way makes the join fail after the
    // member's ServiceAccount was created, and that ServiceAccount is removed again.
    karmada
        .kubectl(&[
            "create",
            "secret",
            "generic",
            "m2",
            "-n",
            "karmada-cluster",
            "--from-literal=k=v",
        ])
        .success();
    let blocked = join(&karmada, "m2", &member.kubeconfig(), &[]);
    let err = blocked.failure();
    assert!(err.contains("everything it created was removed"), "{err}");
    let member_sa = Run::from(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(member.kubeconfig())
            .args([
                "get",
                "serviceaccount",
                "-n",
                "karmada-cluster",
                "karmada-m2",
            ])
            .output()
            .expect("kubectl"),
    );
    assert!(
        !member_sa.ok(),
        "the ServiceAccount was rolled back: {}",
        member_sa.stdout
    );
    karmada
        .kubectl(&["delete", "secret", "m2", "-n", "karmada-cluster"])
        .success();

    // Only the one successful join left anything: one Cluster, one Secret.
    let clusters = karmada.kubectl(&["get", "clusters", "-o", "json"]).json();
    let names: Vec<&str> = clusters["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, vec!["m1"]);
    let secrets = karmada
        .kubectl(&["get", "secrets", "-n", "karmada-cluster", "-o", "json"])
        .json();
    let secret_names: Vec<&str> = secrets["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|s| s["metadata"]["name"].as_str())
        .collect();
    assert_eq!(secret_names, vec!["m1"]);
}
