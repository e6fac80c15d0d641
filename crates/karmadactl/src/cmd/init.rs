//! `karmadactl init`: starts the control plane in the background on the embedded store — the API server, then
//! `karmada controller-manager` and `karmada scheduler` — and returns once it serves. Each component has its
//! pid file (`DATA/<component>.pid`) and log (`DATA/logs/<component>.log`); running init again starts only
//! what is not running.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use crate::client;
use crate::components::{self, Launch};
use crate::progress::Progress;

/// Karmada's default for `--karmada-data`.
pub const DEFAULT_DATA_DIR: &str = "/etc/karmada";
pub const KUBECONFIG_FILE: &str = "karmada-apiserver.config";
/// The control plane's context in the kubeconfig the API server writes.
pub const KARMADA_CONTEXT: &str = "karmada-apiserver";
pub const APISERVER: &str = "karmada-apiserver";
pub const CONTROLLER_MANAGER: &str = "karmada-controller-manager";
pub const SCHEDULER: &str = "karmada-scheduler";
/// The `karmada` subcommand that runs the API server with the controllers and the scheduler inside.
pub const ALL_IN_ONE: &str = "all-in-one";
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a fresh controller is watched for an immediate exit (bad flag, unreachable API server).
const SETTLE: Duration = Duration::from_millis(1500);

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Directory holding the store, certificates, logs, pid files and the kubeconfig.
    #[arg(long = "karmada-data", short = 'd', default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Port of the API server (Karmada's default node port is 32443).
    #[arg(long, short = 'p', default_value_t = 32443)]
    pub port: u16,
    /// Address the API server listens on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: String,
    /// The `karmada` server binary; by default the one beside karmadactl, else on PATH.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
    /// Components stop when this command's standard input closes (for tests and supervisors that hold a
    /// pipe); by default they run detached until `deinit`.
    #[arg(long)]
    pub exit_with_stdin: bool,
    /// Local etcd members to run (more than 1, or --etcd-servers, puts the store on etcd; see init_ha).
    #[arg(long, default_value_t = 1)]
    pub etcd_replicas: usize,
    /// API server replicas behind one endpoint (`karmada lb` on --port).
    #[arg(long, default_value_t = 1)]
    pub karmada_apiserver_replicas: usize,
    /// An existing etcd cluster's client URLs instead of local members.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// Cluster failover, the one switch: passes `--enable-failover` to the controller-manager (an unreachable
    /// member's workloads move to healthy members).
    #[arg(long)]
    pub enable_failover: bool,
    /// Run the API server, the controllers and the scheduler as one process (`karmada all-in-one`, logging to
    /// the API server's log): less memory and CPU than three. Not with the HA flags.
    #[arg(long)]
    pub all_in_one: bool,
    /// Start a scheduler estimator for every Push member already joined (run init again after joining more)
    /// and let the scheduler ask them.
    #[arg(long)]
    pub enable_scheduler_estimator: bool,
}

/// What the control plane runs from.
#[derive(Clone, Debug)]
pub struct ControlPlane {
    /// Absolute: it identifies the components' processes by their command lines.
    pub data_dir: PathBuf,
    pub port: u16,
    pub bind_address: String,
    pub binary: PathBuf,
    pub exit_with_stdin: bool,
    /// `--enable-failover` for the controller-manager.
    pub enable_failover: bool,
    /// One `karmada all-in-one` process instead of three.
    pub all_in_one: bool,
    /// More arguments for the controller-manager (or the all-in-one process).
    pub controller_manager_args: Vec<String>,
    /// The scheduler asks the members' estimators (`--enable-scheduler-estimator`).
    pub enable_scheduler_estimator: bool,
}

