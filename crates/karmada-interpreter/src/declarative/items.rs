//! AggregateStatus's second argument, the per-cluster status items, built as Lua tables straight from the
//! items: each item is a plain table (its few fields are what every aggregation script reads), its `status`
//! crosses like any object ([`super::lazy`]). The tables are the ones the items' JSON form would give
//! (`clusterName`, then `status`, `applied`, `appliedMessage` and `health` when set), without serializing
//! the items to JSON first.
//!
//! The keys are Lua strings the VM keeps ([`Keys`]): pushing one is a copy of a reference, where pushing a
//! Rust string hashes it and looks it up in Lua's string table again, once per field of every item.

use std::cell::RefCell;

use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
use mlua::{Either, Lua, LuaSerdeExt, LuaString, Scope, Table, Value as LuaValue};
use serde_json::{Map, Value};

use super::lazy::{Scalar, Sized, context, is_small, lend, scalar};

/// The items as a Lua list (an empty one still an array); statuses other than small ones are lent for
/// `scope` (the call).
pub fn status_items<'s, 'env>(
    lua: &Lua,
    scope: &'s Scope<'s, 'env>,
    items: &'env [AggregatedStatusItem],
) -> mlua::Result<LuaValue> {
    let keys = keys(lua)?;
    let tables = items
        .iter()
        .map(|item| item_table(lua, &keys, scope, item))
        .collect::<mlua::Result<Vec<Table>>>()?;
    let list = lua.create_sequence_from(tables)?;
    list.set_metatable(Some(lua.array_metatable()))?;
    Ok(LuaValue::Table(list))
}

/// One field of a small status: its key and, for a text, its value, as Lua strings.
struct Slot {
    key: Box<str>,
    lua_key: LuaString,
    text: Option<(Box<str>, LuaString)>,
}

/// Lua strings one VM keeps for building items.
struct Keys {
    cluster_name: LuaString,
    status: LuaString,
    applied: LuaString,
    applied_message: LuaString,
    health: LuaString,
    /// The fields of the last small status built, in its order. Members of one kind report the same fields
    /// in the same order (and mostly the same revision and selector texts), so the next item's field at a
    /// position is usually the one held there; a field that differs replaces the slot. At most
    /// [`super::lazy::is_small`]'s number of fields.
    slots: RefCell<Vec<Slot>>,
}

fn keys(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, Keys>> {
    if let Some(keys) = lua.app_data_ref::<Keys>() {
        return Ok(keys);
    }
    // The proxies' context is made first: making it later, while the keys are borrowed, would fail.
    drop(context(lua)?);
    lua.set_app_data(Keys {
        cluster_name: lua.create_string("clusterName")?,
        status: lua.create_string("status")?,
        applied: lua.create_string("applied")?,
        applied_message: lua.create_string("appliedMessage")?,
        health: lua.create_string("health")?,
        slots: RefCell::default(),
    });
    lua.app_data_ref::<Keys>()
        .ok_or_else(|| mlua::Error::runtime("the status item keys are missing"))
}

/// An item field's value: pushed straight (a flag or a text) or made already (the status).
type Field<'a> = Either<Either<bool, &'a str>, LuaValue>;

/// One item's table, made in one call (its fields pushed straight).
fn item_table<'s, 'env>(
    lua: &Lua,
    keys: &Keys,
    scope: &'s Scope<'s, 'env>,
    item: &'env AggregatedStatusItem,
) -> mlua::Result<Table> {
    fn text(s: &str) -> Option<Field<'_>> {
        Some(Either::Left(Either::Right(s)))
    }
    let status = match &item.status {
        Some(Value::Object(map)) if is_small(map) => Some(Either::Right(LuaValue::Table(
            small_status(lua, keys, map)?,
        ))),
        Some(status) => Some(Either::Right(lend(lua, scope, status)?)),
        None => None,
    };
    let fields: [(&LuaString, Option<Field<'_>>); 5] = [
        (&keys.cluster_name, text(&item.cluster_name)),
        (&keys.status, status),
        (
            &keys.applied,
            item.applied.then_some(Either::Left(Either::Left(true))),
        ),
        (
            &keys.applied_message,
            (!item.applied_message.is_empty())
                .then(|| text(&item.applied_message))
                .flatten(),
        ),
        (
            &keys.health,
            item.health.and_then(|health| text(health_name(health))),
        ),
    ];
    let fields = fields
        .into_iter()
        .filter_map(|(key, value)| value.map(|value| (key, value)));
    lua.create_table_from(Sized(fields, 5))
}

/// A small status (scalars only) as a table, its keys and texts taken from the slots when they match.
fn small_status(lua: &Lua, keys: &Keys, map: &Map<String, Value>) -> mlua::Result<Table> {
    let mut slots = keys.slots.borrow_mut();
    for (position, (key, value)) in map.iter().enumerate() {
        let text = value.as_str();
        match slots.get_mut(position) {
            Some(slot) if *slot.key == **key => {
                if let Some(text) = text
                    && slot.text.as_ref().is_none_or(|(held, _)| **held != *text)
                {
                    slot.text = Some((text.into(), lua.create_string(text)?));
                }
            }
            found => {
                let slot = Slot {
                    key: key.as_str().into(),
                    lua_key: lua.create_string(key)?,
                    text: match text {
                        Some(text) => Some((text.into(), lua.create_string(text)?)),
                        None => None,
                    },
                };
                match found {
                    Some(held) => *held = slot,
                    None => slots.push(slot),
                }
            }
        }
    }
    /// A field's value: a held text or another scalar pushed straight.
    type Pushed<'a> = Either<&'a LuaString, Scalar<'a>>;
    let fields = map.values().zip(slots.iter()).filter_map(|(value, slot)| {
        let pushed: Pushed<'_> = match (value, &slot.text) {
            (Value::String(_), Some((_, text))) => Either::Left(text),
            (value, _) => Either::Right(scalar(value)?),
        };
        Some((&slot.lua_key, pushed))
    });
    lua.create_table_from(Sized(fields, map.len()))
}

/// The health's JSON form.
fn health_name(health: ResourceHealth) -> &'static str {
    match health {
        ResourceHealth::Healthy => "Healthy",
        ResourceHealth::Unhealthy => "Unhealthy",
        ResourceHealth::Unknown => "Unknown",
    }
}
