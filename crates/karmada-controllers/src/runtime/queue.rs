//! A bounded, deduplicating work queue with delayed requeues, shared by the resource detector, the
//! scheduler runner and the controllers' [`super::runner`].
//!
//! Like client-go's workqueue: a key waiting in the queue is queued once however often it is added; a key being
//! processed is not handed to a second worker — adding it meanwhile marks it dirty and it comes back after
//! [`WorkQueue::done`]. Delayed adds ([`WorkQueue::add_after`]) wait in a timer map driven by
//! [`WorkQueue::run_delays`].
//!
//! Bounded: at most `capacity` distinct keys wait; [`WorkQueue::add`] waits for room (backpressure on the
//! watchers that feed it) instead of growing without limit. A burst's room is given back once the queue
//! drains (collections keep their largest size otherwise, and a burst of 10,000 keys would stay allocated).
//!
//! A queue made with [`WorkQueue::named`] records client-go's workqueue metrics under its name
//! ([`super::metrics::QueueMetrics`]); the in-progress gauges are refreshed by [`WorkQueue::run_delays`].

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::metrics::QueueMetrics;

/// How often a named queue's in-progress gauges are refreshed (client-go: every 500 ms).
const GAUGE_PERIOD: Duration = Duration::from_secs(1);

struct State<K> {
    queue: VecDeque<K>,
    /// Waiting keys and when each was added.
    queued: HashMap<K, Instant>,
    /// Keys being processed and since when.
    processing: HashMap<K, Instant>,
    dirty: HashSet<K>,
    /// (deadline, sequence) → key; the sequence keeps equal deadlines apart.
    delayed: BTreeMap<(Instant, u64), K>,
    sequence: u64,
}

/// Keys a drained collection may keep room for; beyond this it is shrunk.
const KEPT_ROOM: usize = 256;

impl<K: Eq + Hash> State<K> {
    /// Gives back what a burst made the waiting collections grow to (called when the queue drains).
    fn release_room(&mut self) {
        if self.queue.capacity() > KEPT_ROOM {
            self.queue.shrink_to(KEPT_ROOM);
        }
        if self.queued.capacity() > KEPT_ROOM {
            self.queued.shrink_to(KEPT_ROOM);
        }
        if self.dirty.capacity() > KEPT_ROOM {
            self.dirty.shrink_to(KEPT_ROOM);
        }
    }

    /// Room the waiting collections hold (for tests).
    #[cfg(test)]
    fn room(&self) -> usize {
        self.queue.capacity() + self.queued.capacity() + self.dirty.capacity()
    }
}

struct Shared<K> {
    state: Mutex<State<K>>,
    capacity: usize,
    /// A key became available.
    ready: Notify,
    /// Room became available.
    room: Notify,
    /// A delayed key was added (the timer may need to wake earlier).
    timer: Notify,
    metrics: Option<QueueMetrics>,
}

