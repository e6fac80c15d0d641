//! The in-memory ring of recent events and the cursor-based watch streams both backends share.
//!
//! Why a ring and cursors instead of a broadcast channel: a broadcast channel either buffers
//! without bound or drops events for slow receivers. Here each watcher is only a position (the
//! last revision it has scanned) plus a small batch of `Arc`'d events; 10k watchers cost 10k
//! cursors, and an event's bytes exist once however many watchers see it.
//!
//! Invariants:
//! - events in the ring have contiguous revisions: `events[i].revision() == first + i`;
//! - events are appended only after they are committed, in revision order, and the newest
//!   revision is announced (through a `tokio::sync::watch`) after the append;
//! - a cursor never skips a revision: it either yields every matching event after its position,
//!   or yields `Err(Compacted)` and ends;
//! - when the ring no longer holds a cursor's next revision, the backend's [`ColdLog`] (the
//!   on-disk event log for redb) serves it; without one the cursor reports `Compacted`;
//! - a cursor is woken only by a commit holding an event under its prefix: each prefix being
//!   watched has one wake-up channel and the newest revision matching it, an upper bound kept
//!   under the ring's lock; a cursor at or past that revision has nothing to read and moves to
//!   the newest revision without scanning (so a quiet watcher never falls behind the ring);
//! - a bounded ring indexes the newest event of each key it holds, so a point read of a key
//!   written recently is answered from memory: events enter the ring before their writers hear
//!   success, so the newest one the ring holds for a key is that key's state as of the ring's
//!   newest revision, and no acknowledged write is newer.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use futures::StreamExt;
use parking_lot::RwLock;
use tokio::sync::watch;

use crate::{EventKind, KeyValue, Revision, StoreError, StoreResult, WatchEvent, WatchStream};

/// How many ring (or cold-log) entries a cursor scans per step; bounds a watcher's buffer.
const SCAN_BATCH: usize = 512;

/// Older events a backend can fetch when they have fallen out of the ring.
pub(crate) trait ColdLog: Send + Sync + 'static {
    /// Blocking read of the events with revision in `(after, up_to]` whose key starts with
    /// `prefix`, scanning at most `max` revisions. Returns the matches and the last revision
    /// scanned. Fails with `Compacted` when `after` is below the compacted revision.
    fn read(
        &self,
        after: Revision,
        up_to: Revision,
        max: usize,
        prefix: &str,
    ) -> StoreResult<(Vec<Arc<WatchEvent>>, Revision)>;
}

struct RingState {
    events: VecDeque<Arc<WatchEvent>>,
    /// Sum of `event_size` over `events`.
    bytes: usize,
    /// Revision of `events[0]`; when the ring is empty, the next revision to be appended.
    first: Revision,
    compacted: Revision,
    /// Newest revision the backend's cold log can serve. Events above it exist only here, so
    /// they stay whatever the capacity says (the backend bounds how many it lets pile up).
    in_cold_log: Revision,
    /// Revision of the newest event of each key in `events`, for point reads; `None` for a ring
    /// that keeps the whole history (its backend's own map answers those).
    newest_of_key: Option<HashMap<String, Revision>>,
    /// Every prefix some cursor watches.
    prefixes: HashMap<Arc<str>, PrefixWatch>,
}

/// The cursors watching one prefix.
struct PrefixWatch {
    /// Announces the newest revision holding an event under the prefix; the cursors subscribe.
    wake: Arc<watch::Sender<Revision>>,
    /// No event under the prefix is newer than this.
    last_matched: Revision,
    /// The oldest revision under the prefix in the last commit that held any, and the bound
    /// `last_matched` had before that commit: nothing under the prefix lies between the two, so
    /// a cursor at or past the latter skips to just before the former.
    first_of_last_commit: Revision,
    before_last_commit: Revision,
}

/// What the ring knows of one key's current state.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum KeyState {
    /// The key's newest event is a put: its current key-value.
    Present(KeyValue),
    /// The key's newest event is a delete.
    Deleted,
    /// No event of the key is in the ring, which holds every event after the revision the
    /// caller read the key at: what it read is current.
    Unchanged,
    /// No event of the key is in the ring: ask the backend.
    Unknown,
}

