//! Point reads the redb backend answered from its file, kept while they are provably current.
//!
//! An entry is the key's state read in a snapshot at revision `read_at`. It may answer a later
//! read only when the watch ring holds every event after `read_at` and none of the key (see
//! [`crate::watch_hub::EventRing::key_state`]); otherwise the read goes to the file again. So the
//! cache never needs invalidating: a write to the key enters the ring before its writer hears
//! success, and an entry whose revision the ring has moved past is never used again. What it
//! saves is the trip to the blocking pool for keys read often and written rarely (the namespace
//! every create checks).

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::{KeyValue, Revision};

/// Most entries kept; beyond it, entries the ring has moved past go first, then all of them.
const MAX_ENTRIES: usize = 1024;
/// Most key and value bytes kept.
const MAX_BYTES: usize = 2 * 1024 * 1024;

struct Entry {
    kv: Option<KeyValue>,
    read_at: Revision,
}

#[derive(Default)]
pub(super) struct ReadCache {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    entries: HashMap<String, Entry>,
    bytes: usize,
}

fn size(key: &str, kv: Option<&KeyValue>) -> usize {
    key.len() + kv.map_or(0, |kv| kv.value.len())
}

impl ReadCache {
    /// The revision `key` was last read from the file at.
    pub(super) fn read_at(&self, key: &str) -> Option<Revision> {
        self.state
            .lock()
            .entries
            .get(key)
            .map(|entry| entry.read_at)
    }

    /// `key`'s state as read at `read_at`, if that read is still the one kept.
    pub(super) fn value_read_at(&self, key: &str, read_at: Revision) -> Option<Option<KeyValue>> {
        let state = self.state.lock();
        let entry = state.entries.get(key)?;
        (entry.read_at == read_at).then(|| entry.kv.clone())
    }

    /// Remembers `kv` as `key`'s state at `read_at`. `oldest_useful` is the oldest `read_at` the
    /// ring can still vouch for: older entries are dropped first when the cache is full.
    pub(super) fn insert(
        &self,
        key: &str,
        kv: Option<KeyValue>,
        read_at: Revision,
        oldest_useful: Revision,
    ) {
        let added = size(key, kv.as_ref());
        if added > MAX_BYTES / 4 {
            return;
        }
        let mut state = self.state.lock();
        if let Some(old) = state.entries.remove(key) {
            state.bytes -= size(key, old.kv.as_ref());
        }
        if state.entries.len() >= MAX_ENTRIES || state.bytes + added > MAX_BYTES {
            state
                .entries
                .retain(|_, entry| entry.read_at >= oldest_useful);
            state.bytes = state
                .entries
                .iter()
                .map(|(key, entry)| size(key, entry.kv.as_ref()))
                .sum();
            if state.entries.len() >= MAX_ENTRIES || state.bytes + added > MAX_BYTES {
                state.entries.clear();
                state.bytes = 0;
            }
        }
        state.bytes += added;
        state.entries.insert(key.to_string(), Entry { kv, read_at });
    }

    #[cfg(test)]
    fn len_and_bytes(&self) -> (usize, usize) {
        let state = self.state.lock();
        (state.entries.len(), state.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn kv(key: &str, bytes: usize) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Bytes::from(vec![b'x'; bytes]),
            create_revision: 1,
            mod_revision: 1,
        }
    }

    #[test]
    fn keeps_the_newest_read_of_a_key_and_counts_its_bytes() {
        let cache = ReadCache::default();
        cache.insert("/a", Some(kv("/a", 10)), 5, 0);
        cache.insert("/a", None, 7, 0);
        assert_eq!(cache.read_at("/a"), Some(7));
        assert_eq!(cache.value_read_at("/a", 7), Some(None));
        assert_eq!(cache.value_read_at("/a", 5), None);
        assert_eq!(cache.len_and_bytes(), (1, 2));
        assert_eq!(cache.read_at("/b"), None);
    }

    #[test]
    fn a_full_cache_drops_what_the_ring_moved_past_then_everything() {
        let cache = ReadCache::default();
        for i in 0..MAX_ENTRIES {
            cache.insert(&format!("/k{i}"), None, i as Revision, 0);
        }
        // Full: entries read before revision 1000 can no longer be vouched for.
        cache.insert("/new", None, 2000, 1000);
        let (entries, _) = cache.len_and_bytes();
        assert_eq!(entries, MAX_ENTRIES - 1000 + 1);
        assert!(cache.read_at("/k999").is_none() && cache.read_at("/k1000").is_some());
        // Bytes bound: one big value per insert until nothing old is useful.
        let big = MAX_BYTES / 5;
        for i in 0..6 {
            cache.insert(&format!("/big{i}"), Some(kv("/big", big)), 3000, 3000);
        }
        let (_, bytes) = cache.len_and_bytes();
        assert!(bytes <= MAX_BYTES, "{bytes} bytes kept");
        assert!(cache.read_at("/big5").is_some());
        // A value too large to be worth keeping is not kept.
        cache.insert("/huge", Some(kv("/huge", MAX_BYTES)), 3000, 0);
        assert!(cache.read_at("/huge").is_none());
    }
}
