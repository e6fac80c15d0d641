//! Metadata rules every write follows, as pure functions: type and namespace checks, names and
//! `generateName`, uid and timestamps on create, immutable fields and generation on update,
//! finalizer rules. Time and randomness are arguments.
//!
//! Invariants: `uid`, `creationTimestamp`, `name` and `namespace` never change after create;
//! `generation` starts at 1 and grows by one exactly when something outside `metadata` and
//! `status` changes (for kinds that track it); `resourceVersion` is never decided here.

use apimachinery::{ApiError, FieldError, ResourceDef, names};
use serde_json::{Map, Value, json};

/// What a write addresses: the object itself or one of its subresources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Main,
    Status,
}

pub fn meta(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata").and_then(Value::as_object)
}

pub fn meta_mut(object: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    let map = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the request body must be a JSON object"))?;
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    metadata
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    meta(object)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

pub fn name_of(object: &Value) -> &str {
    meta_str(object, "name").unwrap_or_default()
}

pub fn uid_of(object: &Value) -> &str {
    meta_str(object, "uid").unwrap_or_default()
}

pub fn finalizers(object: &Value) -> Vec<String> {
    meta(object)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub fn set_finalizers(object: &mut Value, list: &[String]) -> Result<(), ApiError> {
    let meta = meta_mut(object)?;
    if list.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), json!(list));
    }
    Ok(())
}

pub fn is_deleting(object: &Value) -> bool {
    meta(object)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// RFC 3339 UTC seconds, as Kubernetes prints `metav1.Time`.
pub fn timestamp(now: jiff::Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The strings of a JSON array (other items skipped); empty when `value` is absent or not an array.
pub fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Checks `apiVersion` and `kind` of a body against the resource the URL names, filling them in
/// when absent.
pub fn check_type(def: &ResourceDef, object: &mut Value) -> Result<(), ApiError> {
    let map = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the request body must be a JSON object"))?;
    let expected_version = def.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::String(expected_version.clone()));
        }
        Some(version) if version == expected_version => {}
        Some(version) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({version}) does not match the expected API version ({expected_version})"
            )));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::String(def.kind.clone()));
        }
        Some(kind) if kind == def.kind => {}
        Some(kind) => {
            return Err(ApiError::bad_request(format!(
                "no kind \"{kind}\" is registered for version \"{expected_version}\": the kind in the data ({kind}) does not match the expected kind ({})",
                def.kind
            )));
        }
    }
    Ok(())
}

/// Makes the body's namespace agree with the URL's: fills it in, or 400 on a mismatch.
/// Cluster-scoped objects lose any namespace.
pub fn check_namespace(
    def: &ResourceDef,
    object: &mut Value,
    namespace: Option<&str>,
) -> Result<(), ApiError> {
    let meta = meta_mut(object)?;
    if !def.namespaced {
        meta.remove("namespace");
        return Ok(());
    }
    let Some(url_ns) = namespace else {
        return Err(ApiError::bad_request(
            "the namespace of the object is required for a namespaced resource",
        ));
    };
    match meta.get("namespace").and_then(Value::as_str) {
        None | Some("") => {
            meta.insert("namespace".into(), Value::String(url_ns.to_string()));
            Ok(())
        }
        Some(ns) if ns == url_ns => Ok(()),
        Some(_) => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
}

/// Name syntax for `def`'s objects: namespaces are DNS-1123 labels, everything else
/// DNS-1123 subdomains.
pub fn validate_name(def: &ResourceDef, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )];
    }
    if def.group.is_empty() && def.plural == "namespaces" {
        names::validate_dns1123_label("metadata.name", name)
    } else if def.group == "rbac.authorization.k8s.io" {
        // RBAC names only need to be a URL path segment (`system:aggregate-to-view` is valid).
        validate_path_segment(name)
    } else {
        names::validate_dns1123_subdomain("metadata.name", name)
    }
}

