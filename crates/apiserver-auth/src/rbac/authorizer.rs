//! [`RbacAuthorizer`]: RBAC evaluation against an in-memory snapshot of the store's RBAC
//! objects, kept current by a store watch.
//!
//! Freshness: an authorization decision reflects every RBAC write committed before the request
//! started. The snapshot records the store revision it reflects; the watch covers the whole key
//! space (writes to other kinds only advance that revision) so the revision keeps up even when
//! the latest writes are not RBAC writes. `authorize` reads the store's current revision and
//! waits — at most [`WAIT_FOR_POLICY`] — for the snapshot to reach it; if the watch does not
//! catch up in time it evaluates against a fresh read of the RBAC objects instead of a stale
//! snapshot. On `Compacted` (or any watch failure) the task reloads everything and watches
//! again from the reload's revision.
//!
//! The watch task belongs to the authorizer: it stops when the cancellation token passed to
//! [`RbacAuthorizer::new`] fires or when the authorizer is dropped.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use parking_lot::{Mutex, RwLock};
use store::{EventKind, RangeRequest, Revision, Store, StoreError, WatchEvent};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::evaluate::RbacPolicy;
use super::types::PolicyRule;
use super::{RBAC_KEY_PREFIX, types};
use crate::authz::{Authorizer, Decision, RequestAttributes};
use crate::user::UserInfo;

/// How long a request waits for the snapshot to catch up with the store before falling back to
/// a direct read.
pub const WAIT_FOR_POLICY: Duration = Duration::from_secs(2);

/// Page size of the full reload.
const RELOAD_PAGE: usize = 500;
/// Delay between watch restarts after a failure, doubled per consecutive failure up to the max.
const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

struct Snapshot {
    policy: RbacPolicy,
    revision: Revision,
}

struct Shared {
    store: Arc<dyn Store>,
    snapshot: RwLock<Snapshot>,
    /// The revision `snapshot` reflects, announced after each change.
    revision: watch::Sender<Revision>,
}

pub struct RbacAuthorizer {
    shared: Arc<Shared>,
    cancel: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for RbacAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RbacAuthorizer")
            .field("revision", &*self.shared.revision.borrow())
            .finish_non_exhaustive()
    }
}

impl RbacAuthorizer {
    /// Creates the authorizer and starts its watch task (on the current tokio runtime; called
    /// outside one, the task starts with the first authorization).
    pub fn new(store: Arc<dyn Store>, cancel: CancellationToken) -> Arc<Self> {
        let (revision, _) = watch::channel(0);
        let authorizer = Arc::new(RbacAuthorizer {
            shared: Arc::new(Shared {
                store,
                snapshot: RwLock::new(Snapshot {
                    policy: RbacPolicy::default(),
                    revision: 0,
                }),
                revision,
            }),
            cancel,
            task: Mutex::new(None),
        });
        authorizer.ensure_started();
        authorizer
    }

    /// The store revision the snapshot reflects.
    pub fn revision(&self) -> Revision {
        *self.shared.revision.borrow()
    }

    /// Waits until the watch task has finished (after cancellation).
    pub async fn stopped(&self) {
        let handle = self.task.lock().take();
        if let Some(handle) = handle {
            let _ = handle.await;
        }
    }

    fn ensure_started(&self) {
        let mut task = self.task.lock();
        if task.is_some() || self.cancel.is_cancelled() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let shared = self.shared.clone();
            let cancel = self.cancel.clone();
            *task = Some(runtime.spawn(run(shared, cancel)));
        }
    }

    /// Waits (bounded) for the snapshot to reflect `target`; false on timeout.
    async fn wait_for(&self, target: Revision) -> bool {
        let mut seen = self.shared.revision.subscribe();
        matches!(
            tokio::time::timeout(WAIT_FOR_POLICY, seen.wait_for(|r| *r >= target)).await,
            Ok(Ok(_))
        )
    }
}

impl Drop for RbacAuthorizer {
    fn drop(&mut self) {
        if let Some(handle) = self.task.lock().take() {
            handle.abort();
        }
    }
}

