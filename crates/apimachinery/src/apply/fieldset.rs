//! Field sets: which fields of an object someone owns, as paths of [`PathElement`]s, and their
//! `FieldsV1` JSON form (`{"f:spec":{"f:replicas":{}}}`).
//!
//! Invariant: a [`FieldSet`] built from an object holds every leaf it sets plus every element of
//! a merge-keyed list or primitive set; maps are implied by their leaves (an empty map is a leaf).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::patch::{ListStrategy, PatchMeta};

/// One step in a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A map field: `f:name`.
    Field(String),
    /// An element of a keyed list, by its key fields as compact JSON: `k:{"name":"nginx"}`.
    Key(String),
    /// An element of a primitive set, as compact JSON: `v:"a.io/x"`.
    Value(String),
    /// An element of a list by position: `i:0` (kept when read from other writers).
    Index(usize),
}

impl PathElement {
    fn encode(&self) -> String {
        match self {
            Self::Field(name) => format!("f:{name}"),
            Self::Key(key) => format!("k:{key}"),
            Self::Value(value) => format!("v:{value}"),
            Self::Index(index) => format!("i:{index}"),
        }
    }

    fn decode(text: &str) -> Result<Self, String> {
        let (kind, rest) = text
            .split_at_checked(2)
            .ok_or_else(|| format!("invalid field path element {text:?}"))?;
        match kind {
            "f:" => Ok(Self::Field(rest.to_string())),
            "k:" => Ok(Self::Key(rest.to_string())),
            "v:" => Ok(Self::Value(rest.to_string())),
            "i:" => rest
                .parse()
                .map(Self::Index)
                .map_err(|_| format!("invalid list index in {text:?}")),
            _ => Err(format!(
                "invalid field path element {text:?}: expected f:, k:, v: or i: prefix"
            )),
        }
    }
}

/// A field path; displayed as Kubernetes prints conflicts, e.g. `.spec.containers[name="c"].image`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FieldPath(pub Vec<PathElement>);

impl FieldPath {
    fn child(&self, element: PathElement) -> Self {
        let mut elements = self.0.clone();
        elements.push(element);
        Self(elements)
    }

    pub fn starts_with(&self, prefix: &FieldPath) -> bool {
        self.0.starts_with(&prefix.0)
    }

    /// Whether the last step names a list element rather than a value.
    pub fn ends_in_element(&self) -> bool {
        matches!(
            self.0.last(),
            Some(PathElement::Key(_) | PathElement::Value(_) | PathElement::Index(_))
        )
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for element in &self.0 {
            match element {
                PathElement::Field(name) => write!(f, ".{name}")?,
                PathElement::Index(index) => write!(f, "[{index}]")?,
                PathElement::Value(value) => write!(f, "[={value}]")?,
                PathElement::Key(key) => {
                    let parsed: Map<String, Value> = serde_json::from_str(key).unwrap_or_default();
                    let parts: Vec<String> =
                        parsed.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    write!(f, "[{}]", parts.join(","))?;
                }
            }
        }
        Ok(())
    }
}

/// A set of owned field paths.
pub type FieldSet = BTreeSet<FieldPath>;

/// Metadata the server maintains; nobody owns it.
const SERVER_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The fields `object` sets. `null`s set nothing; `apiVersion`, `kind` and server-maintained
/// metadata are never owned.
pub fn fields_of(object: &Value, meta: &dyn PatchMeta) -> FieldSet {
    let mut set = FieldSet::new();
    for (names, value) in owned_entries(object) {
        walk_entry(&names, value, meta, &mut set);
    }
    set
}

