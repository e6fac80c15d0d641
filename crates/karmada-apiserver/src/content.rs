//! Content negotiation: decoding request bodies (JSON, YAML, protobuf for built-in kinds) and
//! choosing the response shape from `Accept` (plain objects, `meta.k8s.io` Tables,
//! PartialObjectMetadata).
//!
//! Invariants: a missing Content-Type means JSON (the Python client sends none); a body that
//! does not decode is a 400 carrying the decoder's message; nothing here touches the store.

use std::borrow::Cow;
use std::collections::HashSet;

use apimachinery::{ApiError, ResourceDef};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

pub const JSON: &str = "application/json";
pub const YAML: &str = "application/yaml";
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a Content-Type header, lower case, without parameters.
pub fn media_type(content_type: Option<&str>) -> String {
    content_type
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// A decoded request body and the object keys that appeared more than once (dotted paths).
pub struct Decoded {
    pub value: Value,
    pub duplicate_fields: Vec<String>,
}

/// Decodes a create/update body for `def`.
pub fn decode_body(
    content_type: Option<&str>,
    body: &[u8],
    def: &ResourceDef,
) -> Result<Decoded, ApiError> {
    let media = media_type(content_type);
    match media.as_str() {
        "" | JSON | "*/*" | "application/*" => decode_json(body),
        YAML | "application/x-yaml" | "text/yaml" => Ok(Decoded {
            value: decode_yaml(body)?,
            duplicate_fields: Vec::new(),
        }),
        PROTOBUF => decode_protobuf(body, def).map(|value| Decoded {
            value,
            duplicate_fields: Vec::new(),
        }),
        other => Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format ({other}) - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        ))),
    }
}

fn decode_json(body: &[u8]) -> Result<Decoded, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })?;
    let mut duplicates = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    if DuplicateScan::scan(&mut deserializer, &mut duplicates).is_err() {
        duplicates.clear();
    }
    Ok(Decoded {
        value,
        duplicate_fields: duplicates,
    })
}

fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body).map_err(|e| {
        ApiError::bad_request(format!(
            "error converting YAML to JSON: yaml: invalid UTF-8: {e}"
        ))
    })?;
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: yaml: {e}")))
}

/// JSON first (what every client in scope sends), YAML as the fallback (apply-patch+yaml).
pub fn decode_json_or_yaml(body: &[u8]) -> Result<Value, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => Ok(value),
        Err(_) => decode_yaml(body),
    }
}

fn decode_protobuf(body: &[u8], def: &ResourceDef) -> Result<Value, ApiError> {
    if !def.builtin {
        return Err(unsupported_protobuf(def));
    }
    crate::hooks::decode_protobuf(body)
}

fn unsupported_protobuf(def: &ResourceDef) -> ApiError {
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (protobuf is not supported for {}, Kind={})",
        def.api_version(),
        def.kind
    ))
}

/// Walks a JSON document recording keys that repeat within one object (Strict validation
/// reports them like unknown fields). Every write's body is scanned, and almost none repeats a
/// key: so keys are borrowed from the body and a value's path is a chain of borrowed segments,
/// written out only for a key that repeats.
struct DuplicateScan<'p, 'f> {
    at: Segment<'p>,
    found: &'f mut Vec<String>,
}

/// Where a value sits in the document.
#[derive(Clone, Copy)]
enum Segment<'p> {
    Root,
    Key(&'p Segment<'p>, &'p str),
    Index(&'p Segment<'p>, usize),
}

impl Segment<'_> {
    /// The dotted path with indexes, e.g. `spec.containers[0].name`.
    fn render(&self) -> String {
        match self {
            Segment::Root => String::new(),
            Segment::Key(parent, key) => {
                let parent = parent.render();
                if parent.is_empty() {
                    (*key).to_string()
                } else {
                    format!("{parent}.{key}")
                }
            }
            Segment::Index(parent, index) => format!("{}[{index}]", parent.render()),
        }
    }
}

impl DuplicateScan<'_, '_> {
    fn scan<'de, D: Deserializer<'de>>(
        deserializer: D,
        found: &mut Vec<String>,
    ) -> Result<(), D::Error> {
        deserializer.deserialize_any(DuplicateScan {
            at: Segment::Root,
            found,
        })
    }
}

impl<'de> de::DeserializeSeed<'de> for DuplicateScan<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DuplicateScan<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let at = Segment::Index(&self.at, index);
            if seq
                .next_element_seed(DuplicateScan {
                    at,
                    found: &mut *self.found,
                })?
                .is_none()
            {
                return Ok(());
            }
            index += 1;
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = SeenKeys::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let at = Segment::Key(&self.at, &key);
            if seen.contains(&key) {
                self.found.push(at.render());
            }
            map.next_value_seed(DuplicateScan {
                at,
                found: &mut *self.found,
            })?;
            seen.insert(key);
        }
        Ok(())
    }
}

/// The keys of one object so far: a short list searched in order (most objects have a few
/// keys), a hash set past [`SeenKeys::LINEAR`] (a ConfigMap's data may have thousands).
#[derive(Default)]
struct SeenKeys<'de> {
    few: Vec<Cow<'de, str>>,
    many: HashSet<Cow<'de, str>>,
}

