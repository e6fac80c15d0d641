//! Background processes of a local control plane: one pid file and one log per component in the data
//! directory, detached from the terminal, stopped with SIGTERM (then SIGKILL).
//!
//! A pid file is trusted only while its process is alive, not a zombie, and its command line mentions the data
//! directory: a recycled pid of an unrelated process is never signalled.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Where component logs go, inside the data directory.
pub const LOG_DIR: &str = "logs";
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

pub fn pid_file(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(format!("{name}.pid"))
}

/// Where component `name` writes the address of its `/metrics` (beside its pid file).
pub fn metrics_address_file(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(format!("{name}.metrics"))
}

pub fn log_file(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(LOG_DIR).join(format!("{name}.log"))
}

/// The pid of component `name` if it is running from this data directory.
pub fn live_pid(data_dir: &Path, name: &str) -> Option<i32> {
    live_pid_in(&pid_file(data_dir, name), data_dir)
}

/// The pid `pid_file` records, if that process is alive and its command line names `dir` (a recycled pid of
/// another program is not ours to signal).
pub fn live_pid_in(pid_file: &Path, dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(pid_file).ok()?;
    let pid: i32 = text.trim().parse().ok()?;
    if !process_alive(pid) {
        return None;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let dir = dir.to_string_lossy();
    let ours = String::from_utf8_lossy(&cmdline).contains(dir.as_ref());
    ours.then_some(pid)
}

/// Alive and not a zombie.
/// Whether live process `pid` runs `karmada <subcommand>` (its command line's second argument).
pub fn runs_subcommand(pid: i32, subcommand: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        cmdline
            .split(|byte| *byte == 0)
            .nth(1)
            .is_some_and(|arg| arg == subcommand.as_bytes())
    })
}

pub fn process_alive(pid: i32) -> bool {
    let alive = kill(Pid::from_raw(pid), None).is_ok();
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            // The state follows the parenthesised command name, which may itself contain spaces.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                == Some("Z")
        })
        .unwrap_or(false);
    alive && !zombie
}

/// The components with a pid file in the data directory, in the order they should be stopped: members and
/// agents first, then the controllers, the API server last.
pub fn recorded(data_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".pid").map(str::to_string)
        })
        .collect();
    names.sort_by_key(|name| (stop_rank(name), name.clone()));
    names
}

fn stop_rank(name: &str) -> u8 {
    match name {
        // What watches the others goes first, so their stopping raises no alert.
        "prometheus" => 0,
        "karmada-apiserver" => 3,
        n if n.starts_with("karmada-controller-manager") || n.starts_with("karmada-scheduler") => 2,
        n if n.starts_with("karmada-agent") => 0,
        _ => 1,
    }
}

/// How a component is started.
pub struct Launch<'a> {
    pub name: &'a str,
    pub binary: &'a Path,
    pub args: Vec<OsString>,
    pub data_dir: &'a Path,
    /// Give the component this command's stdin and `--exit-with-stdin`: it stops when the caller's pipe closes.
    pub exit_with_stdin: bool,
}

/// Starts a component in its own process group (it outlives this command and its terminal), logging to
/// `DATA/logs/NAME.log`, and records its pid.
pub fn launch(launch: Launch<'_>) -> anyhow::Result<Child> {
    let log_path = log_file(launch.data_dir, launch.name);
    if let Some(dir) = log_path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut command = Command::new(launch.binary);
    command
        .args(&launch.args)
        .stdout(log.try_clone()?)
        .stderr(log);
    if launch.exit_with_stdin {
        command.arg("--exit-with-stdin").stdin(Stdio::inherit());
    } else {
        command.stdin(Stdio::null());
    }
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command
        .spawn()
        .with_context(|| format!("running {}", launch.binary.display()))?;
    std::fs::write(
        pid_file(launch.data_dir, launch.name),
        format!("{}\n", child.id()),
    )?;
    Ok(child)
}

/// Fails with the end of the component's log if the child has exited.
pub fn check_running(child: &mut Child, data_dir: &Path, name: &str) -> anyhow::Result<()> {
    if let Some(status) = child.try_wait()? {
        let log = log_file(data_dir, name);
        bail!(
            "{name} exited ({status}); last lines of {}:\n{}",
            log.display(),
            log_tail(&log, 15)
        );
    }
    Ok(())
}

