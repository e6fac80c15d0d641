//! Events as Karmada records them: core/v1 Events on templates, bindings and Works, so `kubectl describe` and
//! `kubectl get events` show them. Repeats of the same (object, type, reason, message) bump `count` and
//! `lastTimestamp` on the existing Event instead of creating a new one, like client-go's correlator.
//!
//! Recording never fails or slows a reconcile: `record` stamps the event and hands it to a background writer over
//! a bounded channel; when the channel is full the event is dropped (events are best effort, as in client-go).
//! The writer gathers what arrives within [`GATHER`] of the first event and writes it as one burst: the burst's
//! new Events in one request (`POST /api/v1/events` with an `EventList`, our API server's extension, see
//! `karmada_apiserver::handlers::event_list`), then its repeats, up to [`IN_FLIGHT`] requests at once (repeats of
//! one event in order). Why: a reconcile's events come one or two at a time, and written one request each they
//! were 40 % of the API's requests at a trickle, each paying a round trip, routing and the wake-ups between them.
//! A server without the extension (kube-apiserver answers 405), or one that forbids this client the
//! cluster-wide path (403: an agent's Events are allowed in its execution namespace only), gets one create per
//! Event from then on. The writer
//! task ends when the last clone of the recorder is dropped, after writing what it holds.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Patch, PatchParams, PostParams};
use tokio::sync::Mutex;
use tokio::sync::mpsc::Receiver;

/// Event type: Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Bound on the remembered events; when full the memory is cleared (a repeat then creates a fresh Event).
const REMEMBERED: usize = 4096;

/// A hash of (involved object's uid, type, reason, message): the texts themselves (messages run to hundreds of
/// bytes) would make the memory of 4,096 events a few MiB. Two events hashing alike would only share a count.
type Key = u64;

/// Events waiting to be written, per recorder.
const PENDING: usize = 1024;

/// How long the writer waits, after an event arrives, for more to write with it. Events are read by people, a
/// tenth of a second late is invisible to them.
pub const GATHER: Duration = Duration::from_millis(100);

/// Most events one burst holds.
const BURST: usize = 256;

/// Most requests of one burst in flight at once.
pub const IN_FLIGHT: usize = 4;

struct Pending {
    object: ObjectReference,
    event_type: EventType,
    reason: String,
    message: String,
    /// When it happened: its first or last timestamp, whenever it is written.
    at: Time,
}

/// Records Events for one component (e.g. `resource-detector`, `default-scheduler`).
#[derive(Clone)]
pub struct EventRecorder {
    sender: tokio::sync::mpsc::Sender<Pending>,
}

/// Writes the events one recorder queued.
struct Writer {
    client: kube::Client,
    component: String,
    seen: Mutex<HashMap<Key, (String, i32)>>,
    keys: RandomState,
    /// Cleared when the server refuses a list create: each Event is then created on its own.
    lists_accepted: AtomicBool,
}

impl EventRecorder {
    /// Must be called inside a tokio runtime: it starts the recorder's writer task.
    pub fn new(client: kube::Client, component: impl Into<String>) -> Self {
        let (sender, receiver) = tokio::sync::mpsc::channel::<Pending>(PENDING);
        let writer = Writer {
            client,
            component: component.into(),
            seen: Mutex::default(),
            keys: RandomState::new(),
            lists_accepted: AtomicBool::new(true),
        };
        tokio::spawn(writer.run(receiver));
        Self { sender }
    }

    /// Queues an event on `object` (its namespace decides where the Event lives; cluster-scoped objects get
    /// theirs in `default`, as Kubernetes does).
    pub async fn record(
        &self,
        object: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        let pending = Pending {
            object: object.clone(),
            event_type,
            reason: reason.to_string(),
            message: message.to_string(),
            at: Time(Timestamp::now()),
        };
        if self.sender.try_send(pending).is_err() {
            tracing::debug!(reason, "event dropped: the recorder is behind");
        }
    }
}

