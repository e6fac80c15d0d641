//! A [`Store`] decorator that times every call the API server makes to its store and records it
//! in [`StoreMetrics`] (`etcd_request_duration_seconds` and friends), by operation and resource.
//!
//! It sits between the handlers and the backend, so the figure is the store's own latency: for
//! the embedded store that includes waiting for the group commit's fsync, for etcd the round
//! trip. Watches are streams, not calls, and are not timed.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use store::{
    KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, StoreResult, WatchStream,
};

use crate::metrics::StoreMetrics;

/// Times every call to `inner`.
pub struct MeteredStore {
    inner: Arc<dyn Store>,
    metrics: StoreMetrics,
}

impl MeteredStore {
    pub fn new(inner: Arc<dyn Store>, metrics: StoreMetrics) -> Self {
        MeteredStore { inner, metrics }
    }

    fn record<T>(&self, operation: &str, key: &str, started: Instant, result: &StoreResult<T>) {
        let failed = matches!(result, Err(StoreError::Backend(_)));
        self.metrics
            .observe(operation, &resource_of(key), started.elapsed(), failed);
    }
}

/// The group-qualified resource a key or prefix belongs to: `/registry/apps/deployments/ns/x` →
/// `deployments.apps`, `/registry/core/pods/...` → `pods`; a prefix above one kind → `*`.
pub fn resource_of(key: &str) -> String {
    let mut segments = key
        .strip_prefix(crate::storage::ROOT_PREFIX)
        .unwrap_or("")
        .split('/');
    match (segments.next(), segments.next()) {
        (Some(group), Some(plural)) if !group.is_empty() && !plural.is_empty() => {
            if group == "core" {
                plural.to_string()
            } else {
                format!("{plural}.{group}")
            }
        }
        _ => "*".to_string(),
    }
}

#[async_trait::async_trait]
impl Store for MeteredStore {
    async fn get(&self, key: &str) -> StoreResult<Option<KeyValue>> {
        let started = Instant::now();
        let result = self.inner.get(key).await;
        self.record("get", key, started, &result);
        result
    }

    async fn range(&self, req: RangeRequest) -> StoreResult<RangeResult> {
        let started = Instant::now();
        let prefix = req.prefix.clone();
        let result = self.inner.range(req).await;
        self.record("list", &prefix, started, &result);
        result
    }

    async fn count(&self, prefix: &str) -> StoreResult<u64> {
        let started = Instant::now();
        let result = self.inner.count(prefix).await;
        self.record("count", prefix, started, &result);
        result
    }

