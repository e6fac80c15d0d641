//! The local `karmada agent` process of a registered member: where its files live and how it is started and
//! stopped (like `init` does for the API server: own process group, pid file, log file).
//!
//! Layout: `<karmada-data>/agents/<cluster>/` holds `karmada-agent.config` (the agent's kubeconfig, 0600),
//! `karmada-agent.pid`, `karmada-agent.log` and `karmada-agent.metrics` (the address its `/metrics` is served on).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;

use crate::components;

pub const KUBECONFIG_FILE: &str = "karmada-agent.config";
pub const PID_FILE: &str = "karmada-agent.pid";
pub const LOG_FILE: &str = "karmada-agent.log";
/// Where the agent writes the address of its `/metrics` (on a free port, so agents never collide).
pub const METRICS_ADDRESS_FILE: &str = "karmada-agent.metrics";

/// The directory of the agent of `cluster`.
pub fn agent_dir(data_dir: &Path, cluster: &str) -> PathBuf {
    data_dir.join("agents").join(cluster)
}

/// The pid recorded for the agent, if that process is alive and runs from `dir`.
pub fn live_pid(dir: &Path) -> Option<i32> {
    components::live_pid_in(&dir.join(PID_FILE), dir)
}

/// What the agent is started with.
pub struct AgentLaunch<'a> {
    pub binary: &'a Path,
    pub dir: &'a Path,
    pub cluster: &'a str,
    pub cluster_kubeconfig: &'a Path,
    pub cluster_context: Option<&'a str>,
    pub extra_args: Vec<String>,
}

/// Starts the agent detached (its own process group, stdin closed, output to the log) and records its pid.
pub fn start(launch: &AgentLaunch<'_>) -> anyhow::Result<(u32, std::process::Child)> {
    let log_path = launch.dir.join(LOG_FILE);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut command = std::process::Command::new(launch.binary);
    command
        .arg("agent")
        .arg("--karmada-kubeconfig")
        .arg(launch.dir.join(KUBECONFIG_FILE))
        .arg("--cluster-name")
        .arg(launch.cluster)
        .arg("--cluster-kubeconfig")
        .arg(launch.cluster_kubeconfig);
    if let Some(context) = launch.cluster_context {
        command.arg("--cluster-context").arg(context);
    }
    // A free port: several agents, and the controller-manager, may run on this host.
    command
        .args([
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--metrics-address-file",
        ])
        .arg(launch.dir.join(METRICS_ADDRESS_FILE));
    command
        .args(&launch.extra_args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // Its own process group: the agent outlives this command and its terminal.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command
        .spawn()
        .with_context(|| format!("running {}", launch.binary.display()))?;
    let pid = child.id();
    std::fs::write(launch.dir.join(PID_FILE), format!("{pid}\n"))
        .with_context(|| format!("writing {}", launch.dir.join(PID_FILE).display()))?;
    Ok((pid, child))
}

/// Stops the agent recorded in `dir` (SIGTERM, then SIGKILL after a timeout). True if one was running.
pub async fn stop(dir: &Path) -> anyhow::Result<bool> {
    let stopped = components::stop_recorded(&dir.join(PID_FILE), dir, "the agent").await?;
    Ok(stopped.is_some())
}

/// The last lines of the agent's log, for error messages.
pub fn log_tail(dir: &Path, lines: usize) -> String {
    components::log_tail(&dir.join(LOG_FILE), lines)
}
