//! Small accessors over objects as JSON: metadata, owner references, conditions, timestamps.
//!
//! Missing or mistyped fields read as empty/zero: the simulator reacts to what the API holds
//! and never panics on odd input. Conditions keep their `lastTransitionTime` while their status
//! stays the same, as every Kubernetes controller does.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

pub fn name(object: &Value) -> &str {
    str_at(object, "/metadata/name")
}

pub fn namespace(object: &Value) -> &str {
    str_at(object, "/metadata/namespace")
}

pub fn uid(object: &Value) -> &str {
    str_at(object, "/metadata/uid")
}

pub fn generation(object: &Value) -> i64 {
    i64_at(object, "/metadata/generation")
}

pub fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn i64_at(object: &Value, pointer: &str) -> i64 {
    object
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or_default()
}

/// An integer field that defaults when absent (e.g. `spec.replicas` defaults to 1).
pub fn i64_or(object: &Value, pointer: &str, default: i64) -> i64 {
    object
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

pub fn labels(object: &Value) -> Map<String, Value> {
    apimachinery::labels::object_labels(object)
}

pub fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

pub fn is_terminating(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

pub fn creation_time(object: &Value) -> Option<Timestamp> {
    parse_time(str_at(object, "/metadata/creationTimestamp"))
}

/// Sets a nested field, creating intermediate objects (and replacing non-objects) on the way.
pub fn set_path(object: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        *object = value;
        return;
    };
    let mut current = object;
    for segment in parents {
        if !current.is_object() {
            *current = json!({});
        }
        let Some(fields) = current.as_object_mut() else {
            return;
        };
        current = fields
            .entry(segment.to_string())
            .or_insert_with(|| json!({}));
    }
    if !current.is_object() {
        *current = json!({});
    }
    if let Some(fields) = current.as_object_mut() {
        fields.insert(last.to_string(), value);
    }
}

/// `2026-11-29T18:04:07Z`, the form of metav1.Time.
pub fn format_time(time: Timestamp) -> String {
    apimachinery::time::format_timestamp(time)
}

/// `2026-11-29T18:04:07.000000Z`, the form of metav1.MicroTime (lease renew times).
pub fn format_micro_time(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

pub fn parse_time(text: &str) -> Option<Timestamp> {
    if text.is_empty() {
        None
    } else {
        apimachinery::time::parse_timestamp(text).ok()
    }
}

/// The owner reference with `controller: true`, if any.
pub fn controller_ref(object: &Value) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|owner| owner.get("controller").and_then(Value::as_bool) == Some(true))
}

/// Whether `object` is controlled by `owner` (matched by kind and uid, or name when the owner
/// has no uid yet, as in hand-built test fixtures).
pub fn is_controlled_by(object: &Value, owner: &Value) -> bool {
    let Some(reference) = controller_ref(object) else {
        return false;
    };
    let kind = owner
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if str_at(reference, "/kind") != kind {
        return false;
    }
    let owner_uid = uid(owner);
    if owner_uid.is_empty() {
        str_at(reference, "/name") == name(owner)
    } else {
        str_at(reference, "/uid") == owner_uid
    }
}

/// An owner reference marking `owner` as the controller of a dependent.
pub fn owner_reference(owner: &Value) -> Value {
    let mut reference = json!({
        "apiVersion": str_at(owner, "/apiVersion"),
        "kind": str_at(owner, "/kind"),
        "name": name(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    });
    if !uid(owner).is_empty() {
        set_path(&mut reference, &["uid"], json!(uid(owner)));
    }
    reference
}

/// A condition's identity and content; timestamps are managed by [`set_condition`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Condition {
    pub fn new(type_: &str, status: &str, reason: &str, message: &str) -> Self {
        Self {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }
}

pub fn conditions(object: &Value) -> Vec<Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub fn find_condition<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a Value> {
    conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// The status (`True`/`False`/`Unknown`) of a condition in `status.conditions`, if present.
pub fn condition_status<'a>(object: &'a Value, type_: &str) -> Option<&'a str> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
}

/// Upserts a condition, keeping its `lastTransitionTime` unless its status changes, and
/// returns its index (so callers may add kind-specific timestamps).
pub fn set_condition(conditions: &mut Vec<Value>, condition: Condition, now: Timestamp) -> usize {
    let index = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(condition.type_.as_str()));
    let transition = match index.map(|i| &conditions[i]) {
        Some(existing) if str_at(existing, "/status") == condition.status => existing
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(format_time(now))),
        _ => json!(format_time(now)),
    };
    let mut stored = index
        .map(|i| conditions[i].clone())
        .unwrap_or_else(|| json!({}));
    set_path(&mut stored, &["type"], json!(condition.type_));
    set_path(&mut stored, &["status"], json!(condition.status));
    for (field, text) in [
        ("reason", &condition.reason),
        ("message", &condition.message),
    ] {
        if text.is_empty() {
            if let Some(fields) = stored.as_object_mut() {
                fields.remove(field);
            }
        } else {
            set_path(&mut stored, &[field], json!(text));
        }
    }
    set_path(&mut stored, &["lastTransitionTime"], transition);
    match index {
        Some(i) => {
            conditions[i] = stored;
            i
        }
        None => {
            conditions.push(stored);
            conditions.len() - 1
        }
    }
}

/// The time a condition last changed status, if recorded.
pub fn transition_time(condition: &Value) -> Option<Timestamp> {
    parse_time(str_at(condition, "/lastTransitionTime"))
}

/// An object stripped to what a status write needs, with `status` replaced.
pub fn with_status(object: &Value, status: Value) -> Value {
    let mut updated = object.clone();
    set_path(&mut updated, &["status"], status);
    updated
}