    async fn create(&self, key: &str, value: Bytes) -> StoreResult<Revision> {
        let started = Instant::now();
        let result = self.inner.create(key, value).await;
        self.record("create", key, started, &result);
        result
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> StoreResult<Revision> {
        let started = Instant::now();
        let result = self.inner.update(key, value, expected).await;
        self.record("update", key, started, &result);
        result
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> StoreResult<(Revision, KeyValue)> {
        let started = Instant::now();
        let result = self.inner.delete(key, expected).await;
        self.record("delete", key, started, &result);
        result
    }

    async fn current_revision(&self) -> StoreResult<Revision> {
        self.inner.current_revision().await
    }

    async fn compacted_revision(&self) -> StoreResult<Revision> {
        self.inner.compacted_revision().await
    }

    async fn compact(&self, revision: Revision) -> StoreResult<()> {
        let started = Instant::now();
        let result = self.inner.compact(revision).await;
        self.record("compact", "", started, &result);
        result
    }

    async fn watch(&self, prefix: &str, after: Revision) -> StoreResult<WatchStream> {
        self.inner.watch(prefix, after).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::metrics::tests::sample;

    #[test]
    fn keys_name_their_group_qualified_resource() {
        for (key, resource) in [
            ("/registry/apps/deployments/ns/web", "deployments.apps"),
            ("/registry/core/pods/ns/p", "pods"),
            ("/registry/core/namespaces/default", "namespaces"),
            ("/registry/work.karmada.io/works/", "works.work.karmada.io"),
            ("/registry/", "*"),
            ("", "*"),
            ("/elsewhere/apps/deployments", "*"),
        ] {
            assert_eq!(resource_of(key), resource, "{key}");
        }
    }

    #[tokio::test]
    async fn every_call_is_counted_and_timed_by_operation_and_resource() {
        let metrics = Metrics::new();
        let store = MeteredStore::new(Arc::new(store::memory::MemoryStore::new()), metrics.store());
        let key = "/registry/apps/deployments/ns/web";
        let revision = store.create(key, Bytes::from_static(b"{}")).await.unwrap();
        store.get(key).await.unwrap();
        store.get(key).await.unwrap();
        // A conflict is an expected outcome, not a backend failure.
        let conflict = store
            .update(key, Bytes::from_static(b"{}"), Some(revision + 7))
            .await;
        assert!(matches!(conflict, Err(StoreError::Conflict { .. })));
        store
            .range(RangeRequest {
                prefix: "/registry/apps/deployments/".into(),
                ..RangeRequest::default()
            })
            .await
            .unwrap();

        let text = metrics.encode();
        let count = |operation: &str| {
            sample(
                &text,
                &format!(
                    r#"etcd_request_duration_seconds_count{{operation="{operation}",type="deployments.apps"}}"#
                ),
            )
        };
        assert_eq!(count("create"), Some(1.0));
        assert_eq!(count("get"), Some(2.0));
        assert_eq!(count("update"), Some(1.0));
        assert_eq!(count("list"), Some(1.0));
        assert_eq!(
            sample(
                &text,
                r#"etcd_requests_total{operation="get",type="deployments.apps"}"#
            ),
            Some(2.0)
        );
        assert!(
            !text.contains("etcd_request_errors_total{"),
            "no backend failed, so no error series: {text}"
        );
    }

    /// A backend whose disk is gone: every call fails.
    struct BrokenStore;

    fn broken<T>() -> StoreResult<T> {
        Err(StoreError::Backend("disk gone".into()))
    }

    #[async_trait::async_trait]
    impl Store for BrokenStore {
        async fn get(&self, _: &str) -> StoreResult<Option<KeyValue>> {
            broken()
        }
        async fn range(&self, _: RangeRequest) -> StoreResult<RangeResult> {
            broken()
        }
        async fn count(&self, _: &str) -> StoreResult<u64> {
            broken()
        }
        async fn create(&self, _: &str, _: Bytes) -> StoreResult<Revision> {
            broken()
        }
        async fn update(&self, _: &str, _: Bytes, _: Option<Revision>) -> StoreResult<Revision> {
            broken()
        }
        async fn delete(&self, _: &str, _: Option<Revision>) -> StoreResult<(Revision, KeyValue)> {
            broken()
        }
        async fn current_revision(&self) -> StoreResult<Revision> {
            broken()
        }
        async fn compacted_revision(&self) -> StoreResult<Revision> {
            broken()
        }
        async fn compact(&self, _: Revision) -> StoreResult<()> {
            broken()
        }
        async fn watch(&self, _: &str, _: Revision) -> StoreResult<WatchStream> {
            broken()
        }
    }

    #[tokio::test]
    async fn backend_failures_are_counted_as_errors_and_passed_through() {
        let metrics = Metrics::new();
        let store = MeteredStore::new(Arc::new(BrokenStore), metrics.store());
        let result = store
            .create("/registry/core/configmaps/ns/c", Bytes::from_static(b"{}"))
            .await;
        assert!(matches!(result, Err(StoreError::Backend(_))));
        let text = metrics.encode();
        assert_eq!(
            sample(
                &text,
                r#"etcd_request_errors_total{operation="create",type="configmaps"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"etcd_requests_total{operation="create",type="configmaps"}"#
            ),
            Some(1.0)
        );
    }
}
