//! Keys kept apart from durable state: a [`Store`] that routes the keys under some prefixes (the API server's
//! Events) to an in-memory store with a time to live, and every other key to the durable store.
//!
//! Why: Events are a quarter of a propagating control plane's writes, and nothing depends on them surviving a
//! restart. In the durable store each one is a committed (fsync'd) write with history that compaction later
//! removes again; kube-apiserver deployments give Events a store of their own for the same reason
//! (`--etcd-servers-overrides`) and a lease (`--event-ttl`, 1 h by default).
//!
//! What a client sees:
//! - the volatile keys have a revision sequence of their own (as Events in their own etcd do): a range, count
//!   or watch under a volatile prefix is served by the volatile store, at its revisions;
//! - a range, count or watch whose prefix spans both (the whole registry) sees only the durable keys: no
//!   whole-store reader (garbage collection, the RBAC mirror, backups) wants Events;
//! - the volatile store starts at the durable store's revision, so after a restart its revisions continue
//!   above any durable revision a client could hold, and a watch from an older one answers `Compacted` (410,
//!   relist) instead of missing events;
//! - a volatile key not written for the time to live is deleted (watchers see the deletion), as a lease expiry
//!   deletes it from etcd;
//! - [`Store::current_revision`] and compaction are the durable store's; [`Store::current_revision_under`]
//!   gives each prefix's own.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::compactor::{CompactionPolicy, compact_once};
use crate::memory::MemoryStore;
use crate::{
    KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, StoreResult, WatchStream,
};

/// A durable store with some prefixes kept in memory, with a time to live.
pub struct SplitStore {
    durable: Arc<dyn Store>,
    volatile: MemoryStore,
    prefixes: Vec<String>,
    ttl: Duration,
    /// Per volatile key: when it was last written, and the revision that write got.
    written: Mutex<HashMap<String, (Instant, Revision)>>,
}

impl SplitStore {
    /// Keeps the keys under `prefixes` apart from `durable`, each for `ttl` after its last write. Keys under
    /// them that `durable` still holds (written before the split) are deleted from it first.
    pub async fn open(
        durable: Arc<dyn Store>,
        prefixes: Vec<String>,
        ttl: Duration,
    ) -> StoreResult<Self> {
        for prefix in &prefixes {
            remove_all(durable.as_ref(), prefix).await?;
        }
        let start = durable.current_revision().await?;
        Ok(SplitStore {
            durable,
            volatile: MemoryStore::starting_at(start),
            prefixes,
            ttl,
            written: Mutex::new(HashMap::new()),
        })
    }

    fn is_volatile(&self, key_or_prefix: &str) -> bool {
        self.prefixes.iter().any(|p| key_or_prefix.starts_with(p))
    }

    fn store_for(&self, key_or_prefix: &str) -> &dyn Store {
        if self.is_volatile(key_or_prefix) {
            &self.volatile
        } else {
            self.durable.as_ref()
        }
    }

    fn remember(&self, key: &str, revision: Revision) {
        self.written
            .lock()
            .insert(key.to_string(), (Instant::now(), revision));
    }

