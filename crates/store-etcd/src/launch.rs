//! The command line of one local etcd member, written once for every place that starts etcd
//! (`karmadactl init --etcd-replicas`, `karmadactl restore`, the benchmarks and the etcd and
//! HA tests), and the `etcdctl snapshot restore` line that prepares the same member's data dir.
//!
//! Pure: it builds arguments and a [`Command`]; spawning, logs and pid files stay with callers.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Server-side TLS of a member that serves clients over HTTPS and requires client
/// certificates (all PEM files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTls {
    /// The CA client certificates must chain to.
    pub ca_file: PathBuf,
    /// The member's serving certificate.
    pub cert_file: PathBuf,
    /// Its private key.
    pub key_file: PathBuf,
}

/// One etcd member: its identity, addresses and cluster. Build with [`MemberCommand::new`],
/// then add the cluster and TLS when there are any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberCommand {
    name: String,
    data_dir: PathBuf,
    client_url: String,
    peer_url: String,
    initial_cluster: String,
    cluster_token: Option<String>,
    tls: Option<ServerTls>,
}

impl MemberCommand {
    /// A member alone in its cluster, listening and advertising on `client_url` and
    /// `peer_url`.
    pub fn new(
        name: impl Into<String>,
        data_dir: impl Into<PathBuf>,
        client_url: impl Into<String>,
        peer_url: impl Into<String>,
    ) -> Self {
        let name = name.into();
        let peer_url = peer_url.into();
        MemberCommand {
            initial_cluster: format!("{name}={peer_url}"),
            name,
            data_dir: data_dir.into(),
            client_url: client_url.into(),
            peer_url,
            cluster_token: None,
            tls: None,
        }
    }

    /// Every member of the cluster being formed, `name=peer-url,...` (see [`initial_cluster`]).
    pub fn initial_cluster(mut self, initial_cluster: impl Into<String>) -> Self {
        self.initial_cluster = initial_cluster.into();
        self
    }

    /// A token unique to this cluster, so members of another cluster on the same ports
    /// (a previous run) cannot join it.
    pub fn cluster_token(mut self, token: impl Into<String>) -> Self {
        self.cluster_token = Some(token.into());
        self
    }

    /// Serve clients over TLS and require client certificates.
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The `etcd` arguments. `--initial-*` flags only matter for an empty data dir; etcd
    /// ignores them when it restarts on existing data, so the same line serves both.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--name".into(), (&self.name).into()];
        args.push("--data-dir".into());
        args.push(self.data_dir.clone().into());
        for (flag, value) in [
            ("--listen-client-urls", &self.client_url),
            ("--advertise-client-urls", &self.client_url),
            ("--listen-peer-urls", &self.peer_url),
            ("--initial-advertise-peer-urls", &self.peer_url),
            ("--initial-cluster", &self.initial_cluster),
        ] {
            args.push(flag.into());
            args.push(value.into());
        }
        if let Some(token) = &self.cluster_token {
            args.push("--initial-cluster-token".into());
            args.push(token.into());
        }
        args.extend(["--initial-cluster-state", "new"].map(OsString::from));
        if let Some(tls) = &self.tls {
            for (flag, path) in [
                ("--cert-file", &tls.cert_file),
                ("--key-file", &tls.key_file),
                ("--trusted-ca-file", &tls.ca_file),
            ] {
                args.push(flag.into());
                args.push(path.into());
            }
            args.push("--client-cert-auth".into());
        }
        args.extend(["--logger", "zap", "--log-level", "warn"].map(OsString::from));
        args
    }

    /// `program` (the `etcd` binary) with [`MemberCommand::args`] and no stdin.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        command.args(self.args()).stdin(Stdio::null());
        command
    }

    /// The `etcdctl snapshot restore` arguments that turn `snapshot` into this member's data
    /// dir, with the same name, peer URL, cluster and token.
    pub fn snapshot_restore_args(&self, snapshot: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["snapshot".into(), "restore".into(), snapshot.into()];
        args.push("--data-dir".into());
        args.push(self.data_dir.clone().into());
        for (flag, value) in [
            ("--name", &self.name),
            ("--initial-advertise-peer-urls", &self.peer_url),
            ("--initial-cluster", &self.initial_cluster),
        ] {
            args.push(flag.into());
            args.push(value.into());
        }
        if let Some(token) = &self.cluster_token {
            args.push("--initial-cluster-token".into());
            args.push(token.into());
        }
        args
    }

    /// `program` (the `etcdctl` binary) running [`MemberCommand::snapshot_restore_args`] with
    /// the v3 API and no stdin.
    pub fn snapshot_restore_command(&self, program: impl AsRef<OsStr>, snapshot: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env("ETCDCTL_API", "3")
            .args(self.snapshot_restore_args(snapshot))
            .stdin(Stdio::null());
        command
    }
}

