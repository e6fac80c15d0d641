//! Small helpers for reading and filling nested JSON objects without panicking on unexpected
//! shapes: a field of the wrong type is left untouched (validation reports it later).

use serde_json::{Map, Value};

/// The object at `key` inside `object`, created empty when absent or null. `None` when the key
/// holds something that is not an object.
pub fn child_object<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let slot = object.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

/// The object at `key`, only when it already exists.
pub fn existing_object<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    object.get_mut(key).and_then(Value::as_object_mut)
}

/// Sets `key` to `value` when it is absent or null.
pub fn set_default(object: &mut Map<String, Value>, key: &str, value: Value) {
    let slot = object.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = value;
    }
}

/// Sets `key` to `value` when it is absent, null or the empty string.
pub fn set_default_str(object: &mut Map<String, Value>, key: &str, value: &str) {
    let slot = object.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() || slot.as_str() == Some("") {
        *slot = Value::String(value.to_string());
    }
}

/// Every object element of the list at `key`, when the list exists.
pub fn list_objects<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    object
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_fill_only_missing_values() {
        let mut object = json!({"a": null, "b": 2, "c": "", "d": "x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        set_default(&mut object, "a", json!(1));
        set_default(&mut object, "b", json!(1));
        set_default(&mut object, "e", json!(1));
        set_default_str(&mut object, "c", "filled");
        set_default_str(&mut object, "d", "filled");
        assert_eq!(
            Value::Object(object),
            json!({"a": 1, "b": 2, "c": "filled", "d": "x", "e": 1})
        );
    }

    #[test]
    fn child_object_refuses_non_objects() {
        let mut object = json!({"s": "text", "n": null})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(child_object(&mut object, "s").is_none());
        assert!(child_object(&mut object, "n").is_some());
        assert!(child_object(&mut object, "new").is_some());
        assert_eq!(
            Value::Object(object),
            json!({"s": "text", "n": {}, "new": {}})
        );
    }
}
