//! Plumbing shared by the propagation controllers (binding, execution, work status): caches fed by watches,
//! bounded requeue channels between controllers, and per-object retry backoff.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector};
use tokio_util::sync::CancellationToken;

use crate::runtime::CompactObject;

/// Capacity of every requeue channel: a full channel makes the sender wait (backpressure), never grow.
pub const REQUEUE_CAPACITY: usize = 1024;

/// The Work keys a controller is asked to look at again, from another controller (e.g. the work status
/// controller asks execution to re-apply a Work whose member object drifted).
#[derive(Clone)]
pub struct WorkRequeue {
    tx: mpsc::Sender<(String, String)>,
}

/// The receiving end of a [`WorkRequeue`], handed to the controller that acts on the requests.
pub struct WorkRequeueReceiver {
    pub(crate) rx: mpsc::Receiver<(String, String)>,
}

/// A bounded requeue channel.
pub fn work_requeue() -> (WorkRequeue, WorkRequeueReceiver) {
    let (tx, rx) = mpsc::channel(REQUEUE_CAPACITY);
    (WorkRequeue { tx }, WorkRequeueReceiver { rx })
}

impl WorkRequeue {
    /// Asks for the Work `namespace/name` to be reconciled again; waits while the channel is full. A closed
    /// receiver (its controller stopped) is ignored.
    pub async fn requeue(&self, namespace: &str, name: &str) {
        let mut tx = self.tx.clone();
        let _ = tx.send((namespace.to_string(), name.to_string())).await;
    }
}

/// The reference of a namespaced (or, with `None`, cluster-scoped) object of `resource`.
pub fn object_ref<K>(resource: &ApiResource, namespace: Option<&str>, name: &str) -> ObjectRef<K>
where
    K: kube::Resource<DynamicType = ApiResource>,
{
    let reference = ObjectRef::new_with(name, resource.clone());
    match namespace {
        Some(ns) if !ns.is_empty() => reference.within(ns),
        _ => reference,
    }
}

/// A watch of `api` that keeps `writer`'s store current and yields every raw event; errors are logged and the
/// watch retried with backoff, so the stream only ends when dropped.
pub fn reflect_events(
    api: kube::Api<DynamicObject>,
    config: watcher::Config,
    writer: reflector::store::Writer<DynamicObject>,
) -> impl Stream<Item = Event<DynamicObject>> + Send {
    log_errors(watcher(api, config).default_backoff().reflect(writer))
}

/// [`reflect_events`] into a cache of compact objects, for a watch no other controller shares, such as a member
/// cluster's objects. managedFields and kubectl's last-applied annotation (a second copy of the object) are
/// dropped: no controller reads them from a cache. Objects that cannot be re-encoded are logged and skipped.
pub fn reflect_compact_events(
    api: kube::Api<DynamicObject>,
    config: watcher::Config,
    mut writer: crate::runtime::CacheWriter,
    mut packer: crate::runtime::compact::Packer,
) -> impl Stream<Item = Event<CompactObject>> + Send {
    let trimmed = watcher(api, config)
        .default_backoff()
        .modify(|object: &mut DynamicObject| {
            if let Some(annotations) = object.metadata.annotations.as_mut() {
                annotations.remove(crate::keys::ANNOTATION_LAST_APPLIED);
            }
        });
    log_errors(trimmed).filter_map(move |event| {
        let compacted = packer.event(event);
        if let Ok(event) = &compacted {
            writer.apply_watcher_event(event);
        }
        async move {
            compacted
                .map_err(|err| tracing::warn!(%err, "watch event not cached"))
                .ok()
        }
    })
}

/// Watch events with errors logged and skipped (the watcher retries with backoff).
pub(crate) fn log_errors(
    events: impl Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Send,
) -> impl Stream<Item = Event<DynamicObject>> + Send {
    events.filter_map(|event| async move {
        match event {
            Ok(event) => Some(event),
            Err(err) => {
                tracing::debug!(%err, "watch failed; retrying");
                None
            }
        }
    })
}

fn watcher(
    api: kube::Api<DynamicObject>,
    config: watcher::Config,
) -> impl Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Send {
    watcher::watcher(api, config)
}

/// The objects of a shared watch whose spec or metadata changed: the trigger of a controller whose own writes go
/// to status (which would otherwise wake it again). The cache is the [`Subscription`]'s store, already current.
///
/// [`Subscription`]: crate::runtime::Subscription
pub fn spec_changes(
    events: impl Stream<Item = Event<CompactObject>> + Send,
) -> impl Stream<Item = Result<CompactObject, watcher::Error>> + Send {
    crate::runtime::changes::changed_objects(events, spec_and_metadata)
}

