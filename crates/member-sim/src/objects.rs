//! The observed state controllers read ([`Objects`]) and the writes they ask for ([`Write`]).
//!
//! A controller never mutates [`Objects`]; it returns writes. The async loop turns each write
//! into an API request. [`Objects::apply`] performs a write the way the API server would
//! (status reset on create, generation bumped on spec change, binding sets `PodScheduled`), so
//! tests and in-process simulations can iterate controllers to a fixed point without a server.
//!
//! Invariant: objects are keyed by kind, namespace (empty for cluster-scoped) and name; the map
//! is ordered, so every listing and therefore every controller decision is deterministic.

use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::meta;

/// Identifies one object: `kind` is the Kubernetes kind (`Pod`, `Deployment`, ...).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(kind: &str, namespace: &str, name: &str) -> Self {
        Self {
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key of a JSON object, from `kind`, `metadata.namespace` and `metadata.name`.
    pub fn of(object: &Value) -> Self {
        Self::new(
            object
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            meta::namespace(object),
            meta::name(object),
        )
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}/{}", self.kind, self.name)
        } else {
            write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// One change a controller wants made through the API.
///
/// Several writes in one pass may touch the same object (say a Deployment's revision
/// annotation and then its status); apply them in order. Each carries the `resourceVersion`
/// observed at the start of the pass, so a runtime should send the later ones with the version
/// the earlier response returned (or none), rather than fail them as conflicts.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// POST the object (its `status`, if any, is what the controller would like but the API
    /// server may reset it; controllers set status with a later [`Write::UpdateStatus`]).
    Create(Value),
    /// PUT the object's spec and metadata (carries the observed `resourceVersion`).
    Update(Value),
    /// PUT the `status` subresource.
    UpdateStatus(Value),
    /// POST `pods/binding`: assign the pod to a node.
    Bind { pod: ObjectKey, node: String },
    /// DELETE the object.
    Delete(ObjectKey),
}

impl Write {
    /// The object this write is about.
    pub fn key(&self) -> ObjectKey {
        match self {
            Write::Create(object) | Write::Update(object) | Write::UpdateStatus(object) => {
                ObjectKey::of(object)
            }
            Write::Bind { pod, .. } => pod.clone(),
            Write::Delete(key) => key.clone(),
        }
    }
}

/// Why [`Objects::apply`] refused a write; the same conflicts the API server reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("{0} already exists")]
    AlreadyExists(ObjectKey),
    #[error("{0} not found")]
    NotFound(ObjectKey),
    #[error("pod {0} is already assigned to node {1:?}")]
    AlreadyBound(ObjectKey, String),
}

/// The observed objects of one member cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Objects {
    objects: BTreeMap<ObjectKey, Value>,
    next_uid: u64,
}

impl Objects {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds from objects as listed from the API (later duplicates replace earlier ones).
    pub fn from_values(values: impl IntoIterator<Item = Value>) -> Self {
        let mut objects = Self::new();
        for value in values {
            objects.insert(value);
        }
        objects
    }

    /// Stores an observed object as is (the async loop feeds watch events through this).
    pub fn insert(&mut self, object: Value) {
        self.objects.insert(ObjectKey::of(&object), object);
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<Value> {
        self.objects.remove(key)
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&Value> {
        self.objects.get(key)
    }

    pub fn get_named(&self, kind: &str, namespace: &str, name: &str) -> Option<&Value> {
        self.objects.get(&ObjectKey::new(kind, namespace, name))
    }

    /// Every object of a kind, ordered by namespace then name (a range scan, not a full scan).
    pub fn list<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects
            .range(ObjectKey::new(kind, "", "")..)
            .take_while(move |(key, _)| key.kind == kind)
            .map(|(_, value)| value)
    }

    /// Every object of a kind in one namespace, ordered by name.
    pub fn list_in<'a>(
        &'a self,
        kind: &'a str,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects
            .range(ObjectKey::new(kind, namespace, "")..)
            .take_while(move |(key, _)| key.kind == kind && key.namespace == namespace)
            .map(|(_, value)| value)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Every object, ordered by kind, namespace and name.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Value)> {
        self.objects.iter()
    }

