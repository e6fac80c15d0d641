//! The scheduling queue (Karmada's scheduler queue): bindings waiting to be scheduled, taken highest
//! `spec.schedulePriority.priority` first (FIFO within a priority; all 0 without the PriorityBasedScheduling
//! gate), in three pools whose sizes are Karmada's `scheduler_pending_bindings{queue}` gauge:
//!
//! - `active`: ready to be taken;
//! - `backoff`: failed with an error worth retrying (Unschedulable, SchedulerError, a failed write), waiting
//!   out its backoff;
//! - `unschedulable`: no cluster fits (NoClusterFit): parked until something changes — a cluster or profile
//!   event adds it again — or at most [`UNSCHEDULABLE_MAX_WAIT`], as Karmada flushes them.
//!
//! Like client-go's work queue, a key is held once however often it is added, and a key being scheduled is not
//! handed to a second worker: adding it meanwhile marks it to come back after [`SchedulingQueue::done`]. Adding a
//! parked key makes it active at once. Bounded: [`SchedulingQueue::add`] waits while `capacity` keys are active.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Longest a binding stays parked as unschedulable without an event (Karmada's 5 minutes).
pub const UNSCHEDULABLE_MAX_WAIT: Duration = Duration::from_secs(300);

/// The sizes of the three pools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pending {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pool {
    Backoff,
    Unschedulable,
}

struct Entry<K> {
    priority: i32,
    sequence: u64,
    key: K,
}

impl<K> PartialEq for Entry<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<K> Eq for Entry<K> {}
impl<K> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for Entry<K> {
    /// Higher priority first, then the earlier added.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.priority, Reverse(self.sequence)).cmp(&(other.priority, Reverse(other.sequence)))
    }
}

struct State<K> {
    active: BinaryHeap<Entry<K>>,
    /// Active keys with the sequence and priority of their live heap entry (older entries of a key are skipped).
    queued: HashMap<K, (u64, i32)>,
    processing: HashSet<K>,
    /// Added while being processed, with the priority to come back at.
    dirty: HashMap<K, i32>,
    /// Parked keys by deadline.
    parked: BTreeMap<(Instant, u64), (K, i32, Pool)>,
    parked_at: HashMap<K, (Instant, u64)>,
    parked_count: [usize; 2],
    sequence: u64,
}

impl<K: Clone + Eq + Hash> State<K> {
    fn next_sequence(&mut self) -> u64 {
        self.sequence = self.sequence.wrapping_add(1);
        self.sequence
    }

    fn unpark(&mut self, key: &K) {
        if let Some(at) = self.parked_at.remove(key)
            && let Some((_, _, pool)) = self.parked.remove(&at)
        {
            self.parked_count[pool as usize] -= 1;
        }
    }

    fn activate(&mut self, key: K, priority: i32) {
        let sequence = self.next_sequence();
        self.queued.insert(key.clone(), (sequence, priority));
        self.active.push(Entry {
            priority,
            sequence,
            key,
        });
    }

    fn pending(&self) -> Pending {
        Pending {
            active: self.queued.len(),
            backoff: self.parked_count[Pool::Backoff as usize],
            unschedulable: self.parked_count[Pool::Unschedulable as usize],
        }
    }
}

struct Shared<K> {
    state: Mutex<State<K>>,
    capacity: usize,
    ready: Notify,
    room: Notify,
    timer: Notify,
    /// Told the pool sizes after every change.
    observe: Box<dyn Fn(Pending) + Send + Sync>,
}

