//! The `kube` module Karmada's scripts load with `require("kube")`: quantity arithmetic and the pod-template
//! helpers the native interpreter uses for Deployments, offered to scripts of other kinds.

use apimachinery::quantity::Quantity;
use mlua::{Lua, Table, Value as LuaValue, Variadic};
use serde_json::{Value, json};

use super::convert::{from_lua, to_lua};
use crate::native::{pod_spec_references, replica_requirements};

/// The module table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let kube = lua.create_table()?;
    kube.set(
        "resourceAdd",
        lua.create_function(|_, quantities: Variadic<LuaValue>| {
            let mut sum = Quantity::zero();
            for (i, value) in quantities.iter().enumerate() {
                let quantity = quantity_arg(value, i + 1)?;
                sum = sum
                    .checked_add(&quantity)
                    .ok_or_else(|| mlua::Error::runtime("resourceAdd: the sum is out of range"))?;
            }
            Ok(sum.to_string())
        })?,
    )?;
    kube.set(
        "getResourceQuantity",
        lua.create_function(|_, value: LuaValue| {
            let number = quantity_arg(&value, 1)?.as_f64();
            if number < 0.0 || number.is_infinite() {
                return Err(mlua::Error::runtime(format!(
                    "getResourceQuantity: {number} is not a non-negative finite quantity"
                )));
            }
            Ok(number)
        })?,
    )?;
    kube.set(
        "accuratePodRequirements",
        lua.create_function(|lua, template: Table| {
            let template = from_lua(lua, LuaValue::Table(template))?;
            let owner = json!({"metadata": {"namespace": template.pointer("/metadata/namespace").cloned().unwrap_or(Value::Null)}});
            let pod_spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
            let requirements = replica_requirements(&owner, &pod_spec)
                .map_err(|e| mlua::Error::runtime(format!("accuratePodRequirements: {e}")))?;
            match requirements {
                Some(requirements) => {
                    let value = serde_json::to_value(requirements).map_err(mlua::Error::external)?;
                    to_lua(lua, &value)
                }
                None => Ok(LuaValue::Nil),
            }
        })?,
    )?;
    kube.set(
        "getPodDependencies",
        lua.create_function(|lua, (template, namespace): (Table, LuaValue)| {
            let template = from_lua(lua, LuaValue::Table(template))?;
            let namespace = match namespace {
                LuaValue::Nil => "default".to_string(),
                LuaValue::String(s) => s.to_str()?.to_string(),
                LuaValue::Number(n) => n.to_string(),
                LuaValue::Integer(n) => n.to_string(),
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "getPodDependencies: namespace must be a string, not {}",
                        other.type_name()
                    )));
                }
            };
            let pod_spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
            let references = pod_spec_references(&pod_spec, &namespace);
            let value = serde_json::to_value(references).map_err(mlua::Error::external)?;
            to_lua(lua, &value)
        })?,
    )?;
    Ok(kube)
}

/// Argument `position` as a quantity: `nil` is zero, a string is parsed.
fn quantity_arg(value: &LuaValue, position: usize) -> mlua::Result<Quantity> {
    match value {
        LuaValue::Nil => Ok(Quantity::zero()),
        LuaValue::String(text) => {
            let text = text.to_str()?;
            Quantity::parse(&text)
                .map_err(|e| mlua::Error::runtime(format!("argument #{position}: {e}")))
        }
        other => Err(mlua::Error::runtime(format!(
            "argument #{position}: a quantity string such as \"100m\" or \"1Gi\" expected, got {}",
            other.type_name()
        ))),
    }
}
