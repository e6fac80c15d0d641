//! Events as Karmada records them: core/v1 Events on templates, bindings and Works, so `kubectl describe` and
//! `kubectl get events` show them. Repeats of the same (object, type, reason, message) bump `count` and
//! `lastTimestamp` on the existing Event instead of creating a new one, like client-go's correlator.
//!
//! Recording never fails or slows a reconcile: `record` hands the event to a background writer over a bounded
//! channel and returns; when the channel is full the event is dropped (events are best effort, as in client-go).
//! The writer task ends when the last clone of the recorder is dropped.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::Mutex;

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

struct Pending {
    object: ObjectReference,
    event_type: EventType,
    reason: String,
    message: String,
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
    seen: Arc<Mutex<HashMap<Key, (String, i32)>>>,
    keys: RandomState,
}

impl EventRecorder {
    /// Must be called inside a tokio runtime: it starts the recorder's writer task.
    pub fn new(client: kube::Client, component: impl Into<String>) -> Self {
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<Pending>(PENDING);
        let writer = Writer {
            client,
            component: component.into(),
            seen: Arc::default(),
            keys: RandomState::new(),
        };
        tokio::spawn(async move {
            while let Some(event) = receiver.recv().await {
                writer
                    .record(
                        &event.object,
                        event.event_type,
                        &event.reason,
                        &event.message,
                    )
                    .await;
            }
        });
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
        };
        if self.sender.try_send(pending).is_err() {
            tracing::debug!(reason, "event dropped: the recorder is behind");
        }
    }
}

impl Writer {
    async fn record(
        &self,
        object: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        if let Err(err) = self.try_record(object, event_type, reason, message).await {
            tracing::debug!(%err, reason, "recording event");
        }
    }

    async fn try_record(
        &self,
        object: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) -> Result<(), kube::Error> {
        let namespace = object
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string());
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let now = Time(Timestamp::now());
        let key: Key =
            self.keys
                .hash_one((object.uid.as_deref(), event_type.as_str(), reason, message));
        let previous = self.seen.lock().await.get(&key).cloned();
        if let Some((name, count)) = previous {
            let patch = serde_json::json!({"count": count + 1, "lastTimestamp": now});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.seen.lock().await.insert(key, (name, count + 1));
                    return Ok(());
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => return Err(err),
            }
        }
        let object_name = object.name.clone().unwrap_or_default();
        let name = format!("{object_name}.{:x}", now.0.as_nanosecond().unsigned_abs());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
                ..Default::default()
            },
            involved_object: object.clone(),
            type_: Some(event_type.as_str().to_string()),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            ..Default::default()
        };
        api.create(&PostParams::default(), &event).await?;
        let mut seen = self.seen.lock().await;
        if seen.len() >= REMEMBERED {
            seen.clear();
        }
        seen.insert(key, (name, 1));
        Ok(())
    }
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
