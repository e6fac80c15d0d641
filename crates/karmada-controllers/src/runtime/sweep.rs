//! Periodic passes over a cache that trickle its keys out instead of releasing them at once.
//!
//! Why: a pass that queued every cached object at once put the whole cache ahead of every new object in its
//! controller's queue. With 100 members × 5,000 workloads, execution's safety sweep queued 280,000 Works and the
//! binding controller's resync 5,000 bindings of 100 Works each to render; new workloads waited behind the pass
//! for minutes. A pass here spreads its keys evenly over the period, and never faster than [`SWEEP_RATE`] a
//! second, so a pass costs the same work spread thin; a cache too large for one pass per period gets one pass
//! after another.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::Cache;
use super::runner::ObjectKey;

/// The most keys a pass brings back per second.
pub const SWEEP_RATE: u32 = 20;

/// Passes over `store`, the first one period after [`Sweep::new`].
pub struct Sweep {
    store: Cache,
    period: Duration,
    /// The rest of the current pass.
    pending: VecDeque<ObjectKey>,
    /// Time between two keys of the current pass.
    spacing: Duration,
    next_pass: Instant,
    next_key: Instant,
    passes: u64,
}

impl Sweep {
    pub fn new(store: Cache, period: Duration) -> Self {
        let start = Instant::now() + period;
        Self {
            store,
            period,
            pending: VecDeque::new(),
            spacing: period,
            next_pass: start,
            next_key: start,
            passes: 0,
        }
    }

    /// Passes started so far: a caller that keeps per-key state drops what the cache no longer holds when this moves.
    pub fn passes(&self) -> u64 {
        self.passes
    }

    /// The next key of the current pass (or of the next one), waiting for its turn. Keys gone from the cache since
    /// their pass started are skipped.
    pub async fn next(&mut self) -> ObjectKey {
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
            if self.store.get_key(&key).is_some() {
                return key;
            }
        }
    }

    fn start_pass(&mut self) {
        let now = Instant::now();
        self.next_pass = now + self.period;
        self.pending = self
            .store
            .state()
            .iter()
            .map(|object| ObjectKey::of(object))
            .collect();
        self.passes += 1;
        let count = u32::try_from(self.pending.len().max(1)).unwrap_or(u32::MAX);
        let fastest = Duration::from_secs(1) / SWEEP_RATE;
        self.spacing = (self.period / count).max(fastest);
        self.next_key = now;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use kube::api::DynamicObject;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::runtime::{CacheWriter, CompactObject};

    /// A listed cache of `count` Works, `w0` to `w{count-1}` (keep the writer: dropping it closes the cache).
    pub(crate) fn objects(count: usize) -> (CacheWriter, Cache) {
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
    async fn a_pass_trickles_its_keys_over_the_period() {
        let (_writer, store) = objects(4);
        let period = Duration::from_secs(8);
        let begin = Instant::now();
        let mut sweep = Sweep::new(store, period);
        let mut times = Vec::new();
        let mut passes = Vec::new();
        for _ in 0..8 {
            sweep.next().await;
            times.push((Instant::now() - begin).as_secs());
            passes.push(sweep.passes());
        }
        // A pass one period in, one key every 2 s (8 s / 4 keys); the next pass one period after the first.
        assert_eq!(times, [8, 10, 12, 14, 16, 18, 20, 22]);
        assert_eq!(passes, [1, 1, 1, 1, 2, 2, 2, 2]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_pass_is_held_to_the_sweep_rate() {
        let count = 100;
        let (_writer, store) = objects(count);
        let period = Duration::from_secs(1);
        let begin = Instant::now();
        let mut sweep = Sweep::new(store, period);
        for _ in 0..count {
            sweep.next().await;
        }
        let took = Instant::now() - begin - period;
        let least = Duration::from_secs(1) / SWEEP_RATE * u32::try_from(count - 1).expect("count");
        assert!(took >= least, "{took:?} for {count} keys");
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_deleted_during_its_pass_is_skipped() {
        let (mut writer, store) = objects(3);
        let mut sweep = Sweep::new(store, Duration::from_secs(3));
        let first = sweep.next().await;
        // The pass's order is the cache's: delete one of the two still to come, and the other comes next.
        let rest: Vec<String> = ["w0", "w1", "w2"]
            .into_iter()
            .filter(|name| *name != first.name)
            .map(str::to_string)
            .collect();
        let gone: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": rest[0], "namespace": "karmada-es-m1"},
        }))
        .expect("work");
        writer.apply_watcher_event(&Event::Delete(
            CompactObject::from_dynamic(&gone).expect("compact"),
        ));
        assert_eq!(sweep.next().await.name, rest[1]);
        assert_eq!(sweep.passes(), 1);
    }
}
