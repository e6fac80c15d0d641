//! A reconcile loop over keys that name no single cached object — a Service of a member cluster, a ServiceImport
//! with its derived Service and slices — for controllers whose reconcile reads several caches and must also act
//! when the object the key names is gone (to clean up). Same semantics as [`super::runner`]: a deduplicating
//! bounded queue, one worker per key at a time, level-triggered, errors retried with per-key backoff (conflicts at
//! once) and the key forgotten when a reconcile succeeds.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::ControllerError;
use super::queue::{Backoff, WorkQueue};
use super::runner::Action;

/// Distinct keys waiting at most; triggers wait for room beyond it.
const QUEUE_CAPACITY: usize = 16_384;

/// Runs `reconcile` for every key `triggers` names, `concurrency` at once, until `cancel` fires.
pub async fn run<K, T, R, F>(
    name: &'static str,
    triggers: T,
    concurrency: usize,
    reconcile: R,
    cancel: CancellationToken,
) where
    K: Clone + Eq + Hash + Debug + Send + Sync + 'static,
    T: Stream<Item = K> + Send + 'static,
    R: Fn(K) -> F + Send + Sync + 'static,
    F: Future<Output = Result<Action, ControllerError>> + Send + 'static,
{
    let queue = WorkQueue::new(QUEUE_CAPACITY);
    let backoff = Arc::new(Backoff::new(
        Duration::from_millis(200),
        Duration::from_secs(30),
    ));
    let reconcile = Arc::new(reconcile);
    let mut tasks = JoinSet::new();
    tasks.spawn(queue.clone().run_delays(cancel.clone()));
    {
        let queue = queue.clone();
        let cancel = cancel.clone();
        tasks.spawn(async move {
            let mut triggers = std::pin::pin!(triggers.take_until(cancel.cancelled_owned()));
            while let Some(key) = triggers.next().await {
                queue.add(key).await;
            }
        });
    }
    for _ in 0..concurrency.max(1) {
        let (queue, backoff, reconcile, cancel) = (
            queue.clone(),
            backoff.clone(),
            reconcile.clone(),
            cancel.clone(),
        );
        tasks.spawn(async move {
            while let Some(key) = queue.next(&cancel).await {
                let result = tokio::select! {
                    () = cancel.cancelled() => return,
                    result = reconcile(key.clone()) => result,
                };
                match result {
                    Ok(Action::Requeue(after)) => {
                        backoff.forget(&key);
                        queue.add_after(key.clone(), after);
                    }
                    Ok(Action::AwaitChange) => backoff.forget(&key),
                    Err(err) => {
                        let after = if err.is_conflict() {
                            err.retry_after()
                        } else {
                            tracing::debug!(controller = name, ?key, %err, "reconcile failed");
                            backoff.fail(key.clone())
                        };
                        queue.add_after(key.clone(), after);
                    }
                }
                queue.done(key).await;
            }
        });
    }
    tokio::select! {
        () = cancel.cancelled() => {}
        () = async { while tasks.join_next().await.is_some() {} } => {}
    }
    tasks.shutdown().await;
}