impl ControlPlane {
    pub fn new(
        data_dir: &Path,
        port: u16,
        bind_address: &str,
        binary_flag: Option<&Path>,
        exit_with_stdin: bool,
    ) -> anyhow::Result<ControlPlane> {
        let data_dir = std::path::absolute(data_dir)
            .with_context(|| format!("resolving {}", data_dir.display()))?;
        Ok(ControlPlane {
            data_dir,
            port,
            bind_address: bind_address.to_string(),
            binary: components::find_server_binary(binary_flag)?,
            exit_with_stdin,
            enable_failover: false,
            all_in_one: false,
            controller_manager_args: Vec::new(),
            enable_scheduler_estimator: false,
        })
    }

    /// The arguments given for `subcommand` beyond the ones init passes.
    pub fn extra_args(&self, subcommand: &str) -> &[String] {
        match subcommand {
            "controller-manager" | ALL_IN_ONE => &self.controller_manager_args,
            _ => &[],
        }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join(KUBECONFIG_FILE)
    }
}

pub async fn run(args: InitArgs) -> anyhow::Result<()> {
    let mut plane = ControlPlane::new(
        &args.data_dir,
        args.port,
        &args.bind_address,
        args.karmada_binary.as_deref(),
        args.exit_with_stdin,
    )?;
    plane.enable_failover = args.enable_failover;
    plane.all_in_one = args.all_in_one;
    plane.enable_scheduler_estimator = args.enable_scheduler_estimator;
    let ha = super::init_ha::HaOptions {
        etcd_replicas: args.etcd_replicas,
        apiserver_replicas: args.karmada_apiserver_replicas,
        etcd_servers: args.etcd_servers.clone(),
    };
    let ha_wanted = super::init_ha::wanted(&ha, &plane.data_dir);
    if ha_wanted && args.all_in_one {
        bail!(
            "--all-in-one runs a single process on the embedded store; drop it, or drop --etcd-replicas, \
             --karmada-apiserver-replicas and --etcd-servers"
        );
    }
    let mut progress = Progress::new(if ha_wanted { 7 } else { 4 });
    if ha_wanted {
        super::init_ha::up(&plane, &ha, &mut progress).await?;
    }
    up(&plane, &mut progress).await?;
    if plane.enable_scheduler_estimator {
        start_joined_estimators(&plane, &progress).await?;
    }
    progress.step("control plane ready", "");
    progress.finish();
    let kubeconfig = plane.kubeconfig();
    println!();
    println!("Karmada is running. Use it with:");
    println!(
        "  kubectl --kubeconfig {} get namespaces",
        kubeconfig.display()
    );
    println!(
        "  karmadactl --kubeconfig {} api-resources",
        kubeconfig.display()
    );
    println!(
        "Logs: {}",
        plane.data_dir.join(components::LOG_DIR).display()
    );
    println!("Stop it and remove its data with:");
    println!(
        "  karmadactl deinit --karmada-data {} --force",
        plane.data_dir.display()
    );
    Ok(())
}

/// Brings the control plane up, three steps on `progress`: data directory, API server, controllers.
pub async fn up(plane: &ControlPlane, progress: &mut Progress) -> anyhow::Result<()> {
    let data_dir = &plane.data_dir;
    progress.step("preparing data directory", &data_dir.display().to_string());
    std::fs::create_dir_all(data_dir.join(components::LOG_DIR))
        .with_context(|| format!("creating {}", data_dir.display()))?;
    start_apiserver(plane, progress).await?;
    // An all-in-one API server (asked for now, or by an earlier init) runs the controllers itself.
    if components::live_pid(data_dir, APISERVER)
        .is_some_and(|pid| components::runs_subcommand(pid, ALL_IN_ONE))
    {
        progress.step(
            "starting controllers",
            "inside karmada-apiserver (all-in-one)",
        );
        return Ok(());
    }
    start_controllers(plane, progress).await
}

