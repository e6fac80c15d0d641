//! `karmadactl local-up`: a whole Karmada on this machine — the control plane of `init` on the embedded store
//! plus three simulated member clusters (`karmada member-sim`): member1 and member2 joined in Push mode, member3
//! in Pull mode when this build has `karmadactl register` (Push otherwise). One kubeconfig,
//! `DIR/karmada-apiserver.config`, holds the contexts karmada-apiserver, member1, member2 and member3. Returns
//! once every member is Ready; running it again starts only what is missing.
//!
//! The default DIR is `~/.karmada` (Karmada's own local-up script writes to `~/.kube`; a directory of ours
//! keeps `local-down` from touching anything else). Members live in `DIR/members` with the embedded store, on
//! fixed ports after the API server's (32444, 32445, 32446), so a restarted member keeps its data and the
//! endpoint its Cluster records.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;

use super::init::{self, ControlPlane, KARMADA_CONTEXT};
use super::join::{self, JoinArgs};
use super::local_up_pull as pull;
use crate::components::{self, Launch};
use crate::progress::Progress;
use crate::{client, kubeconfig};

pub const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];
/// The member registered in Pull mode (as in Karmada's local-up).
pub const PULL_MEMBER: &str = "member3";
const MEMBER_DIR: &str = "members";
const MEMBER_START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Args, Debug)]
pub struct LocalUpArgs {
    /// Directory for the control plane, the members (DIR/members), logs, pid files and the kubeconfig
    /// [default: ~/.karmada, or /tmp/karmada without HOME].
    #[arg(long = "karmada-data", short = 'd')]
    pub data_dir: Option<PathBuf>,
    /// Port of the API server.
    #[arg(long, short = 'p', default_value_t = 32443)]
    pub port: u16,
    /// Port of member1; member2 and member3 take the next two [default: the API server's port + 1]. 0 picks
    /// free ports, which change when a member restarts.
    #[arg(long)]
    pub member_port: Option<u16>,
    /// The `karmada` server binary; by default the one beside karmadactl, else on PATH.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
    /// How long to wait for the members to become Ready, in seconds.
    #[arg(long, default_value_t = 120)]
    pub wait_timeout: u64,
    /// Every component stops when this command's standard input closes (tests, supervisors).
    #[arg(long)]
    pub exit_with_stdin: bool,
    /// Run the control plane as one process (`karmada all-in-one`) rather than API server, controller-manager
    /// and scheduler.
    #[arg(long)]
    pub all_in_one: bool,
    /// Cluster failover: passes `--enable-failover` to the controller-manager.
    #[arg(long)]
    pub enable_failover: bool,
    /// One more argument for the controller-manager (or the all-in-one process), e.g.
    /// `--controller-manager-arg=--enable-descheduler`; repeat for more.
    #[arg(
        long = "controller-manager-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub controller_manager_args: Vec<String>,
    /// Also start Prometheus (Debian's `prometheus`) scraping every component and member, with Karmada's
    /// alerting rules loaded; its URL is printed and `local-down` stops it. Config, rules and the Grafana
    /// dashboards to import are written to DIR/monitoring.
    #[arg(long)]
    pub monitoring: bool,
    /// Port Prometheus listens on (127.0.0.1); 0 picks a free one.
    #[arg(long, default_value_t = 9090, requires = "monitoring")]
    pub monitoring_port: u16,
    /// How often Prometheus scrapes every target and evaluates the rules.
    #[arg(long, default_value = "15s", requires = "monitoring", value_parser = parse_interval)]
    pub monitoring_scrape_interval: String,
    /// Start a scheduler estimator (karmada-scheduler-estimator) for each member and let the scheduler ask
    /// them.
    #[arg(long)]
    pub enable_scheduler_estimator: bool,
    /// Port of the web dashboard (`karmada dashboard`, HTTPS on 127.0.0.1); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub dashboard_port: u16,
}

/// A Prometheus duration (`15s`, `500ms`, `1m`).
fn parse_interval(text: &str) -> Result<String, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    if digits.is_empty()
        || !digits.chars().all(|c| c.is_ascii_digit())
        || !["ms", "s", "m", "h"].contains(&unit)
        || digits.chars().all(|c| c == '0')
    {
        return Err("expected a positive duration such as 15s, 500ms or 1m".to_string());
    }
    Ok(text.to_string())
}

