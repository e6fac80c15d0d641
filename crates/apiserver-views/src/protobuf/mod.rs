//! Decoding `application/vnd.kubernetes.protobuf` request bodies into the JSON the rest of the
//! server works with.
//!
//! Layout: the magic `k8s\0`, then a `runtime.Unknown` whose `typeMeta` names the kind and whose
//! `raw` holds the typed message. Only the kinds kubectl 1.32's generators send are understood;
//! anything else is a [`DecodeError::UnsupportedKind`] so the server can answer 415. A field the
//! tables do not know is refused ([`DecodeError::UnsupportedField`]) unless it is empty, so data is
//! never dropped silently. Decoding never panics on hostile input: every length is bounds-checked.

mod autoscaling;
mod certificates;
mod messages;
mod policy;
mod reviews;
mod wire;

use base64::Engine;
use serde_json::{Map, Value};

use messages::{Field, Kind, Message};
use wire::{Reader, WireValue};

/// The content type of protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// Nested messages deeper than this are rejected rather than recursed into.
const MAX_DEPTH: usize = 32;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("protobuf body must start with the 4-byte prefix \"k8s\\0\"")]
    MissingMagic,
    #[error("malformed protobuf body: {0}")]
    Malformed(String),
    #[error(
        "protobuf body for {api_version}, Kind={kind} is not supported; accepted kinds: {supported}"
    )]
    UnsupportedKind {
        api_version: String,
        kind: String,
        supported: &'static str,
    },
    #[error(
        "protobuf body with contentEncoding {0:?} is not supported; only unencoded bodies are accepted"
    )]
    UnsupportedEncoding(String),
    /// A field this decoder does not know carries data; dropping it would lose what the user sent.
    #[error(
        "protobuf field number {number} of {} is not supported by this server; send the object as JSON instead (e.g. `kubectl create ... --dry-run=client -o yaml | kubectl apply -f -`)",
        if parent.is_empty() { "the object".to_string() } else { format!("`{}`", parent.join(".")) }
    )]
    UnsupportedField {
        parent: Vec<&'static str>,
        number: u32,
    },
}

/// Decodes a whole request body into a JSON object with `apiVersion` and `kind` first.
pub fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    let rest = body.strip_prefix(MAGIC).ok_or(DecodeError::MissingMagic)?;
    let envelope = decode_message(rest, &messages::UNKNOWN, 0, true)?;
    let api_version = envelope["typeMeta"]["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let kind = envelope["typeMeta"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let encoding = envelope["contentEncoding"].as_str().unwrap_or_default();
    if !encoding.is_empty() {
        return Err(DecodeError::UnsupportedEncoding(encoding.to_string()));
    }
    let Some(message) = messages::message_for(&api_version, &kind) else {
        return Err(DecodeError::UnsupportedKind {
            api_version,
            kind,
            supported: messages::SUPPORTED,
        });
    };
    let raw = raw_bytes(rest)?;
    let Value::Object(fields) = decode_message(raw, message, 0, false)? else {
        return Err(DecodeError::Malformed(
            "typed object is not a message".into(),
        ));
    };
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String(api_version));
    object.insert("kind".into(), Value::String(kind));
    object.extend(fields);
    Ok(Value::Object(object))
}

/// The `raw` field of the envelope, as bytes (the generic decoder renders bytes as base64).
fn raw_bytes(envelope: &[u8]) -> Result<&[u8], DecodeError> {
    let mut reader = Reader::new(envelope);
    let mut raw: &[u8] = &[];
    while let Some((number, value)) = reader.next_field()? {
        if let (2, WireValue::Bytes(bytes)) = (number, value) {
            raw = bytes;
        }
    }
    Ok(raw)
}

/// Decodes one message into a JSON object. `keep_zero` keeps zero-valued scalars (used for the
/// envelope, where an empty string is still meaningful).
fn decode_message(
    bytes: &[u8],
    message: &Message,
    depth: usize,
    keep_zero: bool,
) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::Malformed(format!(
            "messages nested deeper than {MAX_DEPTH}"
        )));
    }
    let mut object = Map::new();
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.next_field()? {
        let Some(field) = message.field(number) else {
            // Go writes every non-pointer field, so unknown fields usually arrive empty; those
            // are safe to skip. Anything with content is refused rather than silently dropped.
            if is_zero_wire(&value, depth) {
                continue;
            }
            return Err(DecodeError::UnsupportedField {
                parent: Vec::new(),
                number,
            });
        };
        if let Kind::Ignored = field.kind {
            continue;
        }
        let decoded =
            decode_value(field, &field.kind, value, depth).map_err(|error| match error {
                DecodeError::UnsupportedField { mut parent, number } => {
                    parent.insert(0, field.name);
                    DecodeError::UnsupportedField { parent, number }
                }
                other => other,
            })?;
        if let Kind::Inline(_) = field.kind {
            if let Value::Object(fields) = decoded {
                object.extend(fields);
            }
        } else if field.repeated {
            let slot = object
                .entry(field.name)
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = slot {
                items.push(decoded);
            }
        } else if let Kind::Map(_) = field.kind {
            // Each map entry arrives as its own field occurrence; merge them.
            let slot = object
                .entry(field.name)
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Value::Object(map), Value::Object(entry)) = (slot, decoded) {
                map.extend(entry);
            }
        } else {
            object.insert(field.name.to_string(), decoded);
        }
    }
    if !keep_zero {
        object.retain(|name, value| has_presence(message, name) || !is_zero(value));
    }
    Ok(Value::Object(object))
}