/// The recent-events ring plus the announcement of the newest committed revision.
pub(crate) struct EventRing {
    state: Arc<RwLock<RingState>>,
    newest: watch::Sender<Revision>,
    /// `None` keeps every event until compaction (the memory backend's whole history).
    capacity: Option<RingCapacity>,
}

/// Bounds of a ring that does not hold the whole history; the oldest events leave first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingCapacity {
    pub(crate) events: usize,
    /// Sum of the key and value sizes (current and previous) of the events held.
    pub(crate) bytes: usize,
}

pub(crate) fn event_size(event: &WatchEvent) -> usize {
    event.kv.key.len() + event.kv.value.len() + event.prev.as_ref().map_or(0, |p| p.value.len())
}

/// What a cursor finds when it looks for events after its position.
enum RingRead {
    /// Matching events and the last revision scanned (equal to `after` when nothing is new).
    Events(Vec<Arc<WatchEvent>>, Revision),
    /// The cursor's position is below the compacted revision.
    Compacted(Revision),
    /// The next revision has left the ring: the events after `after` up to `up_to` must come from
    /// disk (`after` may be past the cursor's position, when nothing under its prefix lies between).
    Cold { after: Revision, up_to: Revision },
}

impl EventRing {
    /// A ring for a store whose current revision is `current`.
    pub(crate) fn new(
        current: Revision,
        compacted: Revision,
        capacity: Option<RingCapacity>,
    ) -> Self {
        let (newest, _) = watch::channel(current);
        EventRing {
            state: Arc::new(RwLock::new(RingState {
                events: VecDeque::new(),
                bytes: 0,
                first: current + 1,
                compacted,
                in_cold_log: Revision::MAX,
                newest_of_key: capacity.map(|_| HashMap::new()),
                prefixes: HashMap::new(),
            })),
            newest,
            capacity,
        }
    }

    /// Appends committed events (contiguous, ascending), announces the newest revision, and
    /// wakes the cursors of the prefixes the events are under.
    pub(crate) fn append(&self, events: impl IntoIterator<Item = Arc<WatchEvent>>) {
        let mut newest = None;
        let mut woken = Vec::new();
        {
            let mut state = self.state.write();
            let mut appended = 0;
            for event in events {
                let revision = event.revision();
                let next = state.first + state.events.len() as Revision;
                if revision != next {
                    // Never expected; restart the ring rather than break its contiguity.
                    tracing::warn!(revision, next, "non-contiguous event; resetting watch ring");
                    state.events.clear();
                    state.bytes = 0;
                    state.first = revision;
                    if let Some(index) = state.newest_of_key.as_mut() {
                        index.clear();
                    }
                }
                state.bytes += event_size(&event);
                if let Some(index) = state.newest_of_key.as_mut() {
                    match index.get_mut(event.kv.key.as_str()) {
                        Some(newest) => *newest = revision,
                        None => {
                            index.insert(event.kv.key.clone(), revision);
                        }
                    }
                }
                state.events.push_back(event);
                appended += 1;
                newest = Some(revision);
            }
            state.mark_matches(appended, &mut woken);
            self.trim(&mut state);
        }
        if let Some(revision) = newest {
            self.newest.send_replace(revision);
        }
        for (wake, revision) in woken {
            wake.send_replace(revision);
        }
    }

    /// Records that the cold log now serves every event up to `revision` (the backend's commit
    /// caught up), so the ring may let them go.
    pub(crate) fn in_cold_log_through(&self, revision: Revision) {
        let mut state = self.state.write();
        state.in_cold_log = revision;
        self.trim(&mut state);
    }

    /// Drops the oldest events beyond the capacity, never one the cold log cannot serve yet.
    fn trim(&self, state: &mut RingState) {
        if let Some(capacity) = self.capacity {
            while (state.events.len() > capacity.events.max(1)
                || (state.bytes > capacity.bytes && state.events.len() > 1))
                && state.first <= state.in_cold_log
            {
                state.pop_oldest();
            }
        }
    }

    /// Drops events at or below `revision` and records it as the compacted revision.
    pub(crate) fn compact(&self, revision: Revision) {
        let mut state = self.state.write();
        if revision <= state.compacted {
            return;
        }
        state.compacted = revision;
        while state.first <= revision && !state.events.is_empty() {
            state.pop_oldest();
        }
        if state.events.is_empty() && state.first <= revision {
            state.first = revision + 1;
        }
    }

