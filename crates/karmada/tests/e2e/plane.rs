//! A whole local federation for end-to-end propagation tests: the Karmada API server, `karmada
//! controller-manager` and `karmada scheduler` with short periods, and member-sims joined in Push mode with
//! `karmadactl join`. Every process is started with `--exit-with-stdin` from a held pipe and killed on drop.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Owned, Run, Server, bin, spawn_logged, wait_within};

const DEADLINE: Duration = Duration::from_secs(90);

/// Polls `check` until it returns `Ok`, failing with `what` and the last observation after the deadline.
#[track_caller]
pub fn wait_for<T>(what: &str, check: impl FnMut() -> Result<T, String>) -> T {
    wait_within(DEADLINE, what, check)
}

/// The controller-manager's short periods (status every 1 s, failure after 2 s).
const COMPONENT_PERIODS: &[&str] = &[
    "--cluster-status-update-frequency",
    "1s",
    "--cluster-failure-threshold",
    "2s",
    "--cluster-success-threshold",
    "1s",
    "--cluster-monitor-period",
    "500ms",
];

/// Short leader-election periods, so a standby takes over within seconds.
const LEADER_PERIODS: &[&str] = &[
    "--leader-elect-lease-duration",
    "3s",
    "--leader-elect-renew-deadline",
    "2s",
    "--leader-elect-retry-period",
    "300ms",
];

pub struct Plane {
    pub karmada: Server,
    members_dir: PathBuf,
    members: Vec<(String, Owned)>,
    components: Vec<(&'static str, Owned)>,
    /// Members started so far: each gets its own pod range (10.100+N.0.0/16), as clusters of a clusterset have.
    started_members: u8,
}

impl Plane {
    /// The control plane and `members` (names) joined in Push mode, all Ready.
    pub fn start(members: &[&str]) -> Plane {
        Self::assemble(Server::start(), members, Some(&[]))
    }

    /// `karmada all-in-one` (the controllers and the scheduler inside the API server's process, with the same
    /// short periods as [`Plane::start`]) and `members` joined in Push mode, all Ready.
    pub fn start_all_in_one(members: &[&str]) -> Plane {
        let mut args = [COMPONENT_PERIODS, LEADER_PERIODS].concat();
        args.extend(["--metrics-bind-address", "127.0.0.1:0"]);
        Self::assemble(Server::start_all_in_one(&args), members, None)
    }

    /// The federation around an API server that is already running: components when asked for (the
    /// controller-manager with these extra arguments), then `members` started, joined and Ready.
    fn assemble(
        karmada: Server,
        members: &[&str],
        controller_manager_extra_args: Option<&[&str]>,
    ) -> Plane {
        let members_dir = karmada.dir.path().join("members");
        std::fs::create_dir_all(&members_dir).expect("members dir");
        let mut plane = Plane {
            karmada,
            members_dir,
            members: Vec::new(),
            components: Vec::new(),
            started_members: 0,
        };
        if let Some(extra) = controller_manager_extra_args {
            plane.start_components_with(extra);
        }
        for name in members {
            plane.add_member(name);
        }
        for name in members {
            plane.join(name);
        }
        for name in members {
            plane.wait_ready(name);
        }
        plane
    }

    fn start_components(&mut self) {
        self.start_components_with(&[]);
    }

    /// Kills and restarts the controller-manager and the scheduler (what they knew is rebuilt from the API).
    pub fn restart_components(&mut self) {
        self.components.clear();
        self.start_components();
    }

    /// Starts a member-sim named `name` (not joined).
    pub fn add_member(&mut self, name: &str) {
        let dir = self.members_dir.to_str().expect("utf8").to_string();
        let _ = std::fs::remove_file(self.member_kubeconfig(name));
        let pod_cidr = format!("10.{}.0.0/16", 100 + u16::from(self.started_members));
        self.started_members = self.started_members.wrapping_add(1) % 100;
        let child = spawn_logged(
            &bin("karmada"),
            &[
                "member-sim",
                "--name",
                name,
                "--data-dir",
                &dir,
                "--pod-startup-delay",
                "200ms",
                "--pod-cidr",
                &pod_cidr,
                "--exit-with-stdin",
            ],
            &self.members_dir.join(format!("{name}.log")),
        );
        self.members.push((name.to_string(), child));
        let kubeconfig = self.member_kubeconfig(name);
        wait_for(&format!("member-sim {name} kubeconfig"), || {
            if kubeconfig.exists() {
                Ok(())
            } else {
                Err("not written yet".into())
            }
        });
    }

    pub fn member_kubeconfig(&self, name: &str) -> PathBuf {
        self.members_dir.join(format!("{name}.config"))
    }