    /// Performs a write as the API server would, at `now`.
    pub fn apply(&mut self, write: &Write, now: Timestamp) -> Result<(), ApplyError> {
        match write {
            Write::Create(object) => self.create(object.clone(), now),
            Write::Update(object) => {
                let key = ObjectKey::of(object);
                let current = self
                    .objects
                    .get_mut(&key)
                    .ok_or(ApplyError::NotFound(key))?;
                let spec_changed = current.get("spec") != object.get("spec");
                let status = current.get("status").cloned();
                let generation = meta::generation(current);
                let mut updated = object.clone();
                if let Some(fields) = updated.as_object_mut() {
                    match status {
                        Some(status) => fields.insert("status".to_string(), status),
                        None => fields.remove("status"),
                    };
                }
                let generation = if spec_changed {
                    generation + 1
                } else {
                    generation
                };
                meta::set_path(&mut updated, &["metadata", "generation"], json!(generation));
                *current = updated;
                Ok(())
            }
            Write::UpdateStatus(object) => {
                let key = ObjectKey::of(object);
                let current = self
                    .objects
                    .get_mut(&key)
                    .ok_or(ApplyError::NotFound(key))?;
                let status = object.get("status").cloned().unwrap_or_else(|| json!({}));
                meta::set_path(current, &["status"], status);
                Ok(())
            }
            Write::Bind { pod, node } => {
                let current = self
                    .objects
                    .get_mut(pod)
                    .ok_or_else(|| ApplyError::NotFound(pod.clone()))?;
                let assigned = meta::str_at(current, "/spec/nodeName");
                if !assigned.is_empty() {
                    return Err(ApplyError::AlreadyBound(pod.clone(), assigned.to_string()));
                }
                meta::set_path(current, &["spec", "nodeName"], json!(node));
                let mut conditions = meta::conditions(current);
                meta::set_condition(
                    &mut conditions,
                    meta::Condition::new("PodScheduled", "True", "", ""),
                    now,
                );
                meta::set_path(current, &["status", "conditions"], Value::Array(conditions));
                Ok(())
            }
            Write::Delete(key) => self
                .objects
                .remove(key)
                .map(|_| ())
                .ok_or_else(|| ApplyError::NotFound(key.clone())),
        }
    }

    fn create(&mut self, mut object: Value, now: Timestamp) -> Result<(), ApplyError> {
        let key = ObjectKey::of(&object);
        if self.objects.contains_key(&key) {
            return Err(ApplyError::AlreadyExists(key));
        }
        self.next_uid += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", self.next_uid);
        meta::set_path(&mut object, &["metadata", "uid"], json!(uid));
        meta::set_path(
            &mut object,
            &["metadata", "creationTimestamp"],
            json!(meta::format_time(now)),
        );
        meta::set_path(&mut object, &["metadata", "generation"], json!(1));
        reset_status_on_create(&mut object);
        self.objects.insert(key, object);
        Ok(())
    }
}

/// The API server ignores the status of most created objects; nodes and leases keep theirs.
fn reset_status_on_create(object: &mut Value) {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(fields) = object.as_object_mut() else {
        return;
    };
    match kind.as_str() {
        "Node" | "Lease" | "EndpointSlice" => {}
        "Pod" => {
            fields.insert("status".to_string(), json!({"phase": "Pending"}));
        }
        _ => {
            fields.remove("status");
        }
    }
}

