//! A revisioned key-value store with etcd's data model, behind one trait.
//!
//! Invariants every backend keeps (the conformance suite in [`conformance`] checks them):
//! - one global revision counter; every successful mutation gets the next revision, and that
//!   revision is the object's `mod_revision` (the API server's `resourceVersion`);
//! - a range read is one consistent snapshot, at the current revision or at an older one that
//!   is not yet compacted; paging with `start_after` at the same revision sees the same snapshot;
//! - create/update/delete are compare-and-swap on the key's `mod_revision`;
//! - watch from revision `R` yields every event with revision `> R` in revision order, exactly once;
//!   asking for `R` below the compacted revision fails with [`StoreError::Compacted`];
//! - an acknowledged write is durable (for on-disk backends) before the call returns.
//!
//! Semantics worth knowing (all checked by the conformance suite):
//! - watching from an `after` beyond the current revision is allowed and waits for revision
//!   `after + 1` (etcd's behaviour), so a client may watch from a revision it expects next;
//! - `compact(R)` with `R` at or below the compacted revision is a no-op; above the current
//!   revision it fails with [`StoreError::FutureRevision`]. A range at exactly the compacted
//!   revision still succeeds.
//!
//! Modules: [`memory`] and [`redb_backend`] are the backends, [`conformance`] the suite they
//! pass, [`compactor`] automatic compaction, [`bench`](mod@bench) the raw commit-rate measurement.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
#![warn(missing_docs)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::pin::Pin;

use bytes::Bytes;
use futures::Stream;

pub mod bench;
pub mod compactor;
pub mod conformance;
pub mod memory;
pub mod redb_backend;
mod watch_hub;

/// The store's global, monotonically increasing revision. `0` means "nothing written yet".
pub type Revision = u64;

/// One stored key with its value and revisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// The full key, e.g. `/registry/apps/deployments/default/web`.
    pub key: String,
    /// The opaque stored bytes (JSON for API objects).
    pub value: Bytes,
    /// Revision of the write that created this key (since its last deletion).
    pub create_revision: Revision,
    /// Revision of the last write to this key.
    pub mod_revision: Revision,
}

/// Whether a watch event wrote or removed its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A create or an update.
    Put,
    /// A deletion.
    Delete,
}

/// A change seen by a watcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// Put or delete.
    pub kind: EventKind,
    /// For `Put`: the new key-value. For `Delete`: the last value, with `mod_revision` set to the
    /// revision of the deletion.
    pub kv: KeyValue,
    /// The value before this event, if any (a `Put` that created the key has none).
    pub prev: Option<KeyValue>,
}

impl WatchEvent {
    /// The revision of the mutation this event reports.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
}

/// What a range read returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeResult {
    /// The keys found, in key order.
    pub kvs: Vec<KeyValue>,
    /// True when more keys under the prefix follow the last one returned.
    pub more: bool,
    /// The snapshot revision the read was served at.
    pub revision: Revision,
}

/// A range read over every key that starts with `prefix`, in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// Every key starting with this string (`""` = all keys; `/a/` excludes `/ab/`).
    pub prefix: String,
    /// Only keys strictly greater than this one (paging).
    pub start_after: Option<String>,
    /// At most this many keys; `0` means no limit.
    pub limit: usize,
    /// Serve at this revision (must be ≥ the compacted revision); `None` = current.
    pub revision: Option<Revision>,
}

/// Why a store call failed. Everything but `Backend` is an expected outcome callers act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `create` of a key that exists.
    #[error("key {0} already exists")]
    AlreadyExists(String),
    /// `update` or `delete` of a key that does not exist.
    #[error("key {0} not found")]
    NotFound(String),
    /// The compare-and-swap precondition did not hold.
    #[error("key {key}: expected revision {expected}, found {actual}")]
    Conflict {
        /// The key written.
        key: String,
        /// The `mod_revision` the caller expected.
        expected: Revision,
        /// The key's actual `mod_revision`.
        actual: Revision,
    },
    /// The requested revision has been compacted away.
    #[error("revision {requested} is compacted (oldest available {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The store's compacted revision (the oldest still readable).
        compacted: Revision,
    },
    /// The requested revision is newer than the store's current one.
    #[error("revision {requested} is in the future (current {current})")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The store's current revision.
        current: Revision,
    },
    /// The storage itself failed (I/O, corruption, closed store, oversized write).
    #[error("storage backend: {0}")]
    Backend(String),
}

/// The result type of every store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// A stream of watch events; it ends with `Err(Compacted)` if the watcher fell behind compaction.
pub type WatchStream = Pin<Box<dyn Stream<Item = StoreResult<WatchEvent>> + Send>>;

/// The store trait. Every method is safe to call from async code: backends that block
/// (disk I/O) do it off the async worker threads.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// The current value of `key`.
    async fn get(&self, key: &str) -> StoreResult<Option<KeyValue>>;

    /// A consistent, paged range read.
    async fn range(&self, req: RangeRequest) -> StoreResult<RangeResult>;

    /// Number of keys under `prefix` at the current revision.
    async fn count(&self, prefix: &str) -> StoreResult<u64>;

    /// Creates `key`; fails with `AlreadyExists` if present. Returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> StoreResult<Revision>;

    /// Replaces `key`'s value. With `expected = Some(r)` the key's `mod_revision` must be `r`
    /// (else `Conflict`); the key must exist (else `NotFound`). Returns the new revision.
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> StoreResult<Revision>;

    /// Deletes `key` (with the same precondition rule as `update`). Returns the revision of the
    /// deletion and the value that was removed.
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> StoreResult<(Revision, KeyValue)>;

    /// The current revision.
    async fn current_revision(&self) -> StoreResult<Revision>;

    /// The oldest revision still readable and watchable from.
    async fn compacted_revision(&self) -> StoreResult<Revision>;

    /// Forgets history up to and including `revision` (current values are kept).
    async fn compact(&self, revision: Revision) -> StoreResult<()>;

    /// Every event under `prefix` with revision `> after`, then live events, in revision order.
    async fn watch(&self, prefix: &str, after: Revision) -> StoreResult<WatchStream>;
}
