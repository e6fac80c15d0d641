//! One watch and one cache per resource, shared by every controller of a process.
//!
//! Why: the binding, execution, work-status and binding-status controllers all read every Work; with a watch
//! and a cache each, the controller-manager decoded each Work event four times and held four copies of every
//! Work. An [`Informers`] registry hands each controller a [`Subscription`]: the shared cache (compact objects,
//! see [`super::compact`]) and its own stream of watch events. The cache is updated before any subscriber
//! sees the event, so a controller woken by an event reads at least that state.
//!
//! A subscriber that arrives after the watch started first receives what it missed as a relist (`Init`,
//! `InitApply` for every object, `InitDone`), so each subscriber sees the same event grammar as a watcher of
//! its own. The watch stops once every subscription is dropped; the next subscriber starts a new one.
//!
//! One registry serves one API server: watches are told apart by URL and selectors, not by client, so a
//! member cluster's watches do not belong in the control plane's registry.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::cache::{Cache, CacheWriter};
use super::compact::{CompactObject, Packer};
use super::raw::RawObject;
use super::runner::ObjectKey;

/// Events buffered per subscriber before the watch waits for it (backpressure, not growth).
const SUBSCRIBER_CAPACITY: usize = 256;

/// The shared watches of one process; cheap to clone. `Informers::default()` is a private registry (a
/// controller run on its own, as in tests, gets watches of its own).
#[derive(Clone, Default)]
pub struct Informers {
    running: Arc<Mutex<HashMap<String, Arc<Informer>>>>,
}

/// A controller's view of a shared watch: the cache, and the events in the order the cache saw them.
pub struct Subscription {
    pub store: Cache,
    pub events: BoxStream<'static, Event<CompactObject>>,
    informer: Arc<Informer>,
}

impl Subscription {
    /// The watch's objects by the value of `label`, kept current with the cache. Indexes are shared: every
    /// subscriber asking for the same label gets the same one.
    pub fn label_index(&self, label: &str) -> LabelIndex {
        let mut fan_out = lock(&self.informer.fan_out);
        if let Some(index) = fan_out.indexes.iter().find(|index| index.label == label) {
            return index.clone();
        }
        let index = LabelIndex {
            label: label.to_string(),
            store: self.informer.store.clone(),
            entries: Arc::default(),
        };
        index.rebuild();
        fan_out.indexes.push(index.clone());
        index
    }
}

/// The objects of one shared watch by the value of one label (say, the Works of a binding by its permanent
/// id), so a reconcile reads its few objects instead of scanning the whole cache — a scan per reconcile makes a
/// burst quadratic. The index changes under the same lock as the cache, before any subscriber hears of the
/// change, and lookups re-check the label against the cached object.
#[derive(Clone)]
pub struct LabelIndex {
    label: String,
    store: Cache,
    entries: Arc<RwLock<IndexEntries>>,
}

/// Label value → (namespace, name) of the objects carrying it.
type IndexEntries = HashMap<String, HashSet<(Option<String>, String)>>;

impl LabelIndex {
    /// The cached objects whose label has `value`.
    pub fn get(&self, value: &str) -> Vec<Arc<CompactObject>> {
        let keys: Vec<(Option<String>, String)> = self
            .entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default();
        keys.into_iter()
            .filter_map(|(namespace, name)| self.store.get_named(namespace.as_deref(), &name))
            .filter(|object| self.value_of(object) == Some(value))
            .collect()
    }