    pub(crate) fn compacted(&self) -> Revision {
        self.state.read().compacted
    }

    /// `key`'s current state if the ring holds an event of it; `Unchanged` if it holds none of
    /// `key` but every event after `read_at` (a value read at that revision is still current).
    /// Always `Unknown` for a ring that keeps the whole history.
    pub(crate) fn key_state(&self, key: &str, read_at: Option<Revision>) -> KeyState {
        let state = self.state.read();
        let Some(index) = state.newest_of_key.as_ref() else {
            return KeyState::Unknown;
        };
        let Some(revision) = index.get(key) else {
            return match read_at {
                Some(read_at) if state.first <= read_at.saturating_add(1) => KeyState::Unchanged,
                _ => KeyState::Unknown,
            };
        };
        let event = revision
            .checked_sub(state.first)
            .and_then(|offset| usize::try_from(offset).ok())
            .and_then(|offset| state.events.get(offset));
        match event {
            Some(event) if event.kv.key == key => match event.kind {
                EventKind::Put => KeyState::Present(event.kv.clone()),
                EventKind::Delete => KeyState::Deleted,
            },
            // The index and the ring disagree: never expected, and the backend knows.
            _ => KeyState::Unknown,
        }
    }

    /// The oldest revision a read can have been made at for [`EventRing::key_state`] to vouch
    /// for it now (the ring holds every event after it).
    pub(crate) fn oldest_vouched(&self) -> Revision {
        self.state.read().first.saturating_sub(1)
    }

    /// The newest committed revision announced so far.
    pub(crate) fn newest(&self) -> Revision {
        *self.newest.borrow()
    }

    /// A watch stream of events under `prefix` after `after`. Fails at once if `after` is
    /// compacted; an `after` beyond the newest revision waits for that revision to come.
    pub(crate) fn watch(
        &self,
        prefix: &str,
        after: Revision,
        cold: Option<Arc<dyn ColdLog>>,
    ) -> StoreResult<WatchStream> {
        let compacted = self.compacted();
        if after < compacted {
            return Err(StoreError::Compacted {
                requested: after,
                compacted,
            });
        }
        let wake = {
            let mut state = self.state.write();
            let newest = state.newest();
            let entry = state
                .prefixes
                .entry(Arc::from(prefix))
                .or_insert_with(|| PrefixWatch {
                    wake: Arc::new(watch::channel(newest).0),
                    // Nothing is known of the history before this watch: any revision so far
                    // may hold an event under the prefix.
                    last_matched: newest,
                    first_of_last_commit: newest,
                    before_last_commit: newest,
                });
            entry.wake.subscribe()
        };
        let cursor = Cursor {
            ring: self.state.clone(),
            wake,
            cold,
            prefix: Arc::from(prefix),
            position: after,
            pending: VecDeque::new(),
            finished: false,
        };
        Ok(futures::stream::unfold(cursor, Cursor::next).boxed())
    }
}

impl Drop for EventRing {
    /// The cursors keep the ring's state alive; dropping the wake-up channels ends them, as the
    /// store is gone and nothing more will ever arrive.
    fn drop(&mut self) {
        self.state.write().prefixes.clear();
    }
}

impl RingState {
    /// The newest revision appended (the one before `first` when the ring is empty).
    fn newest(&self) -> Revision {
        self.first + self.events.len() as Revision - 1
    }

    /// Records which watched prefixes the last `appended` events are under, collecting each such
    /// prefix's wake-up channel with the newest matching revision; forgets prefixes nobody
    /// watches any more.
    fn mark_matches(
        &mut self,
        appended: usize,
        woken: &mut Vec<(Arc<watch::Sender<Revision>>, Revision)>,
    ) {
        self.prefixes
            .retain(|_, watch| watch.wake.receiver_count() > 0);
        if appended == 0 {
            return;
        }
        let skip = self.events.len().saturating_sub(appended);
        for (prefix, watch) in &mut self.prefixes {
            let mut matched = self
                .events
                .iter()
                .skip(skip)
                .filter(|event| event.kv.key.starts_with(prefix.as_ref()))
                .map(|event| event.revision());
            if let Some(first) = matched.next() {
                let last = matched.next_back().unwrap_or(first);
                watch.before_last_commit = watch.last_matched;
                watch.first_of_last_commit = first;
                watch.last_matched = last;
                woken.push((Arc::clone(&watch.wake), last));
            }
        }
    }

