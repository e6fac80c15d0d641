//! An object of any kind as a watch delivers it to a compact cache: typed metadata and the rest as JSON text.
//!
//! Why: kube's `DynamicObject` flattens its body into a `serde_json::Value`, so serde buffers each object whole
//! before building it, and every field becomes a heap node — only for [`super::compact::Packer`] to write it
//! back out as text. A fresh scheduler parsing 4,000 ResourceBindings spent most of its start-up there, on one
//! core. A [`RawObject`] keeps each top-level field as the text it arrived in (serde_json only scans it), parses
//! just the metadata, and skips managedFields without building them.
//!
//! Only serde_json's deserializer can produce the raw text, and only when the object is read in place: watch
//! events name their `type` before their `object` (as Kubernetes writes them), so nothing is buffered.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ApiResource;
use kube::core::DynamicResourceScope;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A Kubernetes object with its metadata parsed and everything else kept as JSON text.
#[derive(Clone, Debug, Default)]
pub struct RawObject {
    /// The metadata, without managedFields.
    pub metadata: ObjectMeta,
    /// The other top-level fields (apiVersion, kind, spec, status, data, ...) as one JSON object, in the order
    /// they arrived.
    body: String,
}

impl RawObject {
    /// The object without its metadata, as a JSON object.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The whole object (metadata first, without managedFields) as JSON text. The metadata is written from
    /// its typed form, so a change made to it after reading shows.
    pub fn whole_json(&self) -> Result<String, serde_json::Error> {
        let metadata = serde_json::to_string(&self.metadata)?;
        let fields = self
            .body
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
            .unwrap_or_default();
        let mut json = String::with_capacity(metadata.len() + self.body.len() + 16);
        json.push_str(r#"{"metadata":"#);
        json.push_str(&metadata);
        if !fields.is_empty() {
            json.push(',');
            json.push_str(fields);
        }
        json.push('}');
        Ok(json)
    }
}

impl kube::Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Appends `"key":` to `json`, escaping the key as JSON requires.
fn push_key<E: serde::de::Error>(json: &mut String, key: &str) -> Result<(), E> {
    let quoted = serde_json::to_string(key).map_err(E::custom)?;
    json.push_str(&quoted);
    json.push(':');
    Ok(())
}

/// Collects a map's fields as text into `json` (an object), leaving out `skip`.
fn collect_fields<'de, A: MapAccess<'de>>(
    map: &mut A,
    json: &mut String,
    skip: Option<&str>,
    mut on_key: impl FnMut(&str, &mut A) -> Result<bool, A::Error>,
) -> Result<(), A::Error> {
    json.push('{');
    let mut first = true;
    while let Some(key) = map.next_key::<Cow<'de, str>>()? {
        if skip == Some(&*key) {
            map.next_value::<IgnoredAny>()?;
            continue;
        }
        if on_key(&key, map)? {
            continue;
        }
        let value: Box<RawValue> = map.next_value()?;
        if !first {
            json.push(',');
        }
        first = false;
        push_key(json, &key)?;
        json.push_str(value.get());
    }
    json.push('}');
    Ok(())
}

/// The metadata object's text without managedFields.
struct MetadataText(String);

impl<'de> Deserialize<'de> for MetadataText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetadataVisitor;
        impl<'de> Visitor<'de> for MetadataVisitor {
            type Value = MetadataText;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("object metadata")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetadataText, A::Error> {
                let mut json = String::new();
                collect_fields(&mut map, &mut json, Some("managedFields"), |_, _| Ok(false))?;
                Ok(MetadataText(json))
            }
        }
        deserializer.deserialize_map(MetadataVisitor)
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = RawObject;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Kubernetes object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject, A::Error> {
                let mut metadata_json = None;
                let mut body = String::new();
                collect_fields(&mut map, &mut body, None, |key, map| {
                    if key != "metadata" {
                        return Ok(false);
                    }
                    let MetadataText(text) = map.next_value()?;
                    metadata_json = Some(text);
                    Ok(true)
                })?;
                let metadata = match metadata_json {
                    Some(text) => serde_json::from_str(&text).map_err(serde::de::Error::custom)?,
                    None => ObjectMeta::default(),
                };
                Ok(RawObject { metadata, body })
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// Serialized as the object it was read from (without managedFields), for kube's generic bounds and for logs.
impl Serialize for RawObject {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.whole_json().map_err(serde::ser::Error::custom)?;
        let raw = RawValue::from_string(text).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn sample() -> Value {
        json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {
                "name": "web", "namespace": "default", "resourceVersion": "12",
                "labels": {"app": "web"},
                "annotations": {"quote\"d": "a \u{3c}b\u{3e} \\ c"},
                "managedFields": [{"manager": "m", "operation": "Update", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"replicas": 3, "clusters": [{"name": "a", "replicas": 2}], "n": 1.5e3},
            "status": {"conditions": []}
        })
    }

    #[test]
    fn keeps_every_field_but_managed_fields() {
        let text = serde_json::to_string(&sample()).expect("text");
        let raw: RawObject = serde_json::from_str(&text).expect("raw");
        let mut expected = sample();
        expected["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("managedFields");
        let whole: Value = serde_json::from_str(&raw.whole_json().expect("text")).expect("whole");
        assert_eq!(whole, expected);
        let body: Value = serde_json::from_str(raw.body()).expect("body");
        assert_eq!(body["spec"], expected["spec"]);
        assert!(body.get("metadata").is_none());
        assert_eq!(raw.metadata.name.as_deref(), Some("web"));
        assert_eq!(raw.metadata.resource_version.as_deref(), Some("12"));
        assert!(raw.metadata.managed_fields.is_none());
        assert_eq!(
            raw.metadata.annotations.as_ref().expect("annotations")["quote\"d"],
            "a <b> \\ c"
        );
    }

    #[test]
    fn reads_lists_and_watch_events_as_kube_does() {
        let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "40"},
                          "items": [sample(), {"metadata": {"name": "bare"}}]});
        let list: kube::core::ObjectList<RawObject> =
            serde_json::from_slice(&serde_json::to_vec(&list).expect("bytes")).expect("list");
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.items[1].body(), "{}");
        assert_eq!(
            list.items[1].whole_json().expect("text"),
            r#"{"metadata":{"name":"bare"}}"#
        );
        let event = json!({"type": "MODIFIED", "object": sample()}).to_string();
        let event: kube::core::WatchEvent<RawObject> = serde_json::from_str(&event).expect("event");
        let kube::core::WatchEvent::Modified(object) = event else {
            panic!("expected a MODIFIED event");
        };
        assert_eq!(object.metadata.name.as_deref(), Some("web"));
    }

    #[test]
    fn serializes_back_to_the_object() {
        let raw: RawObject = serde_json::from_str(&sample().to_string()).expect("raw");
        let back = serde_json::to_value(&raw).expect("value");
        assert_eq!(back["spec"], sample()["spec"]);
        assert!(back["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn rejects_what_is_not_an_object() {
        assert!(serde_json::from_str::<RawObject>("[1]").is_err());
        assert!(serde_json::from_str::<RawObject>(r#"{"metadata": 3}"#).is_err());
    }
}