/// Objects of one kind grouped by their controller, built once per pass so that controllers
/// find their dependents without scanning every object for every owner.
///
/// Matches like [`meta::is_controlled_by`]: by owner kind and uid, or by name when the owner has
/// no uid.
#[derive(Debug, Default)]
pub struct Controlled<'a> {
    by_uid: HashMap<(&'a str, &'a str, &'a str), Vec<&'a Value>>,
    by_name: HashMap<(&'a str, &'a str, &'a str), Vec<&'a Value>>,
}

impl<'a> Controlled<'a> {
    /// Indexes every object of `kind` that has a controller reference.
    pub fn index(objects: &'a Objects, kind: &'a str) -> Self {
        let mut index = Self::default();
        for object in objects.list(kind) {
            let Some(reference) = meta::controller_ref(object) else {
                continue;
            };
            let namespace = meta::namespace(object);
            let owner_kind = meta::str_at(reference, "/kind");
            let uid = meta::str_at(reference, "/uid");
            if !uid.is_empty() {
                index
                    .by_uid
                    .entry((namespace, owner_kind, uid))
                    .or_default()
                    .push(object);
            }
            let name = meta::str_at(reference, "/name");
            index
                .by_name
                .entry((namespace, owner_kind, name))
                .or_default()
                .push(object);
        }
        index
    }

    /// The indexed objects `owner` controls, in name order.
    pub fn of(&self, owner: &Value) -> Vec<&'a Value> {
        let namespace = meta::namespace(owner);
        let kind = meta::str_at(owner, "/kind");
        let uid = meta::uid(owner);
        let found = if uid.is_empty() {
            self.by_name.get(&(namespace, kind, meta::name(owner)))
        } else {
            self.by_uid.get(&(namespace, kind, uid))
        };
        found.cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, namespace: &str, name: &str) -> Value {
        json!({"kind": kind, "metadata": {"name": name, "namespace": namespace}})
    }

    #[test]
    fn listing_is_by_kind_and_namespace_in_name_order() {
        let objects = Objects::from_values([
            object("Pod", "b", "z"),
            object("Pod", "a", "y"),
            object("PodTemplate", "a", "x"),
            object("Node", "", "n"),
            object("Pod", "a", "x"),
        ]);
        let names = |it: Vec<&Value>| {
            it.iter()
                .map(|v| meta::name(v).to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(objects.list("Pod").collect()), ["x", "y", "z"]);
        assert_eq!(names(objects.list_in("Pod", "a").collect()), ["x", "y"]);
        assert_eq!(
            names(objects.list_in("Pod", "c").collect()),
            Vec::<String>::new()
        );
        assert_eq!(names(objects.list("Node").collect()), ["n"]);
        assert_eq!(objects.len(), 5);
    }

    #[test]
    fn apply_acts_like_the_api_server() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().expect("time");
        let mut objects = Objects::new();
        let mut rs = object("ReplicaSet", "ns", "web");
        rs["spec"] = json!({"replicas": 1});
        rs["status"] = json!({"replicas": 9});
        objects
            .apply(&Write::Create(rs.clone()), now)
            .expect("created");
        let stored = objects
            .get_named("ReplicaSet", "ns", "web")
            .expect("stored")
            .clone();
        assert_eq!(stored.get("status"), None, "status is reset on create");
        assert_eq!(meta::generation(&stored), 1);
        assert!(!meta::uid(&stored).is_empty());
        assert_eq!(
            objects.apply(&Write::Create(rs), now),
            Err(ApplyError::AlreadyExists(ObjectKey::new(
                "ReplicaSet",
                "ns",
                "web"
            )))
        );

        let mut status = stored.clone();
        status["status"] = json!({"replicas": 1});
        objects
            .apply(&Write::UpdateStatus(status), now)
            .expect("status");
        let mut same_spec = stored.clone();
        same_spec["metadata"]["annotations"] = json!({"a": "b"});
        objects
            .apply(&Write::Update(same_spec), now)
            .expect("update");
        let stored = objects
            .get_named("ReplicaSet", "ns", "web")
            .expect("stored")
            .clone();
        assert_eq!(
            meta::generation(&stored),
            1,
            "metadata-only change keeps the generation"
        );
        assert_eq!(stored["status"]["replicas"], 1, "update keeps status");
        let mut scaled = stored.clone();
        scaled["spec"]["replicas"] = json!(3);
        objects.apply(&Write::Update(scaled), now).expect("update");
        assert_eq!(
            meta::generation(
                objects
                    .get_named("ReplicaSet", "ns", "web")
                    .expect("stored")
            ),
            2
        );

        let pod = object("Pod", "ns", "p");
        objects
            .apply(&Write::Create(pod.clone()), now)
            .expect("pod");
        let key = ObjectKey::of(&pod);
        objects
            .apply(
                &Write::Bind {
                    pod: key.clone(),
                    node: "n1".into(),
                },
                now,
            )
            .expect("bind");
        let bound = objects.get(&key).expect("pod");
        assert_eq!(bound["spec"]["nodeName"], "n1");
        assert_eq!(meta::condition_status(bound, "PodScheduled"), Some("True"));
        assert!(matches!(
            objects.apply(
                &Write::Bind {
                    pod: key.clone(),
                    node: "n2".into()
                },
                now
            ),
            Err(ApplyError::AlreadyBound(_, _))
        ));
        objects
            .apply(&Write::Delete(key.clone()), now)
            .expect("delete");
        assert_eq!(
            objects.apply(&Write::Delete(key.clone()), now),
            Err(ApplyError::NotFound(key))
        );
    }
}