fn validate_path_segment(name: &str) -> Vec<FieldError> {
    let problem = if name == "." || name == ".." {
        Some(format!("may not be '{name}'"))
    } else if name.contains('/') || name.contains('%') {
        Some("may not contain '/' or '%'".to_string())
    } else {
        None
    };
    problem
        .map(|detail| {
            vec![FieldError::invalid(
                "metadata.name",
                Value::String(name.into()),
                detail,
            )]
        })
        .unwrap_or_default()
}

/// Removes the metadata maps and lists that are empty or null, as kube-apiserver's typed `ObjectMeta`
/// (every one of them `omitempty`) does (not managedFields: an empty list there asks to clear them): a patch that empties `annotations`, or kubectl's client-side
/// `diff` of an object without annotations (which patches `"annotations": {}`), leaves no `annotations: {}`.
fn drop_empty_collections(meta: &mut Map<String, Value>) {
    for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
        let empty = match meta.get(field) {
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Array(items)) => items.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            meta.remove(field);
        }
    }
}

/// Fills in the server-owned metadata of a new object: name from `generateName`, uid,
/// creationTimestamp, generation. Clears fields a client may not set on create.
pub fn prepare_create(
    def: &ResourceDef,
    object: &mut Value,
    now: jiff::Timestamp,
    uid: uuid::Uuid,
    random: [u8; names::GENERATED_SUFFIX_LEN],
) -> Result<(), ApiError> {
    let meta = meta_mut(object)?;
    let has_name = meta
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !has_name
        && let Some(prefix) = meta
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
    {
        let generated = names::generate_name(prefix, random);
        meta.insert("name".into(), Value::String(generated));
    }
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let errors = validate_name(def, &name);
    if !errors.is_empty() {
        return Err(ApiError::invalid(&def.group, &def.kind, &name, &errors));
    }
    drop_empty_collections(meta);
    meta.insert("uid".into(), Value::String(uid.to_string()));
    meta.insert("creationTimestamp".into(), Value::String(timestamp(now)));
    for field in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        meta.remove(field);
    }
    if def.tracks_generation {
        meta.insert("generation".into(), json!(1));
    } else {
        meta.remove("generation");
    }
    if def.status_subresource
        && let Some(map) = object.as_object_mut()
    {
        // Status is written through /status only; what a client sends on create is dropped.
        map.remove("status");
    }
    Ok(())
}

/// Builds the object to store from the `old` stored object and the client's `new` one:
/// keeps immutable metadata, routes `status` per subresource, bumps generation, and refuses
/// finalizers added during deletion.
pub fn prepare_update(
    def: &ResourceDef,
    old: &Value,
    mut new: Value,
    part: Part,
) -> Result<Value, ApiError> {
    if part == Part::Status {
        // Only status (and nothing else) changes through /status: the old object with the new status, built
        // without copying the old status only to replace it.
        new = with_status_of(old, new);
    } else if def.status_subresource
        && let Some(map) = new.as_object_mut()
    {
        match old.get("status") {
            Some(status) => map.insert("status".into(), status.clone()),
            None => map.remove("status"),
        };
    }
    let name = name_of(old).to_string();
    let new_name = meta_str(&new, "name").unwrap_or_default();
    if !new_name.is_empty() && new_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({new_name}) does not match the name on the URL ({name})"
        )));
    }
    let no_meta = Map::new();
    let old_meta = meta(old).unwrap_or(&no_meta);
    let old_finalizers = finalizers(old);
    let new_finalizers = finalizers(&new);
    {
        let meta = meta_mut(&mut new)?;
        drop_empty_collections(meta);
        for field in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match old_meta.get(field) {
                Some(value) => meta.insert(field.into(), value.clone()),
                None => meta.remove(field),
            };
        }
    }
    if is_deleting(old) {
        let added: Vec<&String> = new_finalizers
            .iter()
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        if !added.is_empty() {
            let errors = [FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                ),
            )];
            return Err(ApiError::invalid(&def.group, &def.kind, &name, &errors));
        }
    }
    if def.tracks_generation && spec_changed(old, &new) {
        let generation = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        meta_mut(&mut new)?.insert("generation".into(), json!(generation));
    }
    Ok(new)
}

