//! Which Works execution reads back from their member before trusting them again.
//!
//! Why: a Work applied at its generation is what its member holds unless something changed the member, and
//! when the work status controller runs beside execution it watches every member object and reports drift,
//! deletion and absence ([`super::WorkRequeue`]). So execution reads a member only for a Work that is not
//! applied at its generation, or that is marked here: asked for by the work status controller, its cluster
//! turned Ready or re-pointed, or the periodic safety sweep. A restarted controller-manager over a converged
//! federation then makes no member request per Work (it made one read per object: 90,000 for 30,000
//! workloads on three members).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::Stream;

use crate::runtime::Cache;
use crate::runtime::runner::ObjectKey;
use crate::runtime::sweep::Sweep;

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

    /// Every Work of `store`, brought back marked, in the trickled passes of [`Sweep`] (the first one period from
    /// now), each marked as it is sent. Marks of Works no longer in `store` are dropped at each pass, so the set
    /// stays bounded by the Works that exist.
    pub fn sweeps(self, store: Cache, period: Duration) -> impl Stream<Item = ObjectKey> + Send {
        let sweep = Sweep::new(store.clone(), period);
        futures::stream::unfold(
            (self, sweep, store, 0),
            |(rechecks, mut sweep, store, seen)| async move {
                let key = sweep.next().await;
                if sweep.passes() != seen {
                    rechecks.lock().retain(|key| store.get_key(key).is_some());
                }
                rechecks.mark(&key);
                let passes = sweep.passes();
                Some((key, (rechecks, sweep, store, passes)))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::runtime::sweep::tests::objects as works;

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