impl RbacAuthorizer {
    /// Reads a policy that reflects every RBAC write committed before the call (see the module docs); the
    /// error says why no policy could be read.
    async fn with_policy<R>(&self, read: impl FnOnce(&RbacPolicy) -> R) -> Result<R, String> {
        self.ensure_started();
        let target = self
            .shared
            .store
            .current_revision()
            .await
            .map_err(|e| format!("RBAC policy unavailable: {e}"))?;
        if self.wait_for(target).await {
            return Ok(read(&self.shared.snapshot.read().policy));
        }
        tracing::warn!(
            target,
            snapshot = self.revision(),
            "rbac snapshot lagging; reading policy from the store"
        );
        match load_policy(self.shared.store.as_ref()).await {
            Ok((policy, _)) => Ok(read(&policy)),
            Err(e) => Err(format!("RBAC policy unavailable: {e}")),
        }
    }
}

#[async_trait::async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
        if user.is_master() {
            return Decision::Allow;
        }
        self.with_policy(|policy| policy.authorize(user, attrs))
            .await
            .unwrap_or_else(Decision::Deny)
    }

    async fn rules(&self, user: &UserInfo, namespace: &str) -> Option<Vec<PolicyRule>> {
        self.with_policy(|policy| policy.rules_for(user, namespace))
            .await
            .ok()
    }
}

