//! Rendered discovery documents, kept with the registry snapshot they were rendered from.
//!
//! Discovery is read on every client start and on every cluster status probe (dozens of members,
//! every few seconds), while what it describes only changes when a CRD does. Rendering walked every
//! served kind and cloned it, schemas included; a cached document is one copy of its bytes. The cache
//! lives inside the immutable [`crate::registry::Registry`] snapshot, so a CRD change, which swaps in a
//! new snapshot, starts from an empty cache: nothing can be served stale.

use std::collections::HashMap;

use bytes::Bytes;
use parking_lot::Mutex;

/// One discovery document: the path segments and whether the aggregated form was asked for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DiscoveryKey {
    pub segments: Vec<String>,
    pub aggregated: bool,
}

/// A rendered document, or `None` for a path that names nothing (404).
#[derive(Clone, Debug)]
pub struct Rendered {
    pub body: Option<Bytes>,
    pub content_type: &'static str,
}

/// Bounds the cache: a client probing made-up group names must not grow it without limit.
const MAX_ENTRIES: usize = 512;

#[derive(Debug, Default)]
pub struct DiscoveryCache {
    entries: Mutex<HashMap<DiscoveryKey, Rendered>>,
}

/// A copy of a snapshot starts with an empty cache: cheap, and never wrong.
impl Clone for DiscoveryCache {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl DiscoveryCache {
    /// The cached document of `key`, rendering (and keeping) it on a miss.
    pub fn get_or_render(&self, key: DiscoveryKey, render: impl FnOnce() -> Rendered) -> Rendered {
        if let Some(hit) = self.entries.lock().get(&key) {
            return hit.clone();
        }
        // Rendered outside the lock: two racing misses render twice, which is harmless.
        let rendered = render();
        let mut entries = self.entries.lock();
        if entries.len() < MAX_ENTRIES {
            entries.insert(key, rendered.clone());
        }
        rendered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn key(path: &str) -> DiscoveryKey {
        DiscoveryKey {
            segments: path.split('/').map(String::from).collect(),
            aggregated: false,
        }
    }

    #[test]
    fn renders_once_per_document_and_copies_start_empty() {
        let cache = DiscoveryCache::default();
        let renders = Cell::new(0);
        let render = |text: &'static str| {
            renders.set(renders.get() + 1);
            Rendered {
                body: Some(Bytes::from_static(text.as_bytes())),
                content_type: "application/json",
            }
        };
        for _ in 0..3 {
            let got = cache.get_or_render(key("apis"), || render("groups"));
            assert_eq!(got.body.as_deref(), Some(&b"groups"[..]));
        }
        assert_eq!(renders.get(), 1);
        cache.get_or_render(key("api"), || render("core"));
        assert_eq!(renders.get(), 2);
        let copy = cache.clone();
        let got = copy.get_or_render(key("apis"), || render("new groups"));
        assert_eq!(got.body.as_deref(), Some(&b"new groups"[..]));
        assert_eq!(renders.get(), 3);
    }
}