/// Whether `name` is a pointer field of `message` or of a struct it inlines (`emptyDir: {}` is
/// meaningful even though it is empty).
fn has_presence(message: &Message, name: &str) -> bool {
    message.fields.iter().any(|field| match field.kind {
        Kind::Inline(inner) => has_presence(inner, name),
        _ => field.name == name && field.presence,
    })
}

/// Whether an unknown field's value carries no information: a zero varint, empty bytes, or a
/// nested message made only of such values.
fn is_zero_wire(value: &WireValue<'_>, depth: usize) -> bool {
    match value {
        WireValue::Varint(v) => *v == 0,
        WireValue::Bytes([]) => true,
        WireValue::Bytes(bytes) => {
            if depth > MAX_DEPTH {
                return false;
            }
            let mut reader = Reader::new(bytes);
            loop {
                match reader.next_field() {
                    Ok(None) => return true,
                    Ok(Some((_, inner))) if is_zero_wire(&inner, depth + 1) => {}
                    _ => return false,
                }
            }
        }
        WireValue::Fixed64 | WireValue::Fixed32 => false,
    }
}

/// Go's `omitempty` notion of empty, plus empty nested messages.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}

fn wrong_wire_type(field: &Field) -> DecodeError {
    DecodeError::Malformed(format!(
        "field {} ({}) has an unexpected wire type",
        field.number, field.name
    ))
}

fn decode_value(
    field: &Field,
    kind: &Kind,
    value: WireValue<'_>,
    depth: usize,
) -> Result<Value, DecodeError> {
    match (kind, value) {
        (Kind::Int, WireValue::Varint(v)) => Ok(Value::from(v as i64)),
        (Kind::Bool, WireValue::Varint(v)) => Ok(Value::Bool(v != 0)),
        (Kind::String, WireValue::Bytes(bytes)) => utf8(field, bytes),
        (Kind::Bytes, WireValue::Bytes(bytes)) => Ok(Value::String(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        )),
        (Kind::Message(message) | Kind::Inline(message), WireValue::Bytes(bytes)) => {
            decode_message(bytes, message, depth + 1, false)
        }
        (Kind::Map(value_kind), WireValue::Bytes(bytes)) => {
            decode_map_entry(field, value_kind, bytes, depth)
        }
        (Kind::Time, WireValue::Bytes(bytes)) => decode_time(field, bytes),
        (Kind::IntOrString, WireValue::Bytes(bytes)) => decode_int_or_string(field, bytes),
        (Kind::Quantity, WireValue::Bytes(bytes)) => {
            let mut reader = Reader::new(bytes);
            let mut quantity = Value::String(String::new());
            while let Some((number, value)) = reader.next_field()? {
                if let (1, WireValue::Bytes(text)) = (number, value) {
                    quantity = utf8(field, text)?;
                }
            }
            Ok(quantity)
        }
        _ => Err(wrong_wire_type(field)),
    }
}

fn utf8(field: &Field, bytes: &[u8]) -> Result<Value, DecodeError> {
    std::str::from_utf8(bytes)
        .map(|text| Value::String(text.to_string()))
        .map_err(|_| DecodeError::Malformed(format!("field {} is not valid UTF-8", field.name)))
}

/// One `map<string, V>` entry as a single-key object.
fn decode_map_entry(
    field: &Field,
    value_kind: &Kind,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, DecodeError> {
    let mut reader = Reader::new(bytes);
    let mut key = String::new();
    let mut entry_value: Option<Value> = None;
    while let Some((number, value)) = reader.next_field()? {
        match number {
            1 => match value {
                WireValue::Bytes(text) => {
                    key = utf8(field, text)?.as_str().unwrap_or_default().to_string()
                }
                _ => return Err(wrong_wire_type(field)),
            },
            2 => entry_value = Some(decode_value(field, value_kind, value, depth + 1)?),
            _ => {}
        }
    }
    // An absent value is the type's zero value, like proto3 maps.
    let entry_value = entry_value.unwrap_or_else(|| match value_kind {
        Kind::Int => Value::from(0),
        Kind::Bool => Value::Bool(false),
        _ => Value::String(String::new()),
    });
    let mut map = Map::new();
    map.insert(key, entry_value);
    Ok(Value::Object(map))
}

/// `metav1.Time` → `2026-11-29T18:04:07Z`; the zero time becomes `null` (and is then omitted).
fn decode_time(field: &Field, bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut reader = Reader::new(bytes);
    let (mut seconds, mut nanos) = (0i64, 0i64);
    while let Some((number, value)) = reader.next_field()? {
        match (number, value) {
            (1, WireValue::Varint(v)) => seconds = v as i64,
            (2, WireValue::Varint(v)) => nanos = i64::from(v as i32),
            _ => {}
        }
    }
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    let timestamp = jiff::Timestamp::from_second(seconds).map_err(|_| {
        DecodeError::Malformed(format!("field {}: time {seconds} out of range", field.name))
    })?;
    Ok(Value::String(
        timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    ))
}

fn decode_int_or_string(field: &Field, bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut reader = Reader::new(bytes);
    let (mut is_string, mut int_value, mut string_value) = (false, 0i64, String::new());
    while let Some((number, value)) = reader.next_field()? {
        match (number, value) {
            (1, WireValue::Varint(v)) => is_string = v == 1,
            (2, WireValue::Varint(v)) => int_value = i64::from(v as i32),
            (3, WireValue::Bytes(text)) => {
                string_value = utf8(field, text)?.as_str().unwrap_or_default().to_string()
            }
            _ => {}
        }
    }
    Ok(if is_string {
        Value::String(string_value)
    } else {
        Value::from(int_value)
    })
}
