//! The reconcile loop of the controllers that hold an object per Work or binding (binding, execution, work
//! status, binding status): triggers → [`WorkQueue`] → reconcile against the shared cache → requeue.
//!
//! Why not kube-runtime's `applier`: its scheduler keys every pending and every delayed reconcile by a full
//! `ObjectRef` (the kind's five strings, name, namespace, uid, resourceVersion) held twice (map and timer
//! wheel), never gives back what a burst grew it to, and a per-object periodic requeue keeps one such entry
//! per cached object for good. In a heap profile of the controller-manager after a 2,000-workload burst it was
//! the largest single part (18 of 85 MiB at the peak). Here a key is a namespace and a name, the queue gives
//! its room back once drained, and the periodic resync is one sweep of the cache per period, trickled over it
//! ([`super::sweep`]), instead of a timer per object.
//!
//! Semantics kept from the applier: a key is reconciled by one worker at a time (a trigger meanwhile brings it
//! back once after); keys missing from the cache are skipped (the object is gone); an error goes to the
//! error policy, whose [`Action`] says when to retry; level-triggered throughout, so a late or repeated
//! trigger is harmless.
//!
//! Every loop records controller-runtime's reconcile metrics and client-go's workqueue metrics under its
//! controller's name ([`Loop::name`], Karmada's name for the controller; see [`super::metrics`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::metrics::{ReconcileMetrics, ReconcileResult};
use super::queue::WorkQueue;
use super::sweep::Sweep;
use super::{Cache, CompactObject, ControllerError};

/// Distinct keys waiting at most; triggers wait for room beyond it. Keys name cached objects, so the depth never
/// exceeds the objects of the loop's kind: the bound is a memory guard, set above any federation's object count.
/// Why so high: a full queue stops the loop's trigger feed, and the senders behind it wait too. At 100 members ×
/// 5,000 workloads the work status queue filled at 65,536 Works; execution's handoff and the member watches then
/// waited on it, and the rollout stopped (scale run of 2026-12-06, 3,881 of 5,000 bindings applied).
const QUEUE_CAPACITY: usize = 1 << 20;

/// What to do with a key after its reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Reconcile again after this long unless a trigger comes first.
    Requeue(Duration),
    /// Wait for a trigger (or the periodic resync).
    AwaitChange,
}

impl Action {
    pub const fn requeue(after: Duration) -> Self {
        Self::Requeue(after)
    }

    pub const fn await_change() -> Self {
        Self::AwaitChange
    }
}

/// Namespace (`None` for cluster-scoped objects) and name: all the queue keeps per object.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self {
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        }
    }

    pub fn of(object: &CompactObject) -> Self {
        let metadata = object.metadata();
        Self::new(
            metadata.namespace.as_deref(),
            metadata.name.as_deref().unwrap_or_default(),
        )
    }
}

/// How a controller's loop runs.
pub struct Loop<C> {
    /// The controller's name as Karmada names it (`binding-controller`, ...): the metrics' `controller` label.
    pub name: &'static str,
    /// The shared cache the keys are looked up in.
    pub store: Cache,
    pub context: Arc<C>,
    /// Reconciles running at once (at least one).
    pub concurrency: usize,
    /// Every object of the cache is reconciled again this often (Karmada's informer resync); `None`: never.
    pub resync: Option<Duration>,
}

/// Runs `reconcile` for every key `triggers` names until `cancel` fires (or the triggers end).
pub async fn run<C, T, R, F, E>(
    config: Loop<C>,
    triggers: T,
    reconcile: R,
    error_policy: E,
    cancel: CancellationToken,
) where
    C: Send + Sync + 'static,
    T: Stream<Item = ObjectKey> + Send + 'static,
    R: Fn(Arc<CompactObject>, Arc<C>) -> F + Send + Sync + 'static,
    F: Future<Output = Result<Action, ControllerError>> + Send + 'static,
    E: Fn(&CompactObject, &ControllerError, &C) -> Action + Send + Sync + 'static,
{
    let queue = WorkQueue::named(QUEUE_CAPACITY, config.name);
    let metrics = ReconcileMetrics::new(config.name, config.concurrency.max(1));
    let mut tasks = JoinSet::new();
    tasks.spawn(queue.clone().run_delays(cancel.clone()));
    tasks.spawn(feed(queue.clone(), triggers, cancel.clone()));
    if let Some(period) = config.resync {
        tasks.spawn(resync(
            queue.clone(),
            config.store.clone(),
            period,
            cancel.clone(),
        ));
    }
    let shared = Arc::new(Shared {
        config,
        reconcile,
        error_policy,
        metrics,
    });
    for _ in 0..shared.config.concurrency.max(1) {
        tasks.spawn(work(shared.clone(), queue.clone(), cancel.clone()));
    }
    // The feeder ends with its triggers; every other task runs until `cancel`.
    tokio::select! {
        () = cancel.cancelled() => {}
        () = async { while tasks.join_next().await.is_some() {} } => {}
    }
    tasks.shutdown().await;
}

