//! Walking OpenAPI v3 object schemas (CRD `openAPIV3Schema`s and built-in component schemas):
//! unknown-field detection for `fieldValidation=Strict|Warn`, pruning of unknown fields, and
//! `default:` values.
//!
//! The walk is tolerant: `$ref`s resolve into the given `components.schemas` map (an unresolvable
//! reference accepts anything), `allOf`/`oneOf`/`anyOf` branches contribute their properties,
//! and a schema that says nothing about an object's fields (no `type: object`, no `properties`,
//! no `additionalProperties`) accepts every field. At an object root, and inside
//! `x-kubernetes-embedded-resource`s, `apiVersion`, `kind` and `metadata` are always known, and
//! `metadata` is left to object-metadata validation (never walked).

use serde_json::{Map, Value};

mod patch_meta;
pub use patch_meta::SchemaPatchMeta;

const ROOT_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];
/// Guards against reference cycles in hostile or broken component maps.
const MAX_REF_DEPTH: usize = 32;

/// Schemas referenced by `$ref` (`#/components/schemas/<name>` or `#/definitions/<name>`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SchemaWalker<'a> {
    components: Option<&'a Map<String, Value>>,
}

/// Unknown fields of `object`, as paths like `.spec.foo` or `.spec.ports[0].bar`.
pub fn unknown_fields(schema: &Value, object: &Value) -> Vec<String> {
    SchemaWalker::default().unknown_fields(schema, object)
}

/// Drops the fields of `object` the schema does not know.
pub fn prune(schema: &Value, object: &mut Value) {
    SchemaWalker::default().prune(schema, object);
}

/// Fills in `default:` values of absent properties.
pub fn apply_defaults(schema: &Value, object: &mut Value) {
    SchemaWalker::default().apply_defaults(schema, object);
}

/// Kubernetes' wording for an unknown field path from [`unknown_fields`]: `unknown field "spec.foo"`.
pub fn unknown_field_message(path: &str) -> String {
    format!("unknown field \"{}\"", path.trim_start_matches('.'))
}

/// What a schema node allows in an object.
struct ObjectRule<'a> {
    properties: Vec<(&'a str, &'a Value)>,
    additional: Additional<'a>,
    open: bool,
    embedded: bool,
}

enum Additional<'a> {
    None,
    Any,
    Schema(&'a Value),
}

impl<'a> ObjectRule<'a> {
    fn property(&self, name: &str) -> Option<&'a Value> {
        self.properties
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }

    /// The schema of child `name`, `Ok(None)` when the child is allowed but unconstrained,
    /// `Err(())` when it is unknown.
    fn child(&self, name: &str) -> Result<Option<&'a Value>, ()> {
        // Object metadata has its own rules; CRD schemas usually declare it as a bare object.
        if self.embedded && name == "metadata" {
            return Ok(None);
        }
        if let Some(schema) = self.property(name) {
            return Ok(Some(schema));
        }
        if self.embedded && ROOT_FIELDS.contains(&name) {
            return Ok(None);
        }
        match self.additional {
            Additional::Schema(schema) => Ok(Some(schema)),
            Additional::Any => Ok(None),
            Additional::None if self.open => Ok(None),
            Additional::None => Err(()),
        }
    }
}

impl<'a> SchemaWalker<'a> {
    /// `components` is the `components.schemas` map `$ref`s point into.
    pub fn new(components: &'a Map<String, Value>) -> Self {
        Self {
            components: Some(components),
        }
    }

    fn resolve(&self, mut schema: &'a Value) -> Option<&'a Value> {
        for _ in 0..MAX_REF_DEPTH {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return Some(schema);
            };
            let name = reference
                .strip_prefix("#/components/schemas/")
                .or_else(|| reference.strip_prefix("#/definitions/"))?;
            schema = self.components?.get(name)?;
        }
        None
    }

