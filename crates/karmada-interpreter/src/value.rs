//! Small helpers for reading typed values out of JSON objects with errors that name the field.

use serde_json::{Map, Value};

use crate::InterpretError;

/// Integer at `pointer`; `None` when absent or null; an error when present but not an integer.
pub(crate) fn int_at(object: &Value, pointer: &str) -> Result<Option<i64>, InterpretError> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_i64().map(Some).ok_or_else(|| {
            InterpretError::invalid(
                object,
                field_name(pointer),
                format!("must be an integer, got {value}"),
            )
        }),
    }
}

/// Integer at `pointer`, 0 when absent.
pub(crate) fn int_or_zero(object: &Value, pointer: &str) -> Result<i64, InterpretError> {
    Ok(int_at(object, pointer)?.unwrap_or(0))
}

/// String at `pointer`, empty when absent or not a string.
pub(crate) fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Array at `pointer`, empty when absent.
pub(crate) fn array_at<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The object map at `pointer` (creating objects along the way). `None` when a non-object is in the way.
pub(crate) fn object_mut<'a>(
    object: &'a mut Value,
    path: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    let mut current = object;
    for key in path {
        let map = current.as_object_mut()?;
        current = map
            .entry((*key).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    current.as_object_mut()
}

/// `.spec.replicas` style name of a JSON pointer, for messages.
pub(crate) fn field_name(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}