impl Writer {
    async fn run(self, mut receiver: Receiver<Pending>) {
        while let Some(first) = receiver.recv().await {
            let deadline = tokio::time::Instant::now() + GATHER;
            let mut burst = vec![first];
            while burst.len() < BURST {
                match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Ok(Some(event)) => burst.push(event),
                    // Closed (write what is held, then the outer loop ends) or the window is over.
                    Ok(None) | Err(_) => break,
                }
            }
            self.write_burst(burst).await;
        }
    }

    /// Writes a burst: one sequence per correlation key, so a repeat patches the Event its first occurrence
    /// created. The first occurrences of keys not seen before are created together in one list; then the
    /// sequences' remaining events are written side by side.
    async fn write_burst(&self, burst: Vec<Pending>) {
        let mut sequences: Vec<(Key, Vec<Pending>)> = Vec::new();
        for event in burst {
            let key = self.key(&event);
            match sequences.iter_mut().find(|(k, _)| *k == key) {
                Some((_, sequence)) => sequence.push(event),
                None => sequences.push((key, vec![event])),
            }
        }
        let mut sequences: Vec<(Key, &[Pending])> = sequences
            .iter()
            .map(|(key, sequence)| (*key, sequence.as_slice()))
            .collect();
        if self.lists_accepted.load(Ordering::Relaxed) {
            self.create_firsts_together(&mut sequences).await;
        }
        futures::stream::iter(sequences)
            .for_each_concurrent(IN_FLIGHT, |(key, sequence)| async move {
                for event in sequence {
                    if let Err(err) = self.write(key, event).await {
                        tracing::debug!(%err, reason = event.reason, "recording event");
                    }
                }
            })
            .await;
    }

    /// Creates, in one list, the first event of each sequence whose key has no Event yet (when there are two
    /// or more), and drops each created one from its sequence. On a server without list creates, leaves the
    /// sequences whole for one create each and remembers not to ask again.
    async fn create_firsts_together<'a>(&self, sequences: &mut [(Key, &'a [Pending])]) {
        // (position of the sequence, its first event) for the keys without an Event yet.
        let firsts: Vec<(usize, &'a Pending)> = {
            let seen = self.seen.lock().await;
            sequences
                .iter()
                .enumerate()
                .filter(|(_, (key, _))| !seen.contains_key(key))
                .filter_map(|(index, (_, sequence))| {
                    let sequence: &'a [Pending] = sequence;
                    Some((index, sequence.first()?))
                })
                .collect()
        };
        if firsts.len() < 2 {
            return;
        }
        let (names, items): (Vec<String>, Vec<Event>) = firsts
            .iter()
            .map(|(_, event)| self.new_event(event))
            .unzip();
        let refused = match self.create_list(items).await {
            ListOutcome::Created { refused } => refused,
            ListOutcome::Unsupported => {
                self.lists_accepted.store(false, Ordering::Relaxed);
                return;
            }
            ListOutcome::Failed => vec![true; firsts.len()],
        };
        let mut seen = self.seen.lock().await;
        for (((index, _), name), refused) in firsts.into_iter().zip(names).zip(refused) {
            let Some((key, sequence)) = sequences.get_mut(index) else {
                continue;
            };
            // A refused first is dropped like a failed create; its repeats then try a create of their own.
            *sequence = sequence.get(1..).unwrap_or_default();
            if !refused {
                remember(&mut seen, *key, name);
            }
        }
    }

    /// One `POST /api/v1/events` of `items`: which of them the server refused, by position.
    async fn create_list(&self, items: Vec<Event>) -> ListOutcome {
        let count = items.len();
        let list = serde_json::json!({"kind": "EventList", "apiVersion": "v1", "items": items});
        let request = serde_json::to_vec(&list)
            .map_err(kube::Error::SerdeError)
            .and_then(|body| {
                kube::core::Request::new("/api/v1/events")
                    .create(&PostParams::default(), body)
                    .map_err(kube::Error::BuildRequest)
            });
        let outcome = match request {
            Ok(request) => self.client.request_text(request).await,
            Err(err) => Err(err),
        };
        match outcome {
            Ok(_) => ListOutcome::Created {
                refused: vec![false; count],
            },
            Err(kube::Error::Api(status)) => {
                let refused = refused_items(&status, count);
                match refused {
                    Some(refused) => {
                        tracing::debug!(message = status.message, "some events were refused");
                        ListOutcome::Created { refused }
                    }
                    // Not served (kube-apiserver: 405), or not allowed to this client (an agent may create
                    // Events only in its execution namespace): each Event on its own then.
                    None if matches!(status.code, 400 | 403 | 404 | 405) => {
                        ListOutcome::Unsupported
                    }
                    None => {
                        tracing::debug!(message = status.message, "recording events");
                        ListOutcome::Failed
                    }
                }
            }
            Err(err) => {
                tracing::debug!(%err, "recording events");
                ListOutcome::Failed
            }
        }
    }

    fn key(&self, event: &Pending) -> Key {
        self.keys.hash_one((
            event.object.uid.as_deref(),
            event.event_type.as_str(),
            &event.reason,
            &event.message,
        ))
    }

    /// Creates the Event, or counts a repeat on the one already written. The answers are not decoded: only
    /// their status matters here.
    async fn write(&self, key: Key, event: &Pending) -> Result<(), kube::Error> {
        let events =
            kube::core::Request::new(format!("/api/v1/namespaces/{}/events", namespace_of(event)));
        let previous = self.seen.lock().await.get(&key).cloned();
        if let Some((name, count)) = previous {
            let patch = serde_json::json!({"count": count + 1, "lastTimestamp": event.at});
            let request = events
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .map_err(kube::Error::BuildRequest)?;
            match self.client.request_text(request).await {
                Ok(_) => {
                    self.seen.lock().await.insert(key, (name, count + 1));
                    return Ok(());
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => return Err(err),
            }
        }
        let (name, body) = self.new_event(event);
        let body = serde_json::to_vec(&body).map_err(kube::Error::SerdeError)?;
        let request = events
            .create(&PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        self.client.request_text(request).await?;
        remember(&mut *self.seen.lock().await, key, name);
        Ok(())
    }

    /// A new Event for `event` and its name: the object's name and the time in nanoseconds.
    fn new_event(&self, event: &Pending) -> (String, Event) {
        let object_name = event.object.name.clone().unwrap_or_default();
        let name = format!(
            "{object_name}.{:x}",
            event.at.0.as_nanosecond().unsigned_abs()
        );
        let body = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace_of(event)),
                ..Default::default()
            },
            involved_object: event.object.clone(),
            type_: Some(event.event_type.as_str().to_string()),
            reason: Some(event.reason.clone()),
            message: Some(event.message.clone()),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            first_timestamp: Some(event.at.clone()),
            last_timestamp: Some(event.at.clone()),
            count: Some(1),
            ..Default::default()
        };
        (name, body)
    }
}

