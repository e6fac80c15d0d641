//! `karmadactl local-up` / `local-down` as a user runs them: a control plane and three member-sims in a
//! temporary directory, Ready through the controller-manager, one kubeconfig with four contexts; a second
//! local-up changes nothing; local-down stops every process. On the same setup, the member view of
//! `karmadactl get -C`, `promote` and `describe`.
//!
//! Every component local-up starts gets `--exit-with-stdin` and the read end of a pipe this test holds, so
//! nothing outlives the test even if it panics before `local-down` (which the guard also runs).

use std::io::PipeWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use test_fixtures::free_port;

use crate::harness::{Run, bin, rows, wait_within};

const DEADLINE: Duration = Duration::from_secs(60);

/// A local-up data directory; dropping it runs local-down and closes the components' stdin.
pub(crate) struct Local {
    _tmp: tempfile::TempDir,
    pub(crate) data: PathBuf,
    port: u16,
    stdin: Option<PipeWriter>,
    reader: std::io::PipeReader,
}

impl Local {
    pub(crate) fn new() -> Local {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data = tmp.path().join("karmada");
        let (reader, writer) = std::io::pipe().expect("pipe");
        Local {
            _tmp: tmp,
            data,
            port: free_port(),
            stdin: Some(writer),
            reader,
        }
    }

    pub(crate) fn kubeconfig(&self) -> PathBuf {
        self.data.join("karmada-apiserver.config")
    }

    /// karmadactl with the held pipe as stdin.
    pub(crate) fn karmadactl(&self, args: &[&str]) -> Run {
        Run::from(
            Command::new(bin("karmadactl"))
                .args(args)
                .stdin(Stdio::from(self.reader.try_clone().expect("pipe")))
                .output()
                .expect("run karmadactl"),
        )
    }

    fn local_up(&self) -> Run {
        self.local_up_with(&[])
    }

    pub(crate) fn local_up_with(&self, extra: &[&str]) -> Run {
        let data = self.data.to_str().expect("utf8").to_string();
        let port = self.port.to_string();
        let mut args = vec![
            "local-up",
            "--karmada-data",
            &data,
            "--port",
            &port,
            "--member-port",
            "0",
            "--wait-timeout",
            "90",
            "--exit-with-stdin",
        ];
        args.extend_from_slice(extra);
        self.karmadactl(&args)
    }

    pub(crate) fn kubectl(&self, args: &[&str]) -> Run {
        Run::from(
            Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(self.kubeconfig())
                .arg("--cache-dir")
                .arg(self.data.join("kubectl-cache"))
                .args(args)
                .output()
                .expect("kubectl"),
        )
    }

    /// karmadactl against the control plane (the merged kubeconfig's current context).
    fn ctl(&self, args: &[&str]) -> Run {
        let mut all: Vec<&str> = args.to_vec();
        let kc = self.kubeconfig();
        all.extend(["--kubeconfig", kc.to_str().expect("utf8")]);
        self.karmadactl(&all)
    }

    /// Pids of every pid file local-up wrote: the components' in the data directory and the Pull member's
    /// agent under agents/.
    fn pids(&self) -> Vec<(String, i32)> {
        let read = |dir: &Path| -> Vec<(String, i32)> {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let component = name.strip_suffix(".pid")?.to_string();
                    let pid = std::fs::read_to_string(e.path())
                        .ok()?
                        .trim()
                        .parse()
                        .ok()?;
                    Some((component, pid))
                })
                .collect()
        };
        let mut pids = read(&self.data);
        pids.extend(read(&self.data.join("agents").join("member3")));
        pids.sort();
        pids
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let data = self.data.to_str().unwrap_or_default().to_string();
        let _ = self.karmadactl(&["local-down", "--karmada-data", &data]);
        self.stdin.take();
    }
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