#[derive(Args, Debug)]
pub struct LocalDownArgs {
    /// The directory `local-up` used [default: ~/.karmada, or /tmp/karmada without HOME].
    #[arg(long = "karmada-data", short = 'd')]
    pub data_dir: Option<PathBuf>,
}

/// `~/.karmada`, or `/tmp/karmada` when there is no home directory.
pub fn default_data_dir() -> PathBuf {
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".karmada"),
        None => PathBuf::from("/tmp/karmada"),
    }
}

/// The ports of the three members: consecutive from `first`, or all 0 (free ports).
pub fn member_ports(api_port: u16, member_port: Option<u16>) -> anyhow::Result<[u16; 3]> {
    let first = match member_port {
        Some(port) => port,
        None if api_port == 0 => 0,
        None => api_port
            .checked_add(1)
            .context("--port is too high to leave room for the members' ports")?,
    };
    if first == 0 {
        return Ok([0; 3]);
    }
    let at = |offset: u16| {
        first
            .checked_add(offset)
            .context("--member-port is too high for three consecutive ports")
    };
    Ok([at(0)?, at(1)?, at(2)?])
}

pub fn member_component(name: &str) -> String {
    format!("member-sim-{name}")
}

pub async fn run(args: LocalUpArgs) -> anyhow::Result<()> {
    let data_dir = args.data_dir.clone().unwrap_or_else(default_data_dir);
    let mut plane = ControlPlane::new(
        &data_dir,
        args.port,
        "127.0.0.1",
        args.karmada_binary.as_deref(),
        args.exit_with_stdin,
    )?;
    plane.all_in_one = args.all_in_one;
    plane.enable_failover = args.enable_failover;
    plane.controller_manager_args = args.controller_manager_args.clone();
    plane.enable_scheduler_estimator = args.enable_scheduler_estimator;
    if args.monitoring {
        // Before anything starts: a missing Prometheus should not leave a half-started federation behind.
        crate::monitoring::prometheus::find_prometheus()?;
    }
    let ports = member_ports(args.port, args.member_port)?;
    let mut progress =
        Progress::new(7 + u32::from(args.monitoring) + u32::from(args.enable_scheduler_estimator));
    init::up(&plane, &mut progress).await?;
    let data_dir = &plane.data_dir;
    let karmada_kubeconfig = plane.kubeconfig();

    let members_dir = data_dir.join(MEMBER_DIR);
    progress.step(
        "starting member clusters",
        &format!("{} in {}", MEMBERS.join(", "), members_dir.display()),
    );
    std::fs::create_dir_all(&members_dir)
        .with_context(|| format!("creating {}", members_dir.display()))?;
    for (name, port) in MEMBERS.iter().zip(ports) {
        start_member(&plane, &members_dir, name, port, &progress).await?;
    }

    progress.step("joining member clusters", "");
    let karmada = client::from_kubeconfig(&karmada_kubeconfig, Some(KARMADA_CONTEXT)).await?;
    join_members(&plane, &karmada, &members_dir, &progress).await?;

    progress.step(
        "writing the kubeconfig",
        &karmada_kubeconfig.display().to_string(),
    );
    merge_kubeconfigs(&karmada_kubeconfig, &members_dir)?;
    progress.note(&format!(
        "contexts: {KARMADA_CONTEXT}, {}",
        MEMBERS.join(", ")
    ));

    if args.enable_scheduler_estimator {
        progress.step("starting scheduler estimators", "one per member");
        for name in MEMBERS {
            let member_kubeconfig = members_dir.join(format!("{name}.config"));
            super::estimators::start(
                &plane,
                &karmada,
                name,
                &member_kubeconfig,
                Some(name),
                &progress,
            )
            .await
            .with_context(|| format!("starting the scheduler estimator of {name}"))?;
        }
    }

    progress.step("waiting for the member clusters to be Ready", "");
    let modes = wait_all_ready(
        &karmada,
        data_dir,
        Duration::from_secs(args.wait_timeout),
        &progress,
    )
    .await?;

    let prometheus = if args.monitoring {
        progress.step(
            "starting Prometheus",
            &data_dir
                .join(crate::monitoring::prometheus::DIR)
                .display()
                .to_string(),
        );
        let url = start_prometheus(data_dir, &karmada_kubeconfig, &members_dir, &args).await?;
        progress.note(&format!("Prometheus ready at {url}"));
        Some(url)
    } else {
        None
    };

    // The dashboard is started last: it is optional, and a server binary without it still brings the
    // federation up.
    let dashboard = if components::has_subcommand(&plane.binary, "dashboard") {
        let url =
            super::local_up_dashboard::start(&plane, &karmada_kubeconfig, args.dashboard_port)
                .await?;
        progress.note(&format!("dashboard at {url}"));
        Some(url)
    } else {
        None
    };

    progress.finish();
    print_summary(
        data_dir,
        &karmada_kubeconfig,
        progress.elapsed(),
        &modes,
        dashboard.as_deref(),
        prometheus.as_deref(),
    );
    Ok(())
}