/// Notes the Event `name` created for `key`, so its repeats patch it; a full memory starts over.
fn remember(seen: &mut HashMap<Key, (String, i32)>, key: Key, name: String) {
    if seen.len() >= REMEMBERED {
        seen.clear();
    }
    seen.insert(key, (name, 1));
}

/// Where an Event on the object lives: its namespace, `default` for cluster-scoped objects.
fn namespace_of(event: &Pending) -> String {
    event
        .object
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_string())
}

/// How a list create went.
enum ListOutcome {
    /// The server took the list; `refused[i]` tells whether item `i` was not created.
    Created { refused: Vec<bool> },
    /// The server has no list create, or this client may not use it: write each Event on its own.
    Unsupported,
    /// The request failed as a whole (transport, server error): none was created.
    Failed,
}

/// The refused items a list create's error names (`details.causes[].field` = `items[i]`), or `None` when the
/// error does not speak of items (the server refused the request itself).
fn refused_items(status: &kube::core::Status, count: usize) -> Option<Vec<bool>> {
    let causes = &status.details.as_ref()?.causes;
    let mut refused = vec![false; count];
    let mut any = false;
    for cause in causes {
        let index = cause
            .field
            .strip_prefix("items[")
            .and_then(|rest| rest.strip_suffix(']'))
            .and_then(|index| index.parse::<usize>().ok());
        if let Some(flag) = index.and_then(|index| refused.get_mut(index)) {
            *flag = true;
            any = true;
        }
    }
    any.then_some(refused)
}

/// The reference of a dynamic object for [`EventRecorder::record`].
pub fn reference_of(object: &kube::api::DynamicObject) -> ObjectReference {
    ObjectReference {
        api_version: object.types.as_ref().map(|t| t.api_version.clone()),
        kind: object.types.as_ref().map(|t| t.kind.clone()),
        name: object.metadata.name.clone(),
        namespace: object.metadata.namespace.clone(),
        uid: object.metadata.uid.clone(),
        resource_version: object.metadata.resource_version.clone(),
        field_path: None,
    }
}
