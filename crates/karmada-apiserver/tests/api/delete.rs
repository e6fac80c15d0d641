//! Delete semantics: finalizers and deletionTimestamp, preconditions, deletecollection.

use http::StatusCode;
use serde_json::json;

use store::Store as _;

use super::harness::Harness;

const CM: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn finalizers_hold_the_object_until_removed() {
    let h = Harness::new().await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(h.post(CM, &body).await.status, StatusCode::CREATED);
    let deleted = h
        .delete(
            &format!("{CM}/held"),
            Some(&json!({"propagationPolicy": "Background"})),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert!(deleted.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(deleted.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let still = h.get(&format!("{CM}/held")).await;
    assert_eq!(still.status, StatusCode::OK);
    // Repeated delete answers with the object.
    assert_eq!(
        h.delete(&format!("{CM}/held"), None).await.status,
        StatusCode::OK
    );
    // No new finalizers while deleting.
    let added = h
        .patch(
            &format!("{CM}/held"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": ["example.com/hold", "x.io/y"]}}),
        )
        .await;
    assert_eq!(
        added.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        added.body
    );
    // Removing the last finalizer completes the deletion.
    let released = h
        .patch(
            &format!("{CM}/held"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(released.status, StatusCode::OK, "{:?}", released.body);
    assert_eq!(
        h.get(&format!("{CM}/held")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn delete_preconditions() {
    let h = Harness::new().await;
    let created = h.create_configmap("default", "pc", json!({})).await;
    let wrong_uid = h
        .delete(
            &format!("{CM}/pc"),
            Some(&json!({"preconditions": {"uid": "nope"}})),
        )
        .await;
    assert_eq!(wrong_uid.status, StatusCode::CONFLICT);
    let wrong_rv = h
        .delete(
            &format!("{CM}/pc"),
            Some(&json!({"preconditions": {"resourceVersion": "1"}})),
        )
        .await;
    assert_eq!(wrong_rv.status, StatusCode::CONFLICT);
    assert_eq!(h.get(&format!("{CM}/pc")).await.status, StatusCode::OK);
    let uid = created.body["metadata"]["uid"].clone();
    let ok = h
        .delete(
            &format!("{CM}/pc"),
            Some(&json!({"preconditions": {"uid": uid}})),
        )
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(
        h.get(&format!("{CM}/pc")).await.status,
        StatusCode::NOT_FOUND
    );
    let bad_policy = h
        .delete(&format!("{CM}/pc?propagationPolicy=Sideways"), None)
        .await;
    assert_eq!(bad_policy.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn delete_collection_with_selector() {
    let h = Harness::new().await;
    for (name, app) in [("a", "x"), ("b", "y"), ("c", "x")] {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}}});
        h.post(CM, &body).await;
    }
    let reply = h.delete(&format!("{CM}?labelSelector=app%3Dx"), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["items"].as_array().unwrap().len(), 2);
    let left = h.get(CM).await;
    let names: Vec<&str> = left.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test]
async fn system_namespaces_cannot_be_deleted() {
    let h = Harness::new().await;
    let reply = h.delete("/api/v1/namespaces/default", None).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply.message(),
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
    assert_eq!(
        h.get("/api/v1/namespaces/default").await.body["status"]["phase"],
        "Active"
    );
}

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

async fn racing_harness() -> Harness {
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
