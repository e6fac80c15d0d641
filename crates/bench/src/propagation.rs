//! Propagation benchmark: distribution latency (template submitted → object created in the member), end-to-end
//! throughput and control-plane memory per 1,000 workloads, over N member-sims in Push or Pull mode.
//!
//! It runs the real processes: `karmada apiserver` (embedded store), `karmada controller-manager`, `karmada
//! scheduler`, one `karmada member-sim --count N` process, and `karmadactl join` for each member. One
//! PropagationPolicy selects every Deployment labelled `bench=propagation` and duplicates it to every member.
//! Phase 1 creates Deployments at a steady rate and measures, per (Deployment, member), the time from the create
//! being acknowledged to the member's watch seeing the object; a second batch at the same rate follows. Phase 2
//! creates as many again as fast as 32 clients can and measures how long until all are in every member. RSS is
//! the sum over the control-plane processes, read after the clusters are Ready and after each batch (the first
//! fills the API server's bounded caches; the next two give the marginal cost, paced and in a burst). Phase 3
//! times the scheduler stage alone: a fresh scheduler process facing as many pending ResourceBindings again,
//! with the controller-manager paused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::watcher;
use tokio::sync::Mutex;

use crate::api_requests::RequestCounts;
use crate::process::{
    ApiServer, Launcher, LogDir, MemberSim, Process, bench_log_level, join_push, karmada_binary,
    start_apiserver, start_apiserver_as, start_component, start_member_sim, start_scheduler,
    wait_clusters_ready,
};
use crate::report::{self, Row};
use crate::stats::{Samples, ms};
use crate::store_latency::StoreWrites;
use crate::workload_kind::WorkloadKind;

#[derive(clap::Args)]
pub struct Args {
    /// Member counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "3,10")]
    pub members: Vec<u32>,
    /// How members are connected: push (karmadactl join) and/or pull (karmadactl register + an agent each).
    #[arg(long, value_delimiter = ',', default_value = "push,pull")]
    pub modes: Vec<Mode>,
    /// Deployments per phase.
    #[arg(long, default_value_t = 1000)]
    pub workloads: u32,
    /// Creation rate of the latency phase (Deployments per second), one per member count in `--members` order
    /// (a single value applies to all). Latency means something only below the end-to-end throughput: above it
    /// the measurement is the backlog's length.
    #[arg(long, value_delimiter = ',', default_value = "20,8")]
    pub rate: Vec<u32>,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// The server binary (default: `karmada` beside this one); `karmadactl` is looked up beside it.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
    /// How the control plane runs: three processes (API server, controller-manager, scheduler, as Karmada) or
    /// `karmada all-in-one`. The all-in-one figures go to their own section of the report.
    #[arg(long, value_enum, default_value_t = Layout::Processes)]
    pub layout: Layout,
    /// What is propagated: Deployments (native interpreter) or OpenKruise CloneSets (a CRD, through the bundled
    /// Lua customization); CloneSet figures go to their own section of the report.
    #[arg(long, value_enum, default_value_t = WorkloadKind::Deployment)]
    pub kind: WorkloadKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    Processes,
    AllInOne,
}

const READY_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Push,
    Pull,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Push => "Push",
            Mode::Pull => "Pull",
        }
    }
}
pub(crate) const LABEL: (&str, &str) = ("bench", "propagation");

/// A component process and the name its log and RSS are reported under.
pub(crate) struct Proc {
    pub(crate) process: Process,
    name: String,
}

impl Proc {
    fn new(process: Process, name: &str) -> Proc {
        Proc {
            process,
            name: name.to_string(),
        }
    }

    fn rss_mib(&self) -> f64 {
        self.process.rss_mib()
    }
}

