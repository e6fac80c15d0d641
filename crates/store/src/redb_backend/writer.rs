//! The redb backend's single writer thread, which group-commits writes.
//!
//! Callers send [`WriteRequest`]s over a bounded channel. The thread takes the first waiting
//! request plus every request already queued behind it (up to `max_batch`), applies them in
//! order inside ONE write transaction, makes that transaction durable, and only then appends the
//! events to the watch ring and answers every caller. One sync thus covers many writes, while
//! each request still gets its own revision and its own precondition check.
//!
//! A batch is made durable in one of two ways (see `journal`): most batches append their event
//! records to the journal and sync it, and their redb transaction stays open for the batches
//! after them, committed without durability once [`Deferral::interval`] has passed since the first
//! of them, or sooner when they hold more events than the watch ring may keep beyond what redb
//! has, or a reader of redb asks ([`WriteOp::Flush`]). A batch's commit was most of a lone write's
//! cost in redb: etcd likewise syncs its WAL per batch and commits its backend every 100 ms. A checkpoint
//! (due after [`Checkpoints::interval`] or [`Checkpoints::journal_bytes`], and for every
//! compaction) commits durably and starts the journal's next epoch. When the queue closes, a
//! last checkpoint leaves nothing to replay. A batch made only of writes under the relaxed
//! prefixes (the API server's Events) appends its records without a sync: the next synced
//! batch or checkpoint makes them durable, so they are always the journal's unsynced tail.
//!
//! Invariants:
//! - no caller hears success before the batch holding its write is durable (journal synced, or
//!   redb committed durably), except a batch of relaxed writes only, which a crash may lose
//!   whole; no later synced write is lost with it;
//! - if the batch fails, every request of the batch fails and nothing is published;
//! - revisions are assigned in request order, one per successful mutation, none for failures;
//! - a batch synced to the journal that redb then refuses stops the writer: every later write
//!   fails until the store is reopened (and replays it); so does a failure while the open
//!   transaction holds acknowledged batches;
//! - the watch ring gets a batch's events before it is acknowledged, and keeps every event redb
//!   has not committed yet (`EventRing::in_cold_log_through`): point reads and watches answered
//!   from the ring see acknowledged writes, and a range or count flushes first.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{Database, Durability, ReadableTable, Table, WriteTransaction};
use tokio::sync::{mpsc, oneshot};

use super::codec::{decode_kv, encode_event, encode_kv};
use super::journal::{JOURNAL_EPOCH, Journal, next_epoch};
use super::{COMPACTED, EVENTS, KV, META, REVISION, backend_error};
use crate::watch_hub::{EventRing, event_size};
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
    /// Commits the open transaction, so a reader of redb sees every acknowledged write.
    Flush,
}

/// What a successful mutation produced.
pub(super) enum WriteOutcome {
    Written(Revision),
    Deleted(Revision, KeyValue),
    Compacted,
    Flushed,
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

/// When the writer commits durably instead of journaling.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    /// Longest time between durable commits while writes arrive.
    pub interval: Duration,
    /// Most journal bytes between durable commits.
    pub journal_bytes: u64,
    /// Key prefixes whose writes need no sync of their own (see `RedbOptions::relaxed_prefixes`).
    pub relaxed_prefixes: Vec<String>,
}

impl Checkpoints {
    /// Whether every write of `batch` is under a relaxed prefix, so its journal record need not
    /// be synced before it is acknowledged.
    fn relaxed(&self, batch: &[WriteRequest]) -> bool {
        !self.relaxed_prefixes.is_empty()
            && batch.iter().all(|request| match &request.op {
                WriteOp::Create { key, .. }
                | WriteOp::Update { key, .. }
                | WriteOp::Delete { key, .. } => self
                    .relaxed_prefixes
                    .iter()
                    .any(|prefix| key.starts_with(prefix.as_str())),
                WriteOp::Compact { .. } | WriteOp::Flush => false,
            })
    }
}

/// How long acknowledged batches may wait in the open transaction for their redb commit.
#[derive(Clone, Debug)]
pub struct Deferral {
    /// Longest wait after the first of them; zero commits every batch.
    pub interval: Duration,
    /// Most events (and bytes, as the watch ring counts them) waiting: the ring keeps them all
    /// until the commit, so these stay well inside its capacity.
    pub events: usize,
    pub bytes: usize,
}