/// Runs local-down and waits until every process in `pids` has exited.
fn local_down_stops(local: &Local, data: &str, pids: &[(String, i32)]) {
    let down = local.karmadactl(&["local-down", "--karmada-data", data]);
    assert!(
        down.success().contains("stopped karmada-apiserver"),
        "{}",
        down.stdout
    );
    wait_for("every component to exit", || {
        let running: Vec<&(String, i32)> = pids.iter().filter(|(_, pid)| alive(*pid)).collect();
        if running.is_empty() {
            Ok(())
        } else {
            Err(format!("{running:?}"))
        }
    });
}

#[track_caller]
fn wait_for<T>(what: &str, check: impl FnMut() -> Result<T, String>) -> T {
    wait_within(DEADLINE, what, check)
}

const DEPLOYMENT: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "legacy", "namespace": "default", "labels": {"app": "legacy"}},
  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "legacy"}},
    "template": {"metadata": {"labels": {"app": "legacy"}},
      "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}"#;

#[test]
fn local_up_is_ready_idempotent_and_local_down_stops_everything() {
    let local = Local::new();
    let out = local.local_up();
    let stdout = out.success().to_string();
    for want in [
        "[7/7] waiting for the member clusters to be Ready",
        "member1 Ready",
        "member2 Ready",
        "member3 Ready",
        "Local Karmada is up",
    ] {
        assert!(stdout.contains(want), "missing {want:?}:\n{stdout}");
    }
    // The dashboard is up and its URL printed.
    let dashboard = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Dashboard: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no dashboard URL:\n{stdout}"));
    let health = std::process::Command::new("curl")
        .args(["-sk", &format!("{dashboard}healthz")])
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&health.stdout), "ok", "{dashboard}");

    // One kubeconfig, four contexts; each member answers through it.
    let contexts = local.kubectl(&["config", "get-contexts", "-o", "name"]);
    let mut names: Vec<&str> = contexts.success().lines().collect();
    names.sort();
    assert_eq!(
        names,
        ["karmada-apiserver", "member1", "member2", "member3"]
    );
    let nodes = local.kubectl(&["--context", "member1", "get", "nodes"]);
    assert!(
        nodes.success().contains("member1-node-0"),
        "{}",
        nodes.stdout
    );
    local
        .kubectl(&["--context", "member3", "get", "--raw", "/readyz"])
        .success();

    // karmadactl get clusters lists the three, Ready.
    let table = local.ctl(&["get", "clusters"]);
    let table = rows(table.success());
    assert_eq!(table[0], ["NAME", "VERSION", "MODE", "READY", "AGE"]);
    let listed: Vec<(&str, &str)> = table[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[3].as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("member1", "True"),
            ("member2", "True"),
            ("member3", "True")
        ]
    );

    // A second local-up starts nothing: same processes, everything reported as up.
    let before = local.pids();
    assert!(
        before
            .iter()
            .any(|(c, _)| c == "karmada-controller-manager")
            && before.iter().any(|(c, _)| c == "member-sim-member3"),
        "{before:?}"
    );
    let again = local.local_up();
    let again_out = again.success();
    assert!(
        again_out.contains("karmada-apiserver is already running")
            && again_out.contains("member2 is already running")
            && again_out.contains("member1 is already joined")
            && again_out.contains("member3 is already registered"),
        "{again_out}"
    );
    assert!(!again_out.contains(" started (pid"), "{again_out}");
    assert_eq!(local.pids(), before);

    // local-down stops every process and keeps the data.
    let data = local.data.to_str().expect("utf8").to_string();
    local_down_stops(&local, &data, &before);
    assert!(local.data.join("store.redb").is_file());
    let idle = local.karmadactl(&["local-down", "--karmada-data", &data]);
    assert!(
        idle.success().contains("nothing is running"),
        "{}",
        idle.stdout
    );
}