    /// The schema itself plus its `allOf`/`oneOf`/`anyOf` branches, references resolved.
    fn branches(&self, schema: &'a Value, out: &mut Vec<&'a Value>, depth: usize) {
        let Some(schema) = self.resolve(schema) else {
            return;
        };
        out.push(schema);
        if depth >= MAX_REF_DEPTH {
            return;
        }
        for combinator in ["allOf", "oneOf", "anyOf"] {
            for branch in schema
                .get(combinator)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.branches(branch, out, depth + 1);
            }
        }
    }

    /// `None` when the schema cannot be resolved (then anything goes).
    fn object_rule(&self, schema: &'a Value, at_root: bool) -> Option<ObjectRule<'a>> {
        let mut nodes = Vec::new();
        self.branches(schema, &mut nodes, 0);
        if nodes.is_empty() {
            return None;
        }
        let mut rule = ObjectRule {
            properties: Vec::new(),
            additional: Additional::None,
            open: false,
            embedded: at_root,
        };
        let mut says_object = false;
        for node in nodes {
            if let Some(Value::Object(properties)) = node.get("properties") {
                rule.properties
                    .extend(properties.iter().map(|(k, v)| (k.as_str(), v)));
                says_object = true;
            }
            match node.get("additionalProperties") {
                Some(Value::Bool(true)) => rule.additional = Additional::Any,
                Some(schema @ Value::Object(_)) => rule.additional = Additional::Schema(schema),
                _ => {}
            }
            if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
                rule.open = true;
            }
            if node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
                rule.embedded = true;
            }
            if node.get("type").and_then(Value::as_str) == Some("object") {
                says_object = true;
            }
        }
        if !says_object && matches!(rule.additional, Additional::None) {
            rule.open = true;
        }
        Some(rule)
    }

    fn items(&self, schema: &'a Value) -> Option<&'a Value> {
        let mut nodes = Vec::new();
        self.branches(schema, &mut nodes, 0);
        nodes.into_iter().find_map(|node| node.get("items"))
    }

    pub fn unknown_fields(&self, schema: &'a Value, object: &Value) -> Vec<String> {
        let mut found = Vec::new();
        self.visit_unknown(schema, object, "", true, &mut found);
        found
    }

    fn visit_unknown(
        &self,
        schema: &'a Value,
        value: &Value,
        path: &str,
        at_root: bool,
        found: &mut Vec<String>,
    ) {
        match value {
            Value::Object(map) => {
                let Some(rule) = self.object_rule(schema, at_root) else {
                    return;
                };
                for (key, child) in map {
                    let child_path = format!("{path}.{key}");
                    match rule.child(key) {
                        Ok(Some(child_schema)) => {
                            self.visit_unknown(child_schema, child, &child_path, false, found)
                        }
                        Ok(None) => {}
                        Err(()) => found.push(child_path),
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = self.items(schema) {
                    for (index, item) in items.iter().enumerate() {
                        self.visit_unknown(
                            item_schema,
                            item,
                            &format!("{path}[{index}]"),
                            false,
                            found,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    pub fn prune(&self, schema: &'a Value, object: &mut Value) {
        self.visit_prune(schema, object, true);
    }

    fn visit_prune(&self, schema: &'a Value, value: &mut Value, at_root: bool) {
        match value {
            Value::Object(map) => {
                let Some(rule) = self.object_rule(schema, at_root) else {
                    return;
                };
                map.retain(|key, _| rule.child(key).is_ok());
                for (key, child) in map.iter_mut() {
                    if let Ok(Some(child_schema)) = rule.child(key) {
                        self.visit_prune(child_schema, child, false);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = self.items(schema) {
                    for item in items {
                        self.visit_prune(item_schema, item, false);
                    }
                }
            }
            _ => {}
        }
    }

    pub fn apply_defaults(&self, schema: &'a Value, object: &mut Value) {
        self.visit_defaults(schema, object, true);
    }

    fn visit_defaults(&self, schema: &'a Value, value: &mut Value, at_root: bool) {
        match value {
            Value::Object(map) => {
                let Some(rule) = self.object_rule(schema, at_root) else {
                    return;
                };
                for (name, property) in &rule.properties {
                    let mut nodes = Vec::new();
                    self.branches(property, &mut nodes, 0);
                    let Some(default) = nodes.iter().find_map(|n| n.get("default")) else {
                        continue;
                    };
                    let nullable = nodes
                        .iter()
                        .any(|n| n.get("nullable") == Some(&Value::Bool(true)));
                    match map.get(*name) {
                        None => {
                            map.insert((*name).to_string(), default.clone());
                        }
                        Some(Value::Null) if !nullable => {
                            map.insert((*name).to_string(), default.clone());
                        }
                        Some(_) => {}
                    }
                }
                for (key, child) in map.iter_mut() {
                    if let Ok(Some(child_schema)) = rule.child(key) {
                        self.visit_defaults(child_schema, child, false);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = self.items(schema) {
                    for item in items {
                        self.visit_defaults(item_schema, item, false);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "properties": {
                        "conflictResolution": {"type": "string", "default": "Abort"},
                        "priority": {"type": "integer", "default": 0},
                        "preemption": {"type": "string", "default": "Never"},
                        "resourceSelectors": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "apiVersion": {"type": "string"},
                                    "kind": {"type": "string"},
                                    "name": {"type": "string"},
                                    "labelSelector": {"type": "object", "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}}
                                }
                            }
                        },
                        "placement": {
                            "type": "object",
                            "properties": {
                                "clusterAffinity": {"type": "object", "properties": {"clusterNames": {"type": "array", "items": {"type": "string"}}}},
                                "replicaScheduling": {
                                    "type": "object",
                                    "properties": {"replicaSchedulingType": {"type": "string", "default": "Divided"}}
                                }
                            }
                        },
                        "extra": {"x-kubernetes-preserve-unknown-fields": true},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
                        "labels": {"type": "object", "additionalProperties": true},
                        "nullableThing": {"type": "string", "nullable": true, "default": "x"}
                    }
                }
            }
        })
    }

    fn policy() -> Value {
        json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {
                "foo": 1,
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "bar": true,
                                       "labelSelector": {"matchLabels": {"app": "web"}}}],
                "placement": {"clusterAffinity": {"clusterNames": ["m1"], "baz": 1}, "replicaScheduling": {}},
                "extra": {"anything": {"goes": 1}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {}, "qux": 1},
                "labels": {"free": "form"},
                "nullableThing": null
            }
        })
    }

    #[test]
    fn unknown_fields_are_reported_with_paths() {
        assert_eq!(
            unknown_fields(&policy_schema(), &policy()),
            vec![
                ".spec.foo",
                ".spec.resourceSelectors[0].bar",
                ".spec.placement.clusterAffinity.baz",
                ".spec.template.qux"
            ]
        );
        assert_eq!(
            unknown_field_message(".spec.foo"),
            "unknown field \"spec.foo\""
        );
    }

    #[test]
    fn prune_drops_exactly_the_unknown_fields() {
        let mut object = policy();
        prune(&policy_schema(), &mut object);
        assert!(unknown_fields(&policy_schema(), &object).is_empty());
        let mut expected = policy();
        let spec = expected["spec"].as_object_mut().expect("object");
        spec.remove("foo");
        expected["spec"]["resourceSelectors"][0]
            .as_object_mut()
            .expect("object")
            .remove("bar");
        expected["spec"]["placement"]["clusterAffinity"]
            .as_object_mut()
            .expect("object")
            .remove("baz");
        expected["spec"]["template"]
            .as_object_mut()
            .expect("object")
            .remove("qux");
        assert_eq!(object, expected);
    }

    #[test]
    fn defaults_fill_absent_properties_only() {
        let mut object = json!({"spec": {"priority": 5, "placement": {"replicaScheduling": {}}, "nullableThing": null}});
        apply_defaults(&policy_schema(), &mut object);
        assert_eq!(
            object,
            json!({"spec": {
                "priority": 5,
                "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided"}},
                "nullableThing": null,
                "conflictResolution": "Abort",
                "preemption": "Never"
            }})
        );
    }

    #[test]
    fn refs_and_combinators_resolve() {
        let components = json!({
            "io.k8s.api.apps.v1.Deployment": {
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}], "default": {}}
                }
            },
            "io.k8s.api.apps.v1.DeploymentSpec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "strategy": {"oneOf": [{"properties": {"type": {"type": "string"}}}, {"properties": {"rollingUpdate": {"type": "object"}}}]}
                }
            },
            "loop": {"$ref": "#/components/schemas/loop"}
        });
        let components = components.as_object().expect("object");
        let walker = SchemaWalker::new(components);
        let schema = json!({"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"});
        let object = json!({"apiVersion": "apps/v1", "spec": {"replicas": 2, "paused": true, "strategy": {"type": "Recreate", "rollingUpdate": {}, "x": 1}}});
        assert_eq!(
            walker.unknown_fields(&schema, &object),
            vec![".spec.paused", ".spec.strategy.x"]
        );
        let mut empty = json!({});
        walker.apply_defaults(&schema, &mut empty);
        assert_eq!(empty, json!({"spec": {"replicas": 1}}));
        // Unresolvable and cyclic references accept anything rather than failing.
        let loose = json!({"properties": {"a": {"$ref": "#/components/schemas/missing"}, "b": {"$ref": "#/components/schemas/loop"}}});
        assert!(
            walker
                .unknown_fields(&loose, &json!({"a": {"x": 1}, "b": {"y": 2}}))
                .is_empty()
        );
        assert_eq!(unknown_fields(&loose, &json!({"c": 1})), vec![".c"]);
    }
}