/// The fields an update of `old` to `new` changes (set anew, or a value that differs) and the
/// fields it removes, as [`fields_of`] both objects and compared them would find; only what differs
/// is walked, down through maps, because a part equal in both sets the same fields to the same
/// values. A controller's status update leaves the spec alone, and changes a few fields of a status
/// whose per-cluster entries are most of it.
pub fn changed_and_removed(old: &Value, new: &Value, meta: &dyn PatchMeta) -> (FieldSet, FieldSet) {
    let old_entries = owned_entries(old);
    let new_entries = owned_entries(new);
    let mut old_set = FieldSet::new();
    let mut new_set = FieldSet::new();
    for (names, value) in &old_entries {
        let mut sets = (&mut old_set, &mut new_set);
        walk_differing(
            Some(value),
            entry(&new_entries, names),
            names,
            meta,
            &mut sets,
        );
    }
    for (names, value) in &new_entries {
        if entry(&old_entries, names).is_none() {
            let mut sets = (&mut old_set, &mut new_set);
            walk_differing(None, Some(value), names, meta, &mut sets);
        }
    }
    let changed: FieldSet = new_set
        .iter()
        .filter(|path| {
            !old_set.contains(*path)
                || (!path.ends_in_element() && value_at(old, path) != value_at(new, path))
        })
        .cloned()
        .collect();
    let removed: FieldSet = old_set.difference(&new_set).cloned().collect();
    (changed, removed)
}

/// The value of the entry named `names`, if any.
fn entry<'a>(entries: &[(Vec<String>, &'a Value)], names: &[String]) -> Option<&'a Value> {
    entries
        .iter()
        .find(|(n, _)| n.as_slice() == names)
        .map(|(_, v)| *v)
}

/// Walks where `old` and `new` (the values at `names`) differ: into both when both are non-empty maps,
/// else each whole into its set (old, new). Lists are walked whole: their elements' identities depend on
/// the strategy.
fn walk_differing(
    old: Option<&Value>,
    new: Option<&Value>,
    names: &[String],
    meta: &dyn PatchMeta,
    sets: &mut (&mut FieldSet, &mut FieldSet),
) {
    if old == new {
        return;
    }
    if let (Some(Value::Object(old_map)), Some(Value::Object(new_map))) = (old, new)
        && !old_map.is_empty()
        && !new_map.is_empty()
    {
        let added = new_map.keys().filter(|key| !old_map.contains_key(*key));
        for key in old_map.keys().chain(added) {
            let mut child = names.to_vec();
            child.push(key.clone());
            walk_differing(old_map.get(key), new_map.get(key), &child, meta, sets);
        }
        return;
    }
    if let Some(value) = old {
        walk_entry(names, value, meta, sets.0);
    }
    if let Some(value) = new {
        walk_entry(names, value, meta, sets.1);
    }
}

/// The entries of `object` whose fields can be owned, each with its names from the root
/// (`["spec"]`, `["metadata", "labels"]`).
fn owned_entries(object: &Value) -> Vec<(Vec<String>, &Value)> {
    let mut entries = Vec::new();
    let Value::Object(root) = object else {
        return entries;
    };
    for (key, value) in root {
        if key == "apiVersion" || key == "kind" {
            continue;
        }
        if key == "metadata"
            && let Value::Object(metadata) = value
        {
            for (meta_key, meta_value) in metadata {
                if !SERVER_METADATA.contains(&meta_key.as_str()) {
                    entries.push((vec![key.clone(), meta_key.clone()], meta_value));
                }
            }
            continue;
        }
        entries.push((vec![key.clone()], value));
    }
    entries
}

fn walk_entry(names: &[String], value: &Value, meta: &dyn PatchMeta, set: &mut FieldSet) {
    let path = FieldPath(
        names
            .iter()
            .map(|name| PathElement::Field(name.clone()))
            .collect(),
    );
    walk(value, &path, names, meta, set);
}