/// The queue; cheap to clone (all clones share one queue).
pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    /// A queue holding at most `capacity` waiting keys (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self::with_metrics(capacity, None)
    }

    /// Like [`Self::new`], recording the workqueue metrics under `name` (Karmada's controller name).
    pub fn named(capacity: usize, name: &str) -> Self {
        Self::with_metrics(capacity, Some(QueueMetrics::new(name)))
    }

    fn with_metrics(capacity: usize, metrics: Option<QueueMetrics>) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    queued: HashMap::new(),
                    processing: HashMap::new(),
                    dirty: HashSet::new(),
                    delayed: BTreeMap::new(),
                    sequence: 0,
                }),
                capacity: capacity.max(1),
                ready: Notify::new(),
                room: Notify::new(),
                timer: Notify::new(),
                metrics,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // A panic while holding the lock cannot leave the sets inconsistent in a way that matters more than
        // stopping the controller would; keep going.
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `key`, waiting while the queue is full.
    pub async fn add(&self, key: K) {
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut state = self.lock();
                if state.queued.contains_key(&key) {
                    return;
                }
                if state.processing.contains_key(&key) {
                    if state.dirty.insert(key)
                        && let Some(metrics) = &self.shared.metrics
                    {
                        metrics.adds.inc();
                    }
                    return;
                }
                if state.queue.len() < self.shared.capacity {
                    state.queued.insert(key.clone(), Instant::now());
                    state.queue.push_back(key);
                    if let Some(metrics) = &self.shared.metrics {
                        metrics.adds.inc();
                        metrics.depth.set(gauge_value(state.queue.len()));
                    }
                    drop(state);
                    self.shared.ready.notify_one();
                    return;
                }
            }
            room.await;
        }
    }

    /// Adds `key` once `delay` has passed (needs [`Self::run_delays`] running).
    pub fn add_after(&self, key: K, delay: Duration) {
        if let Some(metrics) = &self.shared.metrics {
            metrics.retries.inc();
        }
        let mut state = self.lock();
        let sequence = state.sequence;
        state.sequence = state.sequence.wrapping_add(1);
        state
            .delayed
            .insert((Instant::now() + delay, sequence), key);
        drop(state);
        self.shared.timer.notify_one();
    }

    /// The next key to process, or `None` once `cancel` fires. Call [`Self::done`] when finished with it.
    pub async fn next(&self, cancel: &CancellationToken) -> Option<K> {
        loop {
            let ready = self.shared.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some(key) = state.queue.pop_front() {
                    let now = Instant::now();
                    let added = state.queued.remove(&key).unwrap_or(now);
                    state.processing.insert(key.clone(), now);
                    if let Some(metrics) = &self.shared.metrics {
                        metrics.depth.set(gauge_value(state.queue.len()));
                        metrics
                            .queue_duration
                            .observe(now.duration_since(added).as_secs_f64());
                    }
                    let more = !state.queue.is_empty();
                    if !more {
                        state.release_room();
                    }
                    drop(state);
                    self.shared.room.notify_one();
                    if more {
                        // Hand the next key to another idle worker.
                        self.shared.ready.notify_one();
                    }
                    return Some(key);
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return None,
                () = &mut ready => {}
            }
        }
    }

    /// Marks `key` processed; a key added while it was processed is queued again.
    pub async fn done(&self, key: K) {
        let again = {
            let mut state = self.lock();
            if let Some(started) = state.processing.remove(&key)
                && let Some(metrics) = &self.shared.metrics
            {
                metrics
                    .work_duration
                    .observe(started.elapsed().as_secs_f64());
            }
            state.dirty.remove(&key)
        };
        if again {
            self.add(key).await;
        }
    }

    /// Number of keys waiting (not counting delayed or in-process ones).
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refreshes the in-progress gauges: the seconds of work begun and not done, and the oldest such work.
    fn refresh_gauges(&self) {
        let Some(metrics) = &self.shared.metrics else {
            return;
        };
        let state = self.lock();
        let now = Instant::now();
        let (total, longest) = state
            .processing
            .values()
            .map(|started| now.duration_since(*started).as_secs_f64())
            .fold((0.0, 0.0_f64), |(total, longest), age| {
                (total + age, longest.max(age))
            });
        drop(state);
        metrics.unfinished_work.set(total);
        metrics.longest_running.set(longest);
    }

    /// Moves delayed keys into the queue when their time comes, until `cancel` fires; for a named queue, also
    /// refreshes the in-progress gauges every second.
    pub async fn run_delays(self, cancel: CancellationToken) {
        let mut gauges = tokio::time::interval(GAUGE_PERIOD);
        gauges.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let refresh = self.shared.metrics.is_some();
        loop {
            let woken = self.shared.timer.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let (due, next) = {
                let mut state = self.lock();
                let now = Instant::now();
                let mut due = Vec::new();
                while let Some(entry) = state.delayed.first_entry() {
                    if entry.key().0 > now {
                        break;
                    }
                    due.push(entry.remove());
                }
                (due, state.delayed.keys().next().map(|(at, _)| *at))
            };
            for key in due {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = self.add(key) => {}
                }
            }
            let sleep = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = cancel.cancelled() => return,
                () = &mut woken => {}
                () = sleep => {}
                _ = gauges.tick(), if refresh => self.refresh_gauges(),
            }
        }
    }
}

