//! What brings a binding back to the binding controller: its Works changing or going, override policies
//! changing (the bindings they may concern), and a cluster's labels changing (the bindings targeting it).

use std::collections::{BTreeMap, HashMap};

use futures::SinkExt;
use kube::api::DynamicObject;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::super::works::BindingScope;
use super::Refs;
use crate::execution::queue::{next_event, object_ref, spec_and_metadata, touched};
use crate::keys::{
    ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_RESOURCE_BINDING_NAME,
    ANNOTATION_RESOURCE_BINDING_NAMESPACE,
};
use crate::runtime::resources;

#[derive(Clone)]
pub(super) struct Bindings {
    pub(super) rbs: Store<DynamicObject>,
    pub(super) crbs: Store<DynamicObject>,
}

#[derive(Clone)]
pub(super) struct Senders {
    pub(super) rb: Refs,
    pub(super) crb: Refs,
}

/// What a cache's events mean for the bindings.
pub(super) enum Handler {
    /// Work key → fingerprint of spec and metadata last seen: Works rewritten (by someone else; our own writes
    /// cost one no-op pass) or deleted bring their binding back; status-only updates do not.
    Works(HashMap<(String, String), u64>),
    OverridePolicies,
    ClusterOverridePolicies,
    /// Cluster name → labels last seen.
    Clusters(HashMap<String, BTreeMap<String, String>>),
}

fn text<'a>(object: &'a DynamicObject, pointer: &str) -> &'a str {
    object
        .data
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn annotation<'a>(object: &'a DynamicObject, key: &str) -> Option<&'a str> {
    object
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

fn targets_cluster(binding: &DynamicObject, cluster: &str) -> bool {
    binding
        .data
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|t| t.get("name").and_then(Value::as_str) == Some(cluster))
        })
}

impl Handler {
    /// The bindings to look at again after `event`.
    fn affected(
        &mut self,
        event: &Event<DynamicObject>,
        bindings: &Bindings,
    ) -> Vec<(BindingScope, ObjectRef<DynamicObject>)> {
        let rb = resources::resource_binding();
        let crb = resources::cluster_resource_binding();
        let initial = matches!(event, Event::InitApply(_));
        let deleted = matches!(event, Event::Delete(_));
        let Some(object) = touched(event) else {
            return Vec::new();
        };
        let all = |filter: &dyn Fn(&DynamicObject) -> bool| -> Vec<(BindingScope, ObjectRef<DynamicObject>)> {
            let rbs = bindings.rbs.state().into_iter().filter(|b| filter(b)).map(|b| {
                (BindingScope::Namespaced, object_ref(&rb, b.metadata.namespace.as_deref(), b.metadata.name.as_deref().unwrap_or_default()))
            });
            let crbs = bindings.crbs.state().into_iter().filter(|b| filter(b)).map(|b| {
                (BindingScope::Cluster, object_ref(&crb, None, b.metadata.name.as_deref().unwrap_or_default()))
            });
            rbs.chain(crbs).collect()
        };
        match self {
            Handler::Works(fingerprints) => {
                let key = (
                    object.metadata.namespace.clone().unwrap_or_default(),
                    object.metadata.name.clone().unwrap_or_default(),
                );
                let fingerprint = spec_and_metadata(object).unwrap_or(0);
                let interesting = if deleted {
                    fingerprints.remove(&key);
                    true
                } else {
                    let previous = fingerprints.insert(key, fingerprint);
                    !initial && previous.is_some_and(|p| p != fingerprint)
                };
                if !interesting {
                    return Vec::new();
                }
                if let Some(name) = annotation(object, ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME) {
                    return vec![(BindingScope::Cluster, object_ref(&crb, None, name))];
                }
                match (
                    annotation(object, ANNOTATION_RESOURCE_BINDING_NAMESPACE),
                    annotation(object, ANNOTATION_RESOURCE_BINDING_NAME),
                ) {
                    (Some(ns), Some(name)) => {
                        vec![(BindingScope::Namespaced, object_ref(&rb, Some(ns), name))]
                    }
                    _ => Vec::new(),
                }
            }
            // The initial list needs nothing: every binding is reconciled when its own cache fills.
            _ if initial => Vec::new(),
            Handler::OverridePolicies => {
                let namespace = object.metadata.namespace.clone().unwrap_or_default();
                all(&|b| {
                    b.metadata.namespace.as_deref() == Some(namespace.as_str())
                        || text(b, "/spec/resource/namespace") == namespace
                })
            }
            Handler::ClusterOverridePolicies => all(&|_| true),
            Handler::Clusters(seen) => {
                let name = object.metadata.name.clone().unwrap_or_default();
                let labels = object.metadata.labels.clone().unwrap_or_default();
                let changed = if deleted {
                    seen.remove(&name);
                    false
                } else {
                    seen.insert(name.clone(), labels.clone())
                        .is_some_and(|previous| previous != labels)
                };
                if changed {
                    all(&|b| targets_cluster(b, &name))
                } else {
                    Vec::new()
                }
            }
        }
    }
}

pub(super) async fn feed(
    events: impl futures::Stream<Item = Event<DynamicObject>> + Send,
    mut handler: Handler,
    bindings: Bindings,
    mut senders: Senders,
    cancel: CancellationToken,
) {
    let mut events = Box::pin(events);
    while let Some(event) = next_event(&mut events, &cancel).await {
        for (scope, reference) in handler.affected(&event, &bindings) {
            let sender = match scope {
                BindingScope::Namespaced => &mut senders.rb,
                BindingScope::Cluster => &mut senders.crb,
            };
            if sender.send(reference).await.is_err() {
                return;
            }
        }
    }
}