struct Shared<C, R, E> {
    config: Loop<C>,
    reconcile: R,
    error_policy: E,
    metrics: ReconcileMetrics,
}

async fn feed<T>(queue: WorkQueue<ObjectKey>, triggers: T, cancel: CancellationToken)
where
    T: Stream<Item = ObjectKey> + Send,
{
    let mut triggers = std::pin::pin!(triggers.take_until(cancel.cancelled_owned()));
    while let Some(key) = triggers.next().await {
        queue.add(key).await;
    }
}

/// The periodic resync: every cached object once per `period`, trickled over it ([`Sweep`]).
async fn resync(
    queue: WorkQueue<ObjectKey>,
    store: Cache,
    period: Duration,
    cancel: CancellationToken,
) {
    let mut sweep = Sweep::new(store, period);
    loop {
        let key = tokio::select! {
            () = cancel.cancelled() => return,
            key = sweep.next() => key,
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            () = queue.add(key) => {}
        }
    }
}

async fn work<C, R, F, E>(
    shared: Arc<Shared<C, R, E>>,
    queue: WorkQueue<ObjectKey>,
    cancel: CancellationToken,
) where
    R: Fn(Arc<CompactObject>, Arc<C>) -> F,
    F: Future<Output = Result<Action, ControllerError>>,
    E: Fn(&CompactObject, &ControllerError, &C) -> Action,
{
    let config = &shared.config;
    while let Some(key) = queue.next(&cancel).await {
        let action = match config.store.get_key(&key) {
            Some(object) => {
                let reconciling = shared.metrics.start();
                let reconciled = tokio::select! {
                    () = cancel.cancelled() => return,
                    result = (shared.reconcile)(object.clone(), config.context.clone()) => result,
                };
                match reconciled {
                    Ok(action) => {
                        reconciling.finish(match action {
                            Action::AwaitChange => ReconcileResult::Success,
                            Action::Requeue(_) => ReconcileResult::RequeueAfter,
                        });
                        action
                    }
                    Err(err) => {
                        reconciling.finish(ReconcileResult::Error);
                        (shared.error_policy)(&object, &err, &config.context)
                    }
                }
            }
            // Gone from the cache: nothing to reconcile (a delete is seen as the object's last update).
            None => Action::AwaitChange,
        };
        if let Action::Requeue(after) = action {
            queue.add_after(key.clone(), after);
        }
        queue.done(key).await;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use crate::runtime::CacheWriter;
    use futures::channel::mpsc;
    use kube::api::{ApiResource, DynamicObject};
    use kube::runtime::watcher::Event;
    use tokio::sync::Notify;

    use super::*;

    fn resource() -> ApiResource {
        crate::runtime::resources::work()
    }

    fn object(name: &str) -> CompactObject {
        let mut object = DynamicObject::new(name, &resource()).within("ns");
        object.data = serde_json::json!({"spec": {}});
        CompactObject::from_dynamic(&object).expect("compact")
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("ns"), name)
    }

    /// A cache holding `names`.
    fn store(names: &[&str]) -> (Cache, CacheWriter) {
        let mut writer = CacheWriter::new();
        for name in names {
            writer.apply_watcher_event(&Event::Apply(object(name)));
        }
        (writer.as_reader(), writer)
    }

    /// What the test reconciler saw: reconciles per name, and the most running at once per name.
    #[derive(Default)]
    struct Seen {
        counts: Mutex<HashMap<String, usize>>,
        running: Mutex<HashMap<String, usize>>,
        most_at_once: Mutex<usize>,
        changed: Notify,
    }

    impl Seen {
        fn count(&self, name: &str) -> usize {
            self.counts
                .lock()
                .expect("lock")
                .get(name)
                .copied()
                .unwrap_or(0)
        }

        async fn until(&self, done: impl Fn(&Self) -> bool) {
            loop {
                let changed = self.changed.notified();
                let mut changed = std::pin::pin!(changed);
                // Registered before the check, so a change right after it is not missed.
                changed.as_mut().enable();
                if done(self) {
                    return;
                }
                changed.await;
            }
        }
    }

    struct Ctx {
        seen: Seen,
        /// Names whose reconcile fails (once each).
        fail_once: Mutex<Vec<String>>,
        /// Reconciles wait for this before returning, when set.
        gate: Option<Arc<tokio::sync::Semaphore>>,
    }

    fn ctx(fail_once: &[&str], gate: Option<Arc<tokio::sync::Semaphore>>) -> Arc<Ctx> {
        Arc::new(Ctx {
            seen: Seen::default(),
            fail_once: Mutex::new(fail_once.iter().map(|s| s.to_string()).collect()),
            gate,
        })
    }

    async fn reconcile(
        object: Arc<CompactObject>,
        ctx: Arc<Ctx>,
    ) -> Result<Action, ControllerError> {
        let name = object.metadata().name().to_string();
        {
            let mut running = ctx.seen.running.lock().expect("lock");
            let now = running.entry(name.clone()).or_default();
            *now += 1;
            let mut most = ctx.seen.most_at_once.lock().expect("lock");
            *most = (*most).max(*now);
        }
        if let Some(gate) = &ctx.gate {
            gate.acquire().await.expect("gate").forget();
        }
        *ctx.seen
            .running
            .lock()
            .expect("lock")
            .entry(name.clone())
            .or_default() -= 1;
        *ctx.seen
            .counts
            .lock()
            .expect("lock")
            .entry(name.clone())
            .or_default() += 1;
        ctx.seen.changed.notify_waiters();
        let mut fail = ctx.fail_once.lock().expect("lock");
        if let Some(at) = fail.iter().position(|n| *n == name) {
            fail.remove(at);
            return Err(ControllerError::Invalid(format!("{name} fails once")));
        }
        Ok(Action::await_change())
    }

    fn retry_soon(_: &CompactObject, _: &ControllerError, _: &Ctx) -> Action {
        Action::requeue(Duration::from_millis(5))
    }

    fn start(
        store: Cache,
        context: Arc<Ctx>,
        resync: Option<Duration>,
    ) -> (mpsc::Sender<ObjectKey>, CancellationToken) {
        let (triggers, rx) = mpsc::channel(16);
        let cancel = CancellationToken::new();
        tokio::spawn(run(
            Loop {
                name: "runner-test",
                store,
                context,
                concurrency: 4,
                resync,
            },
            rx,
            reconcile,
            retry_soon,
            cancel.clone(),
        ));
        (triggers, cancel)
    }

    #[tokio::test]
    async fn triggered_keys_are_reconciled_and_missing_ones_skipped() {
        let (store, _writer) = store(&["a", "b"]);
        let context = ctx(&[], None);
        let (mut triggers, cancel) = start(store, context.clone(), None);
        for name in ["a", "gone", "b"] {
            futures::SinkExt::send(&mut triggers, key(name))
                .await
                .expect("send");
        }
        context
            .seen
            .until(|s| s.count("a") == 1 && s.count("b") == 1)
            .await;
        assert_eq!(context.seen.count("gone"), 0);
        cancel.cancel();
    }

    #[tokio::test]
    async fn one_key_is_never_reconciled_twice_at_once_and_a_trigger_meanwhile_runs_it_again() {
        let (store, _writer) = store(&["a"]);
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let context = ctx(&[], Some(gate.clone()));
        let (mut triggers, cancel) = start(store, context.clone(), None);
        futures::SinkExt::send(&mut triggers, key("a"))
            .await
            .expect("send");
        // While the first reconcile waits at the gate, more triggers arrive: they make one more reconcile.
        loop {
            if context.seen.running.lock().expect("lock").get("a") == Some(&1) {
                break;
            }
            tokio::task::yield_now().await;
        }
        for _ in 0..3 {
            futures::SinkExt::send(&mut triggers, key("a"))
                .await
                .expect("send");
        }
        gate.add_permits(2);
        context.seen.until(|s| s.count("a") == 2).await;
        assert_eq!(*context.seen.most_at_once.lock().expect("lock"), 1);
        cancel.cancel();
    }

    #[tokio::test]
    async fn a_failed_reconcile_is_retried_as_the_error_policy_says() {
        let (store, _writer) = store(&["a"]);
        let context = ctx(&["a"], None);
        let (mut triggers, cancel) = start(store, context.clone(), None);
        futures::SinkExt::send(&mut triggers, key("a"))
            .await
            .expect("send");
        // No second trigger: the retry comes from the error policy's requeue.
        context.seen.until(|s| s.count("a") == 2).await;
        cancel.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn the_resync_sweeps_every_cached_object_once_per_period() {
        let (store, _writer) = store(&["a", "b", "c"]);
        let context = ctx(&[], None);
        let (_triggers, cancel) = start(store, context.clone(), Some(Duration::from_secs(600)));
        tokio::time::sleep(Duration::from_secs(599)).await;
        assert_eq!(
            context.seen.count("a"),
            0,
            "nothing before the first period"
        );
        // The pass trickles: one object every 200 s (600 s / 3), so one of three is in soon after 600 s.
        tokio::time::sleep(Duration::from_secs(101)).await;
        let in_first_third = ["a", "b", "c"]
            .iter()
            .filter(|n| context.seen.count(n) > 0)
            .count();
        assert_eq!(in_first_third, 1, "one object per third of the period");
        context
            .seen
            .until(|s| ["a", "b", "c"].iter().all(|n| s.count(n) == 1))
            .await;
        tokio::time::sleep(Duration::from_secs(600)).await;
        context
            .seen
            .until(|s| ["a", "b", "c"].iter().all(|n| s.count(n) == 2))
            .await;
        cancel.cancel();
    }
}