    /// The port member `name`'s DNS answers on (written beside its kubeconfig).
    pub fn dns_port(&self, name: &str) -> u16 {
        let path = self.members_dir.join(format!("{name}.dns-port"));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
            .trim()
            .parse()
            .expect("a port number")
    }

    pub fn join(&self, name: &str) {
        let kubeconfig = self.member_kubeconfig(name);
        self.karmadactl(&[
            "join",
            name,
            "--cluster-kubeconfig",
            kubeconfig.to_str().expect("utf8"),
        ])
        .success();
    }

    /// Waits until cluster `name` is Ready and schedulable: the cluster controller lifts the `not-ready` taint a
    /// write after the Ready condition, and a workload applied in between is placed without that member.
    pub fn wait_ready(&self, name: &str) {
        wait_for(&format!("cluster {name} Ready and untainted"), || {
            let cluster = self.object(&["cluster", name])?;
            let ready = cluster["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            let health_tainted = cluster["spec"]["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| {
                    t["key"] == "cluster.karmada.io/not-ready"
                        || t["key"] == "cluster.karmada.io/unreachable"
                });
            if ready && !health_tainted {
                Ok(())
            } else {
                Err(format!("{}\n{}", cluster["status"], cluster["spec"]))
            }
        });
    }

    pub fn karmadactl(&self, args: &[&str]) -> Run {
        Run::from(
            Command::new(bin("karmadactl"))
                .args(args)
                .arg("--kubeconfig")
                .arg(&self.karmada.kubeconfig)
                .output()
                .expect("run karmadactl"),
        )
    }

    /// kubectl against the control plane.
    pub fn kubectl(&self, args: &[&str]) -> Run {
        self.karmada.kubectl(args)
    }

    /// kubectl against member `name`.
    pub fn member_kubectl(&self, name: &str, args: &[&str]) -> Run {
        Run::from(
            Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(self.member_kubeconfig(name))
                .arg("--cache-dir")
                .arg(self.members_dir.join(format!("{name}-kubectl-cache")))
                .args(args)
                .output()
                .expect("run kubectl"),
        )
    }

    /// The object as JSON from member `name`, or the error text.
    pub fn member_object(&self, name: &str, args: &[&str]) -> Result<Value, String> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let out = self.member_kubectl(name, &all);
        if !out.ok() {
            return Err(out.stderr);
        }
        serde_json::from_str(&out.stdout).map_err(|e| e.to_string())
    }

