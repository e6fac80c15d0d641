//! The cache of one watch of compact objects, keyed by namespace and name.
//!
//! Why not kube-runtime's `Store`: it keys every object by a full `ObjectRef` — the kind's five strings
//! (group, version, apiVersion, kind, plural), name, namespace, uid and resourceVersion — about 400 bytes per
//! cached object with its table slot, for a kind every object of the watch shares. The controller-manager
//! caches a template, a binding, a Work per member and a member object per member for every workload. Here
//! the table holds only a pointer to each object and finds it by the object's own namespace and name: no key
//! is stored beside it.
//!
//! Same semantics as kube-runtime's reflector: a relist (`Init` … `InitDone`) is buffered and replaces the
//! cache at once, so readers never see a half-listed cache; the cache is ready once the first list is in.

use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use kube::runtime::watcher::Event;
use tokio::sync::watch;

use super::CompactObject;
use super::runner::ObjectKey;

/// The objects of a cache, found by the namespace and name in their own metadata.
#[derive(Default)]
struct Objects {
    table: HashTable<Arc<CompactObject>>,
    hasher: RandomState,
}

fn identity(object: &CompactObject) -> (Option<&str>, &str) {
    let metadata = object.metadata();
    (metadata.namespace(), metadata.name())
}

impl Objects {
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<&Arc<CompactObject>> {
        let hash = self.hasher.hash_one((namespace, name));
        self.table.find(hash, |o| identity(o) == (namespace, name))
    }

    fn insert(&mut self, object: &CompactObject) {
        let Self { table, hasher } = self;
        let key = identity(object);
        let hash = hasher.hash_one(key);
        match table.entry(
            hash,
            |o| identity(o) == key,
            |o| hasher.hash_one(identity(o)),
        ) {
            Entry::Occupied(mut entry) => *entry.get_mut() = Arc::new(object.clone()),
            Entry::Vacant(entry) => {
                entry.insert(Arc::new(object.clone()));
            }
        }
    }

    fn remove(&mut self, object: &CompactObject) {
        let key = identity(object);
        let hash = self.hasher.hash_one(key);
        if let Ok(entry) = self.table.find_entry(hash, |o| identity(o) == key) {
            entry.remove();
        }
        // Give back what a burst grew the table to once most of it is gone.
        if self.table.capacity() > 64 && self.table.len() * 4 < self.table.capacity() {
            let hasher = &self.hasher;
            self.table.shrink_to_fit(|o| hasher.hash_one(identity(o)));
        }
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.table.capacity()
    }
}

/// Read access to a cache; cheap to clone (every clone reads the same cache).
#[derive(Clone)]
pub struct Cache {
    objects: Arc<RwLock<Objects>>,
    ready: watch::Receiver<bool>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("objects", &self.len())
            .field("ready", &self.is_ready())
            .finish()
    }
}