/// The queue; clones share it.
pub struct SchedulingQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for SchedulingQueue<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> SchedulingQueue<K> {
    /// A queue of at most `capacity` active keys, reporting its pool sizes to `observe`.
    pub fn new(capacity: usize, observe: impl Fn(Pending) + Send + Sync + 'static) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    active: BinaryHeap::new(),
                    queued: HashMap::new(),
                    processing: HashSet::new(),
                    dirty: HashMap::new(),
                    parked: BTreeMap::new(),
                    parked_at: HashMap::new(),
                    parked_count: [0, 0],
                    sequence: 0,
                }),
                capacity: capacity.max(1),
                ready: Notify::new(),
                room: Notify::new(),
                timer: Notify::new(),
                observe: Box::new(observe),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn report(&self, state: &State<K>) {
        (self.shared.observe)(state.pending());
    }

    /// Makes `key` active at `priority` (a parked key at once), waiting while the active pool is full.
    pub async fn add(&self, key: K, priority: i32) {
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut state = self.lock();
                if state.processing.contains(&key) {
                    state.unpark(&key);
                    let slot = state.dirty.entry(key).or_insert(priority);
                    *slot = (*slot).max(priority);
                    self.report(&state);
                    return;
                }
                if let Some((_, current)) = state.queued.get(&key).copied() {
                    // Already active; a raised priority moves it up (the old entry is skipped when popped).
                    if priority > current {
                        state.activate(key, priority);
                    }
                    return;
                }
                if state.queued.len() < self.shared.capacity {
                    state.unpark(&key);
                    state.activate(key, priority);
                    self.report(&state);
                    drop(state);
                    self.shared.ready.notify_one();
                    return;
                }
            }
            room.await;
        }
    }

    fn park(&self, key: K, priority: i32, delay: Duration, pool: Pool) {
        let mut state = self.lock();
        if state.queued.contains_key(&key) {
            return;
        }
        state.unpark(&key);
        let sequence = state.next_sequence();
        let at = (Instant::now() + delay, sequence);
        state.parked.insert(at, (key.clone(), priority, pool));
        state.parked_at.insert(key, at);
        state.parked_count[pool as usize] += 1;
        self.report(&state);
        drop(state);
        self.shared.timer.notify_one();
    }

    /// Parks `key` for `delay` in the backoff pool.
    pub fn backoff(&self, key: K, priority: i32, delay: Duration) {
        self.park(key, priority, delay, Pool::Backoff);
    }

    /// Parks `key` as unschedulable until it is added again, or [`UNSCHEDULABLE_MAX_WAIT`].
    pub fn unschedulable(&self, key: K, priority: i32) {
        self.park(key, priority, UNSCHEDULABLE_MAX_WAIT, Pool::Unschedulable);
    }

    /// The next key to schedule (highest priority, then oldest), or `None` once `cancel` fires. Call
    /// [`Self::done`] when finished with it.
    pub async fn next(&self, cancel: &CancellationToken) -> Option<K> {
        loop {
            let ready = self.shared.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut state = self.lock();
                while let Some(entry) = state.active.pop() {
                    if state.queued.get(&entry.key).map(|(sequence, _)| *sequence)
                        != Some(entry.sequence)
                    {
                        continue;
                    }
                    state.queued.remove(&entry.key);
                    state.processing.insert(entry.key.clone());
                    let more = !state.queued.is_empty();
                    if !more && state.active.capacity() > 1024 {
                        state.active.shrink_to(1024);
                        state.queued.shrink_to(1024);
                    }
                    self.report(&state);
                    drop(state);
                    self.shared.room.notify_one();
                    if more {
                        self.shared.ready.notify_one();
                    }
                    return Some(entry.key);
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return None,
                () = &mut ready => {}
            }
        }
    }

    /// Marks `key` scheduled; a key added meanwhile becomes active again.
    pub async fn done(&self, key: K) {
        let again = {
            let mut state = self.lock();
            state.processing.remove(&key);
            state.dirty.remove(&key)
        };
        if let Some(priority) = again {
            self.add(key, priority).await;
        }
    }

    /// The pool sizes now.
    pub fn pending(&self) -> Pending {
        self.lock().pending()
    }

    /// Moves parked keys whose time has come to the active pool, until `cancel` fires.
    pub async fn run_timers(self, cancel: CancellationToken) {
        loop {
            let woken = self.shared.timer.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let (due, next) = {
                let mut state = self.lock();
                let now = Instant::now();
                let mut due = Vec::new();
                while let Some(entry) = state.parked.first_entry() {
                    if entry.key().0 > now {
                        break;
                    }
                    let (key, priority, pool) = entry.remove();
                    state.parked_at.remove(&key);
                    state.parked_count[pool as usize] -= 1;
                    due.push((key, priority));
                }
                (due, state.parked.keys().next().map(|(at, _)| *at))
            };
            for (key, priority) in due {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = self.add(key, priority) => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> SchedulingQueue<&'static str> {
        SchedulingQueue::new(100, |_| {})
    }

    async fn drain(queue: &SchedulingQueue<&'static str>) -> Vec<&'static str> {
        let cancel = CancellationToken::new();
        let mut order = Vec::new();
        while queue.pending().active > 0 {
            let key = queue.next(&cancel).await.expect("key");
            queue.done(key).await;
            order.push(key);
        }
        order
    }

    #[tokio::test]
    async fn higher_priority_first_then_first_come() {
        let queue = queue();
        for (key, priority) in [
            ("low-1", 0),
            ("high-1", 100),
            ("low-2", 0),
            ("mid", 50),
            ("high-2", 100),
        ] {
            queue.add(key, priority).await;
        }
        assert_eq!(
            drain(&queue).await,
            ["high-1", "high-2", "mid", "low-1", "low-2"]
        );
    }

    #[tokio::test]
    async fn a_raised_priority_moves_a_waiting_key_up_once() {
        let queue = queue();
        queue.add("a", 0).await;
        queue.add("b", 10).await;
        queue.add("a", 20).await;
        queue.add("a", 5).await;
        assert_eq!(queue.pending().active, 2);
        assert_eq!(drain(&queue).await, ["a", "b"]);
    }

    #[tokio::test]
    async fn parked_keys_are_counted_and_an_add_activates_them() {
        let seen = Arc::new(Mutex::new(Pending::default()));
        let observed = Arc::clone(&seen);
        let queue: SchedulingQueue<&str> =
            SchedulingQueue::new(100, move |p| *observed.lock().expect("lock") = p);
        queue.backoff("retry", 0, Duration::from_secs(3600));
        queue.unschedulable("nofit", 0);
        let expected = Pending {
            active: 0,
            backoff: 1,
            unschedulable: 1,
        };
        assert_eq!(queue.pending(), expected);
        assert_eq!(*seen.lock().expect("lock"), expected, "the gauge follows");
        queue.add("nofit", 0).await;
        assert_eq!(
            queue.pending(),
            Pending {
                active: 1,
                backoff: 1,
                unschedulable: 0
            }
        );
        assert_eq!(drain(&queue).await, ["nofit"]);
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_ends_by_itself() {
        let queue = queue();
        let cancel = CancellationToken::new();
        let timers = tokio::spawn(queue.clone().run_timers(cancel.clone()));
        queue.backoff("retry", 0, Duration::from_secs(2));
        let key = tokio::time::timeout(Duration::from_secs(5), queue.next(&cancel))
            .await
            .expect("due after its backoff");
        assert_eq!(key, Some("retry"));
        cancel.cancel();
        timers.await.expect("timers");
    }

    #[tokio::test]
    async fn a_key_added_while_scheduled_comes_back_after() {
        let queue = queue();
        let cancel = CancellationToken::new();
        queue.add("a", 0).await;
        let key = queue.next(&cancel).await.expect("a");
        queue.add("a", 7).await;
        assert_eq!(queue.pending().active, 0, "not handed out twice");
        queue.done(key).await;
        assert_eq!(queue.pending().active, 1);
    }
}
