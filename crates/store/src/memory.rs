//! The in-memory backend: the reference implementation of [`Store`], used by tests and by
//! single-process setups that need no durability.
//!
//! Data model: every key maps to its version history (oldest first); a version with no value
//! is a deletion. The newest version is the key's current state; a range at an older revision
//! picks, per key, the newest version at or below it. Every mutation also appends one event to
//! the watch ring (unbounded here: the ring *is* the event history), under the same lock that
//! assigns its revision, so events enter the ring in revision order.
//!
//! Invariants:
//! - a key's versions have strictly increasing `mod_revision`s;
//! - after `compact(C)`, each key keeps only versions above `C` plus the newest one at or below
//!   `C` (so the state at `C` stays readable), and a key whose remaining history is a lone
//!   deletion is forgotten;
//! - `revision` is the newest revision handed out; `compacted <= revision`.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::watch_hub::EventRing;
use crate::{
    EventKind, KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, StoreResult,
    WatchEvent, WatchStream,
};

/// One version of a key; `value == None` records its deletion at `mod_revision`.
#[derive(Clone, Debug)]
struct Version {
    create_revision: Revision,
    mod_revision: Revision,
    value: Option<Bytes>,
}

impl Version {
    fn key_value(&self, key: &str) -> Option<KeyValue> {
        self.value.as_ref().map(|value| KeyValue {
            key: key.to_string(),
            value: value.clone(),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        })
    }
}

#[derive(Default)]
struct MemState {
    keys: BTreeMap<String, Vec<Version>>,
    revision: Revision,
    compacted: Revision,
}

impl MemState {
    fn current(&self, key: &str) -> Option<KeyValue> {
        self.keys.get(key)?.last()?.key_value(key)
    }

    /// The current value, checked against the compare-and-swap precondition.
    fn existing(&self, key: &str, expected: Option<Revision>) -> StoreResult<KeyValue> {
        let kv = self
            .current(key)
            .ok_or_else(|| StoreError::NotFound(key.to_string()))?;
        match expected {
            Some(expected) if expected != kv.mod_revision => Err(StoreError::Conflict {
                key: key.to_string(),
                expected,
                actual: kv.mod_revision,
            }),
            _ => Ok(kv),
        }
    }

    fn push(&mut self, key: &str, version: Version) {
        self.keys.entry(key.to_string()).or_default().push(version);
    }

    fn check_readable(&self, revision: Revision) -> StoreResult<()> {
        if revision > self.revision {
            return Err(StoreError::FutureRevision {
                requested: revision,
                current: self.revision,
            });
        }
        if revision < self.compacted {
            return Err(StoreError::Compacted {
                requested: revision,
                compacted: self.compacted,
            });
        }
        Ok(())
    }
}

/// A [`Store`] held entirely in memory. Cheap to create; everything is lost on drop.
pub struct MemoryStore {
    state: Mutex<MemState>,
    ring: EventRing,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store at revision 0.
    pub fn new() -> Self {
        MemoryStore {
            state: Mutex::new(MemState::default()),
            ring: EventRing::new(0, 0, None),
        }
    }

    /// Records a mutation's event; called with the state lock held so ring order is revision order.
    fn publish(&self, event: WatchEvent) {
        self.ring.append([Arc::new(event)]);
    }
}