/// `--initial-cluster` for members given as `(name, peer URL)`.
pub fn initial_cluster<'a>(members: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    members
        .into_iter()
        .map(|(name, peer)| format!("{name}={peer}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `count` distinct free loopback ports, all held until every one is picked. Another process
/// may still take one before etcd binds it; callers retry with fresh ports.
pub fn free_loopback_ports(count: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_lone_member_lists_itself_as_its_cluster() {
        let args = MemberCommand::new(
            "bench",
            "/tmp/d",
            "http://127.0.0.1:1",
            "http://127.0.0.1:2",
        )
        .args();
        assert_eq!(
            strings(args),
            [
                "--name",
                "bench",
                "--data-dir",
                "/tmp/d",
                "--listen-client-urls",
                "http://127.0.0.1:1",
                "--advertise-client-urls",
                "http://127.0.0.1:1",
                "--listen-peer-urls",
                "http://127.0.0.1:2",
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:2",
                "--initial-cluster",
                "bench=http://127.0.0.1:2",
                "--initial-cluster-state",
                "new",
                "--logger",
                "zap",
                "--log-level",
                "warn",
            ]
        );
    }

    #[test]
    fn a_clustered_tls_member_carries_token_cluster_and_certificates() {
        let cluster = initial_cluster([("m0", "http://h:2"), ("m1", "http://h:4")]);
        assert_eq!(cluster, "m0=http://h:2,m1=http://h:4");
        let member = MemberCommand::new("m1", "/d/m1", "https://h:3", "http://h:4")
            .initial_cluster(cluster)
            .cluster_token("t-1")
            .tls(ServerTls {
                ca_file: "/p/ca.pem".into(),
                cert_file: "/p/server.pem".into(),
                key_file: "/p/server-key.pem".into(),
            });
        let args = strings(member.args());
        let after = |flag: &str| {
            let at = args.iter().position(|a| a == flag).expect(flag);
            args.get(at + 1).cloned().unwrap_or_default()
        };
        assert_eq!(after("--initial-cluster"), "m0=http://h:2,m1=http://h:4");
        assert_eq!(after("--initial-cluster-token"), "t-1");
        assert_eq!(after("--listen-client-urls"), "https://h:3");
        assert_eq!(after("--cert-file"), "/p/server.pem");
        assert_eq!(after("--key-file"), "/p/server-key.pem");
        assert_eq!(after("--trusted-ca-file"), "/p/ca.pem");
        assert!(args.iter().any(|a| a == "--client-cert-auth"));

        let restore = strings(member.snapshot_restore_args(Path::new("/b/snap.db")));
        assert_eq!(
            restore,
            [
                "snapshot",
                "restore",
                "/b/snap.db",
                "--data-dir",
                "/d/m1",
                "--name",
                "m1",
                "--initial-advertise-peer-urls",
                "http://h:4",
                "--initial-cluster",
                "m0=http://h:2,m1=http://h:4",
                "--initial-cluster-token",
                "t-1",
            ]
        );
    }

    #[test]
    fn free_ports_are_distinct() {
        let ports = free_loopback_ports(6).expect("ports");
        let unique: std::collections::BTreeSet<_> = ports.iter().collect();
        assert_eq!(unique.len(), 6);
        assert!(ports.iter().all(|&p| p != 0));
    }
}
