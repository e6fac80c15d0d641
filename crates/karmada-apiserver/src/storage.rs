//! The store layout of API objects and the conversion between stored bytes and API objects.
//!
//! Layout: `/registry/{group or "core"}/{plural}/{namespace}/{name}` for namespaced kinds and
//! `/registry/{group or "core"}/{plural}/{name}` for cluster-scoped ones. The stored value is the
//! object's JSON without `metadata.resourceVersion`; on every read the key's `mod_revision`
//! becomes the `resourceVersion`, so the store revision *is* the resourceVersion.

use apimachinery::{ApiError, ResourceDef};
use apiserver_views::conversion;
use bytes::Bytes;
use serde_json::Value;
use store::{KeyValue, StoreError};

/// The group segment of a key: the API group, or `core` for the legacy group.
fn group_segment(def: &ResourceDef) -> &str {
    if def.group.is_empty() {
        "core"
    } else {
        &def.group
    }
}

/// The key of one object.
pub fn object_key(def: &ResourceDef, namespace: Option<&str>, name: &str) -> String {
    match namespace.filter(|_| def.namespaced) {
        Some(ns) => format!(
            "/registry/{}/{}/{ns}/{name}",
            group_segment(def),
            def.plural
        ),
        None => format!("/registry/{}/{}/{name}", group_segment(def), def.plural),
    }
}

/// The prefix of a collection: one namespace, or every object of the kind when `namespace` is
/// `None` (or the kind is cluster-scoped). Always ends with `/`.
pub fn collection_prefix(def: &ResourceDef, namespace: Option<&str>) -> String {
    match namespace.filter(|_| def.namespaced) {
        Some(ns) => format!("/registry/{}/{}/{ns}/", group_segment(def), def.plural),
        None => format!("/registry/{}/{}/", group_segment(def), def.plural),
    }
}

/// The prefix under which every object of every kind lives.
pub const ROOT_PREFIX: &str = "/registry/";

/// Decodes a stored value into the API object as `def`'s version shows it.
pub fn decode(def: &ResourceDef, kv: &KeyValue) -> Result<Value, ApiError> {
    let mut object: Value = serde_json::from_slice(&kv.value).map_err(|e| {
        ApiError::internal(format!("stored object {} is not valid JSON: {e}", kv.key))
    })?;
    stamp(def, &mut object, kv.mod_revision);
    Ok(object)
}

/// A stored object converted to `def`, a version served as a view of another, in that version's
/// shape: its Go type may always write fields the stored one omits (`autoscaling/v1`
/// `status.currentReplicas`).
pub fn served_view(def: &ResourceDef, stored: Value) -> Value {
    let mut object = conversion::to_served(def, stored);
    crate::hooks::shape_builtin(def, &mut object);
    object
}

/// Sets `apiVersion`, `kind` and `metadata.resourceVersion` on an object read from the store,
/// converting it first when `def` is a version served as a view of another (`autoscaling/v1` HPA).
pub fn stamp(def: &ResourceDef, object: &mut Value, revision: u64) {
    if conversion::storage_version(def).is_some() {
        *object = served_view(def, std::mem::take(object));
    }
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(def.api_version()));
        map.insert("kind".into(), Value::String(def.kind.clone()));
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = metadata.as_object_mut() {
            meta.insert(
                "resourceVersion".into(),
                Value::String(revision.to_string()),
            );
        }
    }
}

/// The bytes to store for `object`: its JSON without `metadata.resourceVersion`.
///
/// `apiVersion`, `kind` and `metadata` come first, in that order, so that [`stamped_json`] can
/// add the resourceVersion to the stored bytes without parsing them.
pub fn encode(object: &Value) -> Result<Bytes, ApiError> {
    // Written field by field rather than through a reordered copy: a deep clone of every object per write.
    let mut text = Vec::with_capacity(1024);
    write_ordered(object, &mut text)
        .map_err(|e| ApiError::internal(format!("encoding object: {e}")))?;
    // Exactly as long as the text: the value outlives the request in the watch ring, which bounds the bytes
    // it holds by their length, and a serializer's buffer is up to twice that.
    Ok(Bytes::from(text.into_boxed_slice()))
}

