//! The embedded, durable backend: one redb file, pure Rust.
//!
//! Tables:
//! - `kv`: key → `create_revision | mod_revision | value` (current state only; a delete removes
//!   the row);
//! - `events`: revision → the event at that revision, with the previous value (watch replay
//!   after restart, and ranges at older revisions);
//! - `meta`: `revision` (newest committed) and `compacted`.
//!
//! Writes go through one writer thread that group-commits (the `writer` module); a write call
//! returns only after its transaction is durable: synced to the write-ahead journal beside the
//! file (`<file>.journal`, the `journal` module) or committed durably at a checkpoint. Opening
//! the store replays what the journal holds beyond the last checkpoint. An acknowledged batch may
//! wait up to `commit_interval` for its redb commit, sharing it with the batches after it; until
//! then the watch ring holds its events (point reads and watches are answered from there), and a
//! range, count or backup first commits what waits. Reads run on the blocking pool, each in one
//! redb read transaction, which is an MVCC snapshot: a range at the current revision is
//! consistent without any locking against writers.
//!
//! A range at an older revision `R` is rebuilt from the current snapshot plus the events after
//! `R` (each key touched after `R` takes the previous value of its first event after `R`). Its
//! cost is O(events after R + keys returned), so paging at a fixed revision gets slower as the
//! store moves on; compaction bounds how far back that can go.
//!
//! Watchers read recent events from an in-memory ring bounded by `watch_cache_events` and
//! `watch_cache_bytes`, and fall back to the `events` table for anything older. A point read of
//! a key with an event in the ring is answered from the ring (see `watch_hub`), and one read
//! from the file is reused while the ring proves it current (`read_cache`). Counting is a
//! scan of the prefix, O(keys under it).
//!
//! Dropping the store closes the write queue and joins the writer thread (it finishes the
//! batch in hand); the file stays open until the last watch stream is dropped too.
//!
//! Invariants: `meta.revision` equals the highest key of `events` unless compaction removed it
//! (it never removes events above `meta.compacted`); every event above `meta.compacted` is in
//! `events`; a reader sees either all or none of a write batch.

pub mod backup;
mod codec;
mod journal;
mod range;
mod read_cache;
mod writer;

use std::fmt::Display;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use redb::{Database, ReadTransaction, ReadableDatabase, TableDefinition};
use tokio::sync::{mpsc, oneshot};

use crate::watch_hub::{ColdLog, EventRing, KeyState, RingCapacity};
use crate::{
    KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, StoreResult, WatchEvent,
    WatchStream,
};
use codec::{decode_event, decode_kv, event_key};
pub use journal::journal_path;
use range::range_in;
use writer::{Checkpoints, CommitCounters, Deferral, WriteOp, WriteOutcome, WriteRequest};

const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");
const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const REVISION: &str = "revision";
const COMPACTED: &str = "compacted";

/// Largest key plus value accepted in one write; bigger requests are refused up front so they
/// can never fail a whole group-commit batch.
pub const MAX_WRITE_BYTES: usize = 256 * 1024 * 1024;

fn backend_error(error: impl Display) -> StoreError {
    StoreError::Backend(format!("redb: {error}"))
}

/// Tuning for [`RedbStore`]. Compaction retention is not a store option: run
/// [`crate::compactor::spawn_compactor`] with the retention you want.
#[derive(Clone, Debug)]
pub struct RedbOptions {
    /// redb's page cache, which bounds the backend's memory (besides the watch ring).
    pub cache_size_bytes: usize,
    /// Most recent events the in-memory watch ring keeps; older ones are read from disk.
    pub watch_cache_events: usize,
    /// Most bytes (keys plus current and previous values) the watch ring keeps.
    pub watch_cache_bytes: usize,
    /// Capacity of the queue in front of the writer thread (callers wait when it is full).
    pub write_queue_depth: usize,
    /// Most writes committed in one transaction.
    pub max_batch: usize,
    /// Longest time between durable redb commits while writes arrive; the batches between
    /// them are made durable by the journal.
    pub checkpoint_interval: Duration,
    /// Most journal bytes between durable redb commits.
    pub checkpoint_journal_bytes: u64,
    /// Key prefixes whose writes are acknowledged before they are durable: a batch made only of
    /// such writes is appended to the journal without a sync, and becomes durable with the next
    /// batch that syncs or the next checkpoint. A crash loses at most those writes since then
    /// (they are always the journal's tail), never an acknowledged write under another prefix.
    /// kube-apiserver keeps Events the same way apart from durable state.
    pub relaxed_prefixes: Vec<String>,
    /// Longest time an acknowledged batch (already in the synced journal) waits for its redb
    /// commit, so a trickle of writes shares one; zero commits every batch. A range or count
    /// commits what waits first.
    pub commit_interval: Duration,
}