/// Starts the API server (or the all-in-one process) unless one runs already, and waits until it is ready.
async fn start_apiserver(plane: &ControlPlane, progress: &mut Progress) -> anyhow::Result<()> {
    let data_dir = &plane.data_dir;
    let kubeconfig = plane.kubeconfig();
    let address = format!("{}:{}", plane.bind_address, plane.port);
    if let Some(pid) = components::live_pid(data_dir, APISERVER) {
        progress.step("starting karmada-apiserver", &address);
        let ready = wait_ready(&kubeconfig, None, data_dir, Duration::from_secs(10))
            .await
            .is_ok();
        progress.note(&format!(
            "karmada-apiserver is already running (pid {pid}, {})",
            if ready { "ready" } else { "not ready yet" }
        ));
        return Ok(());
    }
    components::ensure_port_free(&plane.bind_address, plane.port, "--port")?;
    progress.step("starting karmada-apiserver", &address);
    // A kubeconfig left by an earlier run must not pass for the new server's.
    let _ = std::fs::remove_file(&kubeconfig);
    let mut child = components::launch(Launch {
        name: APISERVER,
        binary: &plane.binary,
        args: apiserver_args(plane),
        data_dir,
        exit_with_stdin: plane.exit_with_stdin,
    })?;
    if let Err(err) = wait_ready(&kubeconfig, Some(&mut child), data_dir, READY_TIMEOUT).await {
        bail!(
            "the API server did not become ready within {}s: {err:#}; see {}",
            READY_TIMEOUT.as_secs(),
            components::log_file(data_dir, APISERVER).display()
        );
    }
    progress.note(&format!("karmada-apiserver ready (pid {})", child.id()));
    Ok(())
}

/// The API server's command line; an all-in-one one also takes the controllers' flags.
fn apiserver_args(plane: &ControlPlane) -> Vec<OsString> {
    let data_dir = &plane.data_dir;
    let subcommand = if plane.all_in_one {
        ALL_IN_ONE
    } else {
        "apiserver"
    };
    let mut args = os_args([
        subcommand.as_ref(),
        "--data-dir".as_ref(),
        data_dir.as_os_str(),
        "--bind-address".as_ref(),
        plane.bind_address.as_ref(),
        "--secure-port".as_ref(),
        plane.port.to_string().as_ref(),
    ]);
    if plane.all_in_one {
        args.extend(os_args([
            "--metrics-bind-address".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--metrics-address-file".as_ref(),
            components::metrics_address_file(data_dir, APISERVER).as_os_str(),
        ]));
        if plane.enable_failover {
            args.extend(os_args(["--enable-failover".as_ref()]));
        }
        args.extend(plane.extra_args(ALL_IN_ONE).iter().map(OsString::from));
        if plane.enable_scheduler_estimator {
            args.extend(os_args(["--enable-scheduler-estimator".as_ref()]));
        }
    }
    args
}

/// Starts the controller-manager and the scheduler (each unless it runs already, or the binary lacks it) and
/// waits until both have settled.
async fn start_controllers(plane: &ControlPlane, progress: &mut Progress) -> anyhow::Result<()> {
    let data_dir = &plane.data_dir;
    progress.step(
        "starting controllers",
        "karmada-controller-manager, karmada-scheduler",
    );
    let mut started = Vec::new();
    for (name, subcommand) in [
        (CONTROLLER_MANAGER, "controller-manager"),
        (SCHEDULER, "scheduler"),
    ] {
        if let Some(pid) = components::live_pid(data_dir, name) {
            progress.note(&format!("{name} is already running (pid {pid})"));
            continue;
        }
        let Some(help) = components::subcommand_help(&plane.binary, subcommand) else {
            progress.note(&format!(
                "{name}: this build of {} has no `{subcommand}` subcommand; skipped",
                plane.binary.display()
            ));
            continue;
        };
        let child = components::launch(Launch {
            name,
            binary: &plane.binary,
            args: controller_args(plane, name, subcommand, &help),
            data_dir,
            exit_with_stdin: plane.exit_with_stdin,
        })?;
        started.push((name, child));
    }
    // Watched together: both get the whole grace period, but the command waits for it once.
    let deadline = tokio::time::Instant::now() + SETTLE;
    for (name, child) in &mut started {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        components::settle(child, data_dir, name, left).await?;
    }
    for (name, child) in &started {
        progress.note(&format!("{name} started (pid {})", child.id()));
    }
    Ok(())
}

