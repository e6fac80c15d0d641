//! What the MCS and MultiClusterService runtimes share: the Cluster watch they read readiness and names from,
//! the keys of every cached object, and the reference Events are recorded on.

use futures::Stream;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};

use crate::execution::queue::reflect_events;
use crate::runtime::{Cache, resources};

/// A watch of every Cluster into a store; the stream must be polled for the store to fill.
pub fn watch_clusters(
    client: &kube::Client,
) -> (
    Store<DynamicObject>,
    impl Stream<Item = Event<DynamicObject>> + Send + use<>,
) {
    let writer = reflector::store::Writer::new(resources::cluster());
    let store = writer.as_reader();
    let events = reflect_events(
        resources::all(client, &resources::cluster()),
        watcher::Config::default(),
        writer,
    );
    (store, events)
}

/// (namespace, name) of every object of `cache`.
pub fn all_keys(cache: &Cache) -> Vec<(String, String)> {
    cache
        .state()
        .iter()
        .map(|o| {
            (
                o.metadata().namespace().unwrap_or_default().to_string(),
                o.metadata().name().to_string(),
            )
        })
        .collect()
}

/// The reference of an object of `group/version` `kind` with `metadata`, for Events.
pub fn reference(group_version: String, kind: &str, metadata: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some(group_version),
        kind: Some(kind.into()),
        name: metadata.name.clone(),
        namespace: metadata.namespace.clone(),
        uid: metadata.uid.clone(),
        resource_version: metadata.resource_version.clone(),
        field_path: None,
    }
}
