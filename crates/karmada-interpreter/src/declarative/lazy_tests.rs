//! Lazy conversion against the eager one it replaced (mlua's serde conversion of the whole object): for
//! generated objects and scripts that read, write, delete, iterate and rebuild, both give the same results.

use mlua::{Lua, LuaSerdeExt};
use proptest::prelude::*;
use serde_json::{Map, Value};

use super::convert::{from_lua, to_lua};
use super::lazy::lend;

pub(super) fn eager_to_lua(lua: &Lua, value: &Value) -> mlua::Result<mlua::Value> {
    let options = mlua::serde::SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false)
        .set_array_metatable(true);
    lua.to_value_with(value, options)
}

pub(super) fn eager_from_lua(lua: &Lua, value: mlua::Value) -> mlua::Result<Value> {
    if value.is_nil() {
        return Ok(Value::Null);
    }
    let options = mlua::serde::DeserializeOptions::new()
        .deny_unsupported_types(false)
        .sort_keys(true);
    let mut json: Value = lua.from_value_with(value, options)?;
    integral(&mut json);
    Ok(json)
}

fn integral(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| !n.is_i64() && !n.is_u64())
                && f.fract() == 0.0
            {
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral),
        Value::Object(map) => map.values_mut().for_each(integral),
        _ => {}
    }
}

const SCRIPTS: &[&str] = &[
    "return obj",
    "local seen = obj.a; return obj",
    "obj.a = 1; obj.b = nil; return obj",
    "local copy = {} for k, v in pairs(obj) do copy[k] = v end return copy",
    "if type(obj.a) == 'table' then obj.a.z = 'new' end return obj",
    "local n = 0 local k = next(obj) while k ~= nil do n = n + 1 k = next(obj, k) end return n",
    "return {inner = obj.a, n = #(obj.list or {})}",
    "local a = obj.a obj.a = nil return {rest = obj, a = a}",
    "local keys = {} for k in pairs(obj) do table.insert(keys, k) end table.sort(keys) return keys",
    "for _, item in ipairs(obj.list or {}) do if type(item) == 'table' then item.seen = true end end return obj",
    "obj.a = nil obj.a = obj.b return obj",
];

pub(super) fn run(lua: &Lua, script: &str, argument: mlua::Value) -> mlua::Result<mlua::Value> {
    let function: mlua::Function = lua
        .load(format!("return function(obj) {script} end"))
        .eval()?;
    function.call(argument)
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        (-100.0f64..100.0).prop_map(|f| Value::from((f * 4.0).round() / 4.0)),
        "[a-z]{0,6}".prop_map(Value::String),
    ]
}

pub(super) fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            // Arrays without nulls: a hole in a Lua sequence has no defined length.
            prop::collection::vec(
                inner
                    .clone()
                    .prop_filter("no null in arrays", |v| !v.is_null()),
                0..4
            )
            .prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("a".to_string()),
                    Just("b".to_string()),
                    Just("list".to_string()),
                    "[a-z]{1,3}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(
        prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("list".to_string()),
            "[a-z]{1,3}"
        ],
        json(),
        0..6,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn lazy_and_eager_conversions_agree(object in object()) {
        for script in SCRIPTS {
            let lua = Lua::new();
            let eager = eager_to_lua(&lua, &object)
                .and_then(|v| run(&lua, script, v))
                .and_then(|v| eager_from_lua(&lua, v))
                .map_err(|e| e.to_string());
            let lua = Lua::new();
            let lazy = to_lua(&lua, &object)
                .and_then(|v| run(&lua, script, v))
                .and_then(|v| from_lua(&lua, v))
                .map_err(|e| e.to_string());
            prop_assert_eq!(&lazy, &eager, "script {} on {}", script, object);
            let lua = Lua::new();
            let lent = lua
                .scope(|scope| from_lua(&lua, run(&lua, script, lend(&lua, scope, &object)?)?))
                .map_err(|e| e.to_string());
            prop_assert_eq!(&lent, &eager, "lent: script {} on {}", script, object);
        }
    }
}

#[test]
fn untouched_objects_come_back_without_a_trip_through_lua() {
    let lua = Lua::new();
    let object = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}, "x": 2.0, "gone": null});
    let value = to_lua(&lua, &object).expect("to lua");
    let table = value.as_table().expect("table");
    // Nothing was converted yet: the proxy holds no fields.
    assert_eq!(table.pairs::<mlua::Value, mlua::Value>().count(), 0);
    let spec: mlua::Table = table.get("spec").expect("spec");
    assert_eq!(table.pairs::<mlua::Value, mlua::Value>().count(), 1);
    assert_eq!(spec.pairs::<mlua::Value, mlua::Value>().count(), 0);
    let back = from_lua(&lua, value).expect("from lua");
    assert_eq!(
        back,
        serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}, "x": 2})
    );
}

/// A lent object's proxies read the caller's JSON only during the call: kept past it (in a global), the
/// fields handed over stay, the others are an error saying why, not a read of freed data.
#[test]
fn lent_objects_kept_past_their_call_are_refused() {
    let lua = Lua::new();
    let object = serde_json::json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 2}});
    let name = lua
        .scope(|scope| {
            let value = lend(&lua, scope, &object)?;
            lua.globals().set("kept", value)?;
            lua.load("return kept.metadata.name").eval::<String>()
        })
        .expect("read in the call");
    assert_eq!(name, "web");
    assert_eq!(
        lua.load("return kept.metadata.name")
            .eval::<String>()
            .expect("handed over earlier"),
        "web"
    );
    for script in [
        "return kept.spec",
        "return kept.metadata.labels",
        "for k in pairs(kept) do end",
    ] {
        let err = lua.load(script).exec().expect_err(script).to_string();
        assert!(err.contains("after that call ended"), "{script}: {err}");
    }
    let kept: mlua::Value = lua.globals().get("kept").expect("kept");
    let err = from_lua(&lua, kept).expect_err("read back").to_string();
    assert!(err.contains("after that call ended"), "{err}");
}

#[test]
fn self_containing_tables_are_refused() {
    let lua = Lua::new();
    let value: mlua::Value = lua
        .load("local t = {} t.me = t return t")
        .eval()
        .expect("eval");
    let err = from_lua(&lua, value).expect_err("cycle").to_string();
    assert!(err.contains("contain itself"), "{err}");
}
