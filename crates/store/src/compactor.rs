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

/// Most revisions one compaction call removes. A backend that writes through one writer (the
/// embedded store) holds every other write while it deletes, so a minute's history in one call
/// stalled writes for hundreds of milliseconds; in steps, the writes queued meanwhile commit
/// between them (etcd deletes its history in batches of 1,000 keys for the same reason).
pub const COMPACTION_STEP: u64 = 1_000;

/// The revisions to compact to, in order, to move from `compacted` to `target` in steps of at most
/// `step` revisions; empty when there is nothing to do.
pub fn compaction_steps(
    compacted: Revision,
    target: Revision,
    step: u64,
) -> impl Iterator<Item = Revision> {
    let step = step.max(1);
    std::iter::successors(Some(compacted), move |done| {
        (*done < target).then(|| done.saturating_add(step).min(target))
    })
    .skip(1)
}

/// One compaction pass, in [`COMPACTION_STEP`]s; returns the revision compacted to, if any work
/// was due.
pub async fn compact_once(store: &dyn Store, keep_revisions: u64) -> StoreResult<Option<Revision>> {
    let current = store.current_revision().await?;
    let target = current.saturating_sub(keep_revisions);
    let compacted = store.compacted_revision().await?;
    if target <= compacted {
        return Ok(None);
    }
    for revision in compaction_steps(compacted, target, COMPACTION_STEP) {
        store.compact(revision).await?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_cover_the_range_without_exceeding_the_step() {
        for (compacted, target, step, expected) in [
            (0, 0, 1000, vec![]),
            (500, 400, 1000, vec![]),
            (0, 999, 1000, vec![999]),
            (0, 1000, 1000, vec![1000]),
            (0, 2500, 1000, vec![1000, 2000, 2500]),
            (7, 2007, 1000, vec![1007, 2007]),
            (0, 3, 0, vec![1, 2, 3]),
        ] {
            let steps: Vec<Revision> = compaction_steps(compacted, target, step).collect();
            assert_eq!(steps, expected, "{compacted} → {target} by {step}");
        }
    }

    #[tokio::test]
    async fn a_pass_compacts_in_steps_to_the_retention_line() {
        let store = crate::memory::MemoryStore::new();
        for i in 0..2_600u64 {
            store
                .create(&format!("/k/{i}"), bytes::Bytes::from_static(b"v"))
                .await
                .expect("create");
        }
        let done = compact_once(&store, 100).await.expect("compaction");
        assert_eq!(done, Some(2_500));
        assert_eq!(store.compacted_revision().await.expect("revision"), 2_500);
        assert_eq!(compact_once(&store, 100).await.expect("again"), None);
    }
}