/// The command line of the controller-manager or the scheduler; `help` is the binary's help for the
/// subcommand, so flags an older build lacks are left out.
fn controller_args(
    plane: &ControlPlane,
    name: &str,
    subcommand: &str,
    help: &str,
) -> Vec<OsString> {
    let data_dir = &plane.data_dir;
    let kubeconfig = plane.kubeconfig();
    let mut command_args = os_args([
        subcommand.as_ref(),
        "--kubeconfig".as_ref(),
        kubeconfig.as_os_str(),
        "--context".as_ref(),
        KARMADA_CONTEXT.as_ref(),
        "--metrics-bind-address".as_ref(),
        "127.0.0.1:0".as_ref(),
    ]);
    if plane.enable_failover && subcommand == "controller-manager" {
        command_args.extend(os_args(["--enable-failover".as_ref()]));
    }
    // Beside the pid file, where `local-up --monitoring` finds what to scrape.
    if help.contains("--metrics-address-file") {
        command_args.extend(os_args([
            "--metrics-address-file".as_ref(),
            components::metrics_address_file(data_dir, name).as_os_str(),
        ]));
    }
    command_args.extend(plane.extra_args(subcommand).iter().map(OsString::from));
    if plane.enable_scheduler_estimator && subcommand == "scheduler" {
        command_args.extend(os_args(["--enable-scheduler-estimator".as_ref()]));
    }
    // The controller-manager signs Pull-mode agents' certificates with the API server's CA.
    if help.contains("--cluster-signing-cert-file") {
        let pki = data_dir.join("pki");
        command_args.extend(os_args([
            "--cluster-signing-cert-file".as_ref(),
            pki.join("ca.crt").as_os_str(),
            "--cluster-signing-key-file".as_ref(),
            pki.join("ca.key").as_os_str(),
        ]));
    }
    command_args
}

/// One estimator per Push cluster already joined, reading the member with the control plane's credentials.
async fn start_joined_estimators(plane: &ControlPlane, progress: &Progress) -> anyhow::Result<()> {
    let karmada = client::from_kubeconfig(&plane.kubeconfig(), Some(KARMADA_CONTEXT)).await?;
    let clusters = super::join::clusters(&karmada)
        .list(&Default::default())
        .await
        .context("listing clusters")?;
    for cluster in clusters.items {
        let cluster = serde_json::to_value(cluster)?;
        let name = cluster["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match super::estimators::member_kubeconfig(plane, &karmada, &cluster).await? {
            Some(kubeconfig) => {
                super::estimators::start(plane, &karmada, &name, &kubeconfig, None, progress).await?
            }
            None => progress.note(&format!(
                "{name}: no credentials for it in the control plane (Pull mode); no estimator started"
            )),
        }
    }
    Ok(())
}

fn os_args<const N: usize>(args: [&std::ffi::OsStr; N]) -> Vec<OsString> {
    args.iter().map(|a| a.to_os_string()).collect()
}

/// Polls `/readyz` through the kubeconfig until it answers `ok` or the timeout passes; a started child that
/// exits meanwhile fails at once with its log.
pub async fn wait_ready(
    kubeconfig: &Path,
    mut child: Option<&mut std::process::Child>,
    data_dir: &Path,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last_error = anyhow::anyhow!("kubeconfig {} not written yet", kubeconfig.display());
    while tokio::time::Instant::now() < deadline {
        if let Some(child) = child.as_deref_mut() {
            components::check_running(child, data_dir, APISERVER)?;
        }
        if kubeconfig.exists() {
            match client::from_kubeconfig(kubeconfig, Some(KARMADA_CONTEXT)).await {
                Ok(client) => match client::get_text(&client, "/readyz").await {
                    Ok(body) if body.trim() == "ok" => return Ok(()),
                    Ok(body) => last_error = anyhow::anyhow!("/readyz answered {body:?}"),
                    Err(err) => last_error = err,
                },
                Err(err) => last_error = err,
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(last_error)
}
