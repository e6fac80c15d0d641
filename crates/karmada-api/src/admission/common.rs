//! Helpers shared by the per-kind admission code: typed decoding with field paths, path building, enum checks,
//! labels and finalizers.

use apimachinery::FieldError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Operation, Request};

/// `base.key`, or `key` at the root.
pub(crate) fn field(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// `base[i]`.
pub(crate) fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

/// Decodes `obj` into `T`; a shape error becomes one FieldError with the path of the offending field.
pub fn decode<T: DeserializeOwned>(obj: &Value) -> Result<T, Box<FieldError>> {
    // Read in place: a clone of the whole object (a Work's manifests, a binding's aggregated status) per
    // admitted write is what this would otherwise cost.
    serde_path_to_error::deserialize::<_, T>(obj).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let message = e.inner().to_string();
        Box::new(shape_error(&path, &message, obj))
    })
}

/// Decodes `obj[key]` into `T` (its default when absent), for admission that checks one part of an object; a
/// shape error is reported at its full path.
pub fn decode_field<T: DeserializeOwned + Default>(
    obj: &Value,
    key: &str,
) -> Result<T, Box<FieldError>> {
    let Some(value) = obj.get(key) else {
        return Ok(T::default());
    };
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = if inner == "." {
            key.to_string()
        } else {
            field(key, &inner)
        };
        Box::new(shape_error(&path, &e.inner().to_string(), obj))
    })
}

/// Turns serde's message into the Kubernetes form (Required / Unsupported value / Invalid value).
fn shape_error(path: &str, message: &str, root: &Value) -> FieldError {
    if let Some(rest) = message.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or_default();
        return FieldError::required(field(path, name), "");
    }
    let offending = lookup(root, path).cloned().unwrap_or(Value::Null);
    if message.starts_with("unknown variant") {
        let expected = message
            .split_once("expected")
            .map(|(_, tail)| tail)
            .unwrap_or_default();
        let allowed: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        return FieldError::not_supported(path, offending, &allowed);
    }
    FieldError::invalid(path, offending, message.to_string())
}

/// The value at a dotted path with `[i]` indexes, as produced by [`field`] and [`index`].
pub(crate) fn lookup<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
    let mut current = root;
    if path.is_empty() {
        return Some(current);
    }
    for part in path.split('.') {
        let (name, indexes) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            current = current.get(name)?;
        }
        for raw in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: usize = raw.trim_end_matches(']').parse().ok()?;
            current = current.get(i)?;
        }
    }
    Some(current)
}

/// The object at `pointer`, created (with empty objects on the way) when absent. `None` when something on the
/// way is not an object.
pub(crate) fn object_at<'v>(
    root: &'v mut Value,
    keys: &[&str],
) -> Option<&'v mut Map<String, Value>> {
    let mut current = root;
    for key in keys {
        let map = current.as_object_mut()?;
        current = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    current.as_object_mut()
}

/// Sets `key` to `value` in `map` when it is absent or null.
pub(crate) fn default_field(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Checks a string against the accepted values.
pub(crate) fn check_enum(errors: &mut Vec<FieldError>, path: &str, value: &str, allowed: &[&str]) {
    if !allowed.contains(&value) {
        errors.push(FieldError::not_supported(
            path,
            Value::String(value.to_string()),
            allowed,
        ));
    }
}

/// Rewrites a legacy or mis-cased enum spelling at `map[key]` to the accepted one and records a warning.
/// `aliases` maps accepted-but-old spellings to the current ones; a case-insensitive match of a current value is
/// also accepted.
pub(crate) fn normalise_enum(
    req: &mut Request<'_>,
    map: &mut Map<String, Value>,
    key: &str,
    path: &str,
    allowed: &[&str],
    aliases: &[(&str, &str)],
) {
    let Some(Value::String(given)) = map.get(key) else {
        return;
    };
    if allowed.contains(&given.as_str()) {
        return;
    }
    let legacy = aliases
        .iter()
        .find(|(old, _)| *old == given)
        .map(|(_, new)| *new);
    let recased = allowed
        .iter()
        .copied()
        .find(|a| a.eq_ignore_ascii_case(given));
    let (new, why) = match (legacy, recased) {
        (Some(new), _) => (new, "is a legacy spelling"),
        (None, Some(new)) => (new, "has the wrong letter case"),
        (None, None) => return,
    };
    req.warnings
        .push(format!("{path}: \"{given}\" {why}; stored as \"{new}\""));
    map.insert(key.to_string(), Value::String(new.to_string()));
}

/// Keeps the permanent-id label `key`: set from the context on create, carried over and immutable on update.
pub(crate) fn permanent_id(
    req: &mut Request<'_>,
    obj: &mut Value,
    key: &str,
    errors: &mut Vec<FieldError>,
) {
    let old_id = req
        .old
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(labels) = object_at(obj, &["metadata", "labels"]) else {
        errors.push(FieldError::invalid(
            "metadata.labels",
            Value::Null,
            "must be a map of strings",
        ));
        return;
    };
    let path = format!("metadata.labels[{key}]");
    match (req.op, old_id) {
        (Operation::Update, Some(old)) => match labels.get(key) {
            None => {
                labels.insert(key.to_string(), Value::String(old));
            }
            Some(new) if new.as_str() == Some(old.as_str()) => {}
            Some(new) => errors.push(FieldError::invalid(
                path,
                new.clone(),
                format!("field is immutable: the permanent id was set by the server to \"{old}\""),
            )),
        },
        _ => {
            if labels
                .get(key)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                labels.insert(key.to_string(), Value::String(req.ctx.new_id.clone()));
            }
        }
    }
}

/// A name of 1..=`max` characters, lower-case alphanumerics and '-', starting and ending alphanumeric.
pub(crate) fn check_dns_label(errors: &mut Vec<FieldError>, path: &str, name: &str, max: usize) {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let ok_ends = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() {
        errors.push(FieldError::required(path, ""));
    } else if name.len() > max {
        errors.push(FieldError::too_long(path, Value::String(name.into()), max));
    } else if !(ok_chars && ok_ends) {
        errors.push(FieldError::invalid(
            path,
            Value::String(name.into()),
            "must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ));
    }
}