/// `old` with `new`'s status in its place (none when `new` has none), at the position it had in `old`.
fn with_status_of(old: &Value, mut new: Value) -> Value {
    let Value::Object(old_map) = old else {
        return old.clone();
    };
    let mut status = new.as_object_mut().and_then(|map| map.remove("status"));
    let mut merged = Map::new();
    for (key, value) in old_map {
        if key == "status" {
            if let Some(status) = status.take() {
                merged.insert(key.clone(), status);
            }
        } else {
            merged.insert(key.clone(), value.clone());
        }
    }
    if let Some(status) = status {
        merged.insert("status".into(), status);
    }
    Value::Object(merged)
}

/// Whether anything outside `metadata` and `status` differs.
fn spec_changed(old: &Value, new: &Value) -> bool {
    let is_spec = |key: &str| !matches!(key, "metadata" | "status" | "apiVersion" | "kind");
    let no_fields = Map::new();
    let old = old.as_object().unwrap_or(&no_fields);
    let new = new.as_object().unwrap_or(&no_fields);
    !same_entries_except(old, new, |key| !is_spec(key))
}

/// Whether `a` and `b` hold the same entries, those whose key `skip` names aside (in any order).
fn same_entries_except(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    skip: impl Fn(&str) -> bool,
) -> bool {
    let counted = |map: &Map<String, Value>| map.keys().filter(|key| !skip(key)).count();
    counted(a) == counted(b)
        && a.iter()
            .filter(|(key, _)| !skip(key))
            .all(|(key, value)| b.get(key) == Some(value))
}

/// Whether two versions of an object are the same for storage purposes (ignoring
/// `resourceVersion` and managedFields timestamps), so a no-op write keeps its revision.
/// Compared in place: this runs on every update and patch, and copying both objects to strip those
/// fields cost more than the comparison.
pub fn same_content(old: &Value, new: &Value) -> bool {
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return old == new;
    };
    same_entries_except(old, new, |key| key == "metadata")
        && match (old.get("metadata"), new.get("metadata")) {
            (Some(Value::Object(old)), Some(Value::Object(new))) => {
                same_entries_except(old, new, |key| {
                    matches!(key, "resourceVersion" | "managedFields")
                }) && same_managed_fields(old.get("managedFields"), new.get("managedFields"))
            }
            (old, new) => old == new,
        }
}

