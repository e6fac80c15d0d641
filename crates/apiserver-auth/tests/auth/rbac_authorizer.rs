//! The store-backed RBAC authorizer follows writes, deletes and compaction.

use std::sync::Arc;
use std::time::Duration;

use apiserver_auth::rbac::{RbacAuthorizer, storage_key};
use apiserver_auth::{Authorizer, Decision, UserInfo};
use bytes::Bytes;
use serde_json::{Value, json};
use store::Store;
use store::memory::MemoryStore;
use tokio_util::sync::CancellationToken;

use crate::support::*;

fn bytes(value: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(value).unwrap())
}

async fn put(store: &MemoryStore, key: &str, value: &Value) {
    store.create(key, bytes(value)).await.unwrap();
}

fn reader_role() -> Value {
    role_json(
        "",
        "pod-reader",
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]),
    )
}

fn alice() -> UserInfo {
    user("alice", &["system:authenticated"])
}

#[tokio::test]
async fn a_binding_written_before_a_request_is_seen_by_it() {
    let store = Arc::new(MemoryStore::new());
    let cancel = CancellationToken::new();
    let authorizer = RbacAuthorizer::new(store.clone(), cancel.clone());
    let get_pod = res("get", "", "pods", "default", "p");

    put(
        &store,
        &storage_key("clusterroles", "", "pod-reader"),
        &reader_role(),
    )
    .await;
    assert!(matches!(
        authorizer.authorize(&alice(), &get_pod).await,
        Decision::Deny(_)
    ));

    // No waiting: the very next request must see the binding.
    let binding = binding_json(
        "default",
        "alice-reads",
        "ClusterRole",
        "pod-reader",
        &[("User", "alice", "")],
    );
    put(
        &store,
        &storage_key("rolebindings", "default", "alice-reads"),
        &binding,
    )
    .await;
    assert_eq!(
        authorizer.authorize(&alice(), &get_pod).await,
        Decision::Allow
    );
    assert!(
        !authorizer
            .authorize(&alice(), &res("get", "", "pods", "other", "p"))
            .await
            .is_allowed()
    );

    // Unrelated writes advance the revision without changing the decision.
    store
        .create("/registry/configmaps/default/c", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    assert_eq!(
        authorizer.authorize(&alice(), &get_pod).await,
        Decision::Allow
    );

    // Revocation is seen just as promptly.
    store
        .delete(&storage_key("rolebindings", "default", "alice-reads"), None)
        .await
        .unwrap();
    assert!(!authorizer.authorize(&alice(), &get_pod).await.is_allowed());

    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), authorizer.stopped())
        .await
        .unwrap();
}

#[tokio::test]
async fn existing_objects_are_loaded_at_start_and_masters_skip_rbac() {
    let store = Arc::new(MemoryStore::new());
    put(
        &store,
        &storage_key("clusterroles", "", "pod-reader"),
        &reader_role(),
    )
    .await;
    let crb = binding_json(
        "",
        "devs-read",
        "ClusterRole",
        "pod-reader",
        &[("Group", "devs", "")],
    );
    put(
        &store,
        &storage_key("clusterrolebindings", "", "devs-read"),
        &crb,
    )
    .await;

    let cancel = CancellationToken::new();
    let authorizer = RbacAuthorizer::new(store.clone(), cancel.clone());
    let list = res("list", "", "pods", "", "");
    assert!(
        authorizer
            .authorize(&user("dan", &["devs"]), &list)
            .await
            .is_allowed()
    );
    assert!(
        !authorizer
            .authorize(&user("dan", &["ops"]), &list)
            .await
            .is_allowed()
    );
    assert!(
        authorizer
            .authorize(&UserInfo::admin(), &res("delete", "", "nodes", "", "n"))
            .await
            .is_allowed()
    );
    assert!(authorizer.revision() >= store.current_revision().await.unwrap());
    cancel.cancel();
}

#[tokio::test]
async fn an_updated_role_changes_decisions_and_garbage_grants_nothing() {
    let store = Arc::new(MemoryStore::new());
    let cancel = CancellationToken::new();
    let authorizer = RbacAuthorizer::new(store.clone(), cancel.clone());
    let role_key = storage_key("roles", "team", "r");
    put(
        &store,
        &role_key,
        &role_json(
            "team",
            "r",
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]),
        ),
    )
    .await;
    let rb = binding_json("team", "b", "Role", "r", &[("User", "alice", "")]);
    put(&store, &storage_key("rolebindings", "team", "b"), &rb).await;
    let delete_secret = res("delete", "", "secrets", "team", "s");
    let get_secret = res("get", "", "secrets", "team", "s");
    assert!(
        authorizer
            .authorize(&alice(), &get_secret)
            .await
            .is_allowed()
    );
    assert!(
        !authorizer
            .authorize(&alice(), &delete_secret)
            .await
            .is_allowed()
    );

    let widened = role_json(
        "team",
        "r",
        json!([{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["secrets"]}]),
    );
    store
        .update(&role_key, bytes(&widened), None)
        .await
        .unwrap();
    assert!(
        authorizer
            .authorize(&alice(), &delete_secret)
            .await
            .is_allowed()
    );

    store
        .update(&role_key, Bytes::from_static(b"not json"), None)
        .await
        .unwrap();
    assert!(
        !authorizer
            .authorize(&alice(), &get_secret)
            .await
            .is_allowed()
    );
    cancel.cancel();
}

