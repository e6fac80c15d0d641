//! What the benchmarks share about the processes they run: a child killed on drop with its output in a log
//! file, its RSS, a client from a written kubeconfig, waiting for a file, reading a Cluster's Ready condition,
//! and the start-up of a federation (API server, member-sim, components, `karmadactl join`, Clusters Ready).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
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

    /// Closes the child's stdin, which a `--exit-with-stdin` component takes as a clean shutdown (it releases
    /// its leader Lease, so a successor need not wait for it to expire), and waits for it to exit.
    pub async fn shut_down(mut self, timeout: Duration) -> anyhow::Result<()> {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + timeout;
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                bail!(
                    "process {} did not exit within {timeout:?}",
                    self.child.id()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.child.id()).unwrap_or(0.0)
    }
}

/// A component's `/metrics` text, read over plain HTTP from `address`.
pub async fn scrape_metrics(address: std::net::SocketAddr) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
    Ok(body)
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

/// The `karmada` binary: the one given, or the one beside this executable.
pub fn karmada_binary(given: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(binary) => Ok(binary.clone()),
        None => Ok(std::env::current_exe()?
            .parent()
            .context("exe dir")?
            .join("karmada")),
    }
}

/// `RUST_LOG` of the components: quiet unless KARMADA_BENCH_LOG asks for more (e.g. `info` for an error report).
pub fn bench_log_level() -> String {
    std::env::var("KARMADA_BENCH_LOG").unwrap_or_else(|_| "warn".into())
}

/// Where the components write their logs: removed after the run unless kept.
pub enum LogDir {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl LogDir {
    /// A temporary directory, removed on drop.
    pub fn temp() -> anyhow::Result<LogDir> {
        Ok(LogDir::Temp(tempfile::tempdir()?))
    }

    /// A directory the caller chose, created if missing and kept.
    pub fn kept(path: &Path) -> anyhow::Result<LogDir> {
        std::fs::create_dir_all(path)?;
        Ok(LogDir::Kept(path.to_path_buf()))
    }

    /// A temporary directory, kept (and its path printed) when KARMADA_BENCH_KEEP_LOGS is set.
    pub fn from_env() -> anyhow::Result<LogDir> {
        let dir = tempfile::tempdir()?;
        if std::env::var_os("KARMADA_BENCH_KEEP_LOGS").is_none() {
            return Ok(LogDir::Temp(dir));
        }
        let kept = dir.keep();
        eprintln!("component logs kept in {}", kept.display());
        Ok(LogDir::Kept(kept))
    }

    pub fn path(&self) -> &Path {
        match self {
            LogDir::Temp(dir) => dir.path(),
            LogDir::Kept(path) => path,
        }
    }
}

/// How a benchmark starts `karmada` subcommands: which binary, where their logs go, their `RUST_LOG`.
pub struct Launcher {
    binary: PathBuf,
    logs: PathBuf,
    rust_log: String,
}

impl Launcher {
    pub fn new(binary: &Path, logs: &Path, rust_log: &str) -> Launcher {
        Launcher {
            binary: binary.to_path_buf(),
            logs: logs.to_path_buf(),
            rust_log: rust_log.to_string(),
        }
    }

    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// `karmadactl`, beside the server binary.
    pub fn karmadactl(&self) -> PathBuf {
        self.binary.with_file_name("karmadactl")
    }

    /// Starts `karmada <args>` logging to `<logs>/<name>.log`. Its stdin is piped so that a child started with
    /// `--exit-with-stdin` lives until the [`Process`] is dropped, and no longer.
    pub fn spawn(&self, name: &str, args: &[&str]) -> anyhow::Result<Process> {
        let log = self.logs.join(format!("{name}.log"));
        Process::spawn(
            Command::new(&self.binary)
                .args(args)
                .env("RUST_LOG", &self.rust_log)
                .stdin(Stdio::piped()),
            &log,
        )
        .with_context(|| {
            format!(
                "starting {} {name} ({})",
                self.binary.display(),
                log.display()
            )
        })
    }
}

/// A running `karmada apiserver` on the embedded store.
pub struct ApiServer {
    pub process: Process,
    /// Its data directory (kubeconfig, PKI).
    pub data: PathBuf,
    pub kubeconfig: PathBuf,
    pub client: Client,
}

/// Starts the API server with its data in `data` and waits for the kubeconfig it writes once it serves.
pub async fn start_apiserver(
    launcher: &Launcher,
    data: PathBuf,
    timeout: Duration,
) -> anyhow::Result<ApiServer> {
    start_apiserver_as(launcher, "apiserver", &[], data, timeout).await
}

/// Starts `karmada <subcommand>` (`apiserver`, or `all-in-one` with the API server inside) with `extra` flags
/// and its data in `data`, and waits for the kubeconfig it writes once it serves.
pub async fn start_apiserver_as(
    launcher: &Launcher,
    subcommand: &str,
    extra: &[&str],
    data: PathBuf,
    timeout: Duration,
) -> anyhow::Result<ApiServer> {
    let data_arg = data.to_string_lossy().to_string();
    let mut args = vec![
        subcommand,
        "--secure-port",
        "0",
        "--exit-with-stdin",
        "--data-dir",
        &data_arg,
    ];
    args.extend_from_slice(extra);
    let process = launcher.spawn(subcommand, &args)?;
    let kubeconfig = data.join("karmada-apiserver.config");
    wait_for_file(&kubeconfig, "karmada apiserver", timeout).await?;
    let client = client(&kubeconfig).await?;
    Ok(ApiServer {
        process,
        data,
        kubeconfig,
        client,
    })
}

/// One `karmada member-sim` process simulating the members `member1`..`memberN`.
pub struct MemberSim {
    pub process: Process,
    /// Where each member's kubeconfig is written (`<name>.config`).
    pub dir: PathBuf,
    pub names: Vec<String>,
}

impl MemberSim {
    pub fn kubeconfig(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.config"))
    }