/// Shared with the store: the newest revision redb has committed (what a read transaction
/// begun now sees), and how many commits the writer made.
#[derive(Default)]
pub(super) struct CommitCounters {
    pub(super) committed: AtomicU64,
    pub(super) commits: AtomicU64,
}

/// The write transaction holding acknowledged batches not yet committed to redb.
struct Open {
    txn: WriteTransaction,
    since: Instant,
    events: usize,
    bytes: usize,
    /// Revision of its newest write.
    revision: Revision,
}

/// Runs until every sender is dropped, then checkpoints and returns (dropping its handle on
/// the database).
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    db: Arc<Database>,
    ring: Arc<EventRing>,
    mut requests: mpsc::Receiver<WriteRequest>,
    max_batch: usize,
    mut journal: Journal,
    checkpoints: Checkpoints,
    mut deferral: Deferral,
    counters: Arc<CommitCounters>,
) {
    // Waiting for the next request with a deadline (the open transaction's commit) needs a timer.
    let timer = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(timer) => Some(timer),
        Err(error) => {
            tracing::warn!(%error, "store writer has no timer; committing every batch");
            deferral.interval = Duration::ZERO;
            None
        }
    };
    let mut last_checkpoint = Instant::now();
    let mut open: Option<Open> = None;
    // Set when redb refused a batch the journal already holds: answering later writes would
    // put revisions after one that only a reopen can restore.
    let mut stopped: Option<String> = None;
    loop {
        let first = match (&open, &timer) {
            (Some(pending), Some(timer)) => {
                let left = deferral.interval.saturating_sub(pending.since.elapsed());
                // The timeout is made inside `block_on`: its timer registers with the runtime it runs in.
                let next =
                    timer.block_on(async { tokio::time::timeout(left, requests.recv()).await });
                match next {
                    Ok(Some(request)) => request,
                    Ok(None) => break,
                    Err(_) => {
                        if let Err(error) = commit_open(&mut open, &ring, &counters) {
                            let reason = stop_reason(&error);
                            tracing::error!(%error, "{reason}");
                            stopped = Some(reason);
                        }
                        continue;
                    }
                }
            }
            _ => match requests.blocking_recv() {
                Some(request) => request,
                None => break,
            },
        };
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match requests.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        if let Some(reason) = &stopped {
            fail_batch(batch, reason);
            continue;
        }
        let started = Instant::now();
        let mut timings = BatchTimings::default();
        let durability = if batch
            .iter()
            .any(|r| matches!(r.op, WriteOp::Compact { .. }))
            || journal.len() >= checkpoints.journal_bytes
            || last_checkpoint.elapsed() >= checkpoints.interval
        {
            Persistence::Checkpoint
        } else if checkpoints.relaxed(&batch) {
            Persistence::Unsynced
        } else {
            Persistence::Journal
        };
        match apply_batch(
            &db,
            &mut open,
            &batch,
            &mut journal,
            durability,
            &deferral,
            &mut timings,
        ) {
            Ok(applied) => {
                if matches!(durability, Persistence::Checkpoint) {
                    last_checkpoint = Instant::now();
                }
                log_if_slow(&batch, started, &timings, applied.compacted.is_some());
                ring.append(applied.events);
                if let Some(revision) = applied.committed_through {
                    committed(&ring, &counters, revision);
                }
                if let Some(revision) = applied.compacted {
                    ring.compact(revision);
                }
                for (request, outcome) in batch.into_iter().zip(applied.outcomes) {
                    // A caller that gave up waiting is not an error.
                    let _ = request.reply.send(outcome);
                }
            }
            Err(BatchError::Failed(error)) => {
                tracing::error!(%error, writes = batch.len(), "store write batch failed");
                fail_batch(batch, &error.to_string());
            }
            Err(BatchError::Journaled(error)) => {
                let reason = stop_reason(&error);
                tracing::error!(%error, writes = batch.len(), "{reason}");
                fail_batch(batch, &reason);
                stopped = Some(reason);
            }
        }
    }
    let mut timings = BatchTimings::default();
    if stopped.is_none() {
        match apply_batch(
            &db,
            &mut open,
            &[],
            &mut journal,
            Persistence::Checkpoint,
            &deferral,
            &mut timings,
        ) {
            Ok(applied) => {
                if let Some(revision) = applied.committed_through {
                    committed(&ring, &counters, revision);
                }
            }
            Err(BatchError::Failed(error) | BatchError::Journaled(error)) => {
                tracing::error!(%error, "store's closing checkpoint failed; the journal is replayed on the next open");
            }
        }
    }
}