    fn pop_oldest(&mut self) {
        if let Some(event) = self.events.pop_front() {
            self.bytes -= event_size(&event);
            // A key written again later keeps its entry: that newer event is still in the ring.
            if let Some(index) = self.newest_of_key.as_mut()
                && index.get(event.kv.key.as_str()) == Some(&event.revision())
            {
                index.remove(event.kv.key.as_str());
            }
            self.first += 1;
        }
    }
}

fn read_ring(state: &RingState, prefix: &str, position: Revision) -> RingRead {
    let newest = state.newest();
    let mut after = position;
    if let Some(watch) = state.prefixes.get(prefix) {
        // Nothing under the prefix after `after`: move on without scanning, compacted or not
        // (the watcher lost nothing, as a caught-up etcd watcher is not cancelled by compaction).
        if watch.last_matched <= after {
            return RingRead::Events(Vec::new(), after.max(newest));
        }
        // Only the last commit holding the prefix is new: skip the quiet stretch before it.
        if watch.before_last_commit <= after {
            after = after.max(watch.first_of_last_commit.saturating_sub(1));
        }
    }
    if after < state.compacted {
        return RingRead::Compacted(state.compacted);
    }
    if after >= newest {
        return RingRead::Events(Vec::new(), after);
    }
    if after + 1 < state.first {
        return RingRead::Cold {
            after,
            up_to: state.first - 1,
        };
    }
    let start = (after + 1 - state.first) as usize;
    let mut matches = Vec::new();
    let mut scanned = after;
    for event in state.events.iter().skip(start).take(SCAN_BATCH) {
        scanned = event.revision();
        if event.kv.key.starts_with(prefix) {
            matches.push(event.clone());
        }
    }
    RingRead::Events(matches, scanned)
}

/// One watcher: a position in the event sequence and the few events it has not yielded yet.
struct Cursor {
    ring: Arc<RwLock<RingState>>,
    /// Changes when a commit holds an event under `prefix`.
    wake: watch::Receiver<Revision>,
    cold: Option<Arc<dyn ColdLog>>,
    prefix: Arc<str>,
    /// Last revision scanned; every matching event at or below it is in `pending` or yielded.
    position: Revision,
    pending: VecDeque<Arc<WatchEvent>>,
    finished: bool,
}

