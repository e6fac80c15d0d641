//! What brings a binding back to the binding controller: its Works changing or going, override policies
//! changing (the bindings they may concern), and a cluster's labels changing (the bindings targeting it).
//!
//! Everything here is read from cached metadata; a binding is decoded (only its target namespace and
//! clusters) when its metadata alone cannot tell.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, RandomState};

use futures::SinkExt;
use kube::runtime::watcher::Event;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::super::works::BindingScope;
use super::Refs;
use crate::execution::queue::{spec_and_metadata, touched};
use crate::keys::{
    ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_RESOURCE_BINDING_NAME,
    ANNOTATION_RESOURCE_BINDING_NAMESPACE,
};
use crate::runtime::Cache;
use crate::runtime::CompactObject;
use crate::runtime::runner::ObjectKey;

#[derive(Clone)]
pub(super) struct Bindings {
    pub(super) rbs: Cache,
    pub(super) crbs: Cache,
}

#[derive(Clone)]
pub(super) struct Senders {
    pub(super) rb: Refs,
    pub(super) crb: Refs,
}

/// What a cache's events mean for the bindings.
pub(super) enum Handler {
    /// Hash of a Work's namespace and name → fingerprint of spec and metadata last seen: Works rewritten (by
    /// someone else; our own writes cost one no-op pass) or deleted bring their binding back; status-only
    /// updates do not. Two Works whose names hash alike share an entry: that can only cause an extra pass.
    Works(HashMap<u64, u64>, RandomState),
    OverridePolicies,
    ClusterOverridePolicies,
    /// Cluster name → labels last seen.
    Clusters(HashMap<String, BTreeMap<String, String>>),
}