    /// A client for each member, by name.
    pub async fn clients(&self) -> anyhow::Result<Vec<(String, Client)>> {
        let mut clients = Vec::new();
        for name in &self.names {
            clients.push((name.clone(), client(&self.kubeconfig(name)).await?));
        }
        Ok(clients)
    }
}

/// Starts a member-sim in scale mode simulating `count` members, with `extra` flags (e.g. `--nodes 10`), and
/// waits for every member's kubeconfig.
pub async fn start_member_sim(
    launcher: &Launcher,
    dir: PathBuf,
    count: u32,
    extra: &[&str],
    timeout: Duration,
) -> anyhow::Result<MemberSim> {
    let count_arg = count.to_string();
    let dir_arg = dir.to_string_lossy().to_string();
    let mut args = vec![
        "member-sim",
        "--count",
        &count_arg,
        "--name-prefix",
        "member",
        "--scale-mode",
    ];
    args.extend_from_slice(extra);
    args.extend(["--exit-with-stdin", "--data-dir", &dir_arg]);
    let process = launcher.spawn("member-sim", &args)?;
    let sim = MemberSim {
        process,
        dir,
        names: (1..=count).map(|i| format!("member{i}")).collect(),
    };
    for name in &sim.names {
        wait_for_file(&sim.kubeconfig(name), "member-sim", timeout).await?;
    }
    Ok(sim)
}

/// Starts a control-plane component (`controller-manager`, `scheduler`) against the API server's kubeconfig,
/// serving metrics on `metrics` (`127.0.0.1:0` for any port), with `extra` flags.
pub fn start_component(
    launcher: &Launcher,
    component: &str,
    kubeconfig: &Path,
    metrics: &str,
    extra: &[&str],
) -> anyhow::Result<Process> {
    let kubeconfig_arg = kubeconfig.to_string_lossy().to_string();
    let mut args = vec![
        component,
        "--kubeconfig",
        &kubeconfig_arg,
        "--metrics-bind-address",
        metrics,
    ];
    args.extend_from_slice(extra);
    args.push("--exit-with-stdin");
    launcher.spawn(component, &args)
}

/// Starts `karmada scheduler` with its defaults against the API server's kubeconfig.
pub fn start_scheduler(launcher: &Launcher, kubeconfig: &Path) -> anyhow::Result<Process> {
    start_component(launcher, "scheduler", kubeconfig, "127.0.0.1:0", &[])
}

/// Joins one member in Push mode with `karmadactl join`.
pub async fn join_push(
    karmadactl: &Path,
    name: &str,
    kubeconfig: &Path,
    member_kubeconfig: &Path,
) -> anyhow::Result<()> {
    let out = tokio::process::Command::new(karmadactl)
        .args(["join", name, "--kubeconfig"])
        .arg(kubeconfig)
        .arg("--cluster-kubeconfig")
        .arg(member_kubeconfig)
        .output()
        .await
        .with_context(|| format!("running {}", karmadactl.display()))?;
    if !out.status.success() {
        bail!("join {name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Polls the Clusters until `expected` of them are Ready.
pub async fn wait_clusters_ready(
    karmada: &Client,
    expected: usize,
    timeout: Duration,
) -> anyhow::Result<()> {
    let api = cluster_api(karmada);
    let deadline = Instant::now() + timeout;
    loop {
        let list = api.list(&Default::default()).await?;
        let ready = list.items.iter().filter(|c| is_ready(c)).count();
        if ready == expected {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{ready}/{expected} clusters Ready");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