fn walk(
    value: &Value,
    path: &FieldPath,
    names: &[String],
    meta: &dyn PatchMeta,
    set: &mut FieldSet,
) {
    match value {
        Value::Null => {}
        Value::Object(map) if map.is_empty() => {
            set.insert(path.clone());
        }
        Value::Object(map) => {
            for (key, child) in map {
                let mut child_names = names.to_vec();
                child_names.push(key.clone());
                walk(
                    child,
                    &path.child(PathElement::Field(key.clone())),
                    &child_names,
                    meta,
                    set,
                );
            }
        }
        // An empty list is a value someone set, whatever its strategy.
        Value::Array(items) if items.is_empty() => {
            set.insert(path.clone());
        }
        Value::Array(items) => {
            let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
            match meta.list_strategy(&name_refs) {
                ListStrategy::Merge { key: Some(key) }
                    if items.iter().all(|item| item.get(&key).is_some()) =>
                {
                    for item in items {
                        let item_path = path.child(PathElement::Key(key_of(item, &key)));
                        set.insert(item_path.clone());
                        walk(item, &item_path, names, meta, set);
                    }
                }
                ListStrategy::Merge { key: None }
                    if items
                        .iter()
                        .all(|item| !item.is_object() && !item.is_array()) =>
                {
                    for item in items {
                        set.insert(path.child(PathElement::Value(item.to_string())));
                    }
                }
                _ => {
                    set.insert(path.clone());
                }
            }
        }
        _ => {
            set.insert(path.clone());
        }
    }
}

fn key_of(item: &Value, key: &str) -> String {
    let mut map = Map::new();
    map.insert(
        key.to_string(),
        item.get(key).cloned().unwrap_or(Value::Null),
    );
    Value::Object(map).to_string()
}

fn element_matches(element: &PathElement, item: &Value) -> bool {
    match element {
        PathElement::Key(key) => serde_json::from_str::<Map<String, Value>>(key)
            .is_ok_and(|fields| fields.iter().all(|(k, v)| item.get(k) == Some(v))),
        PathElement::Value(value) => serde_json::from_str::<Value>(value).is_ok_and(|v| &v == item),
        _ => false,
    }
}

/// The value at `path` in `object`, if present.
pub fn value_at<'a>(object: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    let mut current = object;
    for element in &path.0 {
        current = match (element, current) {
            (PathElement::Field(name), Value::Object(map)) => map.get(name)?,
            (PathElement::Index(index), Value::Array(items)) => items.get(*index)?,
            (element, Value::Array(items)) => {
                items.iter().find(|item| element_matches(element, item))?
            }
            _ => return None,
        };
    }
    Some(current)
}