    /// Deletes the volatile keys whose last write is older than the time to live (as of `now`); returns how
    /// many. A key written again meanwhile fails the delete's precondition and stays.
    pub async fn expire(&self, now: Instant) -> StoreResult<usize> {
        let due: Vec<(String, Revision)> = self
            .written
            .lock()
            .iter()
            .filter(|(_, (at, _))| now.saturating_duration_since(*at) >= self.ttl)
            .map(|(key, (_, revision))| (key.clone(), *revision))
            .collect();
        let mut expired = 0;
        for (key, revision) in due {
            match self.volatile.delete(&key, Some(revision)).await {
                Ok(_) => {
                    expired += 1;
                    self.forget_if(&key, revision);
                }
                Err(StoreError::NotFound(_)) => self.forget_if(&key, revision),
                Err(StoreError::Conflict { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(expired)
    }

    fn forget_if(&self, key: &str, revision: Revision) {
        let mut written = self.written.lock();
        if written.get(key).is_some_and(|(_, r)| *r == revision) {
            written.remove(key);
        }
    }

    /// Expires volatile keys and compacts the volatile store's history (by `policy`) until `cancel` fires;
    /// the durable store's compaction is its own compactor's.
    pub async fn maintain(&self, policy: CompactionPolicy, cancel: CancellationToken) {
        let every = (self.ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = ticks.tick() => {}
            }
            if let Err(error) = self.expire(Instant::now()).await {
                tracing::warn!(%error, "expiring volatile keys failed");
            }
            if let Err(error) = compact_once(&self.volatile, policy.keep_revisions).await {
                tracing::warn!(%error, "compacting volatile keys failed");
            }
        }
    }
}

/// Deletes every key under `prefix` from `store`, a page at a time.
async fn remove_all(store: &dyn Store, prefix: &str) -> StoreResult<()> {
    loop {
        let page = store
            .range(RangeRequest {
                prefix: prefix.to_string(),
                limit: 1000,
                ..RangeRequest::default()
            })
            .await?;
        if page.kvs.is_empty() {
            return Ok(());
        }
        for kv in page.kvs {
            match store.delete(&kv.key, Some(kv.mod_revision)).await {
                Ok(_) | Err(StoreError::NotFound(_) | StoreError::Conflict { .. }) => {}
                Err(err) => return Err(err),
            }
        }
    }
}

#[async_trait::async_trait]
impl Store for SplitStore {
    async fn get(&self, key: &str) -> StoreResult<Option<KeyValue>> {
        self.store_for(key).get(key).await
    }

    async fn range(&self, req: RangeRequest) -> StoreResult<RangeResult> {
        self.store_for(&req.prefix).range(req).await
    }

    async fn count(&self, prefix: &str) -> StoreResult<u64> {
        self.store_for(prefix).count(prefix).await
    }

    async fn create(&self, key: &str, value: Bytes) -> StoreResult<Revision> {
        let revision = self.store_for(key).create(key, value).await?;
        if self.is_volatile(key) {
            self.remember(key, revision);
        }
        Ok(revision)
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> StoreResult<Revision> {
        let revision = self.store_for(key).update(key, value, expected).await?;
        if self.is_volatile(key) {
            self.remember(key, revision);
        }
        Ok(revision)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> StoreResult<(Revision, KeyValue)> {
        let deleted = self.store_for(key).delete(key, expected).await?;
        if self.is_volatile(key) {
            self.written.lock().remove(key);
        }
        Ok(deleted)
    }

    async fn current_revision(&self) -> StoreResult<Revision> {
        self.durable.current_revision().await
    }

    async fn current_revision_under(&self, prefix: &str) -> StoreResult<Revision> {
        self.store_for(prefix).current_revision().await
    }

    async fn compacted_revision(&self) -> StoreResult<Revision> {
        self.durable.compacted_revision().await
    }

    async fn compact(&self, revision: Revision) -> StoreResult<()> {
        self.durable.compact(revision).await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> StoreResult<WatchStream> {
        self.store_for(prefix).watch(prefix, after).await
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::EventKind;

    const EVENTS: &str = "/registry/core/events/";

    async fn split(ttl: Duration) -> (Arc<MemoryStore>, SplitStore) {
        let durable = Arc::new(MemoryStore::new());
        durable
            .create("/registry/core/configmaps/ns/a", Bytes::from_static(b"a"))
            .await
            .unwrap();
        durable
            .create(&format!("{EVENTS}ns/old"), Bytes::from_static(b"old"))
            .await
            .unwrap();
        let store = SplitStore::open(durable.clone(), vec![EVENTS.to_string()], ttl)
            .await
            .unwrap();
        (durable, store)
    }

    #[tokio::test]
    async fn volatile_keys_never_reach_the_durable_store() {
        let (durable, store) = split(Duration::from_secs(3600)).await;
        assert_eq!(
            durable.count(EVENTS).await.unwrap(),
            0,
            "events left in the durable store by an older server are removed"
        );
        let durable_revision = durable.current_revision().await.unwrap();
        let revision = store
            .create(&format!("{EVENTS}ns/e1"), Bytes::from_static(b"e1"))
            .await
            .unwrap();
        assert_eq!(
            revision,
            durable_revision + 1,
            "volatile revisions continue above the durable store's"
        );
        assert_eq!(durable.current_revision().await.unwrap(), durable_revision);
        assert!(
            durable
                .get(&format!("{EVENTS}ns/e1"))
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(
            store
                .get(&format!("{EVENTS}ns/e1"))
                .await
                .unwrap()
                .unwrap()
                .value,
            Bytes::from_static(b"e1")
        );
        assert_eq!(store.count(EVENTS).await.unwrap(), 1);
        assert_eq!(
            store.current_revision_under(EVENTS).await.unwrap(),
            revision
        );
        assert_eq!(store.current_revision().await.unwrap(), durable_revision);
        // A whole-registry read sees the durable keys only.
        let all = store
            .range(RangeRequest {
                prefix: "/registry/".into(),
                ..RangeRequest::default()
            })
            .await
            .unwrap();
        let keys: Vec<&str> = all.kvs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["/registry/core/configmaps/ns/a"]);
        // Durable writes still go to the durable store.
        store
            .create("/registry/core/configmaps/ns/b", Bytes::from_static(b"b"))
            .await
            .unwrap();
        assert!(
            durable
                .get("/registry/core/configmaps/ns/b")
                .await
                .unwrap()
                .is_some()
        );
    }

    #[tokio::test]
    async fn keys_expire_after_their_last_write_and_watchers_see_it() {
        let (_, store) = split(Duration::from_secs(60)).await;
        let key = format!("{EVENTS}ns/e1");
        let first = store.create(&key, Bytes::from_static(b"1")).await.unwrap();
        let mut watch = store.watch(EVENTS, first).await.unwrap();
        let later = Instant::now() + Duration::from_secs(61);
        assert_eq!(
            store.expire(Instant::now()).await.unwrap(),
            0,
            "not yet due"
        );
        assert_eq!(store.expire(later).await.unwrap(), 1);
        assert!(store.get(&key).await.unwrap().is_none());
        let event = watch.next().await.unwrap().unwrap();
        assert_eq!(event.kind, EventKind::Delete);
        assert_eq!(event.kv.key, key);
        assert_eq!(
            store.expire(later).await.unwrap(),
            0,
            "forgotten once expired"
        );
    }

    #[tokio::test]
    async fn a_key_written_again_lives_on() {
        let (_, store) = split(Duration::from_secs(60)).await;
        let key = format!("{EVENTS}ns/e1");
        let first = store.create(&key, Bytes::from_static(b"1")).await.unwrap();
        // Due by its first write's time, but the delete's precondition sees the update.
        let due: Vec<(String, Revision)> = vec![(key.clone(), first)];
        store
            .update(&key, Bytes::from_static(b"2"), Some(first))
            .await
            .unwrap();
        for (key, revision) in due {
            assert!(matches!(
                store.volatile.delete(&key, Some(revision)).await,
                Err(StoreError::Conflict { .. })
            ));
        }
        assert_eq!(store.expire(Instant::now()).await.unwrap(), 0);
        assert!(store.get(&key).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_watch_from_before_the_start_is_told_to_relist() {
        let (durable, store) = split(Duration::from_secs(60)).await;
        let start = durable.current_revision().await.unwrap();
        assert!(matches!(
            store.watch(EVENTS, start - 1).await,
            Err(StoreError::Compacted { .. })
        ));
        assert!(store.watch(EVENTS, start).await.is_ok());
    }
}
