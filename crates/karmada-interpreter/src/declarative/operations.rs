//! The interpreter operations on top of the scripts: arguments as Karmada passes them, results read back into
//! the interpreter's types.

use karmada_api::ReplicaRequirements;
use karmada_api::work::AggregatedStatusItem;
use mlua::{Lua, MultiValue, Scope};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::convert::{from_lua, restore_empty_arrays};
use super::items::status_items;
use super::lazy::lend;
use super::{ConfigurableInterpreter, LuaError};
use crate::interpreter::{Component, DependentObjectReference, ReplicaInfo, ResourceInterpreter};
use crate::{InterpretError, Operation, Target};

impl ConfigurableInterpreter {
    fn run<'env, R>(
        &self,
        object: &Value,
        operation: Operation,
        args: impl for<'s> FnOnce(&Lua, &'s Scope<'s, 'env>) -> mlua::Result<MultiValue>,
        results: impl FnOnce(&Lua, MultiValue) -> Result<R, LuaError>,
    ) -> Result<R, InterpretError> {
        let target = Target::of(object)?;
        let script =
            self.script(&target, operation)
                .ok_or_else(|| InterpretError::Unsupported {
                    operation: operation.to_string(),
                    api_version: target.api_version.clone(),
                    kind: target.kind.clone(),
                })?;
        self.vm
            .call(&script, args, results)
            .map_err(|error| InterpretError::script(object, operation, script.entry_point, error))
    }
}

fn first(values: MultiValue) -> mlua::Value {
    values.into_iter().next().unwrap_or(mlua::Value::Nil)
}

fn decode<T: DeserializeOwned>(lua: &Lua, value: mlua::Value, what: &str) -> Result<T, LuaError> {
    let json = from_lua(lua, value).map_err(|e| LuaError::Result(format!("{what}: {e}")))?;
    // A script's empty table may stand for an empty list.
    let json = if json.as_object().is_some_and(serde_json::Map::is_empty) {
        decode_empty::<T>().unwrap_or(json)
    } else {
        json
    };
    serde_json::from_value(json).map_err(|e| LuaError::Result(format!("{what}: {e}")))
}

fn decode_empty<T: DeserializeOwned>() -> Option<Value> {
    serde_json::from_value::<T>(Value::Array(Vec::new()))
        .ok()
        .map(|_| Value::Array(Vec::new()))
}

/// A table result that must be an object (a revised, retained or aggregated object).
fn object_result(
    lua: &Lua,
    value: mlua::Value,
    reference: &Value,
    what: &str,
) -> Result<Value, LuaError> {
    if !value.is_table() {
        return Err(LuaError::Result(format!(
            "{what} must return a table (the object), not {}",
            value.type_name()
        )));
    }
    let mut object = from_lua(lua, value).map_err(|e| LuaError::Result(format!("{what}: {e}")))?;
    restore_empty_arrays(&mut object, reference);
    Ok(object)
}