/// Removes the value at `path`; returns whether something was removed.
pub fn remove_at(object: &mut Value, path: &FieldPath) -> bool {
    let Some((last, parent_path)) = path.0.split_last() else {
        return false;
    };
    let mut current = object;
    for element in parent_path {
        let next = match (element, current) {
            (PathElement::Field(name), Value::Object(map)) => map.get_mut(name),
            (PathElement::Index(index), Value::Array(items)) => items.get_mut(*index),
            (element, Value::Array(items)) => {
                items.iter_mut().find(|item| element_matches(element, item))
            }
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        current = next;
    }
    match (last, current) {
        (PathElement::Field(name), Value::Object(map)) => {
            let before = map.len();
            map.retain(|key, _| key != name);
            map.len() != before
        }
        (PathElement::Index(index), Value::Array(items)) if *index < items.len() => {
            items.remove(*index);
            true
        }
        (element, Value::Array(items)) => {
            let before = items.len();
            items.retain(|item| !element_matches(element, item));
            items.len() != before
        }
        _ => false,
    }
}

#[derive(Default)]
struct Node {
    owned: bool,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn to_json(&self) -> Value {
        let mut map = Map::new();
        if self.owned && !self.children.is_empty() {
            map.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (key, child) in &self.children {
            map.insert(key.clone(), child.to_json());
        }
        Value::Object(map)
    }
}

/// The `fieldsV1` JSON of a field set.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Node::default();
    for path in set {
        let mut node = &mut root;
        for element in &path.0 {
            node = node.children.entry(element.encode()).or_default();
        }
        node.owned = true;
    }
    root.to_json()
}

/// Adds `path` to the field set whose `fieldsV1` JSON is `fields`, keeping the form [`to_fields_v1`] writes
/// (keys sorted, `"."` marking a member with members under it), so an entry that gains a few fields is not
/// written again from its whole set. False when `fields` is not such a form (nothing is then promised about it).
pub(crate) fn add_to_fields_v1(fields: &mut Value, path: &FieldPath) -> bool {
    match fields {
        Value::Object(root) if !path.0.is_empty() => add_under(root, &path.0),
        _ => false,
    }
}

fn add_under(node: &mut Map<String, Value>, elements: &[PathElement]) -> bool {
    let Some((first, rest)) = elements.split_first() else {
        return true;
    };
    let key = first.encode();
    let fresh = !node.contains_key(&key);
    if fresh {
        node.insert(key.clone(), Value::Object(Map::new()));
        node.sort_keys();
    }
    let Some(Value::Object(child)) = node.get_mut(&key) else {
        return false;
    };
    let member_without_members = !fresh && child.is_empty();
    if rest.is_empty() {
        if !child.is_empty() && !child.contains_key(".") {
            child.insert(".".to_string(), Value::Object(Map::new()));
            child.sort_keys();
        }
        return true;
    }
    if member_without_members {
        // It stays a member once members join it.
        child.insert(".".to_string(), Value::Object(Map::new()));
    }
    add_under(child, rest)
}

/// `path` as the keys of a `fieldsV1` object, for [`fields_v1_contains`].
pub(crate) fn fields_v1_keys(path: &FieldPath) -> Vec<String> {
    path.0.iter().map(PathElement::encode).collect()
}

/// Whether the field set whose `fieldsV1` JSON is `fields` holds the path whose keys are `keys`, as
/// [`from_fields_v1`] would read it (a member is an empty object or one marked `"."`), without reading the set.
pub(crate) fn fields_v1_contains(fields: &Value, keys: &[String]) -> bool {
    let mut node = fields;
    for key in keys {
        match node.get(key.as_str()) {
            Some(child) => node = child,
            None => return false,
        }
    }
    match node {
        Value::Object(map) => !keys.is_empty() && (map.is_empty() || map.contains_key(".")),
        _ => false,
    }
}

/// Whether a `fieldsV1` JSON value holds no field at all (absent, `null` or `{}`).
pub(crate) fn fields_v1_is_empty(fields: Option<&Value>) -> bool {
    match fields {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.is_empty(),
        Some(_) => false,
    }
}

/// Reads a `fieldsV1` JSON object.
pub fn from_fields_v1(fields: &Value) -> Result<FieldSet, String> {
    let mut set = FieldSet::new();
    read_node(fields, &FieldPath::default(), &mut set)?;
    Ok(set)
}

fn read_node(node: &Value, path: &FieldPath, set: &mut FieldSet) -> Result<(), String> {
    let Value::Object(map) = node else {
        return Err(format!("fieldsV1 at {path} must be an object"));
    };
    if map.is_empty() && !path.0.is_empty() {
        set.insert(path.clone());
    }
    for (key, child) in map {
        if key == "." {
            set.insert(path.clone());
            continue;
        }
        read_node(child, &path.child(PathElement::decode(key)?), set)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::patch::BuiltinPatchMeta;

    #[test]
    fn fields_of_a_deployment_in_fields_v1_form() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "finalizers": ["a.io/x"]},
            "spec": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx", "args": ["a"]}]}},
                "paused": null
            }
        });
        let set = fields_of(&deployment, &BuiltinPatchMeta::for_kind("Deployment"));
        assert_eq!(
            to_fields_v1(&set),
            json!({
                "f:metadata": {"f:finalizers": {"v:\"a.io/x\"": {}}, "f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                        ".": {}, "f:args": {}, "f:image": {}, "f:name": {}
                    }}}}
                }
            })
        );
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), Ok(set));
    }

    #[test]
    fn paths_display_like_kubernetes() {
        let path = FieldPath(vec![
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::Key("{\"name\":\"c\"}".into()),
            PathElement::Field("image".into()),
        ]);
        assert_eq!(path.to_string(), ".spec.containers[name=\"c\"].image");
        let value = FieldPath(vec![
            PathElement::Field("finalizers".into()),
            PathElement::Value("\"a\"".into()),
        ]);
        assert_eq!(value.to_string(), ".finalizers[=\"a\"]");
    }

    #[test]
    fn value_lookup_and_removal() {
        let mut object = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}, "f": ["p", "q"]});
        let image = FieldPath(vec![
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::Key("{\"name\":\"a\"}".into()),
            PathElement::Field("image".into()),
        ]);
        assert_eq!(value_at(&object, &image), Some(&json!("x")));
        assert!(remove_at(&mut object, &image));
        assert!(!remove_at(&mut object, &image));
        let q = FieldPath(vec![
            PathElement::Field("f".into()),
            PathElement::Value("\"q\"".into()),
        ]);
        assert!(remove_at(&mut object, &q));
        assert_eq!(
            object,
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "f": ["p"]})
        );
    }

    #[test]
    fn paths_added_in_place_match_the_whole_set_written_again() {
        let field = |name: &str| PathElement::Field(name.to_string());
        let path = |elements: &[PathElement]| FieldPath(elements.to_vec());
        let container = PathElement::Key("{\"name\":\"c\"}".to_string());
        let containers = [field("spec"), field("containers")];
        let start: FieldSet = [
            path(&[field("spec"), field("replicas")]),
            path(&[
                containers[0].clone(),
                containers[1].clone(),
                container.clone(),
            ]),
            path(&[field("status"), field("conditions"), field("ready")]),
        ]
        .into_iter()
        .collect();
        let additions = [
            // under a member that had no members yet: it keeps its "." mark
            path(&[
                containers[0].clone(),
                containers[1].clone(),
                container.clone(),
                field("image"),
            ]),
            // a map that only held members becomes a member itself
            path(&[field("status"), field("conditions")]),
            // new maps, sorted among the old keys
            path(&[field("status"), field("a"), field("b")]),
            path(&[field("metadata"), field("labels"), field("x")]),
            // already there
            path(&[field("spec"), field("replicas")]),
        ];
        let mut fields = to_fields_v1(&start);
        let mut whole = start.clone();
        for added in &additions {
            assert!(add_to_fields_v1(&mut fields, added), "{added}");
            whole.insert(added.clone());
            assert_eq!(
                fields.to_string(),
                to_fields_v1(&whole).to_string(),
                "after {added}"
            );
        }
        assert_eq!(from_fields_v1(&fields), Ok(whole));
        assert!(!add_to_fields_v1(&mut json!({"f:spec": 1}), &additions[4]));
        assert!(!add_to_fields_v1(&mut json!([]), &additions[4]));
    }

    #[test]
    fn membership_read_from_fields_v1_matches_the_read_set() {
        let deployment = json!({
            "metadata": {"labels": {"app": "web"}, "finalizers": ["a.io/x"]},
            "spec": {"replicas": 2, "selector": {},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}
        });
        let set = fields_of(&deployment, &BuiltinPatchMeta::for_kind("Deployment"));
        let fields = to_fields_v1(&set);
        let field = |name: &str| PathElement::Field(name.to_string());
        let containers = FieldPath(vec![
            field("spec"),
            field("template"),
            field("spec"),
            field("containers"),
        ]);
        let nginx = containers.child(PathElement::Key("{\"name\":\"nginx\"}".to_string()));
        let absent = [
            FieldPath(vec![field("spec")]),
            containers.clone(),
            nginx.child(field("args")),
            FieldPath(vec![field("metadata"), field("labels"), field("tier")]),
            FieldPath::default(),
        ];
        for path in &set {
            assert!(fields_v1_contains(&fields, &fields_v1_keys(path)), "{path}");
        }
        for path in &absent {
            assert!(!set.contains(path), "{path}");
            assert!(
                !fields_v1_contains(&fields, &fields_v1_keys(path)),
                "{path}"
            );
        }
        assert!(
            set.contains(&nginx),
            "a keyed element with members is a member"
        );
        assert!(fields_v1_is_empty(None) && fields_v1_is_empty(Some(&json!({}))));
        assert!(!fields_v1_is_empty(Some(&fields)));
    }

    #[test]
    fn malformed_fields_v1_is_rejected() {
        assert!(from_fields_v1(&json!({"x:spec": {}})).is_err());
        assert!(from_fields_v1(&json!({"f:spec": 1})).is_err());
        assert!(from_fields_v1(&json!({"i:x": {}})).is_err());
    }
}