fn stop_reason(error: &StoreError) -> String {
    format!(
        "the store stopped writing: acknowledged writes are in the journal but the database refused them ({error}); restart to replay them"
    )
}

/// Commits the open transaction (without durability: the journal holds its batches).
fn commit_open(
    open: &mut Option<Open>,
    ring: &EventRing,
    counters: &CommitCounters,
) -> StoreResult<()> {
    if let Some(pending) = open.take() {
        let revision = pending.revision;
        pending.txn.commit().map_err(backend_error)?;
        committed(ring, counters, revision);
    }
    Ok(())
}

/// After a commit through `revision`: redb's readers see it, so the ring may let it go.
fn committed(ring: &EventRing, counters: &CommitCounters, revision: Revision) {
    counters.committed.store(revision, Ordering::Release);
    counters.commits.fetch_add(1, Ordering::Relaxed);
    ring.in_cold_log_through(revision);
}

fn fail_batch(batch: Vec<WriteRequest>, reason: &str) {
    for request in batch {
        let _ = request
            .reply
            .send(Err(StoreError::Backend(reason.to_string())));
    }
}

/// How a batch becomes durable.
#[derive(Clone, Copy)]
enum Persistence {
    /// Its records synced to the journal, then a commit without durability.
    Journal,
    /// Its records written to the journal without a sync (relaxed writes only), then a commit
    /// without durability: durable with the next sync or checkpoint.
    Unsynced,
    /// A durable commit that also starts the journal's next epoch.
    Checkpoint,
}

enum BatchError {
    /// Nothing of the batch was kept.
    Failed(StoreError),
    /// The journal holds the batch but redb refused the commit.
    Journaled(StoreError),
}

impl From<StoreError> for BatchError {
    fn from(error: StoreError) -> Self {
        BatchError::Failed(error)
    }
}

struct Applied {
    outcomes: Vec<StoreResult<WriteOutcome>>,
    events: Vec<Arc<WatchEvent>>,
    compacted: Option<Revision>,
    /// The revision redb committed through, if the batch's transaction was committed.
    committed_through: Option<Revision>,
}

/// The tables of one write transaction plus the revision counters it advances.
struct Tables<'txn> {
    kv: Table<'txn, &'static str, &'static [u8]>,
    events: Table<'txn, u64, &'static [u8]>,
    revision: Revision,
    compacted: Revision,
    /// The `events` records written, in revision order, for the journal.
    records: Vec<Vec<u8>>,
}

/// Where a batch's time went inside the writer thread.
#[derive(Default)]
struct BatchTimings {
    /// From the batch's start to the end of its last write, before the commit.
    applied: Duration,
    /// The journal's append and sync, if the batch went there.
    journaled: Duration,
    /// The commit itself: page writes and fsync when it is a checkpoint.
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
        journal_ms = timings.journaled.as_millis() as u64,
        commit_ms = timings.committed.as_millis() as u64,
        compaction,
        "store write batch took too long"
    );
}

