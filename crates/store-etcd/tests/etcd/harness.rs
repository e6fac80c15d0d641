//! Starts a throwaway single-member etcd on free loopback ports with a temporary data dir, and
//! kills it when dropped. A missing `etcd` binary is a test failure that says how to install
//! it, never a silent pass.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use store::Store;
use store_etcd::launch::{MemberCommand, initial_cluster};
use store_etcd::{EtcdOptions, EtcdStore, EtcdTls};
use tempfile::TempDir;
use test_fixtures::free_ports;

/// Longest wait for a fresh etcd to answer.
const START_WAIT: Duration = Duration::from_secs(30);

pub use store_etcd::launch::ServerTls;

/// A running etcd; killed (and its data dir removed) on drop.
pub struct EtcdServer {
    child: Child,
    /// The client URL, `http://` or `https://`.
    pub url: String,
    /// Kept for restore tests and for the log in failure messages.
    pub dir: TempDir,
}

/// One member's identity and addresses within its cluster.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    /// `name=peer-url,...` for every member.
    initial_cluster: String,
    token: String,
}

impl Member {
    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }
}

/// Members of a fresh cluster of `size`, on free ports.
fn plan(size: usize) -> anyhow::Result<Vec<Member>> {
    let ports = free_ports(size * 2);
    let names: Vec<String> = (0..size)
        .map(|i| {
            if size == 1 {
                "default".to_string()
            } else {
                format!("m{i}")
            }
        })
        .collect();
    let peers: Vec<String> = ports
        .chunks(2)
        .map(|p| format!("http://127.0.0.1:{}", p[1]))
        .collect();
    let initial_cluster = initial_cluster(
        names
            .iter()
            .zip(&peers)
            .map(|(name, peer)| (name.as_str(), peer.as_str())),
    );
    Ok(names
        .into_iter()
        .zip(ports.chunks(2))
        .map(|(name, p)| Member {
            name,
            client_port: p[0],
            peer_port: p[1],
            initial_cluster: initial_cluster.clone(),
            token: format!("store-etcd-test-{}", ports[0]),
        })
        .collect())
}

impl EtcdServer {
    /// A plain-HTTP etcd.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(None, None).await
    }

    /// An etcd serving clients over TLS and requiring client certificates.
    pub async fn start_tls(tls: &ServerTls) -> anyhow::Result<Self> {
        Self::start_with(Some(tls), None).await
    }

    /// An etcd whose data comes from `snapshot`, restored with `etcdctl snapshot restore`.
    pub async fn start_restored(snapshot: &Path) -> anyhow::Result<Self> {
        Self::start_with(None, Some(snapshot)).await
    }

    async fn start_with(tls: Option<&ServerTls>, snapshot: Option<&Path>) -> anyhow::Result<Self> {
        // A port picked free can be taken before etcd binds it; retry with fresh ports.
        let mut last_error = None;
        for _ in 0..3 {
            let attempt = async {
                let member = plan(1)?.pop().context("one member planned")?;
                let mut server = Self::spawn(&member, tls, snapshot)?;
                server.wait_ready(tls).await?;
                anyhow::Ok(server)
            };
            match attempt.await {
                Ok(server) => return Ok(server),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("etcd did not start")))
    }

    /// Starts the process; it is not ready until [`EtcdServer::wait_ready`] says so.
    fn spawn(
        member: &Member,
        tls: Option<&ServerTls>,
        snapshot: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://127.0.0.1:{}", member.client_port);
        let peer = member.peer_url();
        let launch = MemberCommand::new(&member.name, dir.path().join("data"), &url, &peer)
            .initial_cluster(&member.initial_cluster)
            .cluster_token(&member.token);
        let launch = match tls {
            Some(tls) => launch.tls(tls.clone()),
            None => launch,
        };
        if let Some(snapshot) = snapshot {
            restore(&launch, snapshot)?;
        }
        let log = File::create(dir.path().join("etcd.log"))?;
        let mut command = launch.command("etcd");
        command.stdout(log.try_clone()?).stderr(log);
        let child = match command.spawn() {
            Ok(child) => child,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => bail!(
                "the `etcd` binary is not on PATH; run scripts/setup.sh (it installs Debian's \
                 etcd-server) to run the etcd backend's tests"
            ),
            Err(error) => return Err(error).context("spawning etcd"),
        };
        Ok(EtcdServer { child, url, dir })
    }

    /// Stops the member at once, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Polls until etcd serves a linearizable read (so it has a leader), bounded by
    /// [`START_WAIT`].
    async fn wait_ready(&mut self, tls: Option<&ServerTls>) -> anyhow::Result<()> {
        let deadline = Instant::now() + START_WAIT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("etcd exited with {status} during startup:\n{}", self.log());
            }
            let options = EtcdOptions {
                endpoints: vec![self.url.clone()],
                tls: tls.map(client_tls_from_server),
                dial_timeout: Duration::from_millis(500),
                ..EtcdOptions::default()
            };
            let ready = match EtcdStore::connect(options).await {
                Ok(store) => store.current_revision().await.map(|_| ()),
                Err(error) => Err(error),
            };
            match ready {
                Ok(()) => return Ok(()),
                Err(error) if Instant::now() > deadline => {
                    bail!(
                        "etcd did not answer within {START_WAIT:?}: {error}\n{}",
                        self.log()
                    )
                }
                // Polling is the readiness check itself (etcd offers nothing to wait on), and
                // the deadline bounds it.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// etcd's own log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// Options for a store in `prefix` on this server.
    pub fn options(&self, prefix: &str) -> EtcdOptions {
        EtcdOptions {
            endpoints: vec![self.url.clone()],
            prefix: prefix.to_string(),
            tls: None,
            dial_timeout: Duration::from_secs(5),
        }
    }

    pub fn scratch(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Whether `etcdctl` (Debian's etcd-client) is installed.
pub fn etcdctl_installed() -> bool {
    Command::new("etcdctl")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn restore(member: &MemberCommand, snapshot: &Path) -> anyhow::Result<()> {
    let output = member
        .snapshot_restore_command("etcdctl", snapshot)
        .output()
        .context("running etcdctl (install Debian's etcd-client)")?;
    if !output.status.success() {
        bail!(
            "etcdctl snapshot restore failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// The client side of [`ServerTls`]: the tests sign the client pair with the same CA and store
/// it next to the server's files.
fn client_tls_from_server(tls: &ServerTls) -> EtcdTls {
    let dir = tls.ca_file.parent().unwrap_or(Path::new("."));
    EtcdTls {
        ca_file: tls.ca_file.clone(),
        cert_file: dir.join("client.pem"),
        key_file: dir.join("client-key.pem"),
    }
}

/// A multi-member etcd cluster on loopback; every member is killed on drop.
pub struct EtcdCluster {
    pub members: Vec<EtcdServer>,
}

impl EtcdCluster {
    /// Starts `size` members and waits until each serves linearizable reads.
    pub async fn start(size: usize) -> anyhow::Result<Self> {
        let mut last_error = None;
        for _ in 0..3 {
            let attempt = async {
                let mut members = plan(size)?
                    .iter()
                    .map(|member| EtcdServer::spawn(member, None, None))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                for member in &mut members {
                    member.wait_ready(None).await?;
                }
                anyhow::Ok(EtcdCluster { members })
            };
            match attempt.await {
                Ok(cluster) => return Ok(cluster),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("the etcd cluster did not start")))
    }

    /// Every member's client URL, in member order.
    pub fn urls(&self) -> Vec<String> {
        self.members.iter().map(|m| m.url.clone()).collect()
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}
