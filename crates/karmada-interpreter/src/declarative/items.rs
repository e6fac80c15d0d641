//! AggregateStatus's second argument, the per-cluster status items, built as Lua tables straight from the
//! items: each item is a plain table (its few fields are what every aggregation script reads), its `status`
//! crosses like any object ([`super::lazy`]). The tables are the ones the items' JSON form would give
//! (`clusterName`, then `status`, `applied`, `appliedMessage` and `health` when set), without serializing
//! the items to JSON first.

use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
use mlua::{Either, Lua, LuaSerdeExt, Table, Value as LuaValue};

use super::lazy::{Sized, to_lua};

/// The items as a Lua list (an empty one still an array).
pub fn status_items(lua: &Lua, items: &[AggregatedStatusItem]) -> mlua::Result<LuaValue> {
    let tables = items
        .iter()
        .map(|item| item_table(lua, item))
        .collect::<mlua::Result<Vec<Table>>>()?;
    let list = lua.create_sequence_from(tables)?;
    list.set_metatable(Some(lua.array_metatable()))?;
    Ok(LuaValue::Table(list))
}

/// An item field's value: pushed straight (a flag or a text) or made already (the status).
type Field<'a> = Either<Either<bool, &'a str>, LuaValue>;

/// One item's table, made in one call (its fields pushed straight).
fn item_table(lua: &Lua, item: &AggregatedStatusItem) -> mlua::Result<Table> {
    fn text(s: &str) -> Option<Field<'_>> {
        Some(Either::Left(Either::Right(s)))
    }
    let status = match &item.status {
        Some(status) => Some(Either::Right(to_lua(lua, status)?)),
        None => None,
    };
    let fields: [(&str, Option<Field<'_>>); 5] = [
        ("clusterName", text(&item.cluster_name)),
        ("status", status),
        (
            "applied",
            item.applied.then_some(Either::Left(Either::Left(true))),
        ),
        (
            "appliedMessage",
            (!item.applied_message.is_empty())
                .then(|| text(&item.applied_message))
                .flatten(),
        ),
        (
            "health",
            item.health.and_then(|health| text(health_name(health))),
        ),
    ];
    let fields = fields
        .into_iter()
        .filter_map(|(key, value)| value.map(|value| (key, value)));
    lua.create_table_from(Sized(fields, 5))
}

/// The health's JSON form.
fn health_name(health: ResourceHealth) -> &'static str {
    match health {
        ResourceHealth::Healthy => "Healthy",
        ResourceHealth::Unhealthy => "Unhealthy",
        ResourceHealth::Unknown => "Unknown",
    }
}
