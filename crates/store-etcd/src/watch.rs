//! Watch: one etcd watch stream per store watch, started one revision early so that etcd's
//! own compaction check matches the store's rule (watching after `R` needs `R` readable).
//!
//! Invariants of the returned stream:
//! - it yields events with revision `> after` in etcd's order (revision order), each once;
//! - a delete event carries the deleted value (etcd's `prev_kv`) with the deletion revision;
//! - when compaction overtakes it (etcd cancels the watch, or an unread event is at or below
//!   a revision this process compacted) it yields `Err(Compacted)` and ends; any other
//!   failure yields `Err(Backend)` and ends, so the caller re-watches from its last revision.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use etcd_client::{EventType, WatchOptions, WatchResponse};
use store::{EventKind, KeyValue, Revision, StoreError, StoreResult, WatchEvent, WatchStream};

use crate::EtcdStore;

/// Starts a watch of every key under `prefix` with events after `after`.
pub async fn start(store: &EtcdStore, prefix: &str, after: Revision) -> StoreResult<WatchStream> {
    store.check_watchable(after).await?;
    let (start, end) = store.namespace.prefix_range(prefix);
    // From `after` itself (skipped below): etcd then refuses exactly when `after` is compacted.
    let options = WatchOptions::new()
        .with_range(end)
        .with_start_revision(store.namespace.to_etcd(after)?)
        .with_prev_key();
    let mut inner = store
        .raw_watch(start, Some(options))
        .await
        .map_err(|e| store.backend(e))?;
    // The first answer says whether etcd accepted the watch.
    match inner.message().await {
        Ok(Some(resp)) if resp.created() && !resp.canceled() => {}
        Ok(Some(resp)) => return Err(cancellation(store, &resp, after)),
        Ok(None) => {
            return Err(StoreError::Backend(format!(
                "etcd {}: watch stream closed before it started",
                store.endpoints
            )));
        }
        Err(error) => return Err(store.backend(error)),
    }
    let state = Cursor {
        inner,
        store: Context {
            namespace: store.namespace.clone(),
            endpoints: store.endpoints.clone(),
            compacted_seen: store.compacted_seen.clone(),
        },
        after,
        position: after,
        pending: VecDeque::new(),
        finished: false,
    };
    Ok(Box::pin(futures::stream::unfold(state, Cursor::next)))
}

/// Why etcd canceled a watch, as a store error.
fn cancellation(store: &EtcdStore, resp: &WatchResponse, requested: Revision) -> StoreError {
    if resp.compact_revision() > 0 {
        let compacted = store.namespace.to_store(resp.compact_revision());
        store.note_compacted(compacted);
        StoreError::Compacted {
            requested,
            compacted,
        }
    } else {
        StoreError::Backend(format!(
            "etcd {}: watch canceled: {}",
            store.endpoints,
            resp.cancel_reason()
        ))
    }
}

/// What a running watch needs from its store (not the store itself, which it must not keep
/// alive).
struct Context {
    namespace: crate::keys::Namespace,
    endpoints: String,
    compacted_seen: Arc<AtomicU64>,
}

struct Cursor {
    inner: etcd_client::WatchStream,
    store: Context,
    /// Events at or below this were asked to be skipped.
    after: Revision,
    /// The revision of the last event handed out.
    position: Revision,
    pending: VecDeque<WatchEvent>,
    finished: bool,
}

impl Cursor {
    async fn next(mut self) -> Option<(StoreResult<WatchEvent>, Self)> {
        loop {
            if self.finished {
                return None;
            }
            if let Some(event) = self.pending.pop_front() {
                let compacted = self.store.compacted_seen.load(Ordering::Acquire);
                if event.revision() <= compacted {
                    // Compaction overtook this unread event: report it rather than serve
                    // history the store has declared gone.
                    let error = StoreError::Compacted {
                        requested: self.position,
                        compacted,
                    };
                    return self.fail(error);
                }
                self.position = event.revision();
                return Some((Ok(event), self));
            }
            match self.inner.message().await {
                Ok(Some(resp)) if resp.canceled() => {
                    let error = self.canceled(&resp);
                    return self.fail(error);
                }
                Ok(Some(resp)) => {
                    if let Err(error) = self.absorb(&resp) {
                        return self.fail(error);
                    }
                }
                Ok(None) => {
                    let error = StoreError::Backend(format!(
                        "etcd {}: watch stream closed by the server",
                        self.store.endpoints
                    ));
                    return self.fail(error);
                }
                Err(error) => {
                    let error = StoreError::Backend(format!(
                        "etcd {}: watch: {error}",
                        self.store.endpoints
                    ));
                    return self.fail(error);
                }
            }
        }
    }

    fn fail(mut self, error: StoreError) -> Option<(StoreResult<WatchEvent>, Self)> {
        self.finished = true;
        self.pending.clear();
        Some((Err(error), self))
    }

    fn canceled(&self, resp: &WatchResponse) -> StoreError {
        if resp.compact_revision() > 0 {
            let compacted = self.store.namespace.to_store(resp.compact_revision());
            self.store
                .compacted_seen
                .fetch_max(compacted, Ordering::AcqRel);
            StoreError::Compacted {
                requested: self.position,
                compacted,
            }
        } else {
            StoreError::Backend(format!(
                "etcd {}: watch canceled: {}",
                self.store.endpoints,
                resp.cancel_reason()
            ))
        }
    }

    /// Converts a response's events and queues those after `after`.
    fn absorb(&mut self, resp: &WatchResponse) -> StoreResult<()> {
        for event in resp.events() {
            let Some(kv) = event.kv() else {
                continue;
            };
            if self.store.namespace.to_store(kv.mod_revision()) <= self.after {
                continue;
            }
            let converted = match event.event_type() {
                EventType::Put => WatchEvent {
                    kind: EventKind::Put,
                    kv: self.kv(kv)?,
                    prev: event.prev_kv().map(|p| self.kv(p)).transpose()?,
                },
                EventType::Delete => {
                    let revision = self.store.namespace.to_store(kv.mod_revision());
                    // etcd omits the previous value only when its revision is compacted.
                    let prev = event.prev_kv().ok_or(StoreError::Compacted {
                        requested: self.position,
                        compacted: revision.saturating_sub(1),
                    })?;
                    let prev = self.kv(prev)?;
                    WatchEvent {
                        kind: EventKind::Delete,
                        kv: KeyValue {
                            mod_revision: revision,
                            ..prev.clone()
                        },
                        prev: Some(prev),
                    }
                }
            };
            self.pending.push_back(converted);
        }
        Ok(())
    }

    fn kv(&self, kv: &etcd_client::KeyValue) -> StoreResult<KeyValue> {
        self.store.namespace.key_value(kv)
    }
}