impl Cursor {
    async fn next(mut self) -> Option<(StoreResult<WatchEvent>, Cursor)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(WatchEvent::clone(&event)), self));
            }
            if self.finished {
                return None;
            }
            // Mark the announcement seen before reading, so a commit after the read wakes us.
            self.wake.borrow_and_update();
            let read = read_ring(&self.ring.read(), &self.prefix, self.position);
            let scanned = match read {
                RingRead::Events(events, scanned) => Ok((events, scanned)),
                RingRead::Compacted(compacted) => Err(StoreError::Compacted {
                    requested: self.position,
                    compacted,
                }),
                RingRead::Cold { after, up_to } => self.read_cold(after, up_to).await,
            };
            match scanned {
                Ok((events, scanned)) if scanned > self.position => {
                    self.position = scanned;
                    self.pending.extend(events);
                }
                Ok(_) => {
                    if self.wake.changed().await.is_err() {
                        // The store is gone; nothing more will ever arrive.
                        return None;
                    }
                }
                Err(error) => {
                    self.finished = true;
                    return Some((Err(error), self));
                }
            }
        }
    }

    async fn read_cold(
        &self,
        after: Revision,
        up_to: Revision,
    ) -> StoreResult<(Vec<Arc<WatchEvent>>, Revision)> {
        let Some(cold) = self.cold.clone() else {
            return Err(StoreError::Compacted {
                requested: self.position,
                compacted: up_to,
            });
        };
        let prefix = self.prefix.clone();
        tokio::task::spawn_blocking(move || cold.read(after, up_to, SCAN_BATCH, &prefix))
            .await
            .map_err(|e| StoreError::Backend(format!("watch history read failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn put(revision: Revision, key: &str) -> Arc<WatchEvent> {
        Arc::new(WatchEvent {
            kind: EventKind::Put,
            kv: KeyValue {
                key: key.to_string(),
                value: Bytes::from_static(b"v"),
                create_revision: revision,
                mod_revision: revision,
            },
            prev: None,
        })
    }

    #[test]
    fn bounded_ring_sends_old_positions_to_the_cold_log() {
        let capacity = RingCapacity {
            events: 3,
            bytes: 1 << 20,
        };
        let ring = EventRing::new(0, 0, Some(capacity));
        ring.append((1..=5).map(|r| put(r, "/a")));
        let state = ring.state.read();
        assert_eq!(state.first, 3);
        assert!(matches!(
            read_ring(&state, "/", 0),
            RingRead::Cold { after: 0, up_to: 2 }
        ));
        assert!(matches!(
            read_ring(&state, "/", 1),
            RingRead::Cold { after: 1, up_to: 2 }
        ));
        match read_ring(&state, "/", 2) {
            RingRead::Events(events, scanned) => {
                assert_eq!(scanned, 5);
                assert_eq!(events.len(), 3);
            }
            _ => panic!("expected events from the ring"),
        }
    }

    #[test]
    fn byte_bound_evicts_oldest_but_keeps_the_newest_event() {
        let capacity = RingCapacity {
            events: 100,
            bytes: 5,
        };
        let ring = EventRing::new(0, 0, Some(capacity));
        ring.append((1..=4).map(|r| put(r, "/a")));
        let state = ring.state.read();
        // Each event is 3 bytes (key "/a" + value "v"): only one fits in 5 bytes.
        assert_eq!((state.first, state.events.len(), state.bytes), (4, 1, 3));
    }

    fn delete(revision: Revision, key: &str) -> Arc<WatchEvent> {
        let mut event = WatchEvent::clone(&put(revision, key));
        event.kind = EventKind::Delete;
        Arc::new(event)
    }

    #[test]
    fn key_state_follows_the_newest_event_of_each_key_in_the_ring() {
        let capacity = RingCapacity {
            events: 4,
            bytes: 1 << 20,
        };
        let ring = EventRing::new(0, 0, Some(capacity));
        ring.append([put(1, "/a"), put(2, "/b"), put(3, "/a"), delete(4, "/b")]);
        assert!(
            matches!(ring.key_state("/a", None), KeyState::Present(kv) if kv.mod_revision == 3)
        );
        assert_eq!(ring.key_state("/b", None), KeyState::Deleted);
        assert_eq!(ring.key_state("/c", None), KeyState::Unknown);
        // Revision 1 (an older "/a") leaves the ring; "/a" is still known by revision 3.
        ring.append([put(5, "/c")]);
        assert!(
            matches!(ring.key_state("/a", None), KeyState::Present(kv) if kv.mod_revision == 3)
        );
        // Revisions 2 and 3 leave: "/a" is no longer in the ring, "/b" still is (deleted at 4).
        ring.append([put(6, "/d"), put(7, "/d")]);
        assert_eq!(ring.key_state("/a", None), KeyState::Unknown);
        assert_eq!(ring.key_state("/b", None), KeyState::Deleted);
        ring.compact(5);
        assert_eq!(ring.key_state("/b", None), KeyState::Unknown);
        assert_eq!(ring.key_state("/c", None), KeyState::Unknown);
        assert!(
            matches!(ring.key_state("/d", None), KeyState::Present(kv) if kv.mod_revision == 7)
        );
        let index_len = ring.state.read().newest_of_key.as_ref().map(HashMap::len);
        assert_eq!(
            index_len,
            Some(1),
            "only keys with events in the ring are indexed"
        );
    }

    #[test]
    fn a_read_stays_current_while_the_ring_holds_every_later_event_and_none_of_its_key() {
        let capacity = RingCapacity {
            events: 2,
            bytes: 1 << 20,
        };
        let ring = EventRing::new(10, 0, Some(capacity));
        // Nothing written since revision 10: a read at 10 is current, one at 9 may not be.
        assert_eq!(ring.key_state("/k", Some(10)), KeyState::Unchanged);
        assert_eq!(ring.key_state("/k", Some(9)), KeyState::Unknown);
        ring.append([put(11, "/other"), put(12, "/other")]);
        assert_eq!(ring.key_state("/k", Some(10)), KeyState::Unchanged);
        // Revision 11 leaves the ring: it might have been "/k"'s.
        ring.append([put(13, "/other")]);
        assert_eq!(ring.key_state("/k", Some(10)), KeyState::Unknown);
        assert_eq!(ring.key_state("/k", Some(11)), KeyState::Unchanged);
        ring.append([put(14, "/k")]);
        assert!(
            matches!(ring.key_state("/k", Some(11)), KeyState::Present(kv) if kv.mod_revision == 14)
        );
        assert_eq!(ring.key_state("/k", None), ring.key_state("/k", Some(0)));
    }

    #[test]
    fn a_ring_keeping_the_whole_history_answers_no_point_reads() {
        let ring = EventRing::new(0, 0, None);
        ring.append([put(1, "/a")]);
        assert_eq!(ring.key_state("/a", None), KeyState::Unknown);
        assert_eq!(ring.key_state("/b", Some(1)), KeyState::Unknown);
    }

    /// A cold log that only counts how often it is asked.
    #[derive(Default)]
    struct CountingColdLog(std::sync::atomic::AtomicUsize);

    impl ColdLog for CountingColdLog {
        fn read(
            &self,
            _after: Revision,
            up_to: Revision,
            _max: usize,
            _prefix: &str,
        ) -> StoreResult<(Vec<Arc<WatchEvent>>, Revision)> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok((Vec::new(), up_to))
        }
    }

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct CountingWaker(std::sync::atomic::AtomicUsize);

    impl futures::task::ArcWake for CountingWaker {
        fn wake_by_ref(arc_self: &Arc<Self>) {
            arc_self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_watcher_wakes_only_for_its_prefix_and_a_quiet_one_never_reads_the_cold_log() {
        use std::sync::atomic::Ordering::SeqCst;
        use std::task::{Context, Poll};
        let capacity = RingCapacity {
            events: 2,
            bytes: 1 << 20,
        };
        let ring = EventRing::new(0, 0, Some(capacity));
        let cold = Arc::new(CountingColdLog::default());
        let mut stream = ring
            .watch("/a", 0, Some(cold.clone() as Arc<dyn ColdLog>))
            .expect("watch");
        let wakes = Arc::new(CountingWaker::default());
        let waker = futures::task::waker(wakes.clone());
        let mut context = Context::from_waker(&waker);
        assert!(stream.poll_next_unpin(&mut context).is_pending());
        // Ten commits under another prefix: the watcher is not woken, and they leave the ring.
        for revision in 1..=10 {
            ring.append([put(revision, "/b")]);
        }
        assert_eq!(wakes.0.load(SeqCst), 0);
        ring.append([put(11, "/a")]);
        assert_eq!(wakes.0.load(SeqCst), 1);
        match stream.poll_next_unpin(&mut context) {
            Poll::Ready(Some(Ok(event))) => assert_eq!(event.revision(), 11),
            other => panic!("expected the event at 11, got {other:?}"),
        }
        assert_eq!(
            cold.0.load(SeqCst),
            0,
            "revisions 1..=9 were skipped, not read"
        );
    }

    #[test]
    fn compaction_does_not_end_a_watcher_that_had_nothing_to_read() {
        let ring = EventRing::new(0, 0, None);
        let mut stream = ring.watch("/a", 0, None).expect("watch");
        ring.append((1..=5).map(|r| put(r, "/b")));
        ring.compact(5);
        ring.append([put(6, "/a")]);
        let next = futures::executor::block_on(stream.next());
        assert!(
            matches!(&next, Some(Ok(event)) if event.revision() == 6),
            "{next:?}"
        );
    }

    #[test]
    fn dropping_the_ring_ends_its_watch_streams() {
        let ring = EventRing::new(0, 0, None);
        let mut stream = ring.watch("/a", 0, None).expect("watch");
        drop(ring);
        assert!(futures::executor::block_on(stream.next()).is_none());
    }

    #[test]
    fn compaction_empties_the_ring_and_moves_its_start() {
        let ring = EventRing::new(0, 0, None);
        ring.append((1..=4).map(|r| put(r, "/a")));
        ring.compact(6);
        let state = ring.state.read();
        assert_eq!(
            (state.first, state.compacted, state.events.len()),
            (7, 6, 0)
        );
        assert!(matches!(read_ring(&state, "/", 5), RingRead::Compacted(6)));
    }
}
