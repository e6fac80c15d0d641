//! OpenAPI v3 schemas of the Karmada kinds, generated from the Rust types with schemars and normalised into the
//! plain, self-contained tree the API server consumes: no `$ref`, enums as `enum` lists, no `nullable`, no
//! defaults that merely restate an empty value.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Deepest `$ref` chain followed before giving up and leaving a free-form object (guards recursive types).
const MAX_REF_DEPTH: usize = 32;

/// The self-contained OpenAPI v3 schema of `T`.
pub fn schema_for<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let root = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let definitions = collect_definitions(&root);
    let mut schema = resolve_refs(&root, &definitions, 0);
    if let Value::Object(map) = &mut schema {
        map.remove("components");
        map.remove("$defs");
        map.remove("definitions");
        map.remove("$schema");
    }
    normalise(&mut schema);
    attach_enum_notes(&mut schema);
    schema
}

/// Key carrying the per-value descriptions of an enum until the field's own description is settled.
const ENUM_NOTES: &str = "x-karmada-enum-notes";

fn collect_definitions(root: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for section in [
        root.pointer("/components/schemas"),
        root.get("$defs"),
        root.get("definitions"),
    ]
    .into_iter()
    .flatten()
    {
        if let Value::Object(defs) = section {
            for (name, schema) in defs {
                out.insert(name.clone(), schema.clone());
            }
        }
    }
    out
}

fn resolve_refs(value: &Value, definitions: &Map<String, Value>, depth: usize) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let name = reference.rsplit('/').next().unwrap_or_default();
                let mut resolved = match definitions.get(name) {
                    Some(target) if depth < MAX_REF_DEPTH => {
                        resolve_refs(target, definitions, depth + 1)
                    }
                    _ => {
                        serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
                    }
                };
                // A description beside the reference describes the field; it wins over the type's own.
                if let (Some(description), Value::Object(target)) =
                    (map.get("description"), &mut resolved)
                {
                    target.insert("description".into(), description.clone());
                }
                return resolved;
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), resolve_refs(v, definitions, depth)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| resolve_refs(v, definitions, depth))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Rewrites schemars idioms into what structural Kubernetes schemas use.
fn normalise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for child in map.values_mut() {
                normalise(child);
            }
            map.remove("nullable");
            map.remove("title");
            map.remove("$schema");
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("uint"))
            {
                map.remove("format");
            }
            // Defaults that come from `Default` impls of whole structs or restate emptiness would be applied by
            // the server's defaulting and invent fields the user never wrote.
            if map
                .get("default")
                .is_some_and(|d| is_empty_value(d) || d.is_object() || d.is_array())
            {
                map.remove("default");
            }
            collapse_string_one_of(map);
            drop_null_alternative(map);
            merge_single_all_of(map);
            if let Some(Value::Array(required)) = map.get("required")
                && required.is_empty()
            {
                map.remove("required");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        _ => {}
    }
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// `oneOf: [{type: string, enum: [A], description}, ...]` (documented unit variants) becomes one string schema
/// with `enum: [A, ...]`; the variant descriptions are appended to the description.
fn collapse_string_one_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = map.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for variant in variants {
        let Some(Value::Array(one)) = variant.get("enum") else {
            return;
        };
        if variant.get("type").and_then(Value::as_str) != Some("string") {
            return;
        }
        for v in one {
            if let (Some(text), Some(name)) = (
                variant.get("description").and_then(Value::as_str),
                v.as_str(),
            ) {
                notes.push(format!("{name}: {text}"));
            }
            values.push(v.clone());
        }
    }
    map.remove("oneOf");
    map.insert("type".into(), Value::String("string".into()));
    map.insert("enum".into(), Value::Array(values));
    if !notes.is_empty() {
        map.insert(ENUM_NOTES.into(), Value::String(notes.join("\n")));
    }
}

/// `anyOf: [X, {enum: [null]}]` (an optional field) is X merged into the parent; the parent's description,
/// which describes the field, wins over X's, which describes the type.
fn drop_null_alternative(map: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = map.get("anyOf") else {
        return;
    };
    let is_null = |v: &Value| {
        v.get("enum")
            .is_some_and(|e| e == &Value::Array(vec![Value::Null]))
            || v.get("type").and_then(Value::as_str) == Some("null")
    };
    let rest: Vec<&Value> = alternatives.iter().filter(|v| !is_null(v)).collect();
    let [Value::Object(inner)] = rest.as_slice() else {
        return;
    };
    let inner = inner.clone();
    map.remove("anyOf");
    for (k, v) in inner {
        map.entry(k).or_insert(v);
    }
}

fn attach_enum_notes(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(notes)) = map.remove(ENUM_NOTES) {
                let text = match map.get("description").and_then(Value::as_str) {
                    Some(base) if !base.is_empty() => format!("{base}\n{notes}"),
                    _ => notes,
                };
                map.insert("description".into(), Value::String(text));
            }
            map.values_mut().for_each(attach_enum_notes);
        }
        Value::Array(items) => items.iter_mut().for_each(attach_enum_notes),
        _ => {}
    }
}

/// `allOf: [X]` with a single member is X merged into the parent.
fn merge_single_all_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(all)) = map.get("allOf") else {
        return;
    };
    if all.len() != 1 {
        return;
    }
    let Some(Value::Object(inner)) = all.first().cloned() else {
        return;
    };
    map.remove("allOf");
    for (k, v) in inner {
        map.entry(k).or_insert(v);
    }
}