/// The federation under test.
pub(crate) struct Federation {
    layout: Layout,
    control_plane: Vec<Proc>,
    pub(crate) members: Proc,
    karmadactl: PathBuf,
    /// The API server's data directory, where `register` records the agents it started.
    data: PathBuf,
    pub(crate) karmada: Client,
    pub(crate) member_clients: Vec<(String, Client)>,
    launcher: Launcher,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

/// The controller-manager with the cluster status period `status_period` (`2s` here, Karmada's default `10s` in
/// the scale benchmark), signing the Pull agents' client certificates with the API server's CA.
/// `extra` flags are added as given.
fn start_controller_manager(
    launcher: &Launcher,
    data: &Path,
    kubeconfig: &Path,
    status_period: &str,
    extra: &[&str],
) -> anyhow::Result<Process> {
    let pki = data.join("pki");
    let ca_cert = pki.join("ca.crt").to_string_lossy().to_string();
    let ca_key = pki.join("ca.key").to_string_lossy().to_string();
    let mut flags = vec![
        "--cluster-status-update-frequency",
        status_period,
        "--cluster-success-threshold",
        "1s",
        "--cluster-signing-cert-file",
        &ca_cert,
        "--cluster-signing-key-file",
        &ca_key,
    ];
    flags.extend_from_slice(extra);
    start_component(
        launcher,
        "controller-manager",
        kubeconfig,
        "127.0.0.1:0",
        &flags,
    )
}

/// The arguments of the `karmadactl register` command that `karmadactl token create` prints.
async fn register_command(karmadactl: &Path, kubeconfig: &Path) -> anyhow::Result<Vec<String>> {
    let out = tokio::process::Command::new(karmadactl)
        .args([
            "token",
            "create",
            "--print-register-command",
            "--kubeconfig",
        ])
        .arg(kubeconfig)
        .output()
        .await
        .with_context(|| format!("running {}", karmadactl.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("karmadactl register "))
        .with_context(|| format!("token create printed no register command: {text}"))?;
    Ok(line
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect())
}

/// Registers one member in Pull mode; `register` starts its agent.
async fn join_pull(
    launcher: &Launcher,
    register: &[String],
    name: &str,
    data: &Path,
    member_kubeconfig: &Path,
) -> anyhow::Result<()> {
    let karmadactl = launcher.karmadactl();
    let out = tokio::process::Command::new(&karmadactl)
        .args(register)
        .args(["--cluster-name", name, "--karmada-data"])
        .arg(data)
        .arg("--cluster-kubeconfig")
        .arg(member_kubeconfig)
        .arg("--karmada-binary")
        .arg(launcher.binary())
        .output()
        .await
        .with_context(|| format!("running {}", karmadactl.display()))?;
    if !out.status.success() {
        bail!("register {name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Connects every member: `karmadactl join` (Push) or `karmadactl register` (Pull).
async fn connect_members(
    launcher: &Launcher,
    apiserver: &ApiServer,
    sim: &MemberSim,
    mode: Mode,
) -> anyhow::Result<()> {
    let register = match mode {
        Mode::Push => None,
        Mode::Pull => Some(register_command(&launcher.karmadactl(), &apiserver.kubeconfig).await?),
    };
    for name in &sim.names {
        let member_kubeconfig = sim.kubeconfig(name);
        let connected = match &register {
            None => {
                join_push(
                    &launcher.karmadactl(),
                    name,
                    &apiserver.kubeconfig,
                    &member_kubeconfig,
                )
                .await
            }
            Some(register) => {
                join_pull(
                    launcher,
                    register,
                    name,
                    &apiserver.data,
                    &member_kubeconfig,
                )
                .await
            }
        };
        connected.with_context(|| format!("connecting {name} ({})", mode.name()))?;
    }
    Ok(())
}

impl Federation {
    /// The members' stores' writes so far, summed over every member.
    async fn member_store_writes(&self) -> anyhow::Result<StoreWrites> {
        let clients: Vec<&Client> = self.member_clients.iter().map(|(_, c)| c).collect();
        StoreWrites::read_all(&clients).await
    }

    pub(crate) async fn start(
        binary: &Path,
        members: u32,
        mode: Mode,
        layout: Layout,
        status_period: &str,
        logs: &Path,
    ) -> anyhow::Result<Federation> {
        let dir = tempfile::tempdir()?;
        let launcher = Launcher::new(binary, logs, &bench_log_level());
        let data = dir.path().join("karmada");
        let (apiserver, components) = match layout {
            Layout::Processes => {
                let apiserver = start_apiserver(&launcher, data, READY_TIMEOUT).await?;
                let controller_manager = start_controller_manager(
                    &launcher,
                    &apiserver.data,
                    &apiserver.kubeconfig,
                    status_period,
                    &[],
                )?;
                let scheduler = start_scheduler(&launcher, &apiserver.kubeconfig)?;
                let components = vec![
                    Proc::new(controller_manager, "controller-manager"),
                    Proc::new(scheduler, "scheduler"),
                ];
                (apiserver, components)
            }
            Layout::AllInOne => {
                // The agents' certificates are signed with the API server's own CA by default.
                let extra = [
                    "--metrics-bind-address",
                    "127.0.0.1:0",
                    "--cluster-status-update-frequency",
                    "2s",
                    "--cluster-success-threshold",
                    "1s",
                ];
                let all = start_apiserver_as(&launcher, "all-in-one", &extra, data, READY_TIMEOUT)
                    .await?;
                (all, Vec::new())
            }
        };
        let sim = start_member_sim(
            &launcher,
            dir.path().join("members"),
            members,
            &[],
            READY_TIMEOUT,
        )
        .await?;
        connect_members(&launcher, &apiserver, &sim, mode).await?;
        let member_clients = sim.clients().await?;
        wait_clusters_ready(&apiserver.client, sim.names.len(), READY_TIMEOUT).await?;
        let first = match layout {
            Layout::Processes => "apiserver",
            Layout::AllInOne => "all-in-one",
        };
        Ok(Federation {
            layout,
            control_plane: std::iter::once(Proc::new(apiserver.process, first))
                .chain(components)
                .collect(),
            members: Proc::new(sim.process, "member-sim"),
            karmadactl: launcher.karmadactl(),
            data: apiserver.data,
            karmada: apiserver.client,
            member_clients,
            launcher,
            kubeconfig: apiserver.kubeconfig,
            _dir: dir,
        })
    }

    pub(crate) fn rss_mib(&self) -> f64 {
        self.control_plane.iter().map(Proc::rss_mib).sum()
    }

    /// CPU seconds used so far by each control-plane process, then by the member-sims.
    pub(crate) fn cpu_seconds(&self) -> CpuSample {
        let control_plane = self
            .control_plane
            .iter()
            .map(|p| (p.name.clone(), p.process.cpu_seconds()))
            .collect();
        (control_plane, self.members.process.cpu_seconds())
    }

    /// Stops the agents `register` started as detached processes (the other processes die with `Proc`).
    fn stop_agents(&self) {
        let _ = Command::new(&self.karmadactl)
            .args(["deinit", "--force", "--karmada-data"])
            .arg(&self.data)
            .output();
    }

    /// Stops the controller-manager and the scheduler cleanly (their leader Leases released, as an operator's
    /// rollout would) and starts new ones, each publishing its metrics address to `<name>.metrics` in
    /// `metrics_dir`; returns when the new ones were spawned. Processes layout only.
    pub(crate) async fn restart_components(
        &mut self,
        status_period: &str,
        metrics_dir: &Path,
    ) -> anyhow::Result<Instant> {
        if self.layout != Layout::Processes {
            bail!("restarting components needs the processes layout");
        }
        for old in self.control_plane.drain(1..) {
            old.process.shut_down(Duration::from_secs(60)).await?;
        }
        let spawned = Instant::now();
        let address_file = |name: &str| {
            metrics_dir
                .join(format!("{name}.metrics"))
                .to_string_lossy()
                .to_string()
        };
        let controller_manager_file = address_file("controller-manager");
        let controller_manager = start_controller_manager(
            &self.launcher,
            &self.data,
            &self.kubeconfig,
            status_period,
            &["--metrics-address-file", &controller_manager_file],
        )?;
        let scheduler_file = address_file("scheduler");
        let scheduler = start_component(
            &self.launcher,
            "scheduler",
            &self.kubeconfig,
            "127.0.0.1:0",
            &["--metrics-address-file", &scheduler_file],
        )?;
        self.control_plane
            .push(Proc::new(controller_manager, "controller-manager"));
        self.control_plane.push(Proc::new(scheduler, "scheduler"));
        Ok(spawned)
    }

    /// Stops the API server cleanly and starts it again on the same data; returns when it was spawned and
    /// the new client (its port is picked anew). The components keep the old address: restart the API server
    /// last.
    pub(crate) async fn restart_apiserver(&mut self) -> anyhow::Result<(Instant, Client)> {
        if self.layout != Layout::Processes || self.control_plane.is_empty() {
            bail!("restarting the API server needs the processes layout");
        }
        let old = self.control_plane.remove(0);
        old.process.shut_down(Duration::from_secs(60)).await?;
        // The new server writes its kubeconfig once it serves; the old one must not be mistaken for it.
        std::fs::remove_file(&self.kubeconfig)?;
        let spawned = Instant::now();
        let apiserver = start_apiserver(&self.launcher, self.data.clone(), READY_TIMEOUT).await?;
        self.control_plane
            .insert(0, Proc::new(apiserver.process, "apiserver"));
        self.karmada = apiserver.client.clone();
        Ok((spawned, apiserver.client))
    }

    /// Each control-plane process's RSS now.
    pub(crate) fn rss_each(&self) -> Vec<(String, f64)> {
        self.control_plane
            .iter()
            .map(|p| (p.name.clone(), p.rss_mib()))
            .collect()
    }
}

/// CPU per propagated workload over the paced batches and the burst, for the control plane (per process) and
/// the member-sims: on a shared two-core machine the member-sims' share is CPU a real federation spends on the
/// members' own nodes. The note splits the control plane's figure by phase: a paced workload arrives alone and
/// pays every wake-up, sync and frame by itself, a burst's share them.
fn cpu_row(members: u32, label: &str, phases: &CpuPhases) -> Row {
    let used = |from: &CpuSample, to: &CpuSample| -> Vec<(String, f64)> {
        to.0.iter()
            .zip(&from.0)
            .map(|((name, a), (_, b))| (name.clone(), a - b))
            .collect()
    };
    let per_workload_ms =
        |seconds: f64, workloads: u32| seconds * 1000.0 / f64::from(workloads.max(1));
    let total = |used: &[(String, f64)]| used.iter().map(|(_, s)| s).sum::<f64>();
    let workloads = phases.paced_workloads + phases.burst_workloads;
    let whole = used(&phases.before, &phases.after);
    let detail = whole
        .iter()
        .map(|(name, s)| format!("{name} {:.2}", per_workload_ms(*s, workloads)))
        .collect::<Vec<_>>()
        .join(", ");
    let paced = per_workload_ms(
        total(&used(&phases.before, &phases.burst_before)),
        phases.paced_workloads,
    );
    let burst = per_workload_ms(
        total(&used(&phases.burst_before, &phases.after)),
        phases.burst_workloads,
    );
    Row {
        name: format!(
            "control-plane CPU per workload, {members} members, {}",
            label
        ),
        ops_per_sec: None,
        p50_ms: None,
        p99_ms: None,
        // The targets (Push) for the member counts it names.
        target: match members {
            3 => "≤ 10 ms".into(),
            10 => "≤ 25 ms".into(),
            _ => "–".into(),
        },
        note: format!(
            "{:.2} ms of CPU per workload ({detail}); by phase: {paced:.2} ms paced ({} workloads, settling \
             included), {burst:.2} ms in the burst ({}); member-sims {:.2} ms; over {workloads} workloads",
            per_workload_ms(total(&whole), workloads),
            phases.paced_workloads,
            phases.burst_workloads,
            per_workload_ms(phases.after.1 - phases.before.1, workloads)
        ),
    }
}

/// CPU seconds used so far by each control-plane process, then by the member-sims.
type CpuSample = (Vec<(String, f64)>, f64);

/// The CPU samples around the paced batches and the burst.
struct CpuPhases {
    before: CpuSample,
    burst_before: CpuSample,
    after: CpuSample,
    paced_workloads: u32,
    burst_workloads: u32,
}

/// The API server's CPU per request it served over the burst and its settling (watch delivery and its
/// background work included): the target is 0.25 ms. Also per store write: a list create of Events is one
/// request and a write per Event, so the writes compare runs whose clients group differently. `None` when the API
/// server is not a process of its own (all in one).
fn apiserver_cpu_per_request_row(
    members: u32,
    label: &str,
    requests: f64,
    store_writes: f64,
    before: &CpuSample,
    after: &CpuSample,
) -> Option<Row> {
    let seconds = |side: &CpuSample| {
        side.0
            .iter()
            .find(|(name, _)| name == "apiserver")
            .map(|(_, s)| *s)
    };
    let used = seconds(after)? - seconds(before)?;
    let per_request_ms = used * 1000.0 / requests.max(1.0);
    Some(Row {
        name: format!(
            "API server CPU per request, {members} members, {label}, burst and its settling"
        ),
        ops_per_sec: None,
        p50_ms: None,
        p99_ms: None,
        target: "≤ 0.25 ms".into(),
        note: format!(
            "{per_request_ms:.3} ms: {used:.2} s of the API server's CPU over the {requests:.0} requests it served \
             (watch delivery to every watcher included); {:.3} ms per store write ({store_writes:.0} writes)",
            used * 1000.0 / store_writes.max(1.0)
        ),
    })
}

/// First time each (member, Deployment name) was seen.
pub(crate) type Seen = Arc<Mutex<HashMap<(usize, String), Instant>>>;

pub(crate) fn watch_members(
    federation: &Federation,
    kind: WorkloadKind,
    seen: Seen,
    stop: &tokio_util::sync::CancellationToken,
) {
    for (index, (_, client)) in federation.member_clients.iter().enumerate() {
        let api = kind.api(client, "bench");
        let seen = seen.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let config = watcher::Config::default().labels(&format!("{}={}", LABEL.0, LABEL.1));
            let mut stream = watcher::watcher(api, config).boxed();
            loop {
                let event = tokio::select! {
                    () = stop.cancelled() => return,
                    e = stream.next() => e,
                };
                let Some(event) = event else { return };
                let objects = match event {
                    Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => vec![d],
                    _ => continue,
                };
                let now = Instant::now();
                let mut seen = seen.lock().await;
                for d in objects {
                    if let Some(name) = d.metadata.name {
                        seen.entry((index, name)).or_insert(now);
                    }
                }
            }
        });
    }
}

/// By template name: first time its ResourceBinding was seen, and first time it had a placement
/// (`spec.clusters` non-empty).
#[derive(Default)]
struct BindingTimes {
    created: HashMap<String, Instant>,
    placed: HashMap<String, Instant>,
}
type Scheduled = Arc<Mutex<BindingTimes>>;

fn watch_scheduled(
    federation: &Federation,
    scheduled: Scheduled,
    stop: &tokio_util::sync::CancellationToken,
) {
    crate::bindings::watch(&federation.karmada, "bench", stop, move |binding| {
        let scheduled = scheduled.clone();
        async move {
            let placed = binding.data["spec"]["clusters"]
                .as_array()
                .is_some_and(|clusters| !clusters.is_empty());
            let Some(template) = crate::bindings::template(&binding) else {
                return;
            };
            let now = Instant::now();
            let mut times = scheduled.lock().await;
            times.created.entry(template.clone()).or_insert(now);
            if placed {
                times.placed.entry(template).or_insert(now);
            }
        }
    });
}

/// Creates the `bench` namespace and a PropagationPolicy duplicating every workload of `kind` labelled for the
/// benchmark to every member.
pub(crate) async fn create_namespace_and_policy(
    karmada: &Client,
    kind: WorkloadKind,
) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(karmada.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "bench"}}))?,
        )
        .await?;
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        "propagationpolicies",
    );
    let policies: Api<kube::api::DynamicObject> =
        Api::namespaced_with(karmada.clone(), "bench", &resource);
    let policy = serde_json::json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "bench", "namespace": "bench"},
        "spec": {
            "resourceSelectors": [{"apiVersion": kind.resource().api_version, "kind": kind.kind(),
                                   "labelSelector": {"matchLabels": {LABEL.0: LABEL.1}}}],
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
        }
    });
    policies
        .create(&PostParams::default(), &serde_json::from_value(policy)?)
        .await?;
    Ok(())
}

