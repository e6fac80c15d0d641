//! The highly available topology of `karmadactl init`: N etcd members (local, from Debian's
//! `etcd` binary, data in `DATA/etcd/<i>`) or an external etcd (`--etcd-servers`), M API server
//! replicas on it (`DATA/apiserver/<i>`, sharing the certificates in `DATA/pki`), and
//! `karmada lb` in front of them on `--port`. The kubeconfig `DATA/karmada-apiserver.config`
//! names the lb, so clients see one endpoint.
//!
//! Ports are picked free on first start and recorded in `DATA/control-plane.json` (the
//! [`Topology`]): an etcd member's peer URL is part of its cluster's membership, so a restart
//! (or a restored cluster, which `restore` records the same way) must reuse them.
//!
//! Process bookkeeping follows `components`: pid file `DATA/<name>.pid`, log
//! `DATA/logs/<name>.log`. Replica 0 is `karmada-apiserver` (so the rest of `init` and `deinit`
//! treat it as the API server), the others `karmada-apiserver-<i>`; members are `etcd-<i>`; the
//! lb is `karmada-lb`. etcd has no `--exit-with-stdin`: members always run detached until
//! `deinit`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use store_etcd::launch::{self, MemberCommand};

use super::init::{self, APISERVER, ControlPlane, KUBECONFIG_FILE};
use crate::components::{self, Launch};
use crate::progress::Progress;

pub const TOPOLOGY_FILE: &str = "control-plane.json";
pub const LB: &str = "karmada-lb";
const ETCD_READY_TIMEOUT: Duration = Duration::from_secs(60);
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// What `init` asks of the HA topology.
#[derive(Clone, Debug, Default)]
pub struct HaOptions {
    pub etcd_replicas: usize,
    pub apiserver_replicas: usize,
    /// External etcd client URLs; empty for local members.
    pub etcd_servers: Vec<String>,
}

/// Whether `init` should take the HA path: more than one replica of anything, an external
/// etcd, or a data directory that already has a topology (for example a restored one).
pub fn wanted(options: &HaOptions, data_dir: &Path) -> bool {
    options.etcd_replicas > 1
        || options.apiserver_replicas > 1
        || !options.etcd_servers.is_empty()
        || data_dir.join(TOPOLOGY_FILE).is_file()
}

/// One local etcd member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtcdMember {
    pub name: String,
    pub client_port: u16,
    pub peer_port: u16,
}

impl EtcdMember {
    pub fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    pub fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// This member's etcd command line with its data in `dir` (alone in its cluster until the
    /// caller names the others).
    pub fn launch(&self, dir: impl Into<PathBuf>) -> MemberCommand {
        MemberCommand::new(&self.name, dir, self.client_url(), self.peer_url())
    }
}

/// The recorded layout of an HA control plane (`DATA/control-plane.json`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// Key prefix the API servers use inside etcd.
    #[serde(default)]
    pub etcd_prefix: String,
    /// External etcd client URLs (then `members` is empty).
    #[serde(default)]
    pub external_etcd: Vec<String>,
    /// Local etcd members, `DATA/etcd/<index>`.
    #[serde(default)]
    pub members: Vec<EtcdMember>,
    #[serde(default)]
    pub cluster_token: String,
    /// The API server replicas' ports, in replica order.
    #[serde(default)]
    pub apiserver_ports: Vec<u16>,
}

impl Topology {
    /// The recorded topology, if this data directory has one.
    pub fn load(data_dir: &Path) -> anyhow::Result<Option<Topology>> {
        let path = data_dir.join(TOPOLOGY_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .with_context(|| format!("{} is malformed", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error).with_context(|| format!("reading {}", path.display())),
        }
    }

    pub fn save(&self, data_dir: &Path) -> anyhow::Result<()> {
        let path = data_dir.join(TOPOLOGY_FILE);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
    }

    /// The client URLs the API servers use.
    pub fn etcd_endpoints(&self) -> Vec<String> {
        if self.external_etcd.is_empty() {
            self.members.iter().map(EtcdMember::client_url).collect()
        } else {
            self.external_etcd.clone()
        }
    }

    /// etcd's `--initial-cluster` for the local members.
    pub fn initial_cluster(&self) -> String {
        let peers: Vec<(&str, String)> = self
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.peer_url()))
            .collect();
        launch::initial_cluster(peers.iter().map(|(name, peer)| (*name, peer.as_str())))
    }
}

