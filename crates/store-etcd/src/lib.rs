//! The etcd v3 backend of [`store::Store`]: what `karmada apiserver --etcd-servers=...` runs on,
//! so that several API server replicas share one consistent, highly available store.
//!
//! Mapping (all replicas apply it identically, so their resourceVersions agree):
//! - a store key `K` is the etcd key `prefix + K` ([`EtcdOptions::prefix`], empty by default so
//!   the API server's `/registry/...` keys land where kube-apiserver would put them);
//! - a store revision is the etcd revision minus one ([`keys::REVISION_OFFSET`]): an empty etcd
//!   is at revision 1, an empty store at 0, and the first write is revision 1 of the store;
//! - create/update/delete are single etcd transactions comparing `create_revision` (exists or
//!   not) or `mod_revision` (the caller's precondition), so there is no read-then-write race;
//! - compaction is etcd's compaction; etcd's "required revision has been compacted" and "is a
//!   future revision" become [`StoreError::Compacted`] and [`StoreError::FutureRevision`].
//!
//! Every other etcd failure becomes [`StoreError::Backend`] with a message naming the
//! endpoints, so an operator sees which cluster was unreachable.
//!
//! Availability: the store talks to one member and fails over to the next endpoint when it is
//! unreachable (`members`); a write is re-sent only when it provably never left. Watches do
//! not resume by themselves: a broken watch yields `Err(Backend)` and ends, and the caller
//! re-watches from its last revision (which then goes to a live member), as kube clients do.
//!
//! Restores: `restore` moves a restored namespace's revisions far above the old ones (an
//! offset recorded in etcd and read at connect) so clients holding old resourceVersions get
//! 410 and relist.
//!
//! Modules: `keys` (pure key/revision mapping), `kv` (the trait impl), `watch`, `members`
//! (failover), `raw` (each etcd call with its resend rule), `revisions` (compaction probes and
//! revision errors), `errors`, `tls`, `snapshot`, and `launch` (the
//! command line of a local etcd member, for everything that starts one).
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use store::{Revision, StoreError, StoreResult};

mod errors;
pub mod keys;
mod kv;
pub mod launch;
mod members;
mod raw;
pub mod restore;
mod revisions;
mod snapshot;
mod tls;
mod watch;

use keys::Namespace;
use members::{Members, Resend};

/// Client certificates for an etcd that requires TLS (`--etcd-cafile`, `--etcd-certfile`,
/// `--etcd-keyfile` in kube-apiserver's terms). All three are PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdTls {
    /// The CA that signed the etcd servers' certificates.
    pub ca_file: std::path::PathBuf,
    /// This client's certificate.
    pub cert_file: std::path::PathBuf,
    /// This client's private key.
    pub key_file: std::path::PathBuf,
}

/// How to reach etcd and where in its key space this store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdOptions {
    /// Client URLs, e.g. `http://127.0.0.1:2379`; `https://` when [`EtcdOptions::tls`] is set.
    pub endpoints: Vec<String>,
    /// Namespace inside etcd: empty, or ending with `/`. Store keys are stored as
    /// `prefix + key`.
    pub prefix: String,
    /// Client certificates, for an etcd started with `--client-cert-auth`.
    pub tls: Option<EtcdTls>,
    /// How long to wait for the first answer from etcd before `connect` gives up.
    pub dial_timeout: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            endpoints: vec!["http://127.0.0.1:2379".to_string()],
            prefix: String::new(),
            tls: None,
            dial_timeout: Duration::from_secs(5),
        }
    }
}

/// A [`store::Store`] on an etcd v3 cluster. Share it behind an `Arc`; it talks to one member
/// at a time and fails over to the next endpoint when that member is unreachable.
pub struct EtcdStore {
    members: Members,
    namespace: Namespace,
    /// For error messages: which cluster failed.
    endpoints: String,
    /// The highest compacted store revision this process has seen (its own compactions and
    /// etcd's answers). Watch streams use it to report events that compaction overtook while
    /// they sat unread, as every backend does.
    compacted_seen: Arc<AtomicU64>,
}

impl EtcdStore {
    /// Connects and waits (up to `dial_timeout`) until etcd answers, so a wrong address fails
    /// here with a clear error instead of on the first request.
    pub async fn connect(options: EtcdOptions) -> StoreResult<Self> {
        let endpoints = options.endpoints.join(",");
        if options.endpoints.is_empty() {
            return Err(StoreError::Backend(
                "no etcd endpoints given (expected URLs like http://127.0.0.1:2379)".to_string(),
            ));
        }
        let namespace = Namespace::new(&options.prefix).map_err(StoreError::Backend)?;
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(options.dial_timeout)
            // Detects a dead member behind an idle connection; etcd refuses pings more often
            // than every 5 s by default.
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10));
        if let Some(tls) = &options.tls {
            connect = connect.with_tls(tls::client_config(tls).await?);
        }
        let members =
            Members::new(&options.endpoints, &connect)
                .await
                .map_err(|(endpoint, e)| {
                    StoreError::Backend(format!("etcd {endpoint}: cannot connect: {e}"))
                })?;
        let mut store = EtcdStore {
            members,
            namespace,
            endpoints,
            compacted_seen: Arc::new(AtomicU64::new(0)),
        };
        let status = store
            .members
            .call(Resend::Always, |mut client: Client| async move {
                client.status().await
            });
        // Each endpoint gets its own dial timeout, so a blackholed first member cannot use up
        // the time the others need.
        let patience = options
            .dial_timeout
            .saturating_mul(u32::try_from(options.endpoints.len()).unwrap_or(u32::MAX));
        match tokio::time::timeout(patience, status).await {
            Ok(Ok(_)) => {
                store.load_offset().await?;
                Ok(store)
            }
            Ok(Err(e)) => Err(store.backend(e)),
            Err(_) => Err(StoreError::Backend(format!(
                "etcd {}: no answer within {patience:?}",
                store.endpoints
            ))),
        }
    }

    /// Streams an etcd snapshot (the whole database, every prefix) to `out`, replacing it
    /// only once the snapshot is complete and synced; restore it with `etcdutl`/`etcdctl
    /// snapshot restore`.
    pub async fn snapshot(&self, out: &Path) -> StoreResult<u64> {
        snapshot::save(self, out).await
    }

    /// The etcd client of the member in use, for callers that need etcd features outside the
    /// store trait (leader election leases). Keys written through it bypass the namespace.
    pub fn client(&self) -> &Client {
        self.members.preferred()
    }

    fn backend(&self, error: etcd_client::Error) -> StoreError {
        errors::backend(&self.endpoints, error)
    }

    fn note_compacted(&self, revision: Revision) {
        self.compacted_seen.fetch_max(revision, Ordering::AcqRel);
    }
}