fn apply_batch(
    db: &Database,
    open: &mut Option<Open>,
    batch: &[WriteRequest],
    journal: &mut Journal,
    persistence: Persistence,
    deferral: &Deferral,
    timings: &mut BatchTimings,
) -> Result<Applied, BatchError> {
    let started = Instant::now();
    let pending = open.take();
    // Losing the open transaction loses acknowledged batches from redb (the journal has them).
    let holds_acknowledged = pending.is_some();
    let fail = |error: StoreError| {
        if holds_acknowledged {
            BatchError::Journaled(error)
        } else {
            BatchError::Failed(error)
        }
    };
    let (mut txn, since, mut waiting_events, mut waiting_bytes) = match pending {
        Some(pending) => (pending.txn, pending.since, pending.events, pending.bytes),
        None => (
            db.begin_write().map_err(backend_error)?,
            Instant::now(),
            0,
            0,
        ),
    };
    let mut applied = Applied {
        outcomes: Vec::with_capacity(batch.len()),
        events: Vec::new(),
        compacted: None,
        committed_through: None,
    };
    let new_epoch = match persistence {
        Persistence::Journal | Persistence::Unsynced => None,
        Persistence::Checkpoint => Some(next_epoch(journal.epoch())),
    };
    let mut flush = false;
    let (first_revision, last_revision, records) = {
        let mut meta = txn.open_table(META).map_err(backend_error).map_err(fail)?;
        let revision = read_meta(&meta, REVISION).map_err(fail)?;
        let compacted = read_meta(&meta, COMPACTED).map_err(fail)?;
        let mut tables = Tables {
            kv: txn.open_table(KV).map_err(backend_error).map_err(fail)?,
            events: txn
                .open_table(EVENTS)
                .map_err(backend_error)
                .map_err(fail)?,
            revision,
            compacted,
            records: Vec::new(),
        };
        for request in batch {
            flush |= matches!(request.op, WriteOp::Flush);
            let outcome = match tables.apply(&request.op) {
                Ok((outcome, event)) => {
                    if let Some(event) = event {
                        waiting_bytes += event_size(&event);
                        waiting_events += 1;
                        applied.events.push(Arc::new(event));
                    }
                    if matches!(outcome, WriteOutcome::Compacted) {
                        applied.compacted = Some(tables.compacted);
                    }
                    Ok(outcome)
                }
                // Storage failures abort the whole transaction; logical ones only this request.
                Err(error @ StoreError::Backend(_)) => return Err(fail(error)),
                Err(error) => Err(error),
            };
            applied.outcomes.push(outcome);
        }
        meta.insert(REVISION, tables.revision)
            .map_err(backend_error)
            .map_err(fail)?;
        meta.insert(COMPACTED, tables.compacted)
            .map_err(backend_error)
            .map_err(fail)?;
        if let Some(epoch) = new_epoch {
            meta.insert(JOURNAL_EPOCH, epoch)
                .map_err(backend_error)
                .map_err(fail)?;
        }
        (revision + 1, tables.revision, tables.records)
    };
    timings.applied = started.elapsed();
    let sync = match persistence {
        Persistence::Journal => Some(true),
        Persistence::Unsynced => Some(false),
        Persistence::Checkpoint => None,
    };
    let journaled = match sync.filter(|_| !records.is_empty()) {
        Some(sync) => {
            journal
                .append(first_revision, &records, sync)
                .map_err(fail)?;
            timings.journaled = started.elapsed() - timings.applied;
            true
        }
        None => false,
    };
    let commit_now = matches!(persistence, Persistence::Checkpoint)
        || flush
        || deferral.interval.is_zero()
        || since.elapsed() >= deferral.interval
        || waiting_events > deferral.events
        || waiting_bytes > deferral.bytes;
    if !commit_now {
        // Acknowledged once answered: the journal holds it, the ring serves it.
        *open = Some(Open {
            txn,
            since,
            events: waiting_events,
            bytes: waiting_bytes,
            revision: last_revision,
        });
        return Ok(applied);
    }
    txn.set_durability(match persistence {
        Persistence::Journal | Persistence::Unsynced => Durability::None,
        Persistence::Checkpoint => Durability::Immediate,
    })
    .map_err(backend_error)
    .map_err(fail)?;
    let committed = txn.commit().map_err(backend_error);
    match committed {
        Ok(()) => {}
        Err(error) if journaled => return Err(BatchError::Journaled(error)),
        Err(error) => return Err(fail(error)),
    }
    if let Some(epoch) = new_epoch {
        journal.restart(epoch);
    }
    applied.committed_through = Some(last_revision);
    timings.committed = started.elapsed() - timings.applied - timings.journaled;
    Ok(applied)
}

/// Writes `event` (encoded as `record`) into the tables: the key's current state and the event log.
pub(super) fn store_event(
    kv: &mut Table<'_, &'static str, &'static [u8]>,
    events: &mut Table<'_, u64, &'static [u8]>,
    event: &WatchEvent,
    record: &[u8],
) -> StoreResult<()> {
    match event.kind {
        EventKind::Put => {
            let value = encode_kv(
                event.kv.create_revision,
                event.kv.mod_revision,
                &event.kv.value,
            )?;
            kv.insert(event.kv.key.as_str(), value.as_slice())
                .map_err(backend_error)?;
        }
        EventKind::Delete => {
            kv.remove(event.kv.key.as_str()).map_err(backend_error)?;
        }
    }
    events
        .insert(event.kv.mod_revision, record)
        .map_err(backend_error)?;
    Ok(())
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
            WriteOp::Flush => Ok((WriteOutcome::Flushed, None)),
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
        store_event(&mut self.kv, &mut self.events, &event, &record)?;
        self.records.push(record);
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