    fn value_of<'a>(&self, object: &'a CompactObject) -> Option<&'a str> {
        object.label(&self.label)
    }

    fn key_of(object: &CompactObject) -> (Option<String>, String) {
        let metadata = object.metadata();
        (
            metadata.namespace().map(str::to_string),
            metadata.name().to_string(),
        )
    }

    /// Moves an object's entry from its cached version (`old`) to its new one (`None` once deleted).
    fn replace(&self, old: Option<&CompactObject>, new: Option<&CompactObject>) {
        let (old_value, new_value) = (
            old.and_then(|o| self.value_of(o)),
            new.and_then(|o| self.value_of(o)),
        );
        if old_value.is_none() && new_value.is_none() {
            return;
        }
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        if let (Some(value), Some(old)) = (old_value, old)
            && let Some(keys) = entries.get_mut(value)
        {
            keys.remove(&Self::key_of(old));
            if keys.is_empty() {
                entries.remove(value);
            }
        }
        if let (Some(value), Some(new)) = (new_value, new) {
            entries
                .entry(value.to_string())
                .or_default()
                .insert(Self::key_of(new));
        }
    }

    /// Recomputes the index from the cache (after a relist replaced it).
    fn rebuild(&self) {
        let mut rebuilt = IndexEntries::new();
        for object in self.store.state() {
            if let Some(value) = self.value_of(&object) {
                rebuilt
                    .entry(value.to_string())
                    .or_default()
                    .insert(Self::key_of(&object));
            }
        }
        *self.entries.write().unwrap_or_else(PoisonError::into_inner) = rebuilt;
    }
}

struct Informer {
    store: Cache,
    fan_out: Mutex<FanOut>,
    /// Fired when the last subscription is dropped; ends the watch.
    stop: CancellationToken,
}

struct FanOut {
    writer: CacheWriter,
    subscribers: Vec<mpsc::Sender<Event<CompactObject>>>,
    phase: Phase,
    live: usize,
    indexes: Vec<LabelIndex>,
}

/// Where the watch is in its list/watch cycle, for replaying to late subscribers.
enum Phase {
    /// No list started yet: a new subscriber will see the first one live.
    Unlisted,
    /// A list is in progress; the objects listed so far.
    Listing(Vec<CompactObject>),
    /// The cache holds a complete list.
    Listed,
}

/// Keeps its watch running while alive.
struct Lease {
    informer: Arc<Informer>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut fan_out = lock(&self.informer.fan_out);
        fan_out.live = fan_out.live.saturating_sub(1);
        if fan_out.live == 0 {
            self.informer.stop.cancel();
        }
    }
}

impl Informers {
    /// How many watches are running (shared ones count once).
    pub fn watching(&self) -> usize {
        lock(&self.running)
            .values()
            .filter(|informer| !informer.stop.is_cancelled())
            .count()
    }

    /// The cache of a running, listed watch of every object of `api` (no selectors), if another controller of
    /// the process keeps one: read what is already watched without starting a watch. `None` means "ask the API
    /// server".
    pub fn cached(&self, api: &kube::Api<RawObject>) -> Option<Cache> {
        let key = watch_key(api, &watcher::Config::default());
        let informer = lock(&self.running).get(&key).cloned()?;
        let listed =
            !informer.stop.is_cancelled() && matches!(lock(&informer.fan_out).phase, Phase::Listed);
        listed.then(|| informer.store.clone())
    }

    /// Subscribes to the watch of `api` with `config`, starting it when nobody watches it yet. The watch
    /// runs on the current Tokio runtime until every subscription is dropped.
    pub fn subscribe(&self, api: kube::Api<RawObject>, config: watcher::Config) -> Subscription {
        let key = watch_key(&api, &config);
        let informer = {
            let mut running = lock(&self.running);
            match running.get(&key) {
                Some(informer) if !informer.stop.is_cancelled() => informer.clone(),
                _ => {
                    let informer = Informer::start(api, config);
                    running.insert(key.clone(), informer.clone());
                    let registry = self.running.clone();
                    let stopped = informer.clone();
                    tokio::spawn(async move {
                        stopped.stop.cancelled().await;
                        let mut running = lock(&registry);
                        if running
                            .get(&key)
                            .is_some_and(|current| Arc::ptr_eq(current, &stopped))
                        {
                            running.remove(&key);
                        }
                    });
                    informer
                }
            }
        };
        informer.subscribe()
    }
}

/// What tells shared watches apart: the URL and the selectors.
fn watch_key(api: &kube::Api<RawObject>, config: &watcher::Config) -> String {
    format!(
        "{}?labels={:?}&fields={:?}",
        api.resource_url(),
        config.label_selector,
        config.field_selector
    )
}

