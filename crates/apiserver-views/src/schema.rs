//! OpenAPI v3 schemas of the built-in kinds, generated from k8s-openapi's `JsonSchema` impls.
//!
//! Invariant: every schema returned here is self-contained — all `$ref`s are inlined, so a
//! consumer can walk `properties` without a definitions table. Recursive types (only
//! `JSONSchemaProps` in scope) are cut at the first repetition and replaced by an open object.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Produces the self-contained schema of `T`, or `None` if the generator emitted something unexpected.
pub(crate) fn inlined_schema_for<T: JsonSchema>() -> Option<Value> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let root = generator.subschema_for::<T>().to_value();
    let definitions: BTreeMap<String, Value> =
        generator.take_definitions(false).into_iter().collect();
    let mut stack = Vec::new();
    let inlined = inline(&root, &definitions, &mut stack);
    inlined.is_object().then_some(inlined)
}

const REF_PREFIX: &str = "#/components/schemas/";

/// Replaces `$ref`s by copies of their targets, keeping sibling keys (k8s-openapi puts the field
/// description next to the `$ref`) on top of the target's own keys.
fn inline(schema: &Value, definitions: &BTreeMap<String, Value>, stack: &mut Vec<String>) -> Value {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let name = reference
                    .strip_prefix(REF_PREFIX)
                    .unwrap_or(reference)
                    .to_string();
                let mut resolved = if stack.contains(&name) {
                    open_object()
                } else if let Some(target) = definitions.get(&name) {
                    stack.push(name);
                    let value = inline(target, definitions, stack);
                    stack.pop();
                    value
                } else {
                    open_object()
                };
                if let Value::Object(resolved_map) = &mut resolved {
                    for (key, value) in map {
                        if key != "$ref" {
                            resolved_map.insert(key.clone(), inline(value, definitions, stack));
                        }
                    }
                }
                return resolved;
            }
            // `allOf: [ {$ref} ]` is how some generators express a described reference.
            if let Some(Value::Array(all_of)) = map.get("allOf")
                && all_of.len() == 1
            {
                let mut base = inline(&all_of[0], definitions, stack);
                if let Value::Object(base_map) = &mut base {
                    for (key, value) in map {
                        if key != "allOf" {
                            base_map.insert(key.clone(), inline(value, definitions, stack));
                        }
                    }
                }
                return base;
            }
            let out: Map<String, Value> = map
                .iter()
                .map(|(key, value)| (key.clone(), inline(value, definitions, stack)))
                .collect();
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| inline(item, definitions, stack))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// What a cut recursion becomes: any object is accepted.
fn open_object() -> Value {
    serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}
