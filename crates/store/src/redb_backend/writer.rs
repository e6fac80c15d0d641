//! The redb backend's single writer thread, which group-commits writes.
//!
//! Callers send [`WriteRequest`]s over a bounded channel. The thread takes the first waiting
//! request plus every request already queued behind it (up to `max_batch`), applies them in
//! order inside ONE write transaction, commits once with `Durability::Immediate`, and only then
//! appends the events to the watch ring and answers every caller. One fsync thus covers many
//! writes, while each request still gets its own revision and its own precondition check.
//!
//! Invariants:
//! - no caller hears success before the transaction holding its write is durable;
//! - if the commit fails, every request of the batch fails and nothing is published;
//! - revisions are assigned in request order, one per successful mutation, none for failures.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{Database, Durability, ReadableTable, Table};
use tokio::sync::{mpsc, oneshot};

use super::codec::{decode_kv, encode_event, encode_kv};
use super::{COMPACTED, EVENTS, KV, META, REVISION, backend_error};
use crate::watch_hub::EventRing;
use crate::{EventKind, KeyValue, Revision, StoreError, StoreResult, WatchEvent};

/// One mutation a caller asks for.
pub(super) enum WriteOp {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Option<Revision>,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
    Compact {
        revision: Revision,
    },
}

/// What a successful mutation produced.
pub(super) enum WriteOutcome {
    Written(Revision),
    Deleted(Revision, KeyValue),
    Compacted,
}

pub(super) struct WriteRequest {
    pub(super) op: WriteOp,
    pub(super) reply: oneshot::Sender<StoreResult<WriteOutcome>>,
    /// When the caller queued it, so a slow batch can tell queueing from committing.
    pub(super) queued_at: Instant,
}

/// A batch whose oldest write waited longer than this, queue included, is logged: etcd warns
/// at the same 100 ms ("apply request took too long"), and the figures say which stage was slow.
const SLOW_BATCH: Duration = Duration::from_millis(100);

/// Runs until every sender is dropped, then returns (dropping its handle on the database).
pub(super) fn run(
    db: Arc<Database>,
    ring: Arc<EventRing>,
    mut requests: mpsc::Receiver<WriteRequest>,
    max_batch: usize,
) {
    while let Some(first) = requests.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match requests.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let mut timings = BatchTimings::default();
        match apply_batch(&db, &batch, &mut timings) {
            Ok(applied) => {
                log_if_slow(&batch, started, &timings, applied.compacted.is_some());
                ring.append(applied.events);
                if let Some(revision) = applied.compacted {
                    ring.compact(revision);
                }
                for (request, outcome) in batch.into_iter().zip(applied.outcomes) {
                    // A caller that gave up waiting is not an error.
                    let _ = request.reply.send(outcome);
                }
            }
            Err(error) => {
                tracing::error!(%error, writes = batch.len(), "store write batch failed");
                for request in batch {
                    let _ = request
                        .reply
                        .send(Err(StoreError::Backend(error.to_string())));
                }
            }
        }
    }
}

struct Applied {
    outcomes: Vec<StoreResult<WriteOutcome>>,
    events: Vec<Arc<WatchEvent>>,
    compacted: Option<Revision>,
}

/// The tables of one write transaction plus the revision counters it advances.
struct Tables<'txn> {
    kv: Table<'txn, &'static str, &'static [u8]>,
    events: Table<'txn, u64, &'static [u8]>,
    revision: Revision,
    compacted: Revision,
}

/// Where a batch's time went inside the writer thread.
#[derive(Default)]
struct BatchTimings {
    /// From the batch's start to the end of its last write, before the commit.
    applied: Duration,
    /// The commit itself: page writes and fsync.
    committed: Duration,
}

fn log_if_slow(batch: &[WriteRequest], started: Instant, timings: &BatchTimings, compaction: bool) {
    let Some(oldest) = batch.iter().map(|request| request.queued_at).min() else {
        return;
    };
    let total = oldest.elapsed();
    if total < SLOW_BATCH {
        return;
    }
    tracing::warn!(
        writes = batch.len(),
        total_ms = total.as_millis() as u64,
        queued_ms = started.saturating_duration_since(oldest).as_millis() as u64,
        apply_ms = timings.applied.as_millis() as u64,
        commit_ms = timings.committed.as_millis() as u64,
        compaction,
        "store write batch took too long"
    );
}