/// Watches a freshly started component for `grace`: a bad flag or a taken port makes it exit at once, and
/// that should be reported now rather than discovered later.
pub async fn settle(
    child: &mut Child,
    data_dir: &Path,
    name: &str,
    grace: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        check_running(child, data_dir, name)?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check_running(child, data_dir, name)
}

pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Stops component `name` if it runs from this data directory and removes its pid file. Returns the pid
/// that was stopped.
pub async fn stop(data_dir: &Path, name: &str) -> anyhow::Result<Option<i32>> {
    stop_recorded(&pid_file(data_dir, name), data_dir, name).await
}

/// Stops the process `pid_file` records if it runs from `dir` (SIGTERM, then SIGKILL after a timeout) and
/// removes the pid file. Returns the pid that was stopped.
pub async fn stop_recorded(pid_file: &Path, dir: &Path, name: &str) -> anyhow::Result<Option<i32>> {
    let stopped = match live_pid_in(pid_file, dir) {
        Some(pid) => {
            let target = Pid::from_raw(pid);
            kill(target, Signal::SIGTERM).with_context(|| format!("signalling {name}"))?;
            let deadline = Instant::now() + STOP_TIMEOUT;
            while process_alive(pid) {
                if Instant::now() >= deadline {
                    let _ = kill(target, Signal::SIGKILL);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Some(pid)
        }
        None => None,
    };
    let _ = std::fs::remove_file(pid_file);
    Ok(stopped)
}

/// Fails clearly when something else already listens on the port (0 means "any free port").
pub fn ensure_port_free(address: &str, port: u16, flag: &str) -> anyhow::Result<()> {
    if port == 0 {
        return Ok(());
    }
    match std::net::TcpListener::bind((address, port)) {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => bail!(
            "port {port} on {address} is already in use by another process; stop it or choose another port with {flag}"
        ),
        Err(err) => Err(err).with_context(|| format!("checking that {address}:{port} is free")),
    }
}

/// The `karmada` server binary: `--karmada-binary`, else the one beside karmadactl, else on PATH.
pub fn find_server_binary(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = flag {
        if !path.is_file() {
            bail!(
                "--karmada-binary {}: no such file; build it with `cargo build --bin karmada`",
                path.display()
            );
        }
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
    on_path.context(
        "the `karmada` server binary was not found beside karmadactl or on PATH; build it with \
         `cargo build --release --bin karmada` (or `cargo build --bins`) or pass --karmada-binary",
    )
}

/// Whether this build of the `karmada` binary has a subcommand (components arrive one issue at a time).
pub fn has_subcommand(binary: &Path, subcommand: &str) -> bool {
    subcommand_help(binary, subcommand).is_some()
}

/// The `--help` text of a subcommand of the `karmada` binary, if it has that subcommand.
pub fn subcommand_help(binary: &Path, subcommand: &str) -> Option<String> {
    let output = Command::new(binary)
        .args([subcommand, "--help"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stop_order_is_members_then_controllers_then_api_server() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "karmada-apiserver",
            "karmada-scheduler",
            "member-sim-member1",
            "karmada-controller-manager",
            "karmada-agent-member3",
        ] {
            std::fs::write(pid_file(dir.path(), name), "1\n").unwrap();
        }
        std::fs::write(dir.path().join("other.txt"), "").unwrap();
        assert_eq!(
            recorded(dir.path()),
            vec![
                "karmada-agent-member3",
                "member-sim-member1",
                "karmada-controller-manager",
                "karmada-scheduler",
                "karmada-apiserver"
            ]
        );
    }

    #[test]
    fn a_pid_of_another_process_is_not_ours() {
        let dir = tempfile::tempdir().unwrap();
        // Our own pid is alive but its command line does not mention the directory.
        std::fs::write(
            pid_file(dir.path(), "x"),
            format!("{}\n", std::process::id()),
        )
        .unwrap();
        assert_eq!(live_pid(dir.path(), "x"), None);
        std::fs::write(pid_file(dir.path(), "y"), "not a pid").unwrap();
        assert_eq!(live_pid(dir.path(), "y"), None);
    }

    #[test]
    fn a_taken_port_is_reported_with_the_flag() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let err = ensure_port_free("127.0.0.1", port, "--port").unwrap_err();
        assert!(err.to_string().contains("already in use"), "{err}");
        assert!(err.to_string().contains("--port"), "{err}");
        ensure_port_free("127.0.0.1", 0, "--port").unwrap();
    }
}
