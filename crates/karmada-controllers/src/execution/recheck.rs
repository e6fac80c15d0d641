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

use futures::{Stream, StreamExt};

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

    /// Every Work of `store`, marked, once per `period` (the first sweep one period from now); marks of Works
    /// no longer in `store` are dropped then, so the set stays bounded by the Works that exist.
    pub fn sweeps(self, store: Cache, period: Duration) -> impl Stream<Item = ObjectKey> + Send {
        let rechecks = self;
        let ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        futures::stream::unfold(ticker, |mut ticker| async move {
            ticker.tick().await;
            Some(((), ticker))
        })
        .flat_map(move |()| {
            let keys: Vec<ObjectKey> = store.state().iter().map(|w| ObjectKey::of(w)).collect();
            let mut marked = rechecks.lock();
            marked.retain(|key| store.get_key(key).is_some());
            marked.extend(keys.iter().cloned());
            futures::stream::iter(keys)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