/// `count` local members on free loopback ports.
pub fn plan_members(count: usize) -> anyhow::Result<Vec<EtcdMember>> {
    let ports = free_ports(count * 2)?;
    Ok(ports
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| EtcdMember {
            name: format!("etcd-{i}"),
            client_port: pair[0],
            peer_port: pair[1],
        })
        .collect())
}

/// Distinct free loopback ports (all held until every one is picked).
pub fn free_ports(count: usize) -> anyhow::Result<Vec<u16>> {
    launch::free_loopback_ports(count).context("picking free ports")
}

/// A member's data directory.
pub fn member_dir(data_dir: &Path, index: usize) -> PathBuf {
    data_dir.join("etcd").join(index.to_string())
}

/// The Debian `etcd` binary, or the error telling how to get one.
pub fn etcd_binary() -> anyhow::Result<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .context(
            "etcd is not installed (no `etcd` on PATH): install it with `apt-get install \
             etcd-server`, or pass --etcd-servers URLS to use an existing etcd cluster",
        )
}

/// The process name of replica `index`.
pub fn apiserver_name(index: usize) -> String {
    if index == 0 {
        APISERVER.to_string()
    } else {
        format!("{APISERVER}-{index}")
    }
}

/// Starts whatever of the topology is not running: etcd members, API server replicas, the lb,
/// and writes the kubeconfig naming the lb. Three steps on `progress`.
pub async fn up(
    plane: &ControlPlane,
    options: &HaOptions,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let data_dir = &plane.data_dir;
    std::fs::create_dir_all(data_dir.join(components::LOG_DIR))
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let mut topology = match Topology::load(data_dir)? {
        Some(topology) => topology,
        None => new_topology(options)?,
    };
    if !options.etcd_servers.is_empty() && topology.external_etcd != options.etcd_servers {
        if !topology.members.is_empty() {
            bail!(
                "{} runs local etcd members; it cannot switch to --etcd-servers (deinit it first)",
                data_dir.display()
            );
        }
        topology.external_etcd = options.etcd_servers.clone();
    }
    let replicas = options.apiserver_replicas.max(1);
    if topology.apiserver_ports.len() < replicas {
        let more = free_ports(replicas - topology.apiserver_ports.len())?;
        topology.apiserver_ports.extend(more);
    }
    topology.save(data_dir)?;

    if topology.members.is_empty() {
        progress.step("using external etcd", &topology.external_etcd.join(","));
    } else {
        progress.step(
            "starting etcd",
            &format!(
                "{} member(s) in {}",
                topology.members.len(),
                data_dir.join("etcd").display()
            ),
        );
        start_members(data_dir, &topology)?;
    }
    wait_etcd(&topology).await?;
    progress.note("etcd answers");

    progress.step(
        "starting karmada-apiserver replicas",
        &format!("{} on etcd", topology.apiserver_ports.len()),
    );
    for (index, port) in topology.apiserver_ports.iter().enumerate() {
        start_apiserver(plane, &topology, index, *port).await?;
    }
    progress.note("every replica is ready");

    progress.step(
        "starting karmada-lb",
        &format!("{}:{}", plane.bind_address, plane.port),
    );
    start_lb(plane, &topology).await?;
    write_kubeconfig(
        plane,
        topology.apiserver_ports.first().copied().unwrap_or(0),
    )?;
    init::wait_ready(&plane.kubeconfig(), None, data_dir, READY_TIMEOUT)
        .await
        .context("the API servers did not answer through karmada-lb")?;
    progress.note("karmada-lb ready");
    Ok(())
}

