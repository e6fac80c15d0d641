//! OpenAPI v3 schemas of the built-in kinds, generated from k8s-openapi's `JsonSchema` impls.
//!
//! Invariant: every schema returned here is self-contained — all `$ref`s are inlined, so a
//! consumer can walk `properties` without a definitions table. Recursive types (only
//! `JSONSchemaProps` in scope) are cut at the first repetition and replaced by an open object.
//!
//! The schemas also say what Go always serializes, as `default:`s (see [`mark_go_zero_values`]);
//! the API server fills them in on every write, so objects have kube-apiserver's shape.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Produces the self-contained schema of `T`, or `None` if the generator emitted something unexpected.
pub(crate) fn inlined_schema_for<T: JsonSchema>() -> Option<Value> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let root = generator.subschema_for::<T>().to_value();
    let mut definitions: BTreeMap<String, Value> =
        generator.take_definitions(false).into_iter().collect();
    for (name, definition) in definitions.iter_mut() {
        mark_go_zero_values(name, definition);
    }
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

/// Gives the properties Go's `encoding/json` always writes a `default:` of their zero value, as
/// kube-apiserver's OpenAPI v3 documents do: required properties (Go fields without `omitempty`)
/// of scalar or list type, and value-struct properties (`{}`, even under `omitempty`). Required
/// strings that are timestamps are left alone (a zero `metav1.Time` is `null`), as are required
/// objects that may be pointers. Lists get `[]` where Go would write `null` for a nil slice:
/// clients decode both, and strict ones (the Python client's models) reject `null`.
fn mark_go_zero_values(definition_name: &str, definition: &mut Value) {
    let required: Vec<String> = definition
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let value_structs = crate::value_structs::value_struct_fields(definition_name);
    let Some(properties) = definition
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        let Some(property) = property.as_object_mut() else {
            continue;
        };
        if property.contains_key("default") {
            continue;
        }
        let zero = if value_structs.contains(&name.as_str()) {
            Some(Value::Object(Map::new()))
        } else if required.contains(name) {
            scalar_zero(property)
        } else {
            None
        };
        if let Some(zero) = zero {
            property.insert("default".into(), zero);
        }
    }
}

/// The zero value of a scalar or list property, as Go writes it; `None` for anything else.
fn scalar_zero(property: &Map<String, Value>) -> Option<Value> {
    if property.get("format").and_then(Value::as_str) == Some("date-time") {
        return None;
    }
    match property.get("type").and_then(Value::as_str)? {
        "string" => Some(Value::String(String::new())),
        "integer" | "number" => Some(Value::from(0)),
        "boolean" => Some(Value::Bool(false)),
        "array" => Some(Value::Array(Vec::new())),
        _ => None,
    }
}