fn apply_batch(
    db: &Database,
    batch: &[WriteRequest],
    timings: &mut BatchTimings,
) -> StoreResult<Applied> {
    let started = Instant::now();
    let mut txn = db.begin_write().map_err(backend_error)?;
    txn.set_durability(Durability::Immediate)
        .map_err(backend_error)?;
    let mut applied = Applied {
        outcomes: Vec::with_capacity(batch.len()),
        events: Vec::new(),
        compacted: None,
    };
    {
        let mut meta = txn.open_table(META).map_err(backend_error)?;
        let revision = read_meta(&meta, REVISION)?;
        let compacted = read_meta(&meta, COMPACTED)?;
        let mut tables = Tables {
            kv: txn.open_table(KV).map_err(backend_error)?,
            events: txn.open_table(EVENTS).map_err(backend_error)?,
            revision,
            compacted,
        };
        for request in batch {
            let outcome = match tables.apply(&request.op) {
                Ok((outcome, event)) => {
                    if let Some(event) = event {
                        applied.events.push(Arc::new(event));
                    }
                    if matches!(outcome, WriteOutcome::Compacted) {
                        applied.compacted = Some(tables.compacted);
                    }
                    Ok(outcome)
                }
                // Storage failures abort the whole transaction; logical ones only this request.
                Err(error @ StoreError::Backend(_)) => return Err(error),
                Err(error) => Err(error),
            };
            applied.outcomes.push(outcome);
        }
        meta.insert(REVISION, tables.revision)
            .map_err(backend_error)?;
        meta.insert(COMPACTED, tables.compacted)
            .map_err(backend_error)?;
    }
    timings.applied = started.elapsed();
    txn.commit().map_err(backend_error)?;
    timings.committed = started.elapsed() - timings.applied;
    Ok(applied)
}

fn read_meta(meta: &Table<'_, &'static str, u64>, name: &str) -> StoreResult<u64> {
    Ok(meta
        .get(name)
        .map_err(backend_error)?
        .map(|v| v.value())
        .unwrap_or(0))
}

impl Tables<'_> {
    fn apply(&mut self, op: &WriteOp) -> StoreResult<(WriteOutcome, Option<WatchEvent>)> {
        match op {
            WriteOp::Create { key, value } => {
                if self.current(key)?.is_some() {
                    return Err(StoreError::AlreadyExists(key.clone()));
                }
                let revision = self.revision + 1;
                let kv = KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                    create_revision: revision,
                    mod_revision: revision,
                };
                let event = self.record(EventKind::Put, kv, None)?;
                Ok((WriteOutcome::Written(revision), Some(event)))
            }
            WriteOp::Update {
                key,
                value,
                expected,
            } => {
                let prev = self.existing(key, *expected)?;
                let revision = self.revision + 1;
                let kv = KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                    create_revision: prev.create_revision,
                    mod_revision: revision,
                };
                let event = self.record(EventKind::Put, kv, Some(prev))?;
                Ok((WriteOutcome::Written(revision), Some(event)))
            }
            WriteOp::Delete { key, expected } => {
                let prev = self.existing(key, *expected)?;
                let revision = self.revision + 1;
                let kv = KeyValue {
                    mod_revision: revision,
                    ..prev.clone()
                };
                let event = self.record(EventKind::Delete, kv, Some(prev.clone()))?;
                Ok((WriteOutcome::Deleted(revision, prev), Some(event)))
            }
            WriteOp::Compact { revision } => {
                self.compact(*revision)?;
                Ok((WriteOutcome::Compacted, None))
            }
        }
    }

    fn current(&self, key: &str) -> StoreResult<Option<KeyValue>> {
        match self.kv.get(key).map_err(backend_error)? {
            Some(record) => Ok(Some(decode_kv(key, record.value())?)),
            None => Ok(None),
        }
    }

    fn existing(&self, key: &str, expected: Option<Revision>) -> StoreResult<KeyValue> {
        let kv = self
            .current(key)?
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

    /// Writes the new current state and the event log entry; advances the revision.
    fn record(
        &mut self,
        kind: EventKind,
        kv: KeyValue,
        prev: Option<KeyValue>,
    ) -> StoreResult<WatchEvent> {
        let event = WatchEvent { kind, kv, prev };
        let record = encode_event(&event)?;
        match kind {
            EventKind::Put => {
                let value = encode_kv(
                    event.kv.create_revision,
                    event.kv.mod_revision,
                    &event.kv.value,
                )?;
                self.kv
                    .insert(event.kv.key.as_str(), value.as_slice())
                    .map_err(backend_error)?;
            }
            EventKind::Delete => {
                self.kv
                    .remove(event.kv.key.as_str())
                    .map_err(backend_error)?;
            }
        }
        self.events
            .insert(event.kv.mod_revision, record.as_slice())
            .map_err(backend_error)?;
        self.revision = event.kv.mod_revision;
        Ok(event)
    }

    fn compact(&mut self, revision: Revision) -> StoreResult<()> {
        if revision > self.revision {
            return Err(StoreError::FutureRevision {
                requested: revision,
                current: self.revision,
            });
        }
        if revision <= self.compacted {
            return Ok(());
        }
        self.events
            .retain_in(..=revision, |_, _| false)
            .map_err(backend_error)?;
        self.compacted = revision;
        Ok(())
    }
}