/// `apiVersion`, `kind` and `metadata` (without resourceVersion) first, then the other fields in order.
fn write_ordered(object: &Value, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let Some(map) = object.as_object() else {
        return serde_json::to_writer(out, &serde_json::Map::new());
    };
    const HEAD: [&str; 3] = ["apiVersion", "kind", "metadata"];
    let mut first = true;
    let mut field =
        |out: &mut Vec<u8>, key: &str, write: &dyn Fn(&mut Vec<u8>) -> serde_json::Result<()>| {
            out.push(if first { b'{' } else { b',' });
            first = false;
            serde_json::to_writer(&mut *out, key)?;
            out.push(b':');
            write(out)
        };
    for key in HEAD {
        let Some(value) = map.get(key) else { continue };
        match value.as_object().filter(|_| key == "metadata") {
            Some(metadata) => field(out, key, &|out| {
                let mut inner = true;
                for (name, value) in metadata
                    .iter()
                    .filter(|(name, _)| *name != "resourceVersion")
                {
                    out.push(if inner { b'{' } else { b',' });
                    inner = false;
                    serde_json::to_writer(&mut *out, name)?;
                    out.push(b':');
                    serde_json::to_writer(&mut *out, value)?;
                }
                out.extend_from_slice(if inner { b"{}" } else { b"}" });
                Ok(())
            })?,
            None => field(out, key, &|out| serde_json::to_writer(&mut *out, value))?,
        }
    }
    for (key, value) in map.iter().filter(|(key, _)| !HEAD.contains(&key.as_str())) {
        field(out, key, &|out| serde_json::to_writer(&mut *out, value))?;
    }
    out.extend_from_slice(if first { b"{}" } else { b"}" });
    Ok(())
}

/// The response JSON of an object stored as `stored` (what [`encode`] wrote) at `revision`: the stored text
/// with the resourceVersion spliced into its metadata, when it begins as [`encode`] writes it.
pub fn response_json(def: &ResourceDef, stored: &[u8], revision: u64) -> Option<String> {
    let head = format!(
        "{{\"apiVersion\":{},\"kind\":{},\"metadata\":{{",
        Value::String(def.api_version()),
        Value::String(def.kind.clone())
    );
    let rest = std::str::from_utf8(stored.strip_prefix(head.as_bytes())?).ok()?;
    let separator = if rest.starts_with('}') { "" } else { "," };
    Some(format!(
        "{head}\"resourceVersion\":\"{revision}\"{separator}{rest}"
    ))
}

/// The stored object as response JSON (what [`decode`] returns, serialised), spliced from the
/// stored bytes when they begin with this kind's `apiVersion`, `kind` and `metadata` (as
/// [`encode`] writes them); otherwise parsed and stamped.
pub fn stamped_json(def: &ResourceDef, kv: &KeyValue) -> Result<String, ApiError> {
    if let Some(json) = response_json(def, &kv.value, kv.mod_revision) {
        return Ok(json);
    }
    Ok(decode(def, kv)?.to_string())
}

/// A store failure as the client sees it. Precondition failures are mapped by callers, which
/// know the resource and name; this is the fallback.
pub fn store_error(err: StoreError) -> ApiError {
    match err {
        StoreError::Compacted {
            requested,
            compacted,
        } => ApiError::expired(requested, compacted),
        StoreError::FutureRevision { requested, current } => ApiError::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        ),
        StoreError::Conflict { key, .. } => ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {key}: the object has been modified; please apply your changes to the latest version and try again"
            ),
        ),
        StoreError::AlreadyExists(key) => {
            ApiError::new(409, "AlreadyExists", format!("{key} already exists"))
        }
        StoreError::NotFound(key) => ApiError::new(404, "NotFound", format!("{key} not found")),
        StoreError::Backend(message) => ApiError::internal(message),
    }
}

