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

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

struct State<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    processing: HashSet<K>,
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
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    queued: HashSet::new(),
                    processing: HashSet::new(),
                    dirty: HashSet::new(),
                    delayed: BTreeMap::new(),
                    sequence: 0,
                }),
                capacity: capacity.max(1),
                ready: Notify::new(),
                room: Notify::new(),
                timer: Notify::new(),
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
                if state.queued.contains(&key) {
                    return;
                }
                if state.processing.contains(&key) {
                    state.dirty.insert(key);
                    return;
                }
                if state.queue.len() < self.shared.capacity {
                    state.queued.insert(key.clone());
                    state.queue.push_back(key);
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
                    state.queued.remove(&key);
                    state.processing.insert(key.clone());
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
            state.processing.remove(&key);
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

    /// Moves delayed keys into the queue when their time comes, until `cancel` fires.
    pub async fn run_delays(self, cancel: CancellationToken) {
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
            }
        }
    }
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
