//! `karmadactl init`: starts the control plane in the background on the embedded store and
//! returns once it serves. Running it again on a live data directory reports status.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use crate::client;

/// Karmada's default for `--karmada-data`.
pub const DEFAULT_DATA_DIR: &str = "/etc/karmada";
pub const KUBECONFIG_FILE: &str = "karmada-apiserver.config";
pub const PID_FILE: &str = "karmada-apiserver.pid";
const READY_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Directory holding the store, certificates, logs and the kubeconfig.
    #[arg(long = "karmada-data", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Port of the API server (Karmada's default node port is 32443).
    #[arg(long, default_value_t = 32443)]
    pub port: u16,
    /// Address the API server listens on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: String,
    /// The `karmada` server binary; by default the one beside karmadactl, else on PATH.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
}

pub async fn run(args: InitArgs) -> anyhow::Result<()> {
    let kubeconfig = args.data_dir.join(KUBECONFIG_FILE);
    if let Some(pid) = live_pid(&args.data_dir) {
        let ready = wait_ready(&kubeconfig, Duration::from_secs(5))
            .await
            .is_ok();
        println!(
            "karmada control plane is already running from {} (pid {pid}, {})",
            args.data_dir.display(),
            if ready { "ready" } else { "not ready yet" }
        );
        println!("kubeconfig: {}", kubeconfig.display());
        return Ok(());
    }

    let binary = find_server_binary(args.karmada_binary.as_deref())?;
    step(
        1,
        "preparing data directory",
        &args.data_dir.display().to_string(),
    );
    let logs = args.data_dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let log_path = logs.join("karmada-apiserver.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;

    step(
        2,
        "starting karmada-apiserver",
        &format!("{}:{}", args.bind_address, args.port),
    );
    let mut command = std::process::Command::new(&binary);
    command
        .arg("apiserver")
        .arg("--data-dir")
        .arg(&args.data_dir)
        .arg("--bind-address")
        .arg(&args.bind_address)
        .arg("--secure-port")
        .arg(args.port.to_string())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // Its own process group: the control plane outlives this command and its terminal.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command
        .spawn()
        .with_context(|| format!("running {}", binary.display()))?;
    let pid = child.id();
    std::fs::write(args.data_dir.join(PID_FILE), format!("{pid}\n"))?;

    step(
        3,
        "waiting for the API server to become ready",
        &format!("pid {pid}"),
    );
    if let Err(err) = wait_ready(&kubeconfig, READY_TIMEOUT).await {
        bail!(
            "the API server did not become ready within {}s: {err:#}; see {}",
            READY_TIMEOUT.as_secs(),
            log_path.display()
        );
    }
    step(4, "control plane ready", "");
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
    println!("Stop it and remove its data with:");
    println!(
        "  karmadactl deinit --karmada-data {} --force",
        args.data_dir.display()
    );
    Ok(())
}

fn step(n: u32, what: &str, detail: &str) {
    if detail.is_empty() {
        println!("[{n}/4] {what}");
    } else {
        println!("[{n}/4] {what}: {detail}");
    }
}

/// The pid recorded in the data directory, if that process is still alive.
pub fn live_pid(data_dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data_dir.join(PID_FILE)).ok()?;
    let pid: i32 = text.trim().parse().ok()?;
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.split_whitespace().nth(2) == Some("Z"))
        .unwrap_or(false);
    (alive && !zombie).then_some(pid)
}

/// Polls `/readyz` through the kubeconfig until it answers `ok` or the timeout passes.
async fn wait_ready(kubeconfig: &Path, timeout: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last_error = anyhow::anyhow!("kubeconfig {} not written yet", kubeconfig.display());
    while tokio::time::Instant::now() < deadline {
        if kubeconfig.exists() {
            match client::from_kubeconfig(kubeconfig, None).await {
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

fn find_server_binary(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = flag {
        return Ok(path.to_path_buf());
    }
    if let Some(sibling) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("karmada")))
        && sibling.is_file()
    {
        return Ok(sibling);
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("karmada"))
        .find(|candidate| candidate.is_file());
    on_path.context("the `karmada` server binary was not found beside karmadactl or on PATH; build it with `cargo build --bin karmada` or pass --karmada-binary")
}
