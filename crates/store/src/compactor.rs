//! Automatic compaction: a background task that keeps the newest `keep_revisions` revisions of
//! history and compacts everything older, every `interval`.
//!
//! Invariants: it never compacts above `current - keep_revisions`, never moves the compacted
//! revision backwards, and stops promptly when its cancellation token fires.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{Revision, Store, StoreResult};

/// How much history automatic compaction keeps, and how often it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionPolicy {
    /// Revisions of history kept behind the current one (etcd's revision retention).
    pub keep_revisions: u64,
    /// Time between compaction passes.
    pub interval: Duration,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy {
            keep_revisions: 10_000,
            interval: Duration::from_secs(60),
        }
    }
}

/// One compaction pass; returns the revision compacted to, if any work was due.
pub async fn compact_once(store: &dyn Store, keep_revisions: u64) -> StoreResult<Option<Revision>> {
    let current = store.current_revision().await?;
    let target = current.saturating_sub(keep_revisions);
    if target <= store.compacted_revision().await? {
        return Ok(None);
    }
    store.compact(target).await?;
    Ok(Some(target))
}

/// Spawns the compaction loop; it ends when `cancel` fires. Failures are logged and retried at
/// the next tick, because a missed compaction only costs space.
pub fn spawn_compactor(
    store: Arc<dyn Store>,
    policy: CompactionPolicy,
    cancel: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(policy.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = ticks.tick() => {}
            }
            match compact_once(store.as_ref(), policy.keep_revisions).await {
                Ok(Some(revision)) => tracing::debug!(revision, "store compacted"),
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "store compaction failed"),
            }
        }
    })
}