/// Joins every member in Push mode, except the Pull member when the server binary has the
/// agent: that one registers in Pull mode.
async fn join_members(
    plane: &ControlPlane,
    karmada: &kube::Client,
    members_dir: &Path,
    progress: &Progress,
) -> anyhow::Result<()> {
    let karmada_kubeconfig = plane.kubeconfig();
    // Pull mode needs the agent in the server binary (`karmadactl register` starts it).
    let pull_available = components::has_subcommand(&plane.binary, "agent");
    for name in MEMBERS {
        let member_kubeconfig = members_dir.join(format!("{name}.config"));
        if name == PULL_MEMBER && pull_available {
            let registered = pull::register_member(plane, karmada, name, &member_kubeconfig)
                .await
                .with_context(|| format!("registering {name} in Pull mode"))?;
            progress.note(&format!("{name} {registered}"));
            continue;
        }
        let joined = join_member(karmada, &karmada_kubeconfig, name, &member_kubeconfig)
            .await
            .with_context(|| format!("joining {name}"))?;
        progress.note(&format!("{name} {joined} (Push mode)"));
        if name == PULL_MEMBER {
            progress.note(&format!(
                "{name} uses Push mode: Pull mode needs `karmada agent`, which {} does not have",
                plane.binary.display()
            ));
        }
    }
    Ok(())
}

/// Merges the members' kubeconfigs into the control plane's, one context each.
fn merge_kubeconfigs(karmada_kubeconfig: &Path, members_dir: &Path) -> anyhow::Result<()> {
    let base = kubeconfig::read(karmada_kubeconfig)?;
    let mut others = Vec::new();
    for name in MEMBERS {
        others.push(kubeconfig::read(
            &members_dir.join(format!("{name}.config")),
        )?);
    }
    kubeconfig::write(karmada_kubeconfig, &kubeconfig::merge(&base, &others))?;
    Ok(())
}