/// The watch task: load, follow, and start over on failure, until cancelled.
async fn run(shared: Arc<Shared>, cancel: CancellationToken) {
    let mut delay = RETRY_MIN;
    loop {
        let outcome = tokio::select! {
            _ = cancel.cancelled() => return,
            outcome = follow(&shared) => outcome,
        };
        match outcome {
            Ok(()) => delay = RETRY_MIN,
            Err(e) => {
                tracing::warn!(error = %e, "rbac watch failed; reloading");
                delay = (delay * 2).min(RETRY_MAX);
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// One reload plus watch; returns when the watch ends (`Ok` for a compaction, which only needs
/// a reload).
async fn follow(shared: &Shared) -> Result<(), StoreError> {
    let (policy, revision) = load_policy(shared.store.as_ref()).await?;
    {
        let mut snapshot = shared.snapshot.write();
        *snapshot = Snapshot { policy, revision };
    }
    shared.revision.send_replace(revision);

    // The empty prefix: every write advances the snapshot's revision (see the module docs).
    let mut events = shared.store.watch("", revision).await?;
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => apply(shared, &event),
            Err(StoreError::Compacted { .. }) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Backend("watch stream ended".into()))
}

fn apply(shared: &Shared, event: &WatchEvent) {
    let revision = event.revision();
    {
        let mut snapshot = shared.snapshot.write();
        if let Some(rest) = event.kv.key.strip_prefix(RBAC_KEY_PREFIX) {
            match event.kind {
                EventKind::Put => upsert(&mut snapshot.policy, rest, &event.kv.value),
                EventKind::Delete => remove(&mut snapshot.policy, rest),
            }
        }
        snapshot.revision = snapshot.revision.max(revision);
    }
    shared.revision.send_if_modified(|current| {
        let advanced = revision > *current;
        if advanced {
            *current = revision;
        }
        advanced
    });
}

/// Reads every RBAC object at one revision.
async fn load_policy(store: &dyn Store) -> Result<(RbacPolicy, Revision), StoreError> {
    let mut policy = RbacPolicy::default();
    let mut request = RangeRequest {
        prefix: RBAC_KEY_PREFIX.to_owned(),
        limit: RELOAD_PAGE,
        ..RangeRequest::default()
    };
    loop {
        let page = store.range(request.clone()).await?;
        for kv in &page.kvs {
            if let Some(rest) = kv.key.strip_prefix(RBAC_KEY_PREFIX) {
                upsert(&mut policy, rest, &kv.value);
            }
        }
        // Later pages are read at the first page's revision: one consistent snapshot.
        request.revision = Some(page.revision);
        match page.kvs.last() {
            Some(last) if page.more => request.start_after = Some(last.key.clone()),
            _ => return Ok((policy, page.revision)),
        }
    }
}

/// Which RBAC object a key (with the RBAC prefix removed) names.
enum RbacKey<'a> {
    Role(&'a str, &'a str),
    RoleBinding(&'a str, &'a str),
    ClusterRole(&'a str),
    ClusterRoleBinding(&'a str),
}

fn parse_key(rest: &str) -> Option<RbacKey<'_>> {
    let mut parts = rest.split('/');
    let plural = parts.next()?;
    let first = parts.next()?;
    let second = parts.next();
    if parts.next().is_some() || first.is_empty() || second == Some("") {
        return None;
    }
    match (plural, second) {
        ("roles", Some(name)) => Some(RbacKey::Role(first, name)),
        ("rolebindings", Some(name)) => Some(RbacKey::RoleBinding(first, name)),
        ("clusterroles", None) => Some(RbacKey::ClusterRole(first)),
        ("clusterrolebindings", None) => Some(RbacKey::ClusterRoleBinding(first)),
        _ => None,
    }
}

/// Installs a stored object. An object that does not parse grants nothing (it is removed), and
/// the key, not the object's metadata, decides where it applies.
fn upsert(policy: &mut RbacPolicy, rest: &str, value: &[u8]) {
    let Some(key) = parse_key(rest) else {
        tracing::warn!(key = rest, "ignoring unexpected rbac key");
        return;
    };
    let installed = match key {
        RbacKey::Role(ns, name) => serde_json::from_slice::<types::Role>(value).map(|mut role| {
            role.metadata = meta(ns, name);
            policy.roles.insert((ns.to_owned(), name.to_owned()), role);
        }),
        RbacKey::RoleBinding(ns, name) => {
            serde_json::from_slice::<types::RoleBinding>(value).map(|mut binding| {
                binding.metadata = meta(ns, name);
                policy
                    .role_bindings
                    .insert((ns.to_owned(), name.to_owned()), binding);
            })
        }
        RbacKey::ClusterRole(name) => {
            serde_json::from_slice::<types::ClusterRole>(value).map(|mut role| {
                role.metadata = meta("", name);
                policy.cluster_roles.insert(name.to_owned(), role);
            })
        }
        RbacKey::ClusterRoleBinding(name) => {
            serde_json::from_slice::<types::ClusterRoleBinding>(value).map(|mut binding| {
                binding.metadata = meta("", name);
                policy
                    .cluster_role_bindings
                    .insert(name.to_owned(), binding);
            })
        }
    };
    if let Err(e) = installed {
        tracing::warn!(key = rest, error = %e, "unreadable rbac object grants nothing");
        remove(policy, rest);
    }
}

fn remove(policy: &mut RbacPolicy, rest: &str) {
    match parse_key(rest) {
        Some(RbacKey::Role(ns, name)) => {
            policy.roles.remove(&(ns.to_owned(), name.to_owned()));
        }
        Some(RbacKey::RoleBinding(ns, name)) => {
            policy
                .role_bindings
                .remove(&(ns.to_owned(), name.to_owned()));
        }
        Some(RbacKey::ClusterRole(name)) => {
            policy.cluster_roles.remove(name);
        }
        Some(RbacKey::ClusterRoleBinding(name)) => {
            policy.cluster_role_bindings.remove(name);
        }
        None => {}
    }
}

fn meta(namespace: &str, name: &str) -> types::ObjectName {
    types::ObjectName {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_by_scope() {
        assert!(matches!(
            parse_key("roles/ns/r"),
            Some(RbacKey::Role("ns", "r"))
        ));
        assert!(matches!(
            parse_key("rolebindings/ns/b"),
            Some(RbacKey::RoleBinding("ns", "b"))
        ));
        assert!(matches!(
            parse_key("clusterroles/view"),
            Some(RbacKey::ClusterRole("view"))
        ));
        assert!(matches!(
            parse_key("clusterrolebindings/x"),
            Some(RbacKey::ClusterRoleBinding("x"))
        ));
        for bad in [
            "roles/ns",
            "clusterroles/a/b",
            "roles/ns/r/extra",
            "widgets/a",
            "roles//r",
            "roles/ns/",
        ] {
            assert!(parse_key(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn unreadable_object_replaces_a_good_one_with_nothing() {
        let mut policy = RbacPolicy::default();
        let good = br#"{"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}"#;
        upsert(&mut policy, "clusterroles/r", good);
        assert_eq!(policy.cluster_roles["r"].rules.len(), 1);
        upsert(&mut policy, "clusterroles/r", b"{not json");
        assert!(!policy.cluster_roles.contains_key("r"));
    }
}
