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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::compact::{CompactObject, Packer};

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
    pub store: Store<CompactObject>,
    pub events: BoxStream<'static, Event<CompactObject>>,
}

struct Informer {
    store: Store<CompactObject>,
    fan_out: Mutex<FanOut>,
    /// Fired when the last subscription is dropped; ends the watch.
    stop: CancellationToken,
}

struct FanOut {
    writer: Writer<CompactObject>,
    subscribers: Vec<mpsc::Sender<Event<CompactObject>>>,
    phase: Phase,
    live: usize,
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

    /// Subscribes to the watch of `api` with `config`, starting it when nobody watches it yet. The watch
    /// runs on the current Tokio runtime until every subscription is dropped.
    pub fn subscribe(
        &self,
        api: kube::Api<DynamicObject>,
        resource: &ApiResource,
        config: watcher::Config,
    ) -> Subscription {
        let key = format!(
            "{}?labels={:?}&fields={:?}",
            api.resource_url(),
            config.label_selector,
            config.field_selector
        );
        let informer = {
            let mut running = lock(&self.running);
            match running.get(&key) {
                Some(informer) if !informer.stop.is_cancelled() => informer.clone(),
                _ => {
                    let informer = Informer::start(api, resource, config);
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

impl Informer {
    fn start(
        api: kube::Api<DynamicObject>,
        resource: &ApiResource,
        config: watcher::Config,
    ) -> Arc<Self> {
        let writer = Writer::new(resource.clone());
        let informer = Arc::new(Self {
            store: writer.as_reader(),
            fan_out: Mutex::new(FanOut {
                writer,
                subscribers: Vec::new(),
                phase: Phase::Unlisted,
                live: 0,
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
        }
    }

    async fn run(
        self: Arc<Self>,
        events: impl Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Send,
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
        fan_out.writer.apply_watcher_event(event);
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