/// What makes an object worth reconciling again: its spec and metadata, not its status. The spec is hashed as
/// text, without decoding it, once per event object ([`CompactObject::spec_hash`]).
pub fn spec_and_metadata(object: &CompactObject) -> Option<u64> {
    let mut hasher = std::hash::DefaultHasher::new();
    let metadata = object.metadata();
    (
        object.spec_hash(),
        &metadata.generation,
        &metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        &metadata.finalizers,
        object.labels(),
        object.annotations(),
        object.large_annotations(),
    )
        .hash(&mut hasher);
    Some(std::hash::Hasher::finish(&hasher))
}

/// Objects a shared watch's event touched (applied or deleted); none for the list markers.
pub fn touched(event: &Event<CompactObject>) -> Option<&CompactObject> {
    match event {
        Event::Apply(o) | Event::InitApply(o) | Event::Delete(o) => Some(o),
        Event::Init | Event::InitDone => None,
    }
}

/// The next event of `events`, or `None` when `cancel` fired or the stream ended.
pub async fn next_event<S>(events: &mut S, cancel: &CancellationToken) -> Option<S::Item>
where
    S: Stream + Unpin,
{
    tokio::select! {
        () = cancel.cancelled() => None,
        e = events.next() => e,
    }
}

/// Waits until `store` has its first full list, or `cancel` fires (then `false`).
pub async fn ready(store: &impl Listed, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = cancel.cancelled() => false,
        listed = store.listed() => listed,
    }
}

/// A cache that can be waited on for its first full list: kube-runtime's store or a [`crate::runtime::Cache`].
pub trait Listed {
    /// Resolves once the first list is in (`true`), or `false` if it never will be.
    fn listed(&self) -> futures::future::BoxFuture<'_, bool>;
}

impl<K> Listed for Store<K>
where
    K: kube::Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    fn listed(&self) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(async move { self.wait_until_ready().await.is_ok() })
    }
}

impl Listed for crate::runtime::Cache {
    fn listed(&self) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(async move { self.wait_until_ready().await.is_ok() })
    }
}

/// Per-key exponential backoff for failed reconciles: 500 ms doubling up to `max`, reset on success.
#[derive(Clone)]
pub struct Backoffs<K> {
    failures: Arc<Mutex<HashMap<K, u32>>>,
    max: Duration,
}

/// Bound on remembered keys; when reached the memory is cleared (the next failure starts over).
const BACKOFF_KEYS: usize = 65_536;

impl<K: Eq + Hash + Clone> Backoffs<K> {
    pub fn new(max: Duration) -> Self {
        Self {
            failures: Arc::default(),
            max,
        }
    }

    /// Records a failure and returns how long to wait before the next attempt.
    pub fn failed(&self, key: &K) -> Duration {
        let Ok(mut failures) = self.failures.lock() else {
            return self.max;
        };
        if failures.len() >= BACKOFF_KEYS {
            failures.clear();
        }
        let count = failures.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        let exponent = (*count - 1).min(16);
        Duration::from_millis(500)
            .saturating_mul(1u32 << exponent)
            .min(self.max)
    }

    pub fn succeeded(&self, key: &K) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_bound_and_resets() {
        let b = Backoffs::new(Duration::from_secs(4));
        let key = "a".to_string();
        let waits: Vec<Duration> = (0..5).map(|_| b.failed(&key)).collect();
        assert_eq!(
            waits,
            [500, 1000, 2000, 4000, 4000].map(Duration::from_millis)
        );
        b.succeeded(&key);
        assert_eq!(b.failed(&key), Duration::from_millis(500));
    }

    #[test]
    fn fingerprint_follows_spec_and_metadata_not_status() {
        let labelled_work = |status: serde_json::Value, replicas: i64, labels| -> CompactObject {
            let object: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "w", "namespace": "karmada-es-a", "resourceVersion": "1",
                             "labels": labels},
                "spec": {"workload": {"manifests": [{"spec": {"replicas": replicas}}]}},
                "status": status,
            }))
            .expect("work");
            CompactObject::from_dynamic(&object).expect("compact")
        };
        let work = |status, replicas| labelled_work(status, replicas, serde_json::json!({}));
        let base = spec_and_metadata(&work(serde_json::json!({}), 1));
        let applied = serde_json::json!({"conditions": [{"type": "Applied"}]});
        assert_eq!(base, spec_and_metadata(&work(applied, 1)));
        assert_ne!(base, spec_and_metadata(&work(serde_json::json!({}), 2)));
        let labelled = labelled_work(serde_json::json!({}), 1, serde_json::json!({"a": "b"}));
        assert_ne!(base, spec_and_metadata(&labelled));
    }

    #[test]
    fn object_refs_of_cluster_scoped_objects_have_no_namespace() {
        let r = crate::runtime::resources::cluster_resource_binding();
        assert_eq!(object_ref::<DynamicObject>(&r, None, "x").namespace, None);
        assert_eq!(
            object_ref::<DynamicObject>(&r, Some(""), "x").namespace,
            None
        );
        let w = crate::runtime::resources::work();
        assert_eq!(
            object_ref::<DynamicObject>(&w, Some("karmada-es-a"), "x")
                .namespace
                .as_deref(),
            Some("karmada-es-a")
        );
    }
}