/// The objects as arguments, lent for the call (not copied).
fn args<'s, 'env>(
    lua: &Lua,
    scope: &'s Scope<'s, 'env>,
    values: &[&'env Value],
) -> mlua::Result<MultiValue> {
    values
        .iter()
        .map(|value| lend(lua, scope, value))
        .collect::<mlua::Result<MultiValue>>()
}

impl ResourceInterpreter for ConfigurableInterpreter {
    fn handles(&self, target: &Target, operation: Operation) -> bool {
        self.script(target, operation).is_some()
    }

    fn get_replicas(&self, object: &Value) -> Result<ReplicaInfo, InterpretError> {
        self.run(object, Operation::InterpretReplica, |lua, scope| args(lua, scope, &[object]), |lua, values| {
            let mut values = values.into_iter();
            let replicas = match values.next().unwrap_or(mlua::Value::Nil) {
                mlua::Value::Integer(n) => n as f64,
                mlua::Value::Number(n) => n,
                mlua::Value::Nil => 0.0,
                other => {
                    return Err(LuaError::Result(format!(
                        "GetReplicas must return a number of replicas first, not {}",
                        other.type_name()
                    )));
                }
            };
            if !(0.0..=f64::from(i32::MAX)).contains(&replicas) || replicas.fract() != 0.0 {
                return Err(LuaError::Result(format!(
                    "GetReplicas returned {replicas} replicas: a whole number from 0 to {} is expected",
                    i32::MAX
                )));
            }
            let requirements = match values.next().unwrap_or(mlua::Value::Nil) {
                mlua::Value::Nil => None,
                table @ mlua::Value::Table(_) => Some(decode::<ReplicaRequirements>(lua, table, "GetReplicas requirements")?),
                other => {
                    return Err(LuaError::Result(format!(
                        "GetReplicas must return a table of requirements or nil second, not {}",
                        other.type_name()
                    )));
                }
            };
            #[allow(clippy::cast_possible_truncation)]
            Ok(ReplicaInfo { replicas: replicas as i32, requirements })
        })
    }

    fn get_components(&self, object: &Value) -> Result<Vec<Component>, InterpretError> {
        self.run(
            object,
            Operation::InterpretComponent,
            |lua, scope| args(lua, scope, &[object]),
            |lua, values| match first(values) {
                mlua::Value::Nil => Ok(Vec::new()),
                table @ mlua::Value::Table(_) => decode(lua, table, "GetComponents"),
                other => Err(LuaError::Result(format!(
                    "GetComponents must return a list of components or nil, not {}",
                    other.type_name()
                ))),
            },
        )
    }

    fn revise_replica(&self, object: &Value, replicas: i64) -> Result<Value, InterpretError> {
        self.run(
            object,
            Operation::ReviseReplica,
            |lua, scope| {
                let mut values = args(lua, scope, &[object])?;
                values.push_back(mlua::Value::Number(replicas as f64));
                Ok(values)
            },
            |lua, values| object_result(lua, first(values), object, "ReviseReplica"),
        )
    }

    fn retain(&self, desired: &Value, observed: &Value) -> Result<Value, InterpretError> {
        self.run(
            desired,
            Operation::Retain,
            |lua, scope| args(lua, scope, &[desired, observed]),
            |lua, values| object_result(lua, first(values), desired, "Retain"),
        )
    }

    fn reflect_status(&self, object: &Value) -> Result<Option<Value>, InterpretError> {
        self.run(
            object,
            Operation::InterpretStatus,
            |lua, scope| args(lua, scope, &[object]),
            |lua, values| match first(values) {
                mlua::Value::Nil => Ok(None),
                table @ mlua::Value::Table(_) => {
                    let mut status = from_lua(lua, table)
                        .map_err(|e| LuaError::Result(format!("ReflectStatus: {e}")))?;
                    if let Some(reference) = object.get("status") {
                        restore_empty_arrays(&mut status, reference);
                    }
                    Ok(Some(status))
                }
                other => Err(LuaError::Result(format!(
                    "ReflectStatus must return a table (the status) or nil, not {}",
                    other.type_name()
                ))),
            },
        )
    }

    fn aggregate_status(
        &self,
        template: &Value,
        items: &[AggregatedStatusItem],
    ) -> Result<Value, InterpretError> {
        self.run(
            template,
            Operation::AggregateStatus,
            |lua, scope| {
                Ok(MultiValue::from_iter([
                    lend(lua, scope, template)?,
                    status_items(lua, scope, items)?,
                ]))
            },
            |lua, values| object_result(lua, first(values), template, "AggregateStatus"),
        )
    }

    fn interpret_health(&self, object: &Value) -> Result<bool, InterpretError> {
        self.run(
            object,
            Operation::InterpretHealth,
            |lua, scope| args(lua, scope, &[object]),
            |_, values| match first(values) {
                mlua::Value::Boolean(healthy) => Ok(healthy),
                other => Err(LuaError::Result(format!(
                    "InterpretHealth must return a boolean, not {}",
                    other.type_name()
                ))),
            },
        )
    }

    fn get_dependencies(
        &self,
        object: &Value,
    ) -> Result<Vec<DependentObjectReference>, InterpretError> {
        self.run(
            object,
            Operation::InterpretDependency,
            |lua, scope| args(lua, scope, &[object]),
            |lua, values| match first(values) {
                mlua::Value::Nil => Ok(Vec::new()),
                table @ mlua::Value::Table(_) => decode(lua, table, "GetDependencies"),
                other => Err(LuaError::Result(format!(
                    "GetDependencies must return a list of references, not {}",
                    other.type_name()
                ))),
            },
        )
    }
}