#[test]
fn local_up_all_in_one_runs_the_control_plane_as_one_process() {
    let local = Local::new();
    let data = local.data.to_str().expect("utf8").to_string();
    // The single process and the HA flags exclude each other, before anything starts.
    let refused = local.karmadactl(&[
        "init",
        "--all-in-one",
        "--karmada-apiserver-replicas",
        "2",
        "--karmada-data",
        &data,
    ]);
    let message = refused.failure().to_string();
    assert!(
        message.contains("--all-in-one") && message.contains("--karmada-apiserver-replicas"),
        "{message}"
    );
    assert!(local.pids().is_empty(), "{:?}", local.pids());

    let out = local.local_up_with(&["--all-in-one"]);
    let stdout = out.success().to_string();
    for want in [
        "inside karmada-apiserver (all-in-one)",
        "member1 Ready",
        "member2 Ready",
        "member3 Ready",
    ] {
        assert!(stdout.contains(want), "missing {want:?}:\n{stdout}");
    }
    let pids = local.pids();
    let control_plane: Vec<&str> = pids
        .iter()
        .map(|(c, _)| c.as_str())
        .filter(|c| {
            c.starts_with("karmada-") && !["karmada-agent", "karmada-dashboard"].contains(c)
        })
        .collect();
    assert_eq!(control_plane, ["karmada-apiserver"], "{pids:?}");
    let (_, apiserver) = pids
        .iter()
        .find(|(c, _)| c == "karmada-apiserver")
        .expect("apiserver pid");
    let cmdline = std::fs::read(format!("/proc/{apiserver}/cmdline")).expect("cmdline");
    assert!(
        String::from_utf8_lossy(&cmdline).contains("all-in-one"),
        "{cmdline:?}"
    );

    // Again, without the flag: the running all-in-one is recognised, nothing else starts.
    let again = local.local_up();
    let again_out = again.success();
    assert!(
        again_out.contains("inside karmada-apiserver (all-in-one)"),
        "{again_out}"
    );
    assert!(!again_out.contains(" started (pid"), "{again_out}");
    assert_eq!(local.pids(), pids);

    local_down_stops(&local, &data, &pids);
}