impl Informer {
    fn start(api: kube::Api<RawObject>, config: watcher::Config) -> Arc<Self> {
        let writer = CacheWriter::new();
        let informer = Arc::new(Self {
            store: writer.as_reader(),
            fan_out: Mutex::new(FanOut {
                writer,
                subscribers: Vec::new(),
                phase: Phase::Unlisted,
                live: 0,
                indexes: Vec::new(),
            }),
            stop: CancellationToken::new(),
        });
        let events = watcher::watcher(api, config).default_backoff();
        tokio::spawn(informer.clone().run(events));
        informer
    }

    fn subscribe(self: Arc<Self>) -> Subscription {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_CAPACITY);
        let replay = {
            let mut fan_out = lock(&self.fan_out);
            fan_out.live += 1;
            fan_out.subscribers.push(tx);
            match &fan_out.phase {
                Phase::Unlisted => Vec::new(),
                Phase::Listing(listed) => std::iter::once(Event::Init)
                    .chain(listed.iter().cloned().map(Event::InitApply))
                    .collect(),
                Phase::Listed => std::iter::once(Event::Init)
                    .chain(
                        self.store
                            .state()
                            .iter()
                            .map(|object| Event::InitApply(CompactObject::clone(object))),
                    )
                    .chain(std::iter::once(Event::InitDone))
                    .collect(),
            }
        };
        let lease = Lease {
            informer: self.clone(),
        };
        let live = stream::unfold((rx, lease), |(mut rx, lease)| async move {
            rx.recv().await.map(|event| (event, (rx, lease)))
        });
        Subscription {
            store: self.store.clone(),
            events: stream::iter(replay).chain(live).boxed(),
            informer: self.clone(),
        }
    }

    async fn run(
        self: Arc<Self>,
        events: impl Stream<Item = Result<Event<RawObject>, watcher::Error>> + Send,
    ) {
        let mut events = std::pin::pin!(events);
        let mut packer = Packer::default();
        loop {
            let event = tokio::select! {
                () = self.stop.cancelled() => return,
                event = events.next() => event,
            };
            let event = match event {
                None => return,
                Some(Err(err)) => {
                    tracing::debug!(%err, "shared watch failed; retrying");
                    continue;
                }
                Some(Ok(event)) => match packer.event(event) {
                    Ok(event) => event,
                    Err(err) => {
                        tracing::warn!(%err, "shared watch: event not cached");
                        continue;
                    }
                },
            };
            let subscribers = self.apply(&event);
            for subscriber in subscribers {
                // A closed subscriber is pruned on the next apply.
                tokio::select! {
                    () = self.stop.cancelled() => return,
                    _ = subscriber.send(event.clone()) => {}
                }
            }
        }
    }

    /// Updates the cache and the replay phase; returns who to tell.
    fn apply(&self, event: &Event<CompactObject>) -> Vec<mpsc::Sender<Event<CompactObject>>> {
        let mut fan_out = lock(&self.fan_out);
        if let Event::Apply(object) | Event::Delete(object) = event
            && !fan_out.indexes.is_empty()
        {
            let old = self.store.get_key(&ObjectKey::of(object));
            let new = matches!(event, Event::Apply(_)).then_some(object);
            for index in &fan_out.indexes {
                index.replace(old.as_deref(), new);
            }
        }
        fan_out.writer.apply_watcher_event(event);
        if matches!(event, Event::InitDone) {
            for index in &fan_out.indexes {
                index.rebuild();
            }
        }
        match event {
            Event::Init => fan_out.phase = Phase::Listing(Vec::new()),
            Event::InitApply(object) => {
                if let Phase::Listing(listed) = &mut fan_out.phase {
                    listed.push(object.clone());
                }
            }
            Event::InitDone => fan_out.phase = Phase::Listed,
            Event::Apply(_) | Event::Delete(_) => {}
        }
        fan_out.subscribers.retain(|s| !s.is_closed());
        fan_out.subscribers.clone()
    }
}

/// A poisoned lock only means another thread panicked mid-update of plain bookkeeping; carry on with it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
