//! JSON ⇄ Lua values as Karmada's scripts see them: JSON `null` is Lua `nil`, arrays keep being arrays even
//! when empty (they carry mlua's array metatable), numbers are Lua 5.1 doubles and integral results come back
//! as JSON integers; a table a script builds empty comes back as `{}`, unless the object the script was given
//! had an array at that place. Objects cross lazily ([`super::lazy`]).

use serde_json::Value;

pub use super::lazy::{from_lua, to_lua};

/// Where `result` has an empty object and `reference` has an array at the same place, the array form is
/// restored (Lua cannot tell an empty list from an empty map).
pub fn restore_empty_arrays(result: &mut Value, reference: &Value) {
    // Most results have no empty object: a walk without key lookups tells.
    if has_empty_object(result) {
        restore(result, reference);
    }
}

fn has_empty_object(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty() || map.values().any(has_empty_object),
        Value::Array(items) => items.iter().any(has_empty_object),
        _ => false,
    }
}

fn restore(result: &mut Value, reference: &Value) {
    match (result, reference) {
        (result @ Value::Object(_), Value::Array(_))
            if result.as_object().is_some_and(serde_json::Map::is_empty) =>
        {
            *result = Value::Array(Vec::new());
        }
        (Value::Object(map), Value::Object(reference)) => {
            for (key, value) in map.iter_mut() {
                if let Some(reference) = reference.get(key) {
                    restore(value, reference);
                }
            }
        }
        (Value::Array(items), Value::Array(reference)) => {
            for (item, reference) in items.iter_mut().zip(reference) {
                restore(item, reference);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use mlua::Lua;
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trip_keeps_integers_nulls_and_empty_arrays() {
        let lua = Lua::new();
        let object =
            json!({"spec": {"replicas": 3, "ratio": 0.5, "ports": [], "labels": {}, "gone": null}});
        let value = to_lua(&lua, &object).expect("to lua");
        let table = value.as_table().expect("table");
        let spec: mlua::Table = table.get("spec").expect("spec");
        assert!(spec.get::<mlua::Value>("gone").expect("gone").is_nil());
        let back = from_lua(&lua, value).expect("from lua");
        assert_eq!(
            back,
            json!({"spec": {"labels": {}, "ports": [], "ratio": 0.5, "replicas": 3}})
        );
        let built: mlua::Value = lua.load("return {a = 6 / 2, b = {}}").eval().expect("eval");
        let mut built = from_lua(&lua, built).expect("from lua");
        assert_eq!(built, json!({"a": 3, "b": {}}));
        restore_empty_arrays(&mut built, &json!({"b": []}));
        assert_eq!(built, json!({"a": 3, "b": []}));
    }
}