/// What a cut recursion becomes: any object is accepted.
fn open_object() -> Value {
    serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// Removes the `description` keyword from `schema` and every schema nested in it. Only keywords go:
/// a property that happens to be named `description` (PriorityClass has one) stays.
pub(crate) fn strip_descriptions(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    map.remove("description");
    for (keyword, value) in map.iter_mut() {
        match (keyword.as_str(), value) {
            ("properties" | "patternProperties", Value::Object(properties)) => {
                properties.values_mut().for_each(strip_descriptions);
            }
            ("allOf" | "anyOf" | "oneOf", Value::Array(schemas)) => {
                schemas.iter_mut().for_each(strip_descriptions);
            }
            ("items" | "additionalProperties" | "not", nested) => strip_descriptions(nested),
            _ => {}
        }
    }
}

/// The OpenAPI component kube-apiserver publishes for IntOrString fields.
pub(crate) const INT_OR_STRING_NAME: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

/// Points every `x-kubernetes-int-or-string` schema without a type at the [`INT_OR_STRING_NAME`]
/// component, as kube-apiserver's documents do (`allOf: [{$ref}]` beside the field's description):
/// `kubectl explain` names a field by its referenced type, so it prints `<IntOrString>` (inlined
/// without a type it printed `<Object>`). Returns whether any field was rewritten. For published
/// documents only: the served schemas, which validate, keep the extension alone.
pub(crate) fn publish_int_or_string(schema: &mut Value) -> bool {
    match schema {
        Value::Object(map) => {
            if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
                && !map.contains_key("type")
            {
                map.remove("x-kubernetes-int-or-string");
                map.insert(
                    "allOf".into(),
                    serde_json::json!([{"$ref": format!("#/components/schemas/{INT_OR_STRING_NAME}")}]),
                );
                return true;
            }
            // Every nested schema is visited (no short-circuit): each may need rewriting.
            let mut found = false;
            for value in map.values_mut() {
                found |= publish_int_or_string(value);
            }
            found
        }
        Value::Array(items) => {
            let mut found = false;
            for value in items {
                found |= publish_int_or_string(value);
            }
            found
        }
        _ => false,
    }
}

/// The [`INT_OR_STRING_NAME`] component.
pub(crate) fn int_or_string_component() -> Value {
    serde_json::json!({
        "description": "IntOrString is a type that can hold an int32 or a string.",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
        "format": "int-or-string",
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{inlined_schema_for, publish_int_or_string, strip_descriptions};

    #[test]
    fn go_zero_values_become_defaults() {
        use k8s_openapi::api::core::v1::{Pod, Service};
        let pod = inlined_schema_for::<Pod>().unwrap();
        let status = &pod["properties"]["status"];
        assert_eq!(status["default"], json!({}), "Pod.status is a value struct");
        let container = &status["properties"]["containerStatuses"]["items"]["properties"];
        assert_eq!(container["imageID"]["default"], json!(""));
        assert_eq!(container["ready"]["default"], json!(false));
        assert_eq!(container["restartCount"]["default"], json!(0));
        assert_eq!(container["lastState"]["default"], json!({}));
        // A pointer (optional, not a value struct) gets nothing.
        assert!(container["started"].get("default").is_none());
        assert!(container["containerID"].get("default").is_none());
        // A zero metav1.Time is null in Go: no default.
        let conditions = &status["properties"]["conditions"]["items"]["properties"];
        assert!(conditions["lastProbeTime"].get("default").is_none());

        let service = inlined_schema_for::<Service>().unwrap();
        let mut object = json!({"spec": {"ports": [{"port": 80}]}});
        apimachinery::schema::apply_defaults(&service, &mut object);
        assert_eq!(object["status"], json!({"loadBalancer": {}}));
        assert_eq!(object["spec"]["ports"][0], json!({"port": 80}));
    }

    #[test]
    fn int_or_string_is_published_as_kube_apiserver_does() {
        let mut schema = json!({"properties": {
            "maxSurge": {"x-kubernetes-int-or-string": true, "description": "d"},
            "port": {"x-kubernetes-int-or-string": true, "type": "integer"},
            "name": {"type": "string"}
        }});
        assert!(publish_int_or_string(&mut schema));
        assert_eq!(
            schema,
            json!({"properties": {
                "maxSurge": {"description": "d", "allOf": [
                    {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]},
                "port": {"x-kubernetes-int-or-string": true, "type": "integer"},
                "name": {"type": "string"}
            }})
        );
        assert!(!publish_int_or_string(&mut json!({"type": "string"})));
    }

    #[test]
    fn descriptions_go_and_properties_named_description_stay() {
        let mut schema = json!({
            "description": "A priority class.",
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "What the class is for."},
                "value": {"type": "integer", "description": "The priority."},
                "list": {"type": "array", "description": "d", "items": {"type": "object",
                    "description": "d", "properties": {"x": {"type": "string", "description": "d"}}}},
                "map": {"type": "object", "additionalProperties": {"type": "string", "description": "d"}},
                "either": {"anyOf": [{"type": "integer", "description": "d"}, {"type": "string"}]}
            }
        });
        strip_descriptions(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "value": {"type": "integer"},
                    "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
                    "map": {"type": "object", "additionalProperties": {"type": "string"}},
                    "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
                }
            })
        );
    }
}
