//! The metadata of a cached object, in the room it needs.
//!
//! Why not `ObjectMeta`: it is ~330 bytes inline — fifteen optional fields, most of which a cached object never
//! has (generateName, selfLink, managedFields, a grace period) — plus a heap block per string, and the
//! controller-manager keeps one per template, binding, Work and member object. [`Meta`] keeps the fields
//! controllers read inline as boxed strings, shares the namespace text between the objects of a watch
//! ([`Namespaces`]), and moves the rarely set fields behind one pointer. Labels and annotations are not here:
//! they are [`super::Pairs`] on the compact object. Serializes as the same JSON as `ObjectMeta` would.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Serialize;

/// An object's metadata without labels, annotations and managedFields (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Box<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Arc<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<Box<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<Box<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub owner_references: Box<[OwnerReference]>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub finalizers: Box<[Box<str>]>,
    /// generateName, deletionGracePeriodSeconds and selfLink: seldom set, so one pointer for all three.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub rare: Option<Box<Rare>>,
}

/// The metadata fields few objects have.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rare {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}

impl Meta {
    /// The compact form of `metadata`; its labels, annotations and managedFields are left out (the caller
    /// keeps the first two elsewhere).
    pub fn new(metadata: ObjectMeta, namespaces: &mut Namespaces) -> Self {
        let ObjectMeta {
            name,
            namespace,
            uid,
            resource_version,
            generation,
            creation_timestamp,
            deletion_timestamp,
            owner_references,
            finalizers,
            generate_name,
            deletion_grace_period_seconds,
            self_link,
            annotations: _,
            labels: _,
            managed_fields: _,
        } = metadata;
        let rare = Rare {
            generate_name,
            deletion_grace_period_seconds,
            self_link,
        };
        Self {
            name: name.map(String::into_boxed_str),
            namespace: namespace.map(|ns| namespaces.intern(&ns)),
            uid: uid.map(String::into_boxed_str),
            resource_version: resource_version.map(String::into_boxed_str),
            generation,
            creation_timestamp,
            deletion_timestamp,
            owner_references: owner_references.unwrap_or_default().into_boxed_slice(),
            finalizers: finalizers
                .unwrap_or_default()
                .into_iter()
                .map(String::into_boxed_str)
                .collect(),
            rare: (rare != Rare::default()).then(|| Box::new(rare)),
        }
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The `ObjectMeta` of these fields (no labels, annotations or managedFields).
    pub fn to_object_meta(&self) -> ObjectMeta {
        let rare = self.rare.as_deref().cloned().unwrap_or_default();
        ObjectMeta {
            name: self.name.as_deref().map(str::to_string),
            namespace: self.namespace.as_deref().map(str::to_string),
            uid: self.uid.as_deref().map(str::to_string),
            resource_version: self.resource_version.as_deref().map(str::to_string),
            generation: self.generation,
            creation_timestamp: self.creation_timestamp.clone(),
            deletion_timestamp: self.deletion_timestamp.clone(),
            owner_references: (!self.owner_references.is_empty())
                .then(|| self.owner_references.to_vec()),
            finalizers: (!self.finalizers.is_empty())
                .then(|| self.finalizers.iter().map(|f| f.to_string()).collect()),
            generate_name: rare.generate_name,
            deletion_grace_period_seconds: rare.deletion_grace_period_seconds,
            self_link: rare.self_link,
            ..ObjectMeta::default()
        }
    }
}

/// The namespaces of one watch's objects, each text held once however many objects are in it.
#[derive(Default)]
pub struct Namespaces {
    known: HashSet<Arc<str>>,
    /// The set's size after the last sweep; the next sweep runs once it has doubled.
    swept_at: usize,
}

/// Below this many namespaces the set is never swept.
const SWEEP_FROM: usize = 64;

impl Namespaces {
    /// The shared text of `namespace`.
    pub fn intern(&mut self, namespace: &str) -> Arc<str> {
        if let Some(known) = self.known.get(namespace) {
            return known.clone();
        }
        if self.known.len() >= SWEEP_FROM.max(2 * self.swept_at) {
            // Namespaces no cached object is in any more (deleted ones) are forgotten.
            self.known.retain(|ns| Arc::strong_count(ns) > 1);
            self.swept_at = self.known.len();
        }
        let shared: Arc<str> = Arc::from(namespace);
        self.known.insert(shared.clone());
        shared
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.known.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object_meta(value: serde_json::Value) -> ObjectMeta {
        serde_json::from_value(value).expect("metadata")
    }

    #[test]
    fn serializes_as_object_meta_without_labels_annotations_and_managed_fields() {
        let full = json!({
            "name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "42", "generation": 3,
            "creationTimestamp": "2026-01-02T03:04:05Z", "deletionTimestamp": "2026-01-02T03:05:05Z",
            "deletionGracePeriodSeconds": 30, "generateName": "web-", "selfLink": "/x",
            "finalizers": ["a/b", "c/d"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u-0", "controller": true}],
            "labels": {"l": "1"}, "annotations": {"a": "2"},
            "managedFields": [{"manager": "m", "operation": "Update"}]
        });
        let meta = Meta::new(object_meta(full.clone()), &mut Namespaces::default());
        let mut expected = object_meta(full);
        expected.labels = None;
        expected.annotations = None;
        expected.managed_fields = None;
        assert_eq!(
            serde_json::to_value(&meta).expect("json"),
            serde_json::to_value(&expected).expect("json")
        );
        assert_eq!(meta.to_object_meta(), expected);
        assert!(meta.rare.is_some());
    }

    #[test]
    fn a_plain_object_has_no_rare_fields_and_serializes_only_what_it_has() {
        let meta = Meta::new(
            object_meta(json!({"name": "w", "resourceVersion": "1"})),
            &mut Namespaces::default(),
        );
        assert!(meta.rare.is_none());
        assert_eq!(
            serde_json::to_value(&meta).expect("json"),
            json!({"name": "w", "resourceVersion": "1"})
        );
        assert_eq!((meta.name(), meta.namespace()), ("w", None));
    }

    #[test]
    fn smaller_than_object_meta() {
        assert!(
            std::mem::size_of::<Meta>() * 2 <= std::mem::size_of::<ObjectMeta>(),
            "{} vs {}",
            std::mem::size_of::<Meta>(),
            std::mem::size_of::<ObjectMeta>()
        );
    }

    #[test]
    fn namespaces_are_shared_and_forgotten_once_unused() {
        let mut namespaces = Namespaces::default();
        let a = namespaces.intern("team-a");
        let again = namespaces.intern("team-a");
        assert!(Arc::ptr_eq(&a, &again), "one text per namespace");
        let held: Vec<Arc<str>> = (0..SWEEP_FROM)
            .map(|i| namespaces.intern(&format!("ns-{i}")))
            .collect();
        // `a` and the held ones are still used; the sweep at SWEEP_FROM keeps them.
        drop(held);
        for i in 0..SWEEP_FROM {
            namespaces.intern(&format!("other-{i}"));
        }
        assert!(
            namespaces.len() < 2 * SWEEP_FROM + 1,
            "unused namespaces were swept: {}",
            namespaces.len()
        );
        assert!(Arc::ptr_eq(&a, &namespaces.intern("team-a")));
    }
}
