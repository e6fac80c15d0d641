//! JSON ⇄ Lua values as Karmada's scripts see them: JSON `null` is Lua `nil`, arrays keep being arrays even
//! when empty (they carry mlua's array metatable), numbers are Lua 5.1 doubles and integral results come back
//! as JSON integers; a table a script builds empty comes back as `{}`, unless the object the script was given
//! had an array at that place.

use mlua::{Lua, LuaSerdeExt};
use serde_json::Value;

const TO_LUA: mlua::serde::SerializeOptions = mlua::serde::SerializeOptions::new()
    .serialize_none_to_null(false)
    .serialize_unit_to_null(false)
    .set_array_metatable(true);

const FROM_LUA: mlua::serde::DeserializeOptions = mlua::serde::DeserializeOptions::new()
    .deny_unsupported_types(false)
    .sort_keys(true);

/// `value` as a Lua value.
pub fn to_lua(lua: &Lua, value: &Value) -> mlua::Result<mlua::Value> {
    lua.to_value_with(value, TO_LUA)
}

/// A Lua value as JSON (`nil` is `null`).
pub fn from_lua(lua: &Lua, value: mlua::Value) -> mlua::Result<Value> {
    if value.is_nil() {
        return Ok(Value::Null);
    }
    let mut json: Value = lua.from_value_with(value, FROM_LUA)?;
    integral_numbers(&mut json);
    Ok(json)
}

/// Doubles with no fraction become integers, as Karmada's conversion gives them (Lua 5.1 has only doubles).
fn integral_numbers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            if let Some(float) = number
                .as_f64()
                .filter(|_| !number.is_i64() && !number.is_u64())
                && float.fract() == 0.0
                && float.abs() < 9.007_199_254_740_992e15
            {
                #[allow(clippy::cast_possible_truncation)]
                let integer = float as i64;
                *value = Value::from(integer);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// Where `result` has an empty object and `reference` has an array at the same place, the array form is
/// restored (Lua cannot tell an empty list from an empty map).
pub fn restore_empty_arrays(result: &mut Value, reference: &Value) {
    match (result, reference) {
        (result @ Value::Object(_), Value::Array(_))
            if result.as_object().is_some_and(serde_json::Map::is_empty) =>
        {
            *result = Value::Array(Vec::new());
        }
        (Value::Object(map), Value::Object(reference)) => {
            for (key, value) in map.iter_mut() {
                if let Some(reference) = reference.get(key) {
                    restore_empty_arrays(value, reference);
                }
            }
        }
        (Value::Array(items), Value::Array(reference)) => {
            for (item, reference) in items.iter_mut().zip(reference) {
                restore_empty_arrays(item, reference);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
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