impl Cache {
    fn read(&self) -> RwLockReadGuard<'_, Objects> {
        // A poisoned lock only means a writer panicked between whole-map updates; the map is consistent.
        self.objects.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The object named `name` in `namespace` (`None` for cluster-scoped objects).
    pub fn get_named(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CompactObject>> {
        self.read().get(namespace, name).cloned()
    }

    pub fn get_key(&self, key: &ObjectKey) -> Option<Arc<CompactObject>> {
        self.get_named(key.namespace.as_deref(), &key.name)
    }

    /// Every cached object, in no particular order.
    pub fn state(&self) -> Vec<Arc<CompactObject>> {
        self.read().table.iter().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the first full list is in.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits for the first full list; `Err` when the writer was dropped before it.
    pub async fn wait_until_ready(&self) -> Result<(), CacheClosed> {
        let mut ready = self.ready.clone();
        ready
            .wait_for(|ready| *ready)
            .await
            .map(|_| ())
            .map_err(|_| CacheClosed)
    }
}

/// The cache's writer went away before its first list.
#[derive(Debug, thiserror::Error)]
#[error("the cache's watch stopped before its first list")]
pub struct CacheClosed;

/// Applies watch events to a [`Cache`].
pub struct CacheWriter {
    objects: Arc<RwLock<Objects>>,
    ready: watch::Sender<bool>,
    /// Objects of a relist in progress; they replace the cache at `InitDone`.
    listing: Option<Objects>,
}

impl Default for CacheWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl CacheWriter {
    pub fn new() -> Self {
        let (ready, _) = watch::channel(false);
        Self {
            objects: Arc::default(),
            ready,
            listing: None,
        }
    }

    pub fn as_reader(&self) -> Cache {
        Cache {
            objects: self.objects.clone(),
            ready: self.ready.subscribe(),
        }
    }

    pub fn apply_watcher_event(&mut self, event: &Event<CompactObject>) {
        match event {
            Event::Apply(object) => self.write().insert(object),
            Event::Delete(object) => self.write().remove(object),
            Event::Init => self.listing = Some(Objects::default()),
            Event::InitApply(object) => {
                self.listing
                    .get_or_insert_with(Objects::default)
                    .insert(object);
            }
            Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                *self.write() = listed;
                self.ready.send_replace(true);
            }
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Objects> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;

    use super::*;

    fn object(namespace: Option<&str>, name: &str, version: &str) -> CompactObject {
        let resource = crate::runtime::resources::work();
        let mut object = DynamicObject::new(name, &resource);
        object.metadata.namespace = namespace.map(str::to_string);
        object.metadata.resource_version = Some(version.to_string());
        CompactObject::from_dynamic(&object).expect("compact")
    }

    fn version(cache: &Cache, namespace: Option<&str>, name: &str) -> Option<String> {
        cache
            .get_named(namespace, name)
            .and_then(|o| o.metadata().resource_version.as_deref().map(str::to_string))
    }

    #[test]
    fn applies_and_deletes_by_namespace_and_name() {
        let mut writer = CacheWriter::new();
        let cache = writer.as_reader();
        writer.apply_watcher_event(&Event::Apply(object(Some("a"), "x", "1")));
        writer.apply_watcher_event(&Event::Apply(object(Some("b"), "x", "2")));
        writer.apply_watcher_event(&Event::Apply(object(None, "x", "3")));
        assert_eq!(version(&cache, Some("a"), "x").as_deref(), Some("1"));
        assert_eq!(version(&cache, Some("b"), "x").as_deref(), Some("2"));
        assert_eq!(version(&cache, None, "x").as_deref(), Some("3"));
        writer.apply_watcher_event(&Event::Apply(object(Some("a"), "x", "4")));
        assert_eq!(version(&cache, Some("a"), "x").as_deref(), Some("4"));
        writer.apply_watcher_event(&Event::Delete(object(Some("a"), "x", "5")));
        assert_eq!(version(&cache, Some("a"), "x"), None);
        assert_eq!(cache.len(), 2);
    }

    #[tokio::test]
    async fn a_relist_replaces_the_cache_at_once_and_makes_it_ready() {
        let mut writer = CacheWriter::new();
        let cache = writer.as_reader();
        assert!(!cache.is_ready());
        writer.apply_watcher_event(&Event::Apply(object(Some("a"), "gone", "1")));
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitApply(object(Some("a"), "kept", "2")));
        // Mid-list, readers still see the previous state.
        assert_eq!(version(&cache, Some("a"), "gone").as_deref(), Some("1"));
        assert_eq!(version(&cache, Some("a"), "kept"), None);
        writer.apply_watcher_event(&Event::InitDone);
        assert_eq!(version(&cache, Some("a"), "gone"), None);
        assert_eq!(version(&cache, Some("a"), "kept").as_deref(), Some("2"));
        cache.wait_until_ready().await.expect("ready");
        assert!(cache.is_ready());
    }

    #[tokio::test]
    async fn waiting_for_a_cache_whose_writer_is_gone_fails() {
        let writer = CacheWriter::new();
        let cache = writer.as_reader();
        drop(writer);
        assert!(cache.wait_until_ready().await.is_err());
    }

    #[test]
    fn deleting_most_of_a_burst_gives_its_room_back() {
        let mut writer = CacheWriter::new();
        let names: Vec<String> = (0..5000).map(|i| format!("o{i}")).collect();
        for name in &names {
            writer.apply_watcher_event(&Event::Apply(object(Some("a"), name, "1")));
        }
        let grown = writer.write().capacity();
        for name in &names[10..] {
            writer.apply_watcher_event(&Event::Delete(object(Some("a"), name, "2")));
        }
        let capacity = writer.write().capacity();
        assert!(capacity * 8 < grown, "{capacity} of {grown} kept");
        assert_eq!(writer.as_reader().len(), 10);
    }
}
