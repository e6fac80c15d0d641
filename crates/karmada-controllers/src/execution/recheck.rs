//! Which Works execution reads back from their member before trusting them again.
//!
//! Why: a Work applied at its generation is what its member holds unless something changed the member, and
//! when the work status controller runs beside execution it watches every member object and reports drift,
//! deletion and absence ([`super::WorkRequeue`]). So execution reads a member only for a Work that is not
//! applied at its generation, or that is marked here: asked for by the work status controller, its cluster
//! turned Ready or re-pointed, or the periodic safety sweep. A restarted controller-manager over a converged
//! federation then makes no member request per Work (it made one read per object: 90,000 for 30,000
//! workloads on three members).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::Stream;

use crate::runtime::Cache;
use crate::runtime::runner::ObjectKey;

/// The Works marked for a member read; cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Rechecks(Arc<Mutex<HashSet<ObjectKey>>>);

impl Rechecks {
    fn lock(&self) -> MutexGuard<'_, HashSet<ObjectKey>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The Work `key`'s member objects are read on its next reconcile.
    pub fn mark(&self, key: &ObjectKey) {
        self.lock().insert(key.clone());
    }

    /// Whether `key` was marked; the mark is gone afterwards.
    pub fn take(&self, key: &ObjectKey) -> bool {
        self.lock().remove(key)
    }

    /// Every Work of `store`, brought back marked, in passes that start at most once per `period` (the first one
    /// period from now). A pass trickles its Works out evenly over the period and never faster than
    /// [`SWEEP_RATE`] a second, each marked as it is sent: a pass that sent every Work at once put one member
    /// read per Work ahead of every new Work in execution's queue (at 100 members × 5,000 workloads, 280,000 of
    /// them, and new Works waited for the whole pass). A federation too large for one pass per period gets one
    /// pass after another. Marks of Works no longer in `store` are dropped at each pass, so the set stays
    /// bounded by the Works that exist.
    pub fn sweeps(self, store: Cache, period: Duration) -> impl Stream<Item = ObjectKey> + Send {
        let start = tokio::time::Instant::now() + period;
        let sweep = Sweep {
            rechecks: self,
            store,
            period,
            pending: VecDeque::new(),
            spacing: period,
            next_pass: start,
            next_key: start,
        };
        futures::stream::unfold(sweep, |mut sweep| async move {
            let key = sweep.next().await;
            Some((key, sweep))
        })
    }
}

/// The most Works a sweep brings back per second.
pub const SWEEP_RATE: u32 = 20;

struct Sweep {
    rechecks: Rechecks,
    store: Cache,
    period: Duration,
    /// The rest of the current pass.
    pending: VecDeque<ObjectKey>,
    /// Time between two Works of the current pass.
    spacing: Duration,
    next_pass: tokio::time::Instant,
    next_key: tokio::time::Instant,
}

impl Sweep {
    /// The next Work to bring back (marked), waiting for its turn.
    async fn next(&mut self) -> ObjectKey {
        loop {
            if self.pending.is_empty() {
                tokio::time::sleep_until(self.next_pass).await;
                self.start_pass();
                continue;
            }
            tokio::time::sleep_until(self.next_key).await;
            self.next_key += self.spacing;
            let Some(key) = self.pending.pop_front() else {
                continue;
            };
            // Gone since the pass started: nothing to read back.
            if self.store.get_key(&key).is_some() {
                self.rechecks.mark(&key);
                return key;
            }
        }
    }

    fn start_pass(&mut self) {
        let now = tokio::time::Instant::now();
        self.next_pass = now + self.period;
        self.pending = self
            .store
            .state()
            .iter()
            .map(|w| ObjectKey::of(w))
            .collect();
        self.rechecks
            .lock()
            .retain(|key| self.store.get_key(key).is_some());
        let count = u32::try_from(self.pending.len().max(1)).unwrap_or(u32::MAX);
        let fastest = Duration::from_secs(1) / SWEEP_RATE;
        self.spacing = (self.period / count).max(fastest);
        self.next_key = now;
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use kube::api::DynamicObject;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::runtime::{CacheWriter, CompactObject};

    fn works(count: usize) -> (CacheWriter, Cache) {
        let mut writer = CacheWriter::new();
        writer.apply_watcher_event(&Event::Init);
        for i in 0..count {
            let object: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                "metadata": {"name": format!("w{i}"), "namespace": "karmada-es-m1"},
            }))
            .expect("work");
            let compact = CompactObject::from_dynamic(&object).expect("compact");
            writer.apply_watcher_event(&Event::InitApply(compact));
        }
        writer.apply_watcher_event(&Event::InitDone);
        let reader = writer.as_reader();
        (writer, reader)
    }

    #[tokio::test(start_paused = true)]
    async fn a_sweep_trickles_its_works_over_the_period() {
        let (_writer, store) = works(4);
        let rechecks = Rechecks::default();
        let period = Duration::from_secs(8);
        let begin = tokio::time::Instant::now();
        let mut sweeps = Box::pin(rechecks.clone().sweeps(store, period));
        let mut times = Vec::new();
        for _ in 0..8 {
            let key = sweeps.next().await.expect("a Work");
            assert!(rechecks.take(&key), "marked when sent");
            times.push((tokio::time::Instant::now() - begin).as_secs());
        }
        // A pass one period in, one Work every 2 s (8 s / 4 Works); the next pass one period after the first.
        assert_eq!(times, [8, 10, 12, 14, 16, 18, 20, 22]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_pass_is_held_to_the_sweep_rate() {
        let count = 100;
        let (_writer, store) = works(count);
        let period = Duration::from_secs(1);
        let begin = tokio::time::Instant::now();
        let mut sweeps = Box::pin(Rechecks::default().sweeps(store, period));
        for _ in 0..count {
            sweeps.next().await.expect("a Work");
        }
        let took = tokio::time::Instant::now() - begin - period;
        let least = Duration::from_secs(1) / SWEEP_RATE * u32::try_from(count - 1).expect("count");
        assert!(took >= least, "{took:?} for {count} Works");
    }

    #[test]
    fn a_mark_is_taken_once() {
        let rechecks = Rechecks::default();
        let web = ObjectKey::new(Some("karmada-es-member1"), "web");
        assert!(!rechecks.take(&web));
        rechecks.mark(&web);
        rechecks.mark(&web);
        assert!(rechecks.take(&web));
        assert!(!rechecks.take(&web), "taken by the first reconcile");
    }
}
