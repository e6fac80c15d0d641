//! Starts a real `karmada apiserver` process on a free port over HTTPS and drives it with the
//! installed `/usr/bin/kubectl`. The server exits when this process does: it is started with
//! `--exit-with-stdin` and we hold its stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    cache: PathBuf,
}

const START_TIMEOUT: Duration = Duration::from_secs(60);

impl Server {
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    pub fn start_with(extra_args: &[&str]) -> Server {
        Self::start_as("apiserver", extra_args)
    }

    /// `karmada all-in-one` (API server, controllers and scheduler in one process) with `extra_args`, in place
    /// of the API server alone.
    pub fn start_all_in_one(extra_args: &[&str]) -> Server {
        Self::start_as("all-in-one", extra_args)
    }

    fn start_as(subcommand: &str, extra_args: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let child = spawn(dir.path(), subcommand, extra_args);
        let kubeconfig = dir.path().join("data").join("karmada-apiserver.config");
        let cache = dir.path().join("kubectl-cache");
        let server = Server {
            child,
            dir,
            kubeconfig,
            cache,
        };
        server.wait_ready();
        server
    }

    /// A member-sim (`karmada member-sim`, one cluster named `sim`) in place of the API server: the
    /// same kubectl suites run against it.
    pub fn start_member_sim() -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("server.log"))
            .expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_karmada"))
            .args([
                "member-sim",
                "--name",
                "sim",
                "--exit-with-stdin",
                "--data-dir",
            ])
            .arg(dir.path().join("data"))
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("spawn karmada member-sim");
        let kubeconfig = dir.path().join("data").join("sim.config");
        let cache = dir.path().join("kubectl-cache");
        let server = Server {
            child,
            dir,
            kubeconfig,
            cache,
        };
        server.wait_ready();
        server
    }

    /// SIGKILLs the server (no chance to flush anything) and starts it again on the same data.
    pub fn kill_and_restart(&mut self) {
        self.child.kill().expect("SIGKILL server");
        self.child.wait().expect("reap server");
        std::fs::remove_file(&self.kubeconfig).expect("remove kubeconfig");
        self.child = spawn(self.dir.path(), "apiserver", &[]);
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if self.kubeconfig.exists() {
                let out = self.kubectl(&["get", "--raw", "/readyz"]);
                if out.ok() && out.stdout.trim() == "ok" {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "server not ready; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Runs kubectl against this server with a private discovery cache.
    pub fn kubectl(&self, args: &[&str]) -> Run {
        self.kubectl_env(args, &[])
    }

    pub fn kubectl_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::from(cmd.output().expect("run kubectl"))
    }

    /// kubectl with a manifest on stdin (`-f -`).
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kubectl");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        Run::from(child.wait_with_output().expect("kubectl output"))
    }

    /// Spawns a long-running kubectl (e.g. `get -w`) with stdout piped.
    pub fn kubectl_spawn(&self, args: &[&str]) -> Child {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kubectl")
    }

    /// Writes `content` to a file in the test's temp dir and returns its path.
    pub fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, content).expect("write file");
        path
    }
}