/// Starts Prometheus scraping the control plane and every member; returns its URL.
async fn start_prometheus(
    data_dir: &Path,
    karmada_kubeconfig: &Path,
    members_dir: &Path,
    args: &LocalUpArgs,
) -> anyhow::Result<String> {
    let merged = kubeconfig::read(karmada_kubeconfig)?;
    let members: Vec<(&str, Value)> = MEMBERS
        .iter()
        .map(|name| {
            Ok((
                *name,
                kubeconfig::read(&members_dir.join(format!("{name}.config")))?,
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    let url = crate::monitoring::prometheus::up(
        data_dir,
        &merged,
        KARMADA_CONTEXT,
        &members,
        &crate::monitoring::prometheus::MonitoringOptions {
            port: args.monitoring_port,
            scrape_interval: args.monitoring_scrape_interval.clone(),
        },
    )
    .await?;
    Ok(url)
}

/// What is running and how to use and stop it.
fn print_summary(
    data_dir: &Path,
    karmada_kubeconfig: &Path,
    took: Duration,
    modes: &[(String, String)],
    dashboard: Option<&str>,
    prometheus: Option<&str>,
) {
    let kc = karmada_kubeconfig.display();
    println!();
    println!(
        "Local Karmada is up ({:.1}s): the control plane and {}.",
        took.as_secs_f64(),
        modes
            .iter()
            .map(|(name, mode)| format!("{name} ({mode})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("  export KUBECONFIG={kc}");
    println!("  karmadactl get clusters");
    println!("  kubectl --context member1 get nodes");
    println!("Logs: {}", data_dir.join(components::LOG_DIR).display());
    if let Some(url) = dashboard {
        println!("Dashboard: {url} (log in with a token, or paste the kubeconfig)");
    }
    if let Some(url) = prometheus {
        let dir = data_dir.join(crate::monitoring::prometheus::DIR);
        println!("Prometheus: {url} (alerts: {url}/alerts)");
        println!(
            "  Grafana dashboards to import: {}",
            dir.join("dashboards").display()
        );
    }
    println!(
        "Stop everything with: karmadactl local-down --karmada-data {}",
        data_dir.display()
    );
}

/// The pod range of a local-up member: 10.101.0.0/16 for member1, the next /16 for each next one.
pub fn member_pod_cidr(name: &str) -> String {
    let index = MEMBERS
        .iter()
        .position(|m| *m == name)
        .unwrap_or(MEMBERS.len());
    format!("10.{}.0.0/16", 101 + index)
}

async fn start_member(
    plane: &ControlPlane,
    members_dir: &Path,
    name: &str,
    port: u16,
    progress: &Progress,
) -> anyhow::Result<()> {
    let component = member_component(name);
    let member_kubeconfig = members_dir.join(format!("{name}.config"));
    if let Some(pid) = components::live_pid(&plane.data_dir, &component) {
        progress.note(&format!("{name} is already running (pid {pid})"));
        return Ok(());
    }
    components::ensure_port_free("127.0.0.1", port, "--member-port")?;
    // The member writes its kubeconfig once it serves; an old one must not pass for it.
    let _ = std::fs::remove_file(&member_kubeconfig);
    let args: Vec<OsString> = vec![
        "member-sim".into(),
        "--name".into(),
        name.into(),
        "--data-dir".into(),
        members_dir.as_os_str().to_os_string(),
        "--port".into(),
        port.to_string().into(),
        "--storage".into(),
        "embedded".into(),
        // Pod ranges must not overlap across a clusterset (multi-cluster Services route to pod IPs).
        "--pod-cidr".into(),
        member_pod_cidr(name).into(),
    ];
    let mut child = components::launch(Launch {
        name: &component,
        binary: &plane.binary,
        args,
        data_dir: &plane.data_dir,
        exit_with_stdin: plane.exit_with_stdin,
    })?;
    let deadline = tokio::time::Instant::now() + MEMBER_START_TIMEOUT;
    loop {
        components::check_running(&mut child, &plane.data_dir, &component)?;
        if member_kubeconfig.exists()
            && let Ok(member) = client::from_kubeconfig(&member_kubeconfig, Some(name)).await
            && client::get_text(&member, "/readyz")
                .await
                .is_ok_and(|body| body.trim() == "ok")
        {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "member cluster {name} did not serve within {}s; see {}",
                MEMBER_START_TIMEOUT.as_secs(),
                components::log_file(&plane.data_dir, &component).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    progress.note(&format!("{name} started (pid {})", child.id()));
    Ok(())
}

/// Joins `name` unless its Cluster exists; a Cluster whose endpoint no longer matches the member's (a member
/// on free ports that restarted) gets the new endpoint. Returns what was done.
async fn join_member(
    karmada: &kube::Client,
    karmada_kubeconfig: &Path,
    name: &str,
    member_kubeconfig: &Path,
) -> anyhow::Result<String> {
    let clusters = join::clusters(karmada);
    if let Some(existing) = clusters.get_opt(name).await? {
        let member = kubeconfig::read(member_kubeconfig)?;
        let server = member["clusters"][0]["cluster"]["server"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let recorded = existing.data["spec"]["apiEndpoint"]
            .as_str()
            .unwrap_or_default();
        if !server.is_empty() && recorded != server {
            let patch = serde_json::json!({"spec": {"apiEndpoint": server}});
            clusters
                .patch(
                    name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await
                .with_context(|| format!("updating the endpoint of cluster {name}"))?;
            return Ok(format!("is already joined; its endpoint moved to {server}"));
        }
        return Ok("is already joined".to_string());
    }
    let args = JoinArgs {
        name: name.to_string(),
        cluster_kubeconfig: member_kubeconfig.to_path_buf(),
        cluster_context: Some(name.to_string()),
        cluster_provider: None,
        cluster_region: None,
        cluster_zones: Vec::new(),
        kubeconfig: Some(karmada_kubeconfig.to_path_buf()),
        karmada_context: Some(KARMADA_CONTEXT.to_string()),
        cluster_namespace: join::CLUSTER_NAMESPACE.to_string(),
        dry_run: false,
    };
    // join's own lines would drown the steps; only its outcome is shown.
    join::join_cluster(&args, &mut crate::progress::Progress::hidden()).await?;
    Ok("joined".to_string())
}

/// The Ready condition status of a Cluster object ("True", "False", "Unknown" or "" when absent).
pub fn ready_status(cluster: &Value) -> String {
    cluster["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["status"].as_str())
        .unwrap_or_default()
        .to_string()
}

async fn wait_all_ready(
    karmada: &kube::Client,
    data_dir: &Path,
    timeout: Duration,
    progress: &Progress,
) -> anyhow::Result<Vec<(String, String)>> {
    let clusters = join::clusters(karmada);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut reported: Vec<&str> = Vec::new();
    let controllers = match components::live_pid(data_dir, init::APISERVER) {
        Some(pid) if components::runs_subcommand(pid, init::ALL_IN_ONE) => init::APISERVER,
        _ => init::CONTROLLER_MANAGER,
    };
    loop {
        let mut waiting = Vec::new();
        let mut modes = Vec::new();
        for name in MEMBERS {
            let status = match clusters.get_opt(name).await {
                Ok(Some(cluster)) => {
                    let value = serde_json::to_value(&cluster)?;
                    let mode = value["spec"]["syncMode"].as_str().unwrap_or("Push");
                    modes.push((name.to_string(), mode.to_string()));
                    ready_status(&value)
                }
                Ok(None) => "missing".to_string(),
                Err(err) => format!("unreadable: {err}"),
            };
            if status == "True" {
                if !reported.contains(&name) {
                    progress.note(&format!("{name} Ready"));
                    reported.push(name);
                }
            } else {
                waiting.push(format!(
                    "{name} (Ready: {})",
                    if status.is_empty() {
                        "not reported yet"
                    } else {
                        &status
                    }
                ));
            }
        }
        if waiting.is_empty() {
            return Ok(modes);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "not Ready after {}s: {}; the cluster status controller runs in {controllers}, see {}",
                timeout.as_secs(),
                waiting.join(", "),
                components::log_file(data_dir, controllers).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub async fn run_down(args: LocalDownArgs) -> anyhow::Result<()> {
    let data_dir = args.data_dir.clone().unwrap_or_else(default_data_dir);
    let data_dir = std::path::absolute(&data_dir)
        .with_context(|| format!("resolving {}", data_dir.display()))?;
    let stopped = super::deinit::stop_all(&data_dir).await?;
    if stopped == 0 {
        println!("nothing is running from {}", data_dir.display());
    } else {
        println!(
            "stopped {stopped} component(s); data kept in {} (start again with `karmadactl local-up --karmada-data {}`)",
            data_dir.display(),
            data_dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn member_ports_follow_the_api_server_or_the_flag() {
        assert_eq!(member_ports(32443, None).unwrap(), [32444, 32445, 32446]);
        assert_eq!(
            member_ports(32443, Some(40000)).unwrap(),
            [40000, 40001, 40002]
        );
        assert_eq!(member_ports(0, None).unwrap(), [0, 0, 0]);
        assert_eq!(member_ports(5000, Some(0)).unwrap(), [0, 0, 0]);
        assert!(member_ports(65535, None).is_err());
        assert!(member_ports(1, Some(65534)).is_err());
    }

    #[test]
    fn ready_status_reads_the_ready_condition() {
        let ready = json!({"status": {"conditions": [
            {"type": "CompleteAPIEnablements", "status": "True"},
            {"type": "Ready", "status": "False"}
        ]}});
        assert_eq!(ready_status(&ready), "False");
        assert_eq!(ready_status(&json!({"status": {}})), "");
    }
}
