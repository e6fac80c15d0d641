//! What the benchmarks share about the processes they run: a child killed on drop with its output in a log
//! file, its RSS, a client from a written kubeconfig, waiting for a file, and reading a Cluster's Ready
//! condition.

use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::bail;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

/// A child process killed (and reaped) on drop, so a failed run leaves nothing behind.
pub struct Process {
    child: Child,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Process {
    /// Spawns `command` with stdout and stderr written to `log`; the caller sets arguments, environment and
    /// stdin (a piped stdin keeps `--exit-with-stdin` children alive until drop).
    pub fn spawn(command: &mut Command, log: &Path) -> std::io::Result<Process> {
        let file = std::fs::File::create(log)?;
        let child = command.stdout(file.try_clone()?).stderr(file).spawn()?;
        Ok(Process { child })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    pub fn rss_mib(&self) -> f64 {
        rss_mib(self.child.id())
    }

    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.child.id()).unwrap_or(0.0)
    }
}

/// User plus system CPU seconds of a process (`/proc/PID/stat`, 100 ticks a second).
pub fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    use anyhow::Context;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name is parenthesised and may hold spaces: count fields after it.
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<f64> {
        Ok(fields.get(i).context("stat field")?.parse::<f64>()?)
    };
    // utime and stime: fields 14 and 15 of proc(5), the 12th and 13th after the name.
    Ok((ticks(11)? + ticks(12)?) / 100.0)
}

/// `VmRSS` of a process in MiB; 0 when it cannot be read (the process is gone).
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// A client for the cluster a kubeconfig file names.
pub async fn client(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    Ok(Client::try_from(config)?)
}

/// Waits until `path` exists: the components write their kubeconfigs once they serve.
pub async fn wait_for_file(path: &Path, what: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    while !path.exists() {
        if Instant::now() > deadline {
            bail!("{what} did not start (no {})", path.display());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Karmada's Clusters.
pub fn cluster_api(client: &Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
        "clusters",
    );
    Api::all_with(client.clone(), &resource)
}

/// Whether a Cluster's Ready condition is True.
pub fn is_ready(cluster: &DynamicObject) -> bool {
    cluster.data["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}