/// Paused time on one thread: the writes and the compaction happen before the watch task runs
/// again, so its cursor falls below the compacted revision and it must reload.
#[tokio::test(start_paused = true)]
async fn a_watch_compacted_away_reloads() {
    let store = Arc::new(MemoryStore::new());
    let cancel = CancellationToken::new();
    let authorizer = RbacAuthorizer::new(store.clone(), cancel.clone());
    put(
        &store,
        &storage_key("clusterroles", "", "pod-reader"),
        &reader_role(),
    )
    .await;
    let get_pod = res("get", "", "pods", "default", "p");
    assert!(!authorizer.authorize(&alice(), &get_pod).await.is_allowed());

    for i in 0..20 {
        store
            .create(
                &format!("/registry/configmaps/default/c{i}"),
                Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
    }
    let crb = binding_json(
        "",
        "alice-reads",
        "ClusterRole",
        "pod-reader",
        &[("User", "alice", "")],
    );
    put(
        &store,
        &storage_key("clusterrolebindings", "", "alice-reads"),
        &crb,
    )
    .await;
    store
        .compact(store.current_revision().await.unwrap())
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    assert!(authorizer.authorize(&alice(), &get_pod).await.is_allowed());
    // Answered from the reloaded snapshot, not from the lagging-snapshot fallback.
    assert!(started.elapsed() < apiserver_auth::rbac::WAIT_FOR_POLICY);
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), authorizer.stopped())
        .await
        .unwrap();
}

/// A store whose watches never deliver anything: the snapshot can never catch up.
struct StalledWatch(Arc<MemoryStore>);

#[async_trait::async_trait]
impl Store for StalledWatch {
    async fn get(&self, key: &str) -> store::StoreResult<Option<store::KeyValue>> {
        self.0.get(key).await
    }
    async fn range(&self, req: store::RangeRequest) -> store::StoreResult<store::RangeResult> {
        self.0.range(req).await
    }
    async fn count(&self, prefix: &str) -> store::StoreResult<u64> {
        self.0.count(prefix).await
    }
    async fn create(&self, key: &str, value: Bytes) -> store::StoreResult<store::Revision> {
        self.0.create(key, value).await
    }
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<store::Revision>,
    ) -> store::StoreResult<store::Revision> {
        self.0.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<store::Revision>,
    ) -> store::StoreResult<(store::Revision, store::KeyValue)> {
        self.0.delete(key, expected).await
    }
    async fn current_revision(&self) -> store::StoreResult<store::Revision> {
        self.0.current_revision().await
    }
    async fn compacted_revision(&self) -> store::StoreResult<store::Revision> {
        self.0.compacted_revision().await
    }
    async fn compact(&self, revision: store::Revision) -> store::StoreResult<()> {
        self.0.compact(revision).await
    }
    async fn watch(
        &self,
        _prefix: &str,
        _after: store::Revision,
    ) -> store::StoreResult<store::WatchStream> {
        Ok(Box::pin(futures::stream::pending()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_stalled_watch_falls_back_to_reading_the_store() {
    let memory = Arc::new(MemoryStore::new());
    let cancel = CancellationToken::new();
    let authorizer = RbacAuthorizer::new(Arc::new(StalledWatch(memory.clone())), cancel.clone());
    let get_pod = res("get", "", "pods", "default", "p");
    // The initial load (which sees this write) completes; after it only the stalled watch runs.
    put(&memory, "/registry/configmaps/default/c", &json!({})).await;
    assert!(!authorizer.authorize(&alice(), &get_pod).await.is_allowed());
    assert_eq!(authorizer.revision(), 1);

    put(
        &memory,
        &storage_key("clusterroles", "", "pod-reader"),
        &reader_role(),
    )
    .await;
    let crb = binding_json(
        "",
        "alice-reads",
        "ClusterRole",
        "pod-reader",
        &[("User", "alice", "")],
    );
    put(
        &memory,
        &storage_key("clusterrolebindings", "", "alice-reads"),
        &crb,
    )
    .await;
    let started = tokio::time::Instant::now();
    assert_eq!(
        authorizer.authorize(&alice(), &get_pod).await,
        Decision::Allow
    );
    assert!(
        started.elapsed() >= apiserver_auth::rbac::WAIT_FOR_POLICY,
        "answered from a stale snapshot"
    );
    cancel.cancel();
}