fn spawn(dir: &Path, subcommand: &str, extra_args: &[&str]) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .expect("log file");
    Command::new(env!("CARGO_BIN_EXE_karmada"))
        .args([
            subcommand,
            "--secure-port",
            "0",
            "--exit-with-stdin",
            "--data-dir",
        ])
        .arg(dir.join("data"))
        .args(extra_args)
        .stdin(Stdio::piped())
        .stdout(log.try_clone().expect("clone log"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn karmada {subcommand}: {e}"))
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One finished command.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == 0
    }

    /// Asserts success and returns stdout.
    #[track_caller]
    pub fn success(&self) -> &str {
        assert!(
            self.ok(),
            "command failed ({}):\nstdout: {}\nstderr: {}",
            self.code,
            self.stdout,
            self.stderr
        );
        &self.stdout
    }

    /// Asserts failure and returns stderr.
    #[track_caller]
    pub fn failure(&self) -> &str {
        assert!(
            !self.ok(),
            "command unexpectedly succeeded:\n{}",
            self.stdout
        );
        &self.stderr
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.success())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

/// Splits a kubectl table into rows of whitespace-separated cells.
pub fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Declares one `#[test]` per suite function against the Karmada API server (`on_apiserver::NAME`) and one
/// against a member-sim (`on_member_sim::NAME`): both serve the same Kubernetes API and must satisfy the same
/// kubectl suite.
macro_rules! on_apiserver_and_member_sim {
    ($($name:ident),* $(,)?) => {
        mod on_apiserver {
            $(
                #[test]
                fn $name() {
                    super::$name(&$crate::harness::Server::start())
                }
            )*
        }
        mod on_member_sim {
            $(
                #[test]
                fn $name() {
                    super::$name(&$crate::harness::Server::start_member_sim())
                }
            )*
        }
    };
}
pub(crate) use on_apiserver_and_member_sim;

/// A binary built beside `karmada` (`karmadactl`, `karmada`, ...).
pub fn bin(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_karmada"))
        .parent()
        .expect("target dir");
    let bin = dir.join(name);
    assert!(bin.is_file(), "build {name} first: cargo build --bins");
    bin
}

/// Polls `check` until it returns `Ok`, failing with `what` and the last observation after `deadline`.
#[track_caller]
pub fn wait_within<T>(
    deadline: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + deadline;
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) => assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last: {last}"
            ),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A process killed when dropped.
pub struct Owned(pub Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program` with a held stdin (for `--exit-with-stdin`), its output appended to `log`.
pub fn spawn_logged(program: &Path, args: &[&str], log: &Path) -> Owned {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log file");
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(file.try_clone().expect("log"))
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
    Owned(child)
}

/// `karmadactl` with `args`, stdin closed.
pub fn karmadactl(args: &[&str]) -> Run {
    Run::from(
        Command::new(bin("karmadactl"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run karmadactl"),
    )
}

/// A Cluster as JSON through kubectl, or kubectl's error.
pub fn cluster_json(karmada: &Server, name: &str) -> Result<serde_json::Value, String> {
    let out = karmada.kubectl(&["get", "cluster", name, "-o", "json"]);
    if !out.ok() {
        return Err(out.stderr);
    }
    serde_json::from_str(&out.stdout).map_err(|e| e.to_string())
}

/// A Cluster's Ready condition as (status, reason); empty strings when it has none.
/// The (manager, subresource) of each `metadata.managedFields` entry of `object` (read with
/// `--show-managed-fields`); the subresource is empty for writes to the object itself.
pub fn field_managers(object: &serde_json::Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            let text = |key: &str| entry[key].as_str().unwrap_or_default().to_string();
            (text("manager"), text("subresource"))
        })
        .collect()
}

pub fn ready_status(cluster: &serde_json::Value) -> (String, String) {
    let ready = cluster["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready").cloned())
        .unwrap_or_default();
    (
        ready["status"].as_str().unwrap_or("").into(),
        ready["reason"].as_str().unwrap_or("").into(),
    )
}

/// GET /metrics at the address a component logged as "serving metrics" (it binds port 0).
pub fn metrics_from_log(log: &str) -> Result<String, String> {
    let after = log
        .split_once("serving metrics")
        .ok_or("metrics address not logged yet")?
        .1;
    let addr = after
        .split_once("127.0.0.1:")
        .ok_or("no address in the log line")?
        .1;
    let port: String = addr.chars().take_while(char::is_ascii_digit).collect();
    metrics_at(&format!("127.0.0.1:{port}"))
}

/// GET /metrics at `address` (`host:port`).
pub fn metrics_at(address: &str) -> Result<String, String> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(address).map_err(|e| e.to_string())?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut body = String::new();
    stream
        .read_to_string(&mut body)
        .map_err(|e| e.to_string())?;
    Ok(body)
}