/// Defaults sized so an API server holding 100,000 objects stays under 300 MB (the benchmark in
/// docs/benchmarks.md): reads beyond the cache come from the OS page cache, and watchers that fall
/// behind the ring replay from the on-disk event log.
impl Default for RedbOptions {
    fn default() -> Self {
        RedbOptions {
            cache_size_bytes: 16 * 1024 * 1024,
            watch_cache_events: 4 * 1024,
            watch_cache_bytes: 8 * 1024 * 1024,
            write_queue_depth: 4096,
            max_batch: 1024,
            // etcd commits its backend every 100 ms; a second bounds the memory redb holds
            // for commits not yet durable in its file, and the journal's replay.
            checkpoint_interval: Duration::from_secs(1),
            checkpoint_journal_bytes: journal::PREALLOCATED * 3 / 4,
            relaxed_prefixes: Vec::new(),
            // etcd commits its backend every 100 ms; the ring's capacity bounds what waits.
            commit_interval: Duration::from_millis(100),
        }
    }
}

/// A [`Store`] in one redb file. Dropping it stops the writer thread (after its current batch)
/// and closes the file once the last watch stream is dropped too.
pub struct RedbStore {
    db: Arc<Database>,
    ring: Arc<EventRing>,
    writes: Option<mpsc::Sender<WriteRequest>>,
    writer: Option<JoinHandle<()>>,
    /// Writes the open replayed from the journal (acknowledged after the last checkpoint).
    replayed: usize,
    /// Journal syncs so far (shared with the writer thread).
    journal_syncs: Arc<std::sync::atomic::AtomicU64>,
    /// Point reads answered from the file, reused while the ring vouches for them.
    read_cache: read_cache::ReadCache,
    /// What redb has committed of the acknowledged writes (shared with the writer thread).
    commits: Arc<CommitCounters>,
}

impl RedbStore {
    /// Opens (or creates) the store at `path`. Blocks on file I/O: call it at startup or from
    /// a blocking context.
    pub fn open(path: impl AsRef<Path>, options: RedbOptions) -> StoreResult<Self> {
        let db = Database::builder()
            .set_cache_size(options.cache_size_bytes)
            .create(path.as_ref())
            .map_err(backend_error)?;
        initialize(&db)?;
        let journal_file = journal_path(path.as_ref());
        let (epoch, replayed) = journal::recover(&db, &journal_file)?;
        let journal = journal::Journal::open(&journal_file, epoch)?;
        let journal_syncs = journal.syncs();
        let (revision, compacted) = read_counters(&db.begin_read().map_err(backend_error)?)?;
        let db = Arc::new(db);
        let ring = Arc::new(EventRing::new(
            revision,
            compacted,
            Some(RingCapacity {
                events: options.watch_cache_events,
                bytes: options.watch_cache_bytes,
            }),
        ));
        ring.in_cold_log_through(revision);
        let commits = Arc::new(CommitCounters::default());
        commits
            .committed
            .store(revision, std::sync::atomic::Ordering::Release);
        let (writes, requests) = mpsc::channel(options.write_queue_depth.max(1));
        let writer = {
            let commits = commits.clone();
            // Half the ring's room at most waits for a commit, so the ring keeps it all.
            let deferral = Deferral {
                interval: options.commit_interval,
                events: options.watch_cache_events / 2,
                bytes: options.watch_cache_bytes / 2,
            };
            let db = db.clone();
            let ring = ring.clone();
            let max_batch = options.max_batch.max(1);
            let checkpoints = Checkpoints {
                interval: options.checkpoint_interval,
                journal_bytes: options.checkpoint_journal_bytes,
                relaxed_prefixes: options.relaxed_prefixes.clone(),
            };
            std::thread::Builder::new()
                .name("store-writer".to_string())
                .spawn(move || {
                    writer::run(
                        db,
                        ring,
                        requests,
                        max_batch,
                        journal,
                        checkpoints,
                        deferral,
                        commits,
                    )
                })
                .map_err(|e| StoreError::Backend(format!("cannot start writer thread: {e}")))?
        };
        Ok(RedbStore {
            db,
            ring,
            writes: Some(writes),
            writer: Some(writer),
            replayed,
            journal_syncs,
            read_cache: read_cache::ReadCache::default(),
            commits,
        })
    }