fn gauge_value(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// Per-key exponential backoff for retries: `base`, doubling per consecutive failure, at most `max`.
#[derive(Debug)]
pub struct Backoff<K> {
    base: Duration,
    max: Duration,
    failures: Mutex<std::collections::HashMap<K, u32>>,
}

impl<K: Eq + Hash> Backoff<K> {
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::default(),
        }
    }

    /// Records a failure of `key` and returns how long to wait before the next attempt.
    pub fn fail(&self, key: K) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let count = failures.entry(key).or_insert(0);
        let delay = self
            .base
            .saturating_mul(2u32.saturating_pow((*count).min(20)))
            .min(self.max);
        *count = count.saturating_add(1);
        delay
    }

    /// Forgets the failures of `key` (it succeeded or is gone).
    pub fn forget(&self, key: &K) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deduplicates_waiting_keys() {
        let queue = WorkQueue::new(10);
        queue.add("a").await;
        queue.add("b").await;
        queue.add("a").await;
        assert_eq!(queue.len(), 2);
        let cancel = CancellationToken::new();
        assert_eq!(queue.next(&cancel).await, Some("a"));
        assert_eq!(queue.next(&cancel).await, Some("b"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn key_added_while_processing_comes_back_after_done() {
        let queue = WorkQueue::new(10);
        let cancel = CancellationToken::new();
        queue.add("a").await;
        let key = queue.next(&cancel).await;
        assert_eq!(key, Some("a"));
        queue.add("a").await;
        // Not handed out twice at once.
        assert!(queue.is_empty());
        queue.done("a").await;
        assert_eq!(queue.next(&cancel).await, Some("a"));
    }

    #[tokio::test]
    async fn full_queue_waits_for_room() {
        let queue = WorkQueue::new(1);
        let cancel = CancellationToken::new();
        queue.add(1).await;
        let adder = {
            let queue = queue.clone();
            tokio::spawn(async move { queue.add(2).await })
        };
        tokio::task::yield_now().await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.next(&cancel).await, Some(1));
        adder.await.expect("adder");
        assert_eq!(queue.next(&cancel).await, Some(2));
    }

    /// The value of `series` in the process's runtime metrics.
    fn sample(series: &str) -> Option<f64> {
        let text = crate::runtime::metrics::exposition_of(|registry| {
            crate::runtime::metrics::global().register(registry)
        });
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
    }

    #[tokio::test(start_paused = true)]
    async fn a_named_queue_records_client_gos_workqueue_metrics() {
        let queue = WorkQueue::named(10, "queue-test");
        let labels = r#"{name="queue-test",controller="queue-test"}"#;
        let cancel = CancellationToken::new();
        let timer = tokio::spawn(queue.clone().run_delays(cancel.clone()));
        queue.add("a").await;
        queue.add("b").await;
        queue.add("a").await;
        assert_eq!(sample(&format!("workqueue_adds_total{labels}")), Some(2.0));
        assert_eq!(
            sample(r#"workqueue_depth{name="queue-test",controller="queue-test",priority=""}"#),
            Some(2.0)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(queue.next(&cancel).await, Some("a"));
        // Waited 20 ms: in the 0.1 s bucket, not the 0.01 s one.
        let waited = |le: &str| {
            sample(&format!(
                r#"workqueue_queue_duration_seconds_bucket{{le="{le}",name="queue-test",controller="queue-test"}}"#
            ))
        };
        assert_eq!(waited("0.01"), Some(0.0));
        assert_eq!(waited("0.1"), Some(1.0));
        // "a" is worked on for 3 s: the in-progress gauges show it once refreshed.
        tokio::time::sleep(Duration::from_secs(3)).await;
        tokio::task::yield_now().await;
        let longest = sample(&format!(
            "workqueue_longest_running_processor_seconds{labels}"
        ))
        .expect("gauge");
        assert!((2.0..=3.0).contains(&longest), "{longest}");
        assert!(
            sample(&format!("workqueue_unfinished_work_seconds{labels}")).expect("gauge") >= 2.0
        );
        queue.done("a").await;
        assert_eq!(
            sample(&format!("workqueue_work_duration_seconds_count{labels}")),
            Some(1.0)
        );
        queue.add_after("c", Duration::from_millis(5));
        assert_eq!(
            sample(&format!("workqueue_retries_total{labels}")),
            Some(1.0)
        );
        cancel.cancel();
        timer.await.expect("timer");
    }

    #[tokio::test]
    async fn next_returns_none_on_cancel() {
        let queue: WorkQueue<u8> = WorkQueue::new(1);
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(queue.next(&cancel).await, None);
    }

    #[tokio::test]
    async fn delayed_keys_arrive_in_deadline_order_after_their_delay() {
        let queue = WorkQueue::new(10);
        let cancel = CancellationToken::new();
        let timer = tokio::spawn(queue.clone().run_delays(cancel.clone()));
        let start = Instant::now();
        queue.add_after("late", Duration::from_millis(120));
        queue.add_after("early", Duration::from_millis(30));
        assert!(queue.is_empty());
        assert_eq!(queue.next(&cancel).await, Some("early"));
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert_eq!(queue.next(&cancel).await, Some("late"));
        assert!(start.elapsed() >= Duration::from_millis(120));
        cancel.cancel();
        timer.await.expect("timer");
    }

    #[tokio::test]
    async fn a_drained_queue_gives_back_a_bursts_room() {
        let queue = WorkQueue::new(100_000);
        for key in 0..20_000 {
            queue.add(key).await;
        }
        assert!(queue.lock().room() >= 40_000);
        let cancel = CancellationToken::new();
        let mut seen = 0;
        while !queue.is_empty() {
            let key = queue.next(&cancel).await.expect("a key");
            queue.done(key).await;
            seen += 1;
        }
        assert_eq!(seen, 20_000);
        let room = queue.lock().room();
        assert!(room <= 4 * KEPT_ROOM, "room kept after draining: {room}");
        // Still a working queue.
        queue.add(7).await;
        assert_eq!(queue.next(&cancel).await, Some(7));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_resets() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let delays: Vec<u64> = (0..5).map(|_| backoff.fail("k").as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 5, 5]);
        backoff.forget(&"k");
        assert_eq!(backoff.fail("k"), Duration::from_secs(1));
    }
}