/// [`same_content`]'s comparison of `managedFields`: entries equal but for their `time`.
fn same_managed_fields(old: Option<&Value>, new: Option<&Value>) -> bool {
    match (old, new) {
        (Some(Value::Array(old)), Some(Value::Array(new))) => {
            old.len() == new.len()
                && old.iter().zip(new).all(|pair| match pair {
                    (Value::Object(old), Value::Object(new)) => {
                        same_entries_except(old, new, |key| key == "time")
                    }
                    (old, new) => old == new,
                })
        }
        (old, new) => old == new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::Printer;

    fn def(tracks_generation: bool, status_subresource: bool) -> ResourceDef {
        ResourceDef {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            singular: "deployment".into(),
            namespaced: true,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource,
            scale_subresource: None,
            builtin: true,
            tracks_generation,
            printer: Printer::Builtin,
            schema: None,
            storage_version: true,
        }
    }

    fn stored() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u", "creationTimestamp": "t", "generation": 3},
            "spec": {"replicas": 1},
            "status": {"replicas": 1}
        })
    }

    #[test]
    fn empty_metadata_maps_and_lists_are_dropped_as_omitempty_does() {
        let d = def(true, true);
        let mut sent = stored();
        sent["metadata"]["annotations"] = json!({});
        sent["metadata"]["labels"] = json!({"app": "web"});
        sent["metadata"]["finalizers"] = json!([]);
        sent["metadata"]["ownerReferences"] = Value::Null;
        sent["metadata"]["managedFields"] = json!([]);
        let next = prepare_update(&d, &stored(), sent.clone(), Part::Main).unwrap();
        let meta = &next["metadata"];
        for gone in ["annotations", "finalizers", "ownerReferences"] {
            assert!(meta.get(gone).is_none(), "{gone}: {meta}");
        }
        assert_eq!(meta["labels"], json!({"app": "web"}));
        assert_eq!(
            meta["managedFields"],
            json!([]),
            "an empty list clears managed fields"
        );

        let mut created = sent;
        created["metadata"]["labels"] = json!({});
        prepare_create(
            &d,
            &mut created,
            jiff::Timestamp::UNIX_EPOCH,
            uuid::Uuid::nil(),
            [b'a'; 5],
        )
        .unwrap();
        assert!(
            created["metadata"].get("labels").is_none(),
            "{}",
            created["metadata"]
        );
        assert!(created["metadata"].get("annotations").is_none());
    }

    #[test]
    fn generation_moves_only_with_spec() {
        let d = def(true, true);
        let cases = [
            (
                json!({"metadata": {"name": "web", "labels": {"a": "b"}}, "spec": {"replicas": 1}}),
                Part::Main,
                3,
            ),
            (
                json!({"metadata": {"name": "web"}, "spec": {"replicas": 2}}),
                Part::Main,
                4,
            ),
            (
                json!({"metadata": {"name": "web"}, "spec": {"replicas": 9}, "status": {"replicas": 5}}),
                Part::Status,
                3,
            ),
        ];
        for (new, part, want) in cases {
            let next = prepare_update(&d, &stored(), new.clone(), part)
                .map_err(|e| e.message)
                .expect("valid update");
            assert_eq!(next["metadata"]["generation"], want, "{new}");
            assert_eq!(next["metadata"]["uid"], "u", "uid is immutable");
            assert_eq!(next["metadata"]["creationTimestamp"], "t");
        }
    }

    #[test]
    fn status_routing_per_subresource() {
        let d = def(true, true);
        let main = prepare_update(
            &d,
            &stored(),
            json!({"spec": {"replicas": 1}, "status": {"replicas": 7}}),
            Part::Main,
        )
        .map_err(|e| e.message)
        .expect("valid");
        assert_eq!(main["status"]["replicas"], 1, "PUT ignores status");
        let status = prepare_update(
            &d,
            &stored(),
            json!({"spec": {"replicas": 5}, "status": {"replicas": 7}}),
            Part::Status,
        )
        .map_err(|e| e.message)
        .expect("valid");
        assert_eq!(status["status"]["replicas"], 7);
        assert_eq!(
            status["spec"]["replicas"], 1,
            "/status ignores everything but status"
        );
    }

    #[test]
    fn status_writes_keep_the_old_object_and_its_field_order() {
        let d = def(true, true);
        let next = prepare_update(
            &d,
            &stored(),
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 5}}),
            Part::Status,
        )
        .map_err(|e| e.message)
        .expect("valid");
        assert!(
            next.get("status").is_none(),
            "a status write without status clears it"
        );
        let mut no_status = stored();
        if let Some(map) = no_status.as_object_mut() {
            map.remove("status");
        }
        let next = prepare_update(
            &d,
            &no_status,
            json!({"metadata": {"name": "web"}, "status": {"ready": 2}}),
            Part::Status,
        )
        .map_err(|e| e.message)
        .expect("valid");
        assert_eq!(next["status"], json!({"ready": 2}));
        let next = prepare_update(
            &d,
            &stored(),
            json!({"metadata": {"name": "web"}, "status": {"replicas": 4}}),
            Part::Status,
        )
        .map_err(|e| e.message)
        .expect("valid");
        let keys: Vec<&str> = next
            .as_object()
            .map(|map| map.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, ["apiVersion", "kind", "metadata", "spec", "status"]);
    }

    #[test]
    fn same_content_ignores_only_the_resource_version_and_managed_times() {
        let base = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "5", "managedFields": [
                {"manager": "m", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:data": {}}}
            ]},
            "data": {"k": "v"}
        });
        let mut moved = base.clone();
        moved["metadata"]["resourceVersion"] = json!("9");
        moved["metadata"]["managedFields"][0]["time"] = json!("2026-02-02T00:00:00Z");
        assert!(same_content(&base, &moved));
        let mut unversioned = base.clone();
        if let Some(meta) = unversioned["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        assert!(same_content(&base, &unversioned));
        let changes: [(&str, Value); 6] = [
            ("/data/k", json!("w")),
            ("/metadata/labels", json!({"a": "b"})),
            ("/metadata/managedFields/0/manager", json!("other")),
            ("/metadata/managedFields", json!([])),
            ("/metadata", json!({})),
            ("/status", json!({})),
        ];
        for (pointer, value) in changes {
            let mut changed = base.clone();
            match changed.pointer_mut(pointer) {
                Some(slot) => *slot = value,
                None => {
                    let (parent, key) = pointer.rsplit_once('/').unwrap_or_default();
                    if let Some(map) = changed.pointer_mut(parent).and_then(Value::as_object_mut) {
                        map.insert(key.to_string(), value);
                    }
                }
            }
            assert!(!same_content(&base, &changed), "{pointer}");
            assert!(!same_content(&changed, &base), "{pointer}");
        }
        let mut without_metadata = base.clone();
        if let Some(map) = without_metadata.as_object_mut() {
            map.remove("metadata");
        }
        assert!(!same_content(&base, &without_metadata));
        assert!(same_content(&without_metadata, &without_metadata.clone()));
    }

    #[test]
    fn no_new_finalizers_while_deleting() {
        let d = def(false, false);
        let mut old = stored();
        old["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        old["metadata"]["finalizers"] = json!(["a"]);
        let removing = prepare_update(
            &d,
            &old,
            json!({"metadata": {"finalizers": []}}),
            Part::Main,
        );
        assert!(removing.is_ok());
        let adding = prepare_update(
            &d,
            &old,
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            Part::Main,
        );
        assert_eq!(adding.map_err(|e| e.code).err(), Some(422));
    }

    #[test]
    fn create_fills_server_metadata_and_generates_names() {
        let d = def(true, true);
        let mut object = json!({"metadata": {"generateName": "web-", "resourceVersion": "5"}, "status": {"x": 1}});
        let now = jiff::Timestamp::from_second(1_800_000_000)
            .map_err(|e| e.to_string())
            .expect("valid time");
        prepare_create(&d, &mut object, now, uuid::Uuid::nil(), [0, 1, 2, 3, 4])
            .map_err(|e| e.message)
            .expect("valid");
        assert_eq!(object["metadata"]["name"], "web-bcdfg");
        assert_eq!(
            object["metadata"]["creationTimestamp"],
            "2027-01-15T08:00:00Z"
        );
        assert_eq!(object["metadata"]["generation"], 1);
        assert!(object["metadata"].get("resourceVersion").is_none());
        assert!(object.get("status").is_none());
    }

    #[test]
    fn type_and_namespace_checks() {
        let d = def(true, false);
        let mut ok = json!({"metadata": {}});
        assert!(check_type(&d, &mut ok).is_ok());
        assert_eq!(ok["apiVersion"], "apps/v1");
        for bad in [
            json!({"apiVersion": "v1", "kind": "Deployment"}),
            json!({"apiVersion": "apps/v1", "kind": "Pod"}),
        ] {
            let mut bad = bad;
            assert_eq!(
                check_type(&d, &mut bad).map_err(|e| e.code).err(),
                Some(400)
            );
        }
        let mut other_ns = json!({"metadata": {"namespace": "b"}});
        assert_eq!(
            check_namespace(&d, &mut other_ns, Some("a"))
                .map_err(|e| e.code)
                .err(),
            Some(400)
        );
    }
}
