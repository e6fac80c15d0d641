//! What a controller wrote itself and its watch has not shown yet.
//!
//! Why: a controller's cache lags its own writes, and a reconcile woken in between either repeats the write (the
//! detector creating a binding again, answered AlreadyExists) or is woken by it for nothing (the scheduler by
//! its own spec write). Remembering the write until the watch shows it avoids both. Bounded: when full the
//! memory is cleared, which only costs the extra request the memo saves; the room a burst took is given back
//! once its writes have all been seen.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Entries kept at most.
const BOUND: usize = 4096;
/// Room a drained memo may keep.
const KEPT_ROOM: usize = 64;

/// Own writes by key, with what the controller needs to recognise each (a resourceVersion, a time).
pub struct OwnWrites<K, V> {
    writes: Mutex<HashMap<K, V>>,
}

impl<K, V> Default for OwnWrites<K, V> {
    fn default() -> Self {
        Self {
            writes: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V> OwnWrites<K, V> {
    fn lock(&self) -> MutexGuard<'_, HashMap<K, V>> {
        // A panic elsewhere cannot leave a map of plain values inconsistent.
        self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers a write of `key`.
    pub fn wrote(&self, key: K, value: V) {
        let mut writes = self.lock();
        if writes.len() >= BOUND {
            *writes = HashMap::new();
        }
        writes.insert(key, value);
    }

    /// Whether a write of `key` is remembered and `keep` holds for it; one `keep` rejects is forgotten.
    pub fn holds(&self, key: &K, keep: impl FnOnce(&V) -> bool) -> bool {
        let mut writes = self.lock();
        match writes.get(key).map(keep) {
            Some(true) => true,
            Some(false) => {
                Self::forget_in(&mut writes, key);
                false
            }
            None => false,
        }
    }

    /// Forgets the write of `key` (the watch showed it), returning what was remembered.
    pub fn seen(&self, key: &K) -> Option<V> {
        Self::forget_in(&mut self.lock(), key)
    }

    fn forget_in(writes: &mut HashMap<K, V>, key: &K) -> Option<V> {
        let value = writes.remove(key);
        if value.is_some() && writes.is_empty() && writes.capacity() > KEPT_ROOM {
            writes.shrink_to(KEPT_ROOM);
        }
        value
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_until_seen_or_rejected() {
        let writes = OwnWrites::default();
        writes.wrote("a", 1);
        writes.wrote("b", 2);
        assert!(writes.holds(&"a", |v| *v == 1));
        assert!(writes.holds(&"a", |v| *v == 1), "holding does not forget");
        assert!(!writes.holds(&"b", |v| *v == 3), "rejected");
        assert!(!writes.holds(&"b", |_| true), "and forgotten");
        assert_eq!(writes.seen(&"a"), Some(1));
        assert_eq!(writes.seen(&"a"), None);
        assert!(!writes.holds(&"c", |_| true));
    }

    #[test]
    fn is_bounded_and_gives_a_bursts_room_back() {
        let writes = OwnWrites::default();
        for key in 0..BOUND + 10 {
            writes.wrote(key, ());
        }
        assert!(writes.len() <= BOUND, "cleared when full");
        let kept: Vec<usize> = (0..BOUND + 10)
            .filter(|k| writes.holds(k, |_| true))
            .collect();
        for key in &kept {
            writes.seen(key);
        }
        assert_eq!(writes.len(), 0);
        assert!(writes.lock().capacity() <= 2 * KEPT_ROOM);
    }
}