#[test]
fn member_view_promote_and_describe() {
    let local = Local::new();
    local.local_up().success();

    // An object that exists only in member1: the member view shows it with CLUSTER and ADOPTION N.
    let file = local.data.join("legacy.json");
    std::fs::write(&file, DEPLOYMENT).expect("write");
    local
        .kubectl(&[
            "--context",
            "member1",
            "apply",
            "-f",
            file.to_str().expect("utf8"),
        ])
        .success();
    let member_view = local.ctl(&["get", "deployments", "-C", "member1,member2"]);
    let table = rows(member_view.success());
    assert_eq!(table[0][..2], ["NAME", "CLUSTER"], "{table:?}");
    assert_eq!(table[0].last().map(String::as_str), Some("ADOPTION"));
    assert_eq!(table.len(), 2, "{table:?}");
    assert_eq!(table[1][..2], ["legacy", "member1"]);
    assert_eq!(table[1].last().map(String::as_str), Some("N"));
    // The control plane has no such Deployment.
    let karmada_view = local.ctl(&["get", "deploy", "legacy"]);
    assert!(
        karmada_view.failure().contains("not found"),
        "{}",
        karmada_view.stderr
    );
    let bad_scope = local.ctl(&[
        "get",
        "deploy",
        "--operation-scope",
        "karmada",
        "-C",
        "member1",
    ]);
    assert!(
        bad_scope.failure().contains("--operation-scope"),
        "{}",
        bad_scope.stderr
    );

    // promote: the template in the control plane, stripped, plus its policy targeting member1.
    let promoted = local.ctl(&[
        "promote",
        "deployment",
        "legacy",
        "-n",
        "default",
        "-C",
        "member1",
    ]);
    let out = promoted.success();
    assert!(
        out.contains("ResourceTemplate (default/legacy) is created successfully"),
        "{out}"
    );
    assert!(out.contains("PropagationPolicy (default/legacy-"), "{out}");
    let template = local
        .kubectl(&["get", "deployment", "legacy", "-o", "json"])
        .json();
    assert_eq!(
        template["metadata"]["annotations"]["work.karmada.io/conflict-resolution"],
        "overwrite"
    );
    assert_eq!(template["spec"]["replicas"], 2);
    let policies = local
        .kubectl(&["get", "propagationpolicies", "-o", "json"])
        .json();
    let policy = &policies["items"][0];
    assert!(
        policy["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("legacy-")),
        "{policies}"
    );
    assert_eq!(policy["spec"]["conflictResolution"], "Overwrite");
    assert_eq!(
        policy["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        serde_json::json!(["member1"])
    );
    let again = local.ctl(&[
        "promote",
        "deployment",
        "legacy",
        "-n",
        "default",
        "-C",
        "member1",
    ]);
    assert!(
        again.failure().contains("already exists in karmada"),
        "{}",
        again.stderr
    );

    // describe shows the template (and the binding once the propagation controllers claim it).
    let described = local.ctl(&["describe", "deployment", "legacy"]);
    let text = described.success();
    assert!(
        text.contains("Name:         legacy")
            && text.contains("replicas: 2")
            && text.contains("Events:"),
        "{text}"
    );

    // apply: the object server-side applied plus a policy per object, to the listed clusters.
    let manifest = local.data.join("web.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  k: v\n",
    )
    .expect("write");
    let applied = local.ctl(&[
        "apply",
        "-f",
        manifest.to_str().expect("utf8"),
        "-C",
        "member2,member3",
    ]);
    let out = applied.success();
    assert!(
        out.contains("configmap/web-config serverside-applied")
            && out.contains("propagationpolicy.policy.karmada.io/web-config-"),
        "{out}"
    );
    let cm = local
        .kubectl(&["get", "configmap", "web-config", "-o", "json"])
        .json();
    assert_eq!(cm["data"]["k"], "v");
    let policies = local
        .kubectl(&["get", "propagationpolicies", "-o", "json"])
        .json();
    let placement = policies["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| {
            p["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("web-config-"))
        })
        .map(|p| p["spec"]["placement"].clone());
    assert_eq!(
        placement,
        Some(serde_json::json!({"clusterAffinity": {"clusterNames": ["member2", "member3"]}})),
        "{policies}"
    );
    let neither = local.ctl(&["apply", "-f", manifest.to_str().expect("utf8")]);
    assert!(
        neither.failure().contains("--all-clusters"),
        "{}",
        neither.stderr
    );

    // all scope: the control plane's row is marked Karmada.
    let all = local.ctl(&[
        "get",
        "deploy",
        "legacy",
        "--operation-scope",
        "all",
        "-C",
        "member1",
    ]);
    let table = rows(all.success());
    let clusters: Vec<&str> = table[1..].iter().map(|r| r[1].as_str()).collect();
    assert!(
        clusters.contains(&"Karmada") && clusters.contains(&"member1"),
        "{table:?}"
    );
}

#[test]
fn clear_errors_for_a_taken_port_and_a_missing_binary() {
    let local = Local::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let data = local.data.to_str().expect("utf8").to_string();
    let out = local.karmadactl(&["local-up", "--karmada-data", &data, "--port", &port]);
    let err = out.failure();
    assert!(
        err.contains("already in use") && err.contains("--port"),
        "{err}"
    );
    assert!(local.pids().is_empty(), "{:?}", local.pids());

    let out = local.karmadactl(&[
        "local-up",
        "--karmada-data",
        &data,
        "--karmada-binary",
        "/nonexistent/karmada",
    ]);
    assert!(out.failure().contains("cargo build"), "{}", out.stderr);
}

#[test]
fn local_up_and_init_start_scheduler_estimators_the_scheduler_asks() {
    let local = Local::new();
    let data = local.data.to_str().expect("utf8").to_string();
    let out = local.local_up_with(&["--all-in-one", "--enable-scheduler-estimator"]);
    let stdout = out.success().to_string();
    assert!(stdout.contains("starting scheduler estimators"), "{stdout}");
    let estimators = |pids: &[(String, i32)]| -> Vec<String> {
        pids.iter()
            .map(|(c, _)| c.clone())
            .filter(|c| c.starts_with("karmada-scheduler-estimator-"))
            .collect()
    };
    let pids = local.pids();
    assert_eq!(
        estimators(&pids),
        [
            "karmada-scheduler-estimator-member1",
            "karmada-scheduler-estimator-member2",
            "karmada-scheduler-estimator-member3"
        ],
        "{pids:?}"
    );
    // Each publishes itself as Karmada's schedulers look for it.
    let service = local
        .kubectl(&[
            "get",
            "service",
            "-n",
            "karmada-system",
            "karmada-scheduler-estimator-member1",
            "-o",
            "json",
        ])
        .json();
    assert_eq!(service["spec"]["type"], "ExternalName", "{service}");
    assert_eq!(service["spec"]["ports"][0]["port"], 10352, "{service}");

    // The scheduler asks them: a divided workload's explanation carries each member's answer.
    let manifest = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
         "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}]}}}},
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "web", "namespace": "default"},
         "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                  "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}}}]});
    let file = local.data.join("web.json");
    std::fs::write(&file, manifest.to_string()).expect("manifest");
    local
        .kubectl(&["apply", "-f", file.to_str().expect("utf8")])
        .success();
    let explained = wait_for("the estimators' answers in the explanation", || {
        let out = local.kubectl(&["get", "resourcebinding", "web-deployment", "-o", "json"]);
        if !out.ok() {
            return Err(out.stderr);
        }
        let binding = out.json();
        let text = binding["metadata"]["annotations"]["scheduling.karmada.io/explanation"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let explanation: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        let answered = explanation["clusters"]
            .as_array()
            .map(|c| c.iter().filter(|d| d["accurateEstimate"].is_i64()).count())
            .unwrap_or(0);
        if answered == 3 {
            Ok(explanation)
        } else {
            Err(format!("{answered} answers: {explanation}"))
        }
    });
    assert!(explained["scheduled"] == true, "{explained}");
    // Each publishes its /metrics address beside its pid file (what `local-up --monitoring` scrapes), serving
    // Karmada's estimator metrics and the process's.
    for member in ["member1", "member2", "member3"] {
        let file = local
            .data
            .join(format!("karmada-scheduler-estimator-{member}.metrics"));
        let address =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let text = crate::harness::metrics_at(address.trim()).expect("estimator /metrics");
        assert!(
            text.contains(
                "karmada_scheduler_estimator_estimating_request_total{result=\"success\",type=\"MaxAvailableReplicas\"}"
            ),
            "{member}: {text}"
        );
        assert!(
            text.contains("process_cpu_seconds_total"),
            "{member}: {text}"
        );
    }

    // init --enable-scheduler-estimator starts what is missing, from the control plane's credentials for each
    // Push member: stop member1's estimator and ask init for them again.
    let (_, member1_estimator) = pids
        .iter()
        .find(|(c, _)| c == "karmada-scheduler-estimator-member1")
        .expect("pid");
    let killed = Command::new("kill")
        .arg(member1_estimator.to_string())
        .status()
        .expect("kill");
    assert!(killed.success());
    wait_for("member1's estimator stopped", || {
        if alive(*member1_estimator) {
            Err("still running".into())
        } else {
            Ok(())
        }
    });
    let port = local.port.to_string();
    let init = local.karmadactl(&[
        "init",
        "--karmada-data",
        &data,
        "--port",
        &port,
        "--enable-scheduler-estimator",
        "--exit-with-stdin",
    ]);
    let init_out = init.success().to_string();
    assert!(
        init_out.contains("karmada-scheduler-estimator-member1 started"),
        "{init_out}"
    );
    assert!(
        init_out.contains("karmada-scheduler-estimator-member2 is already running"),
        "{init_out}"
    );
    let restarted = local.pids();
    assert_eq!(estimators(&restarted).len(), 3, "{restarted:?}");

    local_down_stops(&local, &data, &restarted);
}