/// Lower bound of a prefix range, honouring `start_after` when it lies inside the prefix.
fn lower_bound<'a>(prefix: &'a str, start_after: Option<&'a str>) -> Bound<&'a str> {
    match start_after {
        Some(after) if after >= prefix => Bound::Excluded(after),
        _ => Bound::Included(prefix),
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn get(&self, key: &str) -> StoreResult<Option<KeyValue>> {
        Ok(self.state.lock().current(key))
    }

    async fn range(&self, req: RangeRequest) -> StoreResult<RangeResult> {
        let state = self.state.lock();
        let revision = req.revision.unwrap_or(state.revision);
        state.check_readable(revision)?;
        let limit = if req.limit == 0 {
            usize::MAX
        } else {
            req.limit
        };
        let lower = lower_bound(&req.prefix, req.start_after.as_deref());
        let mut kvs = Vec::new();
        let mut more = false;
        let visible = state
            .keys
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(&req.prefix))
            .filter_map(|(key, versions)| {
                let at = versions.partition_point(|v| v.mod_revision <= revision);
                versions.get(at.checked_sub(1)?)?.key_value(key)
            });
        for kv in visible {
            if kvs.len() == limit {
                more = true;
                break;
            }
            kvs.push(kv);
        }
        Ok(RangeResult {
            kvs,
            more,
            revision,
        })
    }

    async fn count(&self, prefix: &str) -> StoreResult<u64> {
        let state = self.state.lock();
        let count = state
            .keys
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(_, versions)| versions.last().is_some_and(|v| v.value.is_some()))
            .count();
        Ok(count as u64)
    }

    async fn create(&self, key: &str, value: Bytes) -> StoreResult<Revision> {
        let mut state = self.state.lock();
        if state.current(key).is_some() {
            return Err(StoreError::AlreadyExists(key.to_string()));
        }
        let revision = state.revision + 1;
        state.revision = revision;
        state.push(
            key,
            Version {
                create_revision: revision,
                mod_revision: revision,
                value: Some(value.clone()),
            },
        );
        self.publish(WatchEvent {
            kind: EventKind::Put,
            kv: KeyValue {
                key: key.to_string(),
                value,
                create_revision: revision,
                mod_revision: revision,
            },
            prev: None,
        });
        Ok(revision)
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> StoreResult<Revision> {
        let mut state = self.state.lock();
        let prev = state.existing(key, expected)?;
        let revision = state.revision + 1;
        state.revision = revision;
        state.push(
            key,
            Version {
                create_revision: prev.create_revision,
                mod_revision: revision,
                value: Some(value.clone()),
            },
        );
        self.publish(WatchEvent {
            kind: EventKind::Put,
            kv: KeyValue {
                key: key.to_string(),
                value,
                create_revision: prev.create_revision,
                mod_revision: revision,
            },
            prev: Some(prev),
        });
        Ok(revision)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> StoreResult<(Revision, KeyValue)> {
        let mut state = self.state.lock();
        let prev = state.existing(key, expected)?;
        let revision = state.revision + 1;
        state.revision = revision;
        state.push(
            key,
            Version {
                create_revision: prev.create_revision,
                mod_revision: revision,
                value: None,
            },
        );
        self.publish(WatchEvent {
            kind: EventKind::Delete,
            kv: KeyValue {
                mod_revision: revision,
                ..prev.clone()
            },
            prev: Some(prev.clone()),
        });
        Ok((revision, prev))
    }

    async fn current_revision(&self) -> StoreResult<Revision> {
        Ok(self.state.lock().revision)
    }

    async fn compacted_revision(&self) -> StoreResult<Revision> {
        Ok(self.state.lock().compacted)
    }

    async fn compact(&self, revision: Revision) -> StoreResult<()> {
        let mut state = self.state.lock();
        if revision > state.revision {
            return Err(StoreError::FutureRevision {
                requested: revision,
                current: state.revision,
            });
        }
        if revision <= state.compacted {
            return Ok(());
        }
        state.keys.retain(|_, versions| {
            let at = versions.partition_point(|v| v.mod_revision <= revision);
            // Keep the newest version at or below `revision`: it is the state at `revision`.
            if at > 1 {
                versions.drain(..at - 1);
            }
            let lone_deletion = at >= 1 && versions.first().is_some_and(|v| v.value.is_none());
            if lone_deletion {
                versions.remove(0);
            }
            !versions.is_empty()
        });
        state.compacted = revision;
        self.ring.compact(revision);
        Ok(())
    }

    async fn watch(&self, prefix: &str, after: Revision) -> StoreResult<WatchStream> {
        self.ring.watch(prefix, after, None)
    }
}