    /// How many times the writer has committed to redb since the store opened.
    pub fn redb_commits(&self) -> u64 {
        self.commits
            .commits
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Commits the acknowledged writes still waiting in the writer's open transaction, so a
    /// read transaction begun after it sees every write acknowledged before this call.
    async fn flush_waiting(&self) -> StoreResult<()> {
        let committed = self
            .commits
            .committed
            .load(std::sync::atomic::Ordering::Acquire);
        if committed >= self.ring.newest() {
            return Ok(());
        }
        match self.write(WriteOp::Flush).await? {
            WriteOutcome::Flushed => Ok(()),
            _ => Err(unexpected_outcome()),
        }
    }

    /// How many times the writer has synced the journal since the store opened: once per batch
    /// that holds a write outside `relaxed_prefixes` and is not a checkpoint.
    pub fn journal_syncs(&self) -> u64 {
        self.journal_syncs
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many writes opening the store replayed from its journal: those acknowledged after
    /// the last checkpoint of a process that did not close the store.
    pub fn replayed_from_journal(&self) -> usize {
        self.replayed
    }

    async fn write(&self, op: WriteOp) -> StoreResult<WriteOutcome> {
        let closed = || StoreError::Backend("store is closed".to_string());
        let writes = self.writes.as_ref().ok_or_else(closed)?;
        let (reply, answer) = oneshot::channel();
        writes
            .send(WriteRequest {
                op,
                reply,
                queued_at: std::time::Instant::now(),
            })
            .await
            .map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }

    /// Runs `read` on the blocking pool inside one read transaction.
    async fn read<T, F>(&self, read: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&ReadTransaction) -> StoreResult<T> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let txn = db.begin_read().map_err(backend_error)?;
            read(&txn)
        })
        .await
        .map_err(|e| StoreError::Backend(format!("read task failed: {e}")))?
    }
}

impl Drop for RedbStore {
    fn drop(&mut self) {
        // Closing the queue ends the writer loop; joining releases its hold on the file.
        self.writes.take();
        if let Some(writer) = self.writer.take()
            && writer.join().is_err()
        {
            tracing::error!("store writer thread panicked");
        }
    }
}

/// Creates missing tables.
fn initialize(db: &Database) -> StoreResult<()> {
    let txn = db.begin_write().map_err(backend_error)?;
    txn.open_table(KV).map_err(backend_error)?;
    txn.open_table(EVENTS).map_err(backend_error)?;
    txn.open_table(META).map_err(backend_error)?;
    txn.commit().map_err(backend_error)?;
    Ok(())
}

fn read_counters(txn: &ReadTransaction) -> StoreResult<(Revision, Revision)> {
    let meta = txn.open_table(META).map_err(backend_error)?;
    let get = |name| -> StoreResult<u64> {
        Ok(meta
            .get(name)
            .map_err(backend_error)?
            .map(|v| v.value())
            .unwrap_or(0))
    };
    Ok((get(REVISION)?, get(COMPACTED)?))
}

fn check_size(key: &str, value: &[u8]) -> StoreResult<()> {
    if key.len() + value.len() > MAX_WRITE_BYTES {
        return Err(StoreError::Backend(format!(
            "write of {} bytes to {key} refused: key plus value must be at most {MAX_WRITE_BYTES} bytes",
            key.len() + value.len()
        )));
    }
    Ok(())
}

/// The on-disk event log as the watch ring's fallback.
struct DiskEvents {
    db: Arc<Database>,
}

impl ColdLog for DiskEvents {
    fn read(
        &self,
        after: Revision,
        up_to: Revision,
        max: usize,
        prefix: &str,
    ) -> StoreResult<(Vec<Arc<WatchEvent>>, Revision)> {
        let txn = self.db.begin_read().map_err(backend_error)?;
        let (_, compacted) = read_counters(&txn)?;
        if after < compacted {
            return Err(StoreError::Compacted {
                requested: after,
                compacted,
            });
        }
        let events = txn.open_table(EVENTS).map_err(backend_error)?;
        let mut found = Vec::new();
        let mut scanned = up_to;
        for (count, entry) in events
            .range((Bound::Excluded(after), Bound::Included(up_to)))
            .map_err(backend_error)?
            .enumerate()
        {
            if count == max {
                break;
            }
            let (revision, record) = entry.map_err(backend_error)?;
            scanned = revision.value();
            let record = record.value();
            if event_key(record)?.starts_with(prefix) {
                found.push(Arc::new(decode_event(record)?));
            }
        }
        Ok((found, scanned))
    }
}