/// The part of a binding's spec the triggers read; the rest of the JSON is skipped, not decoded. Lenient
/// like a JSON pointer: absent or null fields read as empty.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Targets {
    spec: Option<TargetsSpec>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TargetsSpec {
    resource: Option<TargetResource>,
    clusters: Option<Vec<TargetCluster>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TargetResource {
    namespace: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TargetCluster {
    name: Option<String>,
}

fn targets(binding: &CompactObject) -> TargetsSpec {
    binding
        .decode::<Targets>()
        .ok()
        .and_then(|t| t.spec)
        .unwrap_or_default()
}

/// Whether an OverridePolicy of `namespace` may concern `binding`: by its own namespace (metadata), else by
/// its template's namespace.
fn in_namespace(binding: &CompactObject, namespace: &str) -> bool {
    binding.metadata().namespace() == Some(namespace)
        || targets(binding)
            .resource
            .and_then(|r| r.namespace)
            .unwrap_or_default()
            == namespace
}

fn targets_cluster(binding: &CompactObject, cluster: &str) -> bool {
    targets(binding)
        .clusters
        .unwrap_or_default()
        .iter()
        .any(|t| t.name.as_deref() == Some(cluster))
}

impl Handler {
    pub(super) fn works() -> Self {
        Handler::Works(HashMap::new(), RandomState::new())
    }

    /// The bindings to look at again after `event`.
    fn affected(
        &mut self,
        event: &Event<CompactObject>,
        bindings: &Bindings,
    ) -> Vec<(BindingScope, ObjectKey)> {
        let initial = matches!(event, Event::InitApply(_));
        let deleted = matches!(event, Event::Delete(_));
        let Some(object) = touched(event) else {
            return Vec::new();
        };
        let metadata = object.metadata();
        let all = |filter: &dyn Fn(&CompactObject) -> bool| -> Vec<(BindingScope, ObjectKey)> {
            [
                (BindingScope::Namespaced, &bindings.rbs),
                (BindingScope::Cluster, &bindings.crbs),
            ]
            .into_iter()
            .flat_map(|(scope, cache)| {
                cache
                    .state()
                    .into_iter()
                    .filter(|b| filter(b))
                    .map(move |b| (scope, ObjectKey::of(&b)))
            })
            .collect()
        };
        match self {
            Handler::Works(fingerprints, names) => {
                let key = names.hash_one((metadata.namespace(), metadata.name()));
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
                if let Some(name) = object.annotation(ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME) {
                    return vec![(BindingScope::Cluster, ObjectKey::new(None, name))];
                }
                match (
                    object.annotation(ANNOTATION_RESOURCE_BINDING_NAMESPACE),
                    object.annotation(ANNOTATION_RESOURCE_BINDING_NAME),
                ) {
                    (Some(ns), Some(name)) => {
                        vec![(BindingScope::Namespaced, ObjectKey::new(Some(ns), name))]
                    }
                    _ => Vec::new(),
                }
            }
            // The initial list needs nothing: every binding is reconciled when its own cache fills.
            _ if initial => Vec::new(),
            Handler::OverridePolicies => {
                let namespace = metadata.namespace().unwrap_or_default().to_string();
                all(&|b| in_namespace(b, &namespace))
            }
            Handler::ClusterOverridePolicies => all(&|_| true),
            Handler::Clusters(seen) => {
                let name = metadata.name().to_string();
                let labels = object.labels().to_map();
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
    events: impl futures::Stream<Item = Event<CompactObject>> + Send,
    mut handler: Handler,
    bindings: Bindings,
    mut senders: Senders,
    cancel: CancellationToken,
) {
    let mut events = Box::pin(events);
    while let Some(event) = crate::execution::queue::next_event(&mut events, &cancel).await {
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

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;
    use serde_json::{Value, json};

    use super::*;

    fn compact(value: Value) -> CompactObject {
        let object: DynamicObject = serde_json::from_value(value).expect("object");
        CompactObject::from_dynamic(&object).expect("compact")
    }

    fn crb(spec: Value) -> CompactObject {
        compact(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
            "metadata": {"name": "b"}, "spec": spec,
        }))
    }

    fn work(replicas: i64, status: Value) -> CompactObject {
        compact(json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "karmada-es-a", "annotations": {
                ANNOTATION_RESOURCE_BINDING_NAMESPACE: "default",
                ANNOTATION_RESOURCE_BINDING_NAME: "web-deployment"}},
            "spec": {"workload": {"manifests": [{"spec": {"replicas": replicas}}]}},
            "status": status,
        }))
    }

    #[test]
    fn bindings_are_matched_by_metadata_or_their_decoded_targets() {
        let rb = compact(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "b", "namespace": "team"}, "spec": {},
        }));
        assert!(in_namespace(&rb, "team"));
        assert!(!in_namespace(&rb, "other"));
        let targeted = crb(json!({"resource": {"namespace": "team"},
                                  "clusters": [{"name": "member1"}, {"name": "member2"}]}));
        assert!(in_namespace(&targeted, "team"));
        assert!(targets_cluster(&targeted, "member2"));
        assert!(!targets_cluster(&targeted, "member3"));
        // Absent or null fields read as empty, as the JSON pointers did.
        let sparse = crb(json!({"resource": {"namespace": null}, "clusters": null}));
        assert!(!in_namespace(&sparse, "team"));
        assert!(in_namespace(&sparse, ""));
        assert!(!targets_cluster(&sparse, "member1"));
    }

    #[test]
    fn works_bring_their_binding_back_on_spec_changes_and_deletion_not_on_status() {
        let bindings = Bindings {
            rbs: crate::runtime::CacheWriter::new().as_reader(),
            crbs: crate::runtime::CacheWriter::new().as_reader(),
        };
        let mut handler = Handler::works();
        let mut affected = |event: Event<CompactObject>| -> Vec<String> {
            handler
                .affected(&event, &bindings)
                .into_iter()
                .map(|(scope, r)| {
                    format!("{scope:?} {}/{}", r.namespace.unwrap_or_default(), r.name)
                })
                .collect()
        };
        assert!(affected(Event::InitApply(work(1, json!({})))).is_empty());
        let applied = json!({"conditions": [{"type": "Applied", "status": "True"}]});
        assert!(affected(Event::Apply(work(1, applied))).is_empty());
        let expected = vec!["Namespaced default/web-deployment".to_string()];
        assert_eq!(affected(Event::Apply(work(2, json!({})))), expected);
        assert_eq!(affected(Event::Delete(work(2, json!({})))), expected);
    }
}