    /// The object as JSON from the control plane, or the error text.
    pub fn object(&self, args: &[&str]) -> Result<Value, String> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let out = self.kubectl(&all);
        if !out.ok() {
            return Err(out.stderr);
        }
        serde_json::from_str(&out.stdout).map_err(|e| e.to_string())
    }

    /// Stops member `name`'s process (its API becomes unreachable).
    pub fn stop_member(&mut self, name: &str) {
        self.members.retain(|(n, _)| n != name);
    }

    /// The logs of the control-plane components, for failure messages.
    pub fn logs(&self) -> String {
        ["controller-manager.log", "scheduler.log", "server.log"]
            .iter()
            .map(|f| {
                let text =
                    std::fs::read_to_string(self.karmada.dir.path().join(f)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                format!(
                    "--- {f} (last lines) ---\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Plane {
    /// Like [`Plane::start`], with `controller_manager_extra_args` (e.g. `--enable-failover`) added to the
    /// controller-manager's arguments; [`Plane::restart_components_with`] restarts it with the same ones.
    pub fn start_with(members: &[&str], controller_manager_extra_args: &[&str]) -> Plane {
        Self::assemble(
            Server::start(),
            members,
            Some(controller_manager_extra_args),
        )
    }

    /// Kills and restarts the controller-manager (with `controller_manager_extra_args`) and the scheduler.
    pub fn restart_components_with(&mut self, controller_manager_extra_args: &[&str]) {
        self.components.clear();
        self.start_components_with(controller_manager_extra_args);
    }

    fn start_components_with(&mut self, extra: &[&str]) {
        let kubeconfig = self.karmada.kubeconfig.to_str().expect("utf8").to_string();
        let dir = self.karmada.dir.path().to_path_buf();
        let mut args = vec!["controller-manager", "--kubeconfig", &kubeconfig];
        args.extend_from_slice(COMPONENT_PERIODS);
        args.extend_from_slice(LEADER_PERIODS);
        args.extend(["--metrics-bind-address", "127.0.0.1:0", "--exit-with-stdin"]);
        args.extend_from_slice(extra);
        let cm = spawn_logged(&bin("karmada"), &args, &dir.join("controller-manager.log"));
        self.components.push(("controller-manager", cm));
        self.spawn_scheduler("scheduler.log");
    }

    /// Starts a `karmada scheduler` replica (short leader-election periods) logging to `log` in the test dir.
    fn spawn_scheduler(&mut self, log: &str) {
        self.spawn_scheduler_with(log, &[]);
    }

    /// Replaces the running scheduler(s) with one started with `extra` arguments (e.g. `--plugins=*,-X`).
    pub fn restart_scheduler_with(&mut self, extra: &[&str]) {
        self.components.retain(|(name, _)| *name != "scheduler");
        self.spawn_scheduler_with("scheduler.log", extra);
    }

    fn spawn_scheduler_with(&mut self, log: &str, extra: &[&str]) {
        let kubeconfig = self.karmada.kubeconfig.to_str().expect("utf8").to_string();
        let mut args = vec![
            "scheduler",
            "--kubeconfig",
            &kubeconfig,
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--exit-with-stdin",
        ];
        args.extend_from_slice(LEADER_PERIODS);
        args.extend_from_slice(extra);
        let scheduler = spawn_logged(&bin("karmada"), &args, &self.karmada.dir.path().join(log));
        self.components.push(("scheduler", scheduler));
    }

    /// `karmada member-sim fault` on member `member`, e.g. `&["unreachable"]`, `&["crash", "web"]`, `&["clear"]`.
    pub fn fault(&self, member: &str, args: &[&str]) {
        let out = Run::from(
            Command::new(bin("karmada"))
                .args(["member-sim", "fault", "--data-dir"])
                .arg(&self.members_dir)
                .args(["--name", member])
                .args(args)
                .output()
                .expect("run karmada member-sim fault"),
        );
        out.success();
    }
}

impl Plane {
    /// `karmada member-sim load` on member `member`, e.g. `&["--selector", "app=web", "--cpu", "400m"]`.
    pub fn load(&self, member: &str, args: &[&str]) {
        Run::from(
            Command::new(bin("karmada"))
                .args(["member-sim", "load", "--data-dir"])
                .arg(&self.members_dir)
                .args(["--name", member])
                .args(args)
                .output()
                .expect("run karmada member-sim load"),
        )
        .success();
    }

    /// Applies `manifest` (YAML) to the control plane, kept as `NAME.yaml` in the plane's directory.
    pub fn apply(&self, name: &str, manifest: &str) {
        let path = self.karmada.dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, manifest).expect("write manifest");
        self.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")])
            .success();
    }
}

impl Plane {
    /// Like [`Plane::start`], with extra `karmada apiserver` flags (e.g. `--token-auth-file`).
    pub fn start_with_server_args(members: &[&str], server_args: &[&str]) -> Plane {
        Self::assemble(Server::start_with(server_args), members, Some(&[]))
    }
}

impl Plane {
    /// Starts one more `karmada scheduler` (a standby replica under leader election).
    pub fn add_scheduler_replica(&mut self) {
        self.spawn_scheduler("scheduler-2.log");
    }

    /// Process ids of the running components named `name`.
    pub fn component_pids(&self, name: &str) -> Vec<u32> {
        self.components
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, p)| p.0.id())
            .collect()
    }

    /// SIGKILLs the component with process id `pid`.
    pub fn kill_component(&mut self, pid: u32) {
        self.components.retain(|(_, p)| p.0.id() != pid);
    }
}

/// A Deployment `web` in `default` (`replicas` replicas, each requesting `cpu` and 64Mi when `cpu` is set) and a
/// PropagationPolicy placing it on `clusters`, divided evenly by static weights when `divided`: the workload the
/// autoscaling and metrics suites share. Ends with a newline, ready for more `---` documents.
pub fn web_workload(replicas: u32, cpu: Option<&str>, clusters: &[&str], divided: bool) -> String {
    let resources = cpu.map_or(String::new(), |cpu| {
        format!("        resources:\n          requests: {{cpu: {cpu}, memory: 64Mi}}\n")
    });
    let scheduling = if divided {
        let weights: String = clusters
            .iter()
            .map(|c| {
                format!("        - targetCluster: {{clusterNames: [{c}]}}\n          weight: 1\n")
            })
            .collect();
        format!(
            "    replicaScheduling:\n      replicaSchedulingType: Divided\n      replicaDivisionPreference: Weighted\n      weightPreference:\n        staticWeightList:\n{weights}"
        )
    } else {
        String::new()
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: main\n        image: nginx:1.25\n{resources}---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: web\n  namespace: default\nspec:\n  resourceSelectors:\n  - apiVersion: apps/v1\n    kind: Deployment\n    name: web\n  placement:\n    clusterAffinity:\n      clusterNames: [{}]\n{scheduling}",
        clusters.join(", ")
    )
}