fn new_topology(options: &HaOptions) -> anyhow::Result<Topology> {
    if !options.etcd_servers.is_empty() {
        return Ok(Topology {
            external_etcd: options.etcd_servers.clone(),
            ..Topology::default()
        });
    }
    etcd_binary()?;
    let members = plan_members(options.etcd_replicas.max(1))?;
    Ok(Topology {
        cluster_token: format!("karmada-{}", members[0].peer_port),
        members,
        ..Topology::default()
    })
}

/// Starts every member not running (they wait for each other to form a quorum).
fn start_members(data_dir: &Path, topology: &Topology) -> anyhow::Result<()> {
    let etcd = etcd_binary()?;
    for (index, member) in topology.members.iter().enumerate() {
        if components::live_pid(data_dir, &member.name).is_some() {
            continue;
        }
        let dir = member_dir(data_dir, index);
        let log_path = components::log_file(data_dir, &member.name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        let mut command = member
            .launch(dir)
            .initial_cluster(topology.initial_cluster())
            .cluster_token(&topology.cluster_token)
            .command(&etcd);
        command.stdout(log.try_clone()?).stderr(log);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .spawn()
            .with_context(|| format!("running {}", etcd.display()))?;
        std::fs::write(
            components::pid_file(data_dir, &member.name),
            format!("{}\n", child.id()),
        )?;
    }
    Ok(())
}

/// Polls until etcd serves a linearizable read (it has a leader).
async fn wait_etcd(topology: &Topology) -> anyhow::Result<()> {
    use store::Store;
    let deadline = tokio::time::Instant::now() + ETCD_READY_TIMEOUT;
    let endpoints = topology.etcd_endpoints();
    loop {
        let options = store_etcd::EtcdOptions {
            endpoints: endpoints.clone(),
            prefix: topology.etcd_prefix.clone(),
            dial_timeout: Duration::from_secs(1),
            ..store_etcd::EtcdOptions::default()
        };
        let answer = match store_etcd::EtcdStore::connect(options).await {
            Ok(store) => store.current_revision().await.map(|_| ()),
            Err(error) => Err(error),
        };
        match answer {
            Ok(()) => return Ok(()),
            Err(error) if tokio::time::Instant::now() > deadline => bail!(
                "etcd at {} did not answer within {}s: {error}; see the etcd-*.log files in the logs directory",
                endpoints.join(","),
                ETCD_READY_TIMEOUT.as_secs()
            ),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn start_apiserver(
    plane: &ControlPlane,
    topology: &Topology,
    index: usize,
    port: u16,
) -> anyhow::Result<()> {
    let data_dir = &plane.data_dir;
    let name = apiserver_name(index);
    let replica_dir = data_dir.join("apiserver").join(index.to_string());
    let kubeconfig = replica_dir.join(KUBECONFIG_FILE);
    if components::live_pid(data_dir, &name).is_some() {
        return Ok(());
    }
    components::ensure_port_free(&plane.bind_address, port, "--port")?;
    let _ = std::fs::remove_file(&kubeconfig);
    let mut args: Vec<OsString> = vec![
        "apiserver".into(),
        "--data-dir".into(),
        replica_dir.clone().into(),
        "--pki-dir".into(),
        data_dir.join("pki").into(),
        "--bind-address".into(),
        plane.bind_address.clone().into(),
        "--secure-port".into(),
        port.to_string().into(),
        format!("--etcd-servers={}", topology.etcd_endpoints().join(",")).into(),
    ];
    if !topology.etcd_prefix.is_empty() {
        args.push(format!("--etcd-prefix={}", topology.etcd_prefix).into());
    }
    let mut child = components::launch(Launch {
        name: &name,
        binary: &plane.binary,
        args,
        data_dir,
        exit_with_stdin: plane.exit_with_stdin,
    })?;
    // One at a time: the first creates the shared certificates and the default RBAC objects.
    if let Err(error) =
        init::wait_ready(&kubeconfig, Some(&mut child), data_dir, READY_TIMEOUT).await
    {
        bail!(
            "{name} did not become ready: {error:#}; see {}",
            components::log_file(data_dir, &name).display()
        );
    }
    Ok(())
}

async fn start_lb(plane: &ControlPlane, topology: &Topology) -> anyhow::Result<()> {
    let data_dir = &plane.data_dir;
    if components::live_pid(data_dir, LB).is_some() {
        return Ok(());
    }
    components::ensure_port_free(&plane.bind_address, plane.port, "--port")?;
    let mut args: Vec<OsString> = vec![
        "lb".into(),
        "--listen".into(),
        format!("{}:{}", plane.bind_address, plane.port).into(),
        // Names the control plane in the command line, which is how pid files are trusted.
        "--karmada-data".into(),
        data_dir.clone().into(),
    ];
    for port in &topology.apiserver_ports {
        args.push("--backend".into());
        args.push(format!("{}:{port}", backend_host(&plane.bind_address)).into());
    }
    let mut child = components::launch(Launch {
        name: LB,
        binary: &plane.binary,
        args,
        data_dir,
        exit_with_stdin: plane.exit_with_stdin,
    })?;
    components::settle(&mut child, data_dir, LB, Duration::from_millis(500)).await
}

/// Where the lb reaches a replica listening on `bind_address`.
fn backend_host(bind_address: &str) -> &str {
    match bind_address {
        "0.0.0.0" => "127.0.0.1",
        "::" => "::1",
        other => other,
    }
}

/// The admin kubeconfig of replica 0 with its server changed to the lb.
fn write_kubeconfig(plane: &ControlPlane, first_port: u16) -> anyhow::Result<()> {
    let source = plane
        .data_dir
        .join("apiserver")
        .join("0")
        .join(KUBECONFIG_FILE);
    let text = std::fs::read_to_string(&source)
        .with_context(|| format!("reading {}", source.display()))?;
    let mut config: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not the JSON kubeconfig the API server writes",
            source.display()
        )
    })?;
    let lb = format!(":{}", plane.port);
    if let Some(clusters) = config["clusters"].as_array_mut() {
        for cluster in clusters {
            if let Some(server) = cluster["cluster"]["server"].as_str() {
                let server = server.replace(&format!(":{first_port}"), &lb);
                cluster["cluster"]["server"] = serde_json::Value::String(server);
            }
        }
    }
    crate::kubeconfig::write(&plane.kubeconfig(), &config)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn topology_round_trips_and_names_its_endpoints() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Topology::load(dir.path()).unwrap(), None);
        let topology = Topology {
            members: plan_members(3).unwrap(),
            cluster_token: "t".into(),
            apiserver_ports: vec![1, 2],
            ..Topology::default()
        };
        topology.save(dir.path()).unwrap();
        let loaded = Topology::load(dir.path()).unwrap().unwrap();
        assert_eq!(loaded, topology);
        assert_eq!(loaded.etcd_endpoints().len(), 3);
        assert!(
            loaded
                .initial_cluster()
                .starts_with("etcd-0=http://127.0.0.1:")
        );
        let external = Topology {
            external_etcd: vec!["http://e:2379".into()],
            ..Topology::default()
        };
        assert_eq!(external.etcd_endpoints(), vec!["http://e:2379"]);
    }

    #[test]
    fn the_ha_path_is_taken_for_replicas_external_etcd_or_a_recorded_topology() {
        let dir = tempfile::tempdir().unwrap();
        let single = HaOptions {
            etcd_replicas: 1,
            apiserver_replicas: 1,
            etcd_servers: vec![],
        };
        assert!(!wanted(&single, dir.path()));
        let cases = [
            HaOptions {
                etcd_replicas: 3,
                ..single.clone()
            },
            HaOptions {
                apiserver_replicas: 2,
                ..single.clone()
            },
            HaOptions {
                etcd_servers: vec!["http://x:1".into()],
                ..single.clone()
            },
        ];
        for options in cases {
            assert!(wanted(&options, dir.path()), "{options:?}");
        }
        Topology::default().save(dir.path()).unwrap();
        assert!(wanted(&single, dir.path()));
        assert_eq!(apiserver_name(0), "karmada-apiserver");
        assert_eq!(apiserver_name(2), "karmada-apiserver-2");
    }
}