impl<'de> SeenKeys<'de> {
    const LINEAR: usize = 32;

    fn contains(&self, key: &str) -> bool {
        self.few.iter().any(|k| k == key) || self.many.contains(key)
    }

    fn insert(&mut self, key: Cow<'de, str>) {
        if self.few.len() < Self::LINEAR {
            self.few.push(key);
        } else {
            self.many.insert(key);
        }
    }
}

/// A key, borrowed from the body unless it has escapes.
struct KeySeed;

impl<'de> de::DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }
    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.to_string()))
    }
    fn visit_string<E>(self, key: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key))
    }
}

/// What `includeObject` asks rows of a Table to carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value {
            None | Some("") | Some("Metadata") => Ok(Self::Metadata),
            Some("None") => Ok(Self::None),
            Some("Object") => Ok(Self::Object),
            Some(other) => Err(ApiError::bad_request(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            ))),
        }
    }
}

/// The response shape a request's Accept header selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Json,
    Table,
    /// `as=PartialObjectMetadata` (single objects) or `...List` (collections).
    PartialMetadata,
}

/// Chooses the response shape; 406 only when no offered media range is acceptable.
pub fn negotiate(accept: Option<&str>) -> Result<Output, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Output::Json);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut as_kind = None;
        let mut group = None;
        for param in parts {
            if let Some((k, v)) = param.split_once('=') {
                match k.trim() {
                    "as" => as_kind = Some(v.trim().to_string()),
                    "g" => group = Some(v.trim().to_string()),
                    _ => {}
                }
            }
        }
        let json_like = matches!(media.as_str(), "application/json" | "*/*" | "application/*");
        match (as_kind.as_deref(), group.as_deref()) {
            (Some("Table"), Some("meta.k8s.io")) if json_like => return Ok(Output::Table),
            (Some("PartialObjectMetadata" | "PartialObjectMetadataList"), Some("meta.k8s.io"))
                if json_like =>
            {
                return Ok(Output::PartialMetadata);
            }
            (None, _) if json_like || media == YAML => return Ok(Output::Json),
            _ => {}
        }
    }
    Err(ApiError::not_acceptable())
}

/// `object` reduced to a `meta.k8s.io/v1` PartialObjectMetadata.
pub fn partial_metadata(object: &Value) -> Value {
    partial_metadata_of(
        object
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({})),
    )
}

/// A `meta.k8s.io/v1` PartialObjectMetadata holding `metadata`.
pub fn partial_metadata_of(metadata: Value) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_picks_the_first_acceptable_range() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let cases: &[(Option<&str>, Result<Output, u16>)] = &[
            (None, Ok(Output::Json)),
            (Some(""), Ok(Output::Json)),
            (Some("*/*"), Ok(Output::Json)),
            (Some("application/json, */*"), Ok(Output::Json)),
            (Some(table), Ok(Output::Table)),
            (
                Some("application/vnd.kubernetes.protobuf,application/json"),
                Ok(Output::Json),
            ),
            (
                Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
                Ok(Output::PartialMetadata),
            ),
            (
                Some("application/json;as=Unknown;g=x.io,application/json"),
                Ok(Output::Json),
            ),
            (Some("text/html"), Err(406)),
            (Some("application/vnd.kubernetes.protobuf"), Err(406)),
        ];
        for (accept, want) in cases {
            let got = negotiate(*accept).map_err(|e| e.code);
            assert_eq!(&got, want, "{accept:?}");
        }
    }

    #[test]
    fn duplicate_keys_are_reported_with_their_paths() {
        let body = br#"{"a":1,"b":{"c":1,"c":2},"d":[{"e":1,"e":1}],"a":2}"#;
        let decoded = decode_json(body)
            .map_err(|e| e.message)
            .expect("valid JSON");
        assert_eq!(decoded.duplicate_fields, ["b.c", "d[0].e", "a"]);
        assert!(
            decode_json(br#"{"a":1,"b":2}"#)
                .map(|d| d.duplicate_fields.is_empty())
                .unwrap_or(false)
        );
        // A key written with an escape is the same key; arrays of arrays keep every index.
        let escaped = br#"{"f":[0,[{"g":1,"\u0067":2}]],"xA":1,"x\u0041":2}"#;
        let decoded = decode_json(escaped).map_err(|e| e.message).expect("valid");
        assert_eq!(decoded.duplicate_fields, ["f[1][0].g", "xA"]);
        // Past the keys searched in order: a data map of many keys.
        let mut many = (0..100)
            .map(|i| format!("\"k{i}\":{i}"))
            .collect::<Vec<_>>();
        many.push("\"k0\":0".into());
        many.push("\"k77\":0".into());
        let body = format!("{{\"data\":{{{}}}}}", many.join(","));
        let decoded = decode_json(body.as_bytes())
            .map_err(|e| e.message)
            .expect("valid");
        assert_eq!(decoded.duplicate_fields, ["data.k0", "data.k77"]);
    }

    #[test]
    fn media_types_ignore_parameters_and_case() {
        assert_eq!(
            media_type(Some("Application/JSON; charset=utf-8")),
            "application/json"
        );
        assert_eq!(media_type(None), "");
    }
}
