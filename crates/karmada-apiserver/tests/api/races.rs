//! Writes that lose a race to another writer (a controller updating status between the request's read and its
//! compare-and-swap) are redone from a fresh read, as kube-apiserver does; only the client's own
//! resourceVersion precondition turns a race into a 409.

use http::StatusCode;
use serde_json::json;
use store::Store as _;

use super::harness::Harness;

const CM: &str = "/api/v1/namespaces/default/configmaps";

/// A store whose first conditional write under `/configmaps/` loses a race: just before it, another
/// writer rewrites the key (as a controller updating status would).
struct RacingStore {
    inner: std::sync::Arc<store::memory::MemoryStore>,
    raced: std::sync::atomic::AtomicBool,
}

impl RacingStore {
    async fn race(&self, key: &str) {
        if key.contains("/configmaps/")
            && !self.raced.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let current = self.inner.get(key).await.expect("get").expect("present");
            self.inner
                .update(key, current.value, None)
                .await
                .expect("concurrent write");
        }
    }
}

#[async_trait::async_trait]
impl store::Store for RacingStore {
    async fn get(&self, key: &str) -> store::StoreResult<Option<store::KeyValue>> {
        self.inner.get(key).await
    }
    async fn range(&self, req: store::RangeRequest) -> store::StoreResult<store::RangeResult> {
        self.inner.range(req).await
    }
    async fn count(&self, prefix: &str) -> store::StoreResult<u64> {
        self.inner.count(prefix).await
    }
    async fn create(&self, key: &str, value: bytes::Bytes) -> store::StoreResult<store::Revision> {
        self.inner.create(key, value).await
    }
    async fn update(
        &self,
        key: &str,
        value: bytes::Bytes,
        expected: Option<store::Revision>,
    ) -> store::StoreResult<store::Revision> {
        self.race(key).await;
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<store::Revision>,
    ) -> store::StoreResult<(store::Revision, store::KeyValue)> {
        self.race(key).await;
        self.inner.delete(key, expected).await
    }
    async fn current_revision(&self) -> store::StoreResult<store::Revision> {
        self.inner.current_revision().await
    }
    async fn compacted_revision(&self) -> store::StoreResult<store::Revision> {
        self.inner.compacted_revision().await
    }
    async fn compact(&self, revision: store::Revision) -> store::StoreResult<()> {
        self.inner.compact(revision).await
    }
    async fn watch(
        &self,
        prefix: &str,
        after: store::Revision,
    ) -> store::StoreResult<store::WatchStream> {
        self.inner.watch(prefix, after).await
    }
}

pub(crate) async fn racing_harness() -> Harness {
    let memory = std::sync::Arc::new(store::memory::MemoryStore::new());
    let racing = std::sync::Arc::new(RacingStore {
        inner: memory.clone(),
        raced: std::sync::atomic::AtomicBool::new(true),
    });
    let server = karmada_apiserver::ApiServer::new(
        racing.clone() as std::sync::Arc<dyn store::Store>,
        Default::default(),
    )
    .await
    .expect("server starts");
    let harness = Harness {
        server,
        store: memory,
    };
    // Arm the race only now: setup writes go through untouched.
    racing
        .raced
        .store(false, std::sync::atomic::Ordering::SeqCst);
    harness
}

#[tokio::test]
async fn a_delete_that_loses_a_race_to_another_writer_is_redone() {
    for (name, body) in [
        ("plain", None),
        (
            "foreground",
            Some(json!({"propagationPolicy": "Foreground"})),
        ),
    ] {
        let h = racing_harness().await;
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        // The create is not conditional; the race fires on the delete's conditional write.
        assert_eq!(h.post(CM, &object).await.status, StatusCode::CREATED);
        let deleted = h.delete(&format!("{CM}/{name}"), body.as_ref()).await;
        assert_eq!(deleted.status, StatusCode::OK, "{name}: {:?}", deleted.body);
    }
    // With a resourceVersion precondition the lost race is the client's conflict.
    let h = racing_harness().await;
    let created = h
        .post(
            CM,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pinned"}}),
        )
        .await;
    let rv = created.body["metadata"]["resourceVersion"].clone();
    let deleted = h
        .delete(
            &format!("{CM}/pinned"),
            Some(&json!({"preconditions": {"resourceVersion": rv}})),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::CONFLICT, "{:?}", deleted.body);
}

#[tokio::test]
async fn a_patch_or_put_that_loses_a_race_is_redone_unless_it_pinned_a_version() {
    for (name, content_type, patch) in [
        (
            "merge",
            "application/merge-patch+json",
            json!({"data": {"k": "patched"}}),
        ),
        (
            "json",
            "application/json-patch+json",
            json!([{"op": "add", "path": "/data", "value": {"k": "patched"}}]),
        ),
        (
            "strategic",
            "application/strategic-merge-patch+json",
            json!({"data": {"k": "patched"}}),
        ),
    ] {
        let h = racing_harness().await;
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        assert_eq!(h.post(CM, &object).await.status, StatusCode::CREATED);
        let patched = h.patch(&format!("{CM}/{name}"), content_type, &patch).await;
        assert_eq!(patched.status, StatusCode::OK, "{name}: {:?}", patched.body);
        assert_eq!(
            h.get(&format!("{CM}/{name}")).await.body["data"]["k"],
            "patched",
            "{name}"
        );
    }

    // A PUT without a resourceVersion of a built-in kind is an unconditional update: redone.
    let h = racing_harness().await;
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "put"}});
    assert_eq!(h.post(CM, &object).await.status, StatusCode::CREATED);
    let replaced = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "put"},
                          "data": {"k": "replaced"}});
    let put = h.put(&format!("{CM}/put"), &replaced).await;
    assert_eq!(put.status, StatusCode::OK, "{:?}", put.body);
    assert_eq!(
        h.get(&format!("{CM}/put")).await.body["data"]["k"],
        "replaced"
    );

    // With the version read before the race, the same writes are the client's conflict, and nothing changes.
    for pinned in ["patch", "put"] {
        let h = racing_harness().await;
        let created = h
            .post(
                CM,
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": pinned},
                              "data": {"k": "original"}}),
            )
            .await;
        let rv = created.body["metadata"]["resourceVersion"].clone();
        let path = format!("{CM}/{pinned}");
        let reply = if pinned == "patch" {
            let body = json!({"metadata": {"resourceVersion": rv}, "data": {"k": "lost"}});
            h.patch(&path, "application/merge-patch+json", &body).await
        } else {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": pinned, "resourceVersion": rv}, "data": {"k": "lost"}});
            h.put(&path, &body).await
        };
        assert_eq!(
            reply.status,
            StatusCode::CONFLICT,
            "{pinned}: {:?}",
            reply.body
        );
        assert_eq!(h.get(&path).await.body["data"]["k"], "original", "{pinned}");
    }
}