/// Parses a `resourceVersion` string; anything but a decimal number is a 400.
pub fn parse_resource_version(value: &str) -> Result<u64, ApiError> {
    value.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version: {value:?} is not a decimal number"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::Printer;

    #[test]
    fn an_encoded_value_holds_no_spare_room() {
        // The watch ring keeps stored values and bounds them by length: a value carrying its serializer's
        // spare capacity would hold up to twice what the bound says.
        let object = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "resourceVersion": "3"},
            "data": {"k": "v".repeat(3000)}
        });
        let encoded = encode(&object).expect("encode");
        let len = encoded.len();
        let unique = encoded.try_into_mut().expect("only owner");
        assert_eq!(unique.capacity(), len);
    }

    fn def(group: &str, plural: &str, namespaced: bool) -> ResourceDef {
        ResourceDef {
            group: group.into(),
            version: "v1".into(),
            kind: "K".into(),
            plural: plural.into(),
            singular: plural.into(),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            scale_subresource: None,
            builtin: true,
            tracks_generation: false,
            printer: Printer::Builtin,
            schema: None,
            storage_version: true,
        }
    }

    #[test]
    fn spliced_json_equals_the_parsed_and_stamped_object() {
        let cm = def("", "configmaps", true);
        let objects = [
            serde_json::json!({"data": {"a": "\"metadata\":{"}, "metadata": {"name": "x", "resourceVersion": "9"}, "kind": "K", "apiVersion": "v1"}),
            serde_json::json!({"apiVersion": "v1", "kind": "K", "metadata": {}}),
            serde_json::json!({"kind": "K", "apiVersion": "v1", "metadata": {"name": "y", "labels": {"a": "b"}}, "spec": {"metadata": {"z": 1}}}),
        ];
        for (i, object) in objects.iter().enumerate() {
            let kv = KeyValue {
                key: format!("/k/{i}"),
                value: encode(object).unwrap(),
                create_revision: 3,
                mod_revision: 7,
            };
            let spliced: Value = serde_json::from_str(&stamped_json(&cm, &kv).unwrap()).unwrap();
            assert_eq!(spliced, decode(&cm, &kv).unwrap(), "object {i}");
            assert_eq!(spliced["metadata"]["resourceVersion"], "7");
        }
        // Objects of the definition's own kind are spliced (as a write's response is), with their fields in
        // the order they were written and resourceVersion never stored.
        for object in [
            serde_json::json!({"data": {"k": "v"}, "metadata": {"name": "s", "resourceVersion": "1", "uid": "u"},
                               "kind": cm.kind, "apiVersion": cm.api_version()}),
            serde_json::json!({"apiVersion": cm.api_version(), "kind": cm.kind, "metadata": {}}),
            serde_json::json!({"apiVersion": cm.api_version(), "kind": cm.kind, "metadata": {"resourceVersion": "4"}}),
        ] {
            let stored = encode(&object).unwrap();
            assert!(
                !std::str::from_utf8(&stored)
                    .unwrap()
                    .contains("resourceVersion")
            );
            let spliced = response_json(&cm, &stored, 11).expect("spliced");
            let spliced: Value = serde_json::from_str(&spliced).unwrap();
            let mut expected = object.clone();
            stamp(&cm, &mut expected, 11);
            assert_eq!(spliced, expected);
        }
        assert_eq!(encode(&serde_json::json!({})).unwrap().as_ref(), b"{}");
        assert_eq!(response_json(&cm, br#"{"kind":"Other"}"#, 1), None);
        // Bytes in another order (older data) still come out right, through parsing.
        let kv = KeyValue {
            key: "/k/old".into(),
            value: Bytes::from_static(br#"{"metadata":{"name":"o"},"apiVersion":"v1","kind":"K"}"#),
            create_revision: 1,
            mod_revision: 2,
        };
        let spliced: Value = serde_json::from_str(&stamped_json(&cm, &kv).unwrap()).unwrap();
        assert_eq!(spliced, decode(&cm, &kv).unwrap());
    }

    #[test]
    fn key_layout() {
        let cm = def("", "configmaps", true);
        assert_eq!(
            object_key(&cm, Some("ns"), "a"),
            "/registry/core/configmaps/ns/a"
        );
        assert_eq!(
            collection_prefix(&cm, Some("ns")),
            "/registry/core/configmaps/ns/"
        );
        assert_eq!(collection_prefix(&cm, None), "/registry/core/configmaps/");
        let cluster = def("cluster.karmada.io", "clusters", false);
        assert_eq!(
            object_key(&cluster, Some("ignored"), "m1"),
            "/registry/cluster.karmada.io/clusters/m1"
        );
    }

    #[test]
    fn resource_version_is_the_revision_and_never_stored() {
        let cm = def("", "configmaps", true);
        let object = serde_json::json!({"metadata": {"name": "a", "resourceVersion": "9"}});
        let bytes = encode(&object).map_err(|e| e.message).expect("encodes");
        assert!(!String::from_utf8_lossy(&bytes).contains("resourceVersion"));
        let kv = KeyValue {
            key: "k".into(),
            value: bytes,
            create_revision: 3,
            mod_revision: 4,
        };
        let decoded = decode(&cm, &kv).map_err(|e| e.message).expect("decodes");
        assert_eq!(decoded["metadata"]["resourceVersion"], "4");
        assert_eq!(decoded["kind"], "K");
        assert_eq!(
            parse_resource_version("x").map_err(|e| e.code).err(),
            Some(400)
        );
    }
}