#[async_trait::async_trait]
impl Store for RedbStore {
    async fn get(&self, key: &str) -> StoreResult<Option<KeyValue>> {
        // A key written recently (most reads before a write), or read from the file since the
        // ring's oldest event, is answered from memory without a trip to the blocking pool.
        let read_at = self.read_cache.read_at(key);
        match self.ring.key_state(key, read_at) {
            KeyState::Present(kv) => return Ok(Some(kv)),
            KeyState::Deleted => return Ok(None),
            KeyState::Unchanged => {
                // Another read may have replaced the entry since: then ask the file.
                if let Some(kv) = read_at.and_then(|at| self.read_cache.value_read_at(key, at)) {
                    return Ok(kv);
                }
            }
            KeyState::Unknown => {}
        }
        let owned = key.to_string();
        let (kv, read_at) = self
            .read(move |txn| {
                let (revision, _) = read_counters(txn)?;
                let kv = txn.open_table(KV).map_err(backend_error)?;
                match kv.get(owned.as_str()).map_err(backend_error)? {
                    Some(record) => Ok((Some(decode_kv(&owned, record.value())?), revision)),
                    None => Ok((None, revision)),
                }
            })
            .await?;
        let oldest_useful = self.ring.oldest_vouched();
        self.read_cache
            .insert(key, kv.clone(), read_at, oldest_useful);
        Ok(kv)
    }

    async fn range(&self, req: RangeRequest) -> StoreResult<RangeResult> {
        self.flush_waiting().await?;
        self.read(move |txn| range_in(txn, &req)).await
    }

    async fn count(&self, prefix: &str) -> StoreResult<u64> {
        self.flush_waiting().await?;
        let prefix = prefix.to_string();
        self.read(move |txn| {
            let kv = txn.open_table(KV).map_err(backend_error)?;
            let mut count = 0;
            for entry in kv
                .range::<&str>((Bound::Included(prefix.as_str()), Bound::Unbounded))
                .map_err(backend_error)?
            {
                let (key, _) = entry.map_err(backend_error)?;
                if !key.value().starts_with(&prefix) {
                    break;
                }
                count += 1;
            }
            Ok(count)
        })
        .await
    }

    async fn create(&self, key: &str, value: Bytes) -> StoreResult<Revision> {
        check_size(key, &value)?;
        let op = WriteOp::Create {
            key: key.to_string(),
            value,
        };
        match self.write(op).await? {
            WriteOutcome::Written(revision) => Ok(revision),
            _ => Err(unexpected_outcome()),
        }
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> StoreResult<Revision> {
        check_size(key, &value)?;
        let op = WriteOp::Update {
            key: key.to_string(),
            value,
            expected,
        };
        match self.write(op).await? {
            WriteOutcome::Written(revision) => Ok(revision),
            _ => Err(unexpected_outcome()),
        }
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> StoreResult<(Revision, KeyValue)> {
        let op = WriteOp::Delete {
            key: key.to_string(),
            expected,
        };
        match self.write(op).await? {
            WriteOutcome::Deleted(revision, prev) => Ok((revision, prev)),
            _ => Err(unexpected_outcome()),
        }
    }

    async fn current_revision(&self) -> StoreResult<Revision> {
        Ok(self.ring.newest())
    }

    async fn compacted_revision(&self) -> StoreResult<Revision> {
        Ok(self.ring.compacted())
    }

    async fn compact(&self, revision: Revision) -> StoreResult<()> {
        match self.write(WriteOp::Compact { revision }).await? {
            WriteOutcome::Compacted => Ok(()),
            _ => Err(unexpected_outcome()),
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> StoreResult<WatchStream> {
        let cold: Arc<dyn ColdLog> = Arc::new(DiskEvents {
            db: self.db.clone(),
        });
        self.ring.watch(prefix, after, Some(cold))
    }
}

fn unexpected_outcome() -> StoreError {
    StoreError::Backend("writer answered with the wrong kind of outcome".to_string())
}