pub(crate) async fn setup_namespace_and_policy(
    federation: &Federation,
    kind: WorkloadKind,
) -> anyhow::Result<()> {
    let clients: Vec<&Client> = std::iter::once(&federation.karmada)
        .chain(federation.member_clients.iter().map(|(_, client)| client))
        .collect();
    kind.install(&clients).await?;
    create_namespace_and_policy(&federation.karmada, kind).await?;
    // The namespace reaches every member before the clock starts.
    let deadline = Instant::now() + READY_TIMEOUT;
    for (name, client) in &federation.member_clients {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        while api.get_opt("bench").await?.is_none() {
            if Instant::now() > deadline {
                bail!("namespace bench never reached {name}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // A kind new to the control plane is propagated once its watch starts (the detector finds new kinds by
    // discovery): one workload through to every member first, so the clock measures propagation.
    if kind != WorkloadKind::Deployment {
        kind.api(&federation.karmada, "bench")
            .create(&PostParams::default(), &kind.object("warm-up")?)
            .await?;
        for (name, client) in &federation.member_clients {
            while kind
                .api(client, "bench")
                .get_opt("warm-up")
                .await?
                .is_none()
            {
                if Instant::now() > deadline {
                    bail!("the warm-up {} never reached {name}", kind.kind());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    Ok(())
}

/// Waits until every name is in every member; returns when the last arrived.
async fn wait_all_seen(seen: &Seen, names: &[String], members: usize) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        {
            let seen = seen.lock().await;
            let missing = names
                .iter()
                .flat_map(|n| (0..members).map(move |m| (m, n.clone())))
                .filter(|k| !seen.contains_key(k))
                .count();
            if missing == 0 {
                let last = names
                    .iter()
                    .flat_map(|n| (0..members).filter_map(|m| seen.get(&(m, n.clone())).copied()))
                    .max()
                    .unwrap_or_else(Instant::now);
                return Ok(last);
            }
            if Instant::now() > deadline {
                bail!("{missing} (workload, member) pairs never arrived");
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The last 40 lines of every log in `dir`, for an error report.
pub(crate) fn log_tails(dir: &Path) -> anyhow::Result<String> {
    let tails: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            format!(
                "--- {} ---\n{}",
                entry.file_name().to_string_lossy(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .collect();
    Ok(tails.join("\n"))
}

async fn measure(
    binary: &Path,
    members: u32,
    mode: Mode,
    rate: u32,
    args: &Args,
) -> anyhow::Result<Vec<Row>> {
    // KARMADA_BENCH_KEEP_LOGS keeps the components' logs for a look after the run.
    let logs = LogDir::from_env()?;
    let layout = args.layout;
    let started = Federation::start(binary, members, mode, layout, "2s", logs.path()).await;
    let mut federation = match started {
        Ok(f) => f,
        Err(err) => return Err(err.context(log_tails(logs.path())?)),
    };
    let label = match layout {
        Layout::Processes => mode.name().to_string(),
        Layout::AllInOne => format!("{}, all-in-one", mode.name()),
    };
    let result = measure_on(&mut federation, members, &label, rate, args).await;
    federation.stop_agents();
    result
}

/// One line on stderr as a phase starts, stamped with the wall clock so outside probes (CPU samplers, `perf`) can
/// be lined up with the phases.
pub(crate) fn progress(setup: &str, phase: &str) {
    eprintln!("{} {setup}: {phase}", jiff::Timestamp::now());
}

/// Creates the bench workloads of `kind` named `names` as fast as 32 clients can.
pub(crate) async fn create_burst(
    api: &Api<DynamicObject>,
    kind: WorkloadKind,
    names: &[String],
) -> anyhow::Result<()> {
    crate::creates::burst(api, workloads(kind, names)?).await
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()?;
    if !status.success() {
        bail!("kill -{signal} {pid} failed");
    }
    Ok(())
}

/// Waits until `done` holds for the binding times, polling them.
async fn wait_bindings(
    scheduled: &Scheduled,
    what: &str,
    done: impl Fn(&BindingTimes) -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    while !done(&*scheduled.lock().await) {
        if Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Phase 3, the scheduler stage alone: with the scheduler stopped, a burst of templates gets its
/// ResourceBindings from the detector; the controller-manager is then paused (so nothing but the API server and
/// the scheduler runs) and a fresh scheduler process is started. Timed from its spawn to the last placement, so
/// process start-up, the initial lists and every PATCH and Event through the API server are inside the figure.
async fn scheduler_backlog(
    federation: &mut Federation,
    scheduled: &Scheduled,
    seen: &Seen,
    members: u32,
    label: &str,
    args: &Args,
) -> anyhow::Result<Row> {
    let index = federation
        .control_plane
        .iter()
        .position(|p| p.name == "scheduler")
        .context("no scheduler process")?;
    federation
        .control_plane
        .remove(index)
        .process
        .shut_down(Duration::from_secs(30))
        .await?;
    let names = batch_names("backlog", args.workloads);
    let api = args.kind.api(&federation.karmada, "bench");
    create_burst(&api, args.kind, &names).await?;
    wait_bindings(scheduled, "the backlog's ResourceBindings", |t| {
        names.iter().all(|n| t.created.contains_key(n))
    })
    .await?;
    let controller_manager = federation
        .control_plane
        .iter()
        .find(|p| p.name == "controller-manager")
        .context("no controller-manager process")?
        .process
        .id();
    signal(controller_manager, "STOP")?;
    progress(
        &format!("{members} members, {}", label),
        "scheduler stage alone",
    );
    let started = Instant::now();
    let scheduler = start_scheduler(&federation.launcher, &federation.kubeconfig);
    let placed = match scheduler {
        Ok(scheduler) => {
            federation
                .control_plane
                .push(Proc::new(scheduler, "scheduler"));
            wait_bindings(scheduled, "the backlog's placements", |t| {
                names.iter().all(|n| t.placed.contains_key(n))
            })
            .await
        }
        Err(err) => Err(err),
    };
    // Resume the controller-manager whatever happened, then check the backlog still reaches every member.
    signal(controller_manager, "CONT")?;
    placed?;
    let last = {
        let times = scheduled.lock().await;
        names
            .iter()
            .filter_map(|n| times.placed.get(n).copied())
            .max()
            .context("no backlog binding was placed")?
    };
    let elapsed = last.saturating_duration_since(started);
    wait_all_seen(seen, &names, members as usize).await?;
    Ok(Row {
        name: format!(
            "scheduler stage alone, {members} members, {}, {} pending ResourceBindings",
            label, args.workloads
        ),
        ops_per_sec: Some(f64::from(args.workloads) / elapsed.as_secs_f64().max(f64::MIN_POSITIVE)),
        p50_ms: None,
        p99_ms: None,
        target: "≥ 500 bindings/s".into(),
        note: format!(
            "a fresh scheduler process placed all {} through the API server (PATCH + Events) {:.2} s after its \
             spawn, controller-manager paused; all then reached every member",
            args.workloads,
            elapsed.as_secs_f64()
        ),
    })
}

/// How long the status controllers get to settle after a batch before memory is read.
const SETTLE: Duration = Duration::from_secs(3);

/// Phase 1: creates `names` at `rate` per second and waits until each is in every member. Returns the latency
/// from each create's acknowledgement to each member's watch event, and the batch's store writes.
async fn paced_batch(
    federation: &Federation,
    api: &Api<DynamicObject>,
    seen: &Seen,
    names: &[String],
    members: u32,
    rate: u32,
    kind: WorkloadKind,
) -> anyhow::Result<(Samples, String)> {
    let control_plane_writes = StoreWrites::read(&federation.karmada).await?;
    let member_writes = federation.member_store_writes().await?;
    let acked = create_paced(api, kind, names, rate).await?;
    wait_all_seen(seen, names, members as usize).await?;
    // Every hop of the path waits on a store commit, so a disk stall is one cause of a latency tail.
    let paced_writes = format!(
        "control plane: {}; members (in memory): {}",
        StoreWrites::read(&federation.karmada)
            .await?
            .since(&control_plane_writes)
            .summary(),
        federation
            .member_store_writes()
            .await?
            .since(&member_writes)
            .summary()
    );
    let mut latency = Samples::default();
    {
        let seen = seen.lock().await;
        for name in names {
            let Some(created) = acked.get(name) else {
                continue;
            };
            for member in 0..members as usize {
                if let Some(at) = seen.get(&(member, name.clone())) {
                    latency.push(at.saturating_duration_since(*created));
                }
            }
        }
    }
    Ok((latency, paced_writes))
}

/// Times of the burst, from its first create.
struct Burst {
    /// When the API server had accepted the last template.
    created: Duration,
    /// When the last workload was in every member.
    elapsed: Duration,
    /// How many of the burst's bindings were seen placed.
    placed: usize,
    /// When the last binding was placed.
    scheduling: Duration,
    /// When the detector had created the last binding.
    bound: Duration,
}

/// Phase 2: creates `names` from 32 clients at once and waits until each is in every member.
async fn burst_batch(
    api: &Api<DynamicObject>,
    kind: WorkloadKind,
    seen: &Seen,
    scheduled: &Scheduled,
    names: &[String],
    members: u32,
) -> anyhow::Result<Burst> {
    let started = Instant::now();
    create_burst(api, kind, names).await?;
    // When the API server had accepted the last template: no binding can be placed before its template exists.
    let created = started.elapsed();
    let last = wait_all_seen(seen, names, members as usize).await?;
    let elapsed = last.saturating_duration_since(started);
    let (placed, last_scheduled, last_bound) = {
        let scheduled = scheduled.lock().await;
        let times: Vec<Instant> = names
            .iter()
            .filter_map(|n| scheduled.placed.get(n).copied())
            .collect();
        // When the detector had created the last binding: splits the stage's time between detector and scheduler.
        let bound = names
            .iter()
            .filter_map(|n| scheduled.created.get(n).copied())
            .max();
        (times.len(), times.into_iter().max(), bound)
    };
    let bound = last_bound.map_or(Duration::ZERO, |at| at.saturating_duration_since(started));
    let scheduling = last_scheduled
        .context("no burst binding was seen scheduled")?
        .saturating_duration_since(started);
    Ok(Burst {
        created,
        elapsed,
        placed,
        scheduling,
        bound,
    })
}

/// The control plane's RSS (MiB, total and per process) before the batches and after each settled.
struct Rss {
    before: f64,
    mid: f64,
    steady: f64,
    after: f64,
    each_before: Vec<(String, f64)>,
    each_mid: Vec<(String, f64)>,
    each_steady: Vec<(String, f64)>,
    each_after: Vec<(String, f64)>,
}

/// The rows of the paced batch's latency, the burst's throughput and its scheduling.
fn timing_rows(
    members: u32,
    label: &str,
    rate: u32,
    args: &Args,
    (latency, paced_writes): &(Samples, String),
    burst: &Burst,
) -> [Row; 3] {
    let scheduled_rate =
        f64::from(args.workloads) / burst.scheduling.as_secs_f64().max(f64::MIN_POSITIVE);
    let throughput = f64::from(args.workloads) / burst.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    [
        Row {
            name: format!(
                "distribution latency, {members} members, {}, {} {}s at {}/s",
                label,
                args.workloads,
                args.kind.kind(),
                rate
            ),
            ops_per_sec: None,
            p50_ms: Some(ms(latency.quantile(0.5))),
            p99_ms: Some(ms(latency.quantile(0.99))),
            target: "P99 ≤ 200 ms (Karmada: Push P99 1,298 ms, Pull 989 ms)".into(),
            note: format!(
                "P90 {} ms over {} (workload, member) pairs; {paced_writes}",
                ms(latency.quantile(0.9)),
                members as usize * args.workloads as usize
            ),
        },
        Row {
            name: format!(
                "end-to-end throughput, {members} members, {}, burst of {} from 32 clients",
                label, args.workloads
            ),
            ops_per_sec: Some(throughput),
            p50_ms: None,
            p99_ms: None,
            target: "≥ 500 bindings/s".into(),
            note: format!(
                "all {} in all members after {:.2} s",
                args.workloads,
                burst.elapsed.as_secs_f64()
            ),
        },
        Row {
            name: format!(
                "bindings scheduled, {members} members, {}, burst of {} from 32 clients",
                label, args.workloads
            ),
            ops_per_sec: Some(scheduled_rate),
            p50_ms: None,
            p99_ms: None,
            target: "≥ 500 bindings/s".into(),
            note: format!(
                "{} of {} burst templates' ResourceBindings placed {:.2} s after the first create (detector \
                 and scheduler, while execution and status run on the same cores); the last template was \
                 accepted after {:.2} s, its binding created after {:.2} s",
                burst.placed,
                args.workloads,
                burst.scheduling.as_secs_f64(),
                burst.created.as_secs_f64(),
                burst.bound.as_secs_f64()
            ),
        },
    ]
}

/// The control plane's memory rows: over all three batches, the second (paced) and the third (burst).
fn rss_rows(members: u32, label: &str, rate: u32, args: &Args, rss: &Rss) -> [Row; 3] {
    let Rss {
        before: rss_before,
        mid: rss_mid,
        steady: rss_steady,
        after: rss_after,
        ..
    } = *rss;
    let detail = rss
        .each_after
        .iter()
        .zip(&rss.each_before)
        .map(|((name, after), (_, before))| format!("{name} {before:.0} → {after:.0}"))
        .collect::<Vec<_>>()
        .join(", ");
    let workloads_total = f64::from(args.workloads) * 3.0;
    let per_thousand = (rss_after - rss_before) / (workloads_total / 1000.0);
    let per_thousand_x3 = per_thousand * 3.0 / f64::from(members);
    let batch_thousands = f64::from(args.workloads) / 1000.0;
    let growth = |from: f64, to: f64| {
        let per = (to - from) / batch_thousands;
        (per, per * 3.0 / f64::from(members))
    };
    let (steady_marginal, steady_marginal_x3) = growth(rss_mid, rss_steady);
    let (burst_marginal, burst_marginal_x3) = growth(rss_steady, rss_after);
    let each_growth = |from: &[(String, f64)], to: &[(String, f64)]| {
        to.iter()
            .zip(from)
            .map(|((name, after), (_, before))| format!("{name} {:+.0}", after - before))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let steady_detail = each_growth(&rss.each_mid, &rss.each_steady);
    let burst_detail = each_growth(&rss.each_steady, &rss.each_after);
    [
        Row {
            name: format!(
                "control-plane RSS, {members} members, {}, {} workloads",
                label, workloads_total as u64
            ),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: RSS_TARGET.into(),
            note: format!(
                "{rss_before:.0} → {rss_after:.0} MiB ({detail}); {per_thousand:.1} MiB per 1,000 workloads, {per_thousand_x3:.1} MiB per 1,000 × 3 clusters"
            ),
        },
        Row {
            name: format!(
                "control-plane RSS, {members} members, {}, the second {} workloads (paced)",
                label, args.workloads
            ),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: RSS_TARGET.into(),
            note: format!(
                "{rss_mid:.0} → {rss_steady:.0} MiB ({steady_detail}); {steady_marginal:.1} MiB per 1,000 workloads, \
                 {steady_marginal_x3:.1} MiB per 1,000 × 3 clusters: the marginal cost at {rate}/s, once the API \
                 server's bounded caches have filled with the first {} workloads",
                args.workloads
            ),
        },
        Row {
            name: format!(
                "control-plane RSS, {members} members, {}, the third {} workloads (burst)",
                label, args.workloads
            ),
            ops_per_sec: None,
            p50_ms: None,
            p99_ms: None,
            target: RSS_TARGET.into(),
            note: format!(
                "{rss_steady:.0} → {rss_after:.0} MiB ({burst_detail}); {burst_marginal:.1} MiB per 1,000 workloads, \
                 {burst_marginal_x3:.1} MiB per 1,000 × 3 clusters: the marginal cost when they arrive as the burst \
                 above (32 clients at once)"
            ),
        },
    ]
}

async fn measure_on(
    federation: &mut Federation,
    members: u32,
    label: &str,
    rate: u32,
    args: &Args,
) -> anyhow::Result<Vec<Row>> {
    setup_namespace_and_policy(federation, args.kind).await?;
    let rss_before = federation.rss_mib();
    let rss_each_before = federation.rss_each();
    let cpu_before = federation.cpu_seconds();
    let seen: Seen = Arc::default();
    let stop = tokio_util::sync::CancellationToken::new();
    watch_members(federation, args.kind, seen.clone(), &stop);
    let scheduled: Scheduled = Arc::default();
    watch_scheduled(federation, scheduled.clone(), &stop);
    let api = args.kind.api(&federation.karmada, "bench");

    let setup = format!("{members} members, {}", label);
    // Phase 1: paced creates, latency per (workload, member).
    progress(&setup, "paced batch");
    let names = batch_names("paced", args.workloads);
    let paced = paced_batch(federation, &api, &seen, &names, members, rate, args.kind).await?;

    // Memory after the first batch has settled: what later batches add is the marginal cost, apart from what
    // fills once (the API server's page cache, watch ring and encoded-object cache are bounded).
    tokio::time::sleep(SETTLE).await;
    let rss_mid = federation.rss_mib();
    let rss_each_mid = federation.rss_each();

    // Phase 1b: as many again at the same pace — the steady cost of holding more workloads, without a burst's
    // transient peak (allocator pages a burst's in-flight work leaves partly used stay in RSS).
    let requests_paced_before = RequestCounts::read(&federation.karmada).await?;
    progress(&setup, "second paced batch");
    let steady = batch_names("steady", args.workloads);
    create_paced(&api, args.kind, &steady, rate).await?;
    wait_all_seen(&seen, &steady, members as usize).await?;
    tokio::time::sleep(SETTLE).await;
    let rss_steady = federation.rss_mib();
    let rss_each_steady = federation.rss_each();

    // Phase 2: a burst from 32 clients, end-to-end throughput.
    let burst_names = batch_names("burst", args.workloads);
    let requests_before = RequestCounts::read(&federation.karmada).await?;
    let store_writes_before = StoreWrites::read(&federation.karmada).await?;
    // A paced workload arrives alone, so what it asks for is not what a burst's workloads do (a burst's Events
    // overflow the recorders' queues, its status changes coalesce).
    requests_before.print_since(
        &requests_paced_before,
        &format!(
            "API requests of the second paced batch and its settling ({members} members, {label})"
        ),
    );
    let cpu_burst_before = federation.cpu_seconds();
    progress(&setup, "burst");
    let burst = burst_batch(&api, args.kind, &seen, &scheduled, &burst_names, members).await?;
    let cpu_after = federation.cpu_seconds();
    progress(&setup, "burst propagated");
    // Let the status controllers settle before reading memory.
    tokio::time::sleep(SETTLE).await;
    let rss = Rss {
        before: rss_before,
        mid: rss_mid,
        steady: rss_steady,
        after: federation.rss_mib(),
        each_before: rss_each_before,
        each_mid: rss_each_mid,
        each_steady: rss_each_steady,
        each_after: federation.rss_each(),
    };
    let requests_after = RequestCounts::read(&federation.karmada).await?;
    let store_writes = StoreWrites::read(&federation.karmada)
        .await?
        .since(&store_writes_before)
        .total();
    let cpu_burst_after = federation.cpu_seconds();
    requests_after.print_since(
        &requests_before,
        &format!(
            "API requests of the burst and its settling ({members} members, {})",
            label
        ),
    );
    let per_request = apiserver_cpu_per_request_row(
        members,
        label,
        requests_after.total_since(&requests_before),
        store_writes,
        &cpu_burst_before,
        &cpu_burst_after,
    );
    // In one process the scheduler cannot be stopped and restarted on its own.
    let scheduler_alone = match federation.layout {
        Layout::Processes => {
            Some(scheduler_backlog(federation, &scheduled, &seen, members, label, args).await?)
        }
        Layout::AllInOne => None,
    };
    stop.cancel();
    Ok(timing_rows(members, label, rate, args, &paced, &burst)
        .into_iter()
        .chain(scheduler_alone)
        .chain([cpu_row(
            members,
            label,
            &CpuPhases {
                before: cpu_before,
                burst_before: cpu_burst_before,
                after: cpu_after,
                paced_workloads: args.workloads * 2,
                burst_workloads: args.workloads,
            },
        )])
        .chain(per_request)
        .chain(rss_rows(members, label, rate, args, &rss))
        .collect())
}

/// The memory target, in the unit the measurements are printed in (MiB): 30 MB is 28.6 MiB.
const RSS_TARGET: &str = "≤ 30 MB (28.6 MiB) per 1,000 workloads × 3 clusters";

/// `count` workload names of one batch.
fn batch_names(prefix: &str, count: u32) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i:05}")).collect()
}

/// Creates the bench workloads named `names` at `rate` per second; returns when each was acknowledged.
async fn create_paced(
    api: &Api<DynamicObject>,
    kind: WorkloadKind,
    names: &[String],
    rate: u32,
) -> anyhow::Result<HashMap<String, Instant>> {
    crate::creates::paced(api, workloads(kind, names)?, rate).await
}

fn workloads(kind: WorkloadKind, names: &[String]) -> anyhow::Result<Vec<DynamicObject>> {
    names.iter().map(|name| kind.object(name)).collect()
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let binary = karmada_binary(args.karmada_binary.as_ref())?;
    let mut rows = Vec::new();
    for &mode in &args.modes {
        for (index, &members) in args.members.iter().enumerate() {
            let rate = args
                .rate
                .get(index)
                .or(args.rate.last())
                .copied()
                .unwrap_or(10);
            rows.extend(measure(&binary, members, mode, rate, &args).await?);
        }
    }
    let table = report::render(&rows);
    println!("{table}");
    let (section, command, processes) = match (args.layout, args.kind) {
        (Layout::Processes, WorkloadKind::CloneSet) => (
            "Propagation, CRD workloads through Lua",
            " --kind cloneset",
            "OpenKruise CloneSets (a CRD on the control plane and every member, interpreted by the bundled Lua \
             customization) instead of Deployments. Real processes: API server on the embedded store, \
             controller-manager, scheduler,",
        ),
        (Layout::Processes, WorkloadKind::Deployment) => (
            "Propagation",
            "",
            "Real processes: API server on the embedded store, controller-manager, scheduler,",
        ),
        (Layout::AllInOne, _) => (
            "Propagation, all-in-one",
            " --layout all-in-one",
            "Real processes: `karmada all-in-one` (API server on the embedded store, controllers and scheduler in one \
             process, reaching the API in memory),",
        ),
    };
    let scheduler_alone = match args.layout {
        Layout::Processes => {
            " \"scheduler stage alone\" stops the scheduler, lets the detector create a further burst's bindings, \
             pauses the controller-manager (SIGSTOP) and times a fresh scheduler process from its spawn to the last \
             placement."
        }
        Layout::AllInOne => "",
    };
    let body = format!(
        "Measured on {} on {} with `cargo build --release --bins && ./target/release/karmada-bench \
         propagation{command}`.\n{processes} member-sims in scale mode joined in Push mode (`karmadactl join`) or \
         registered in Pull mode (`karmadactl register`, one `karmada agent` per member, not counted in the control \
         plane's RSS); one PropagationPolicy duplicating every labelled workload to every member. Latency is from \
         the create's acknowledgement to the member's watch event; its note counts the paced batch's store writes \
         (the control plane's, on disk, and the members', in memory, from `etcd_request_duration_seconds`) and \
         those over 100 ms, since every hop waits on a commit. \"Bindings scheduled\" times the burst until \
         every ResourceBinding has a placement.{scheduler_alone} RSS is the control plane's, summed over its \
         processes, 3 s after each batch settles: a paced batch, a second paced batch, then the burst; the first \
         fills the API server's bounded caches, so the later two give the marginal cost.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().date(),
    );
    report::write_section(&args.report, section, &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
