//! [`PatchMeta`] read from an OpenAPI schema's list extensions, for kinds described only by a
//! schema (custom resources, or built-ins when their OpenAPI document is at hand).
//!
//! A list merges when its schema says `x-kubernetes-patch-strategy: merge` (key from
//! `x-kubernetes-patch-merge-key`), `x-kubernetes-list-type: map` (key: the first of
//! `x-kubernetes-list-map-keys`) or `x-kubernetes-list-type: set` (primitive set). Anything else,
//! or a path the schema does not describe, is atomic.

use serde_json::{Map, Value};

use super::SchemaWalker;
use crate::patch::{ListStrategy, PatchMeta};

/// Patch metadata taken from a schema.
#[derive(Clone, Copy, Debug)]
pub struct SchemaPatchMeta<'a> {
    root: &'a Value,
    walker: SchemaWalker<'a>,
}

impl<'a> SchemaPatchMeta<'a> {
    /// `components` is the `components.schemas` map `$ref`s point into, when there are any.
    pub fn new(root: &'a Value, components: Option<&'a Map<String, Value>>) -> Self {
        let walker = components.map(SchemaWalker::new).unwrap_or_default();
        Self { root, walker }
    }

    /// The schema node of the field at `path` (list positions skipped), with its branches.
    fn node_at(&self, path: &[&str]) -> Vec<&'a Value> {
        let mut current = self.root;
        for name in path {
            let Some(next) = self.child(current, name) else {
                return Vec::new();
            };
            current = next;
        }
        let mut nodes = Vec::new();
        self.walker.branches(current, &mut nodes, 0);
        nodes
    }

    /// Property `name` of `node`, stepping through list items first.
    fn child(&self, node: &'a Value, name: &str) -> Option<&'a Value> {
        let mut node = node;
        // Nested lists (`[][]T`) need more than one step; the bound stops hostile cycles.
        for _ in 0..8 {
            let mut branches = Vec::new();
            self.walker.branches(node, &mut branches, 0);
            if let Some(found) = branches.iter().find_map(|b| b.get("properties")?.get(name)) {
                return Some(found);
            }
            if let Some(additional) = branches
                .iter()
                .find_map(|b| b.get("additionalProperties").filter(|a| a.is_object()))
            {
                return Some(additional);
            }
            node = branches.iter().find_map(|b| b.get("items"))?;
        }
        None
    }
}

fn text<'v>(nodes: &[&'v Value], name: &str) -> Option<&'v str> {
    nodes.iter().find_map(|n| n.get(name)?.as_str())
}

impl PatchMeta for SchemaPatchMeta<'_> {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        let nodes = self.node_at(path);
        if text(&nodes, "x-kubernetes-patch-strategy")
            .is_some_and(|s| s.split(',').any(|p| p == "merge"))
        {
            let key = text(&nodes, "x-kubernetes-patch-merge-key").map(str::to_string);
            return ListStrategy::Merge { key };
        }
        match text(&nodes, "x-kubernetes-list-type") {
            Some("map") => {
                let key = nodes
                    .iter()
                    .find_map(|n| {
                        n.get("x-kubernetes-list-map-keys")?
                            .as_array()?
                            .first()?
                            .as_str()
                    })
                    .map(str::to_string);
                ListStrategy::Merge { key }
            }
            Some("set") => ListStrategy::Merge { key: None },
            _ => ListStrategy::Atomic,
        }
    }

    fn retain_keys(&self, path: &[&str]) -> bool {
        text(&self.node_at(path), "x-kubernetes-patch-strategy")
            .is_some_and(|s| s.split(',').any(|p| p == "retainKeys"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strategies_from_extensions() {
        let components = json!({
            "PodSpec": {"properties": {
                "containers": {"type": "array", "items": {"$ref": "#/components/schemas/Container"},
                               "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
                "volumes": {"type": "array", "items": {"type": "object"},
                            "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name"},
                "tolerations": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "atomic"}
            }},
            "Container": {"properties": {
                "ports": {"type": "array", "items": {"type": "object"},
                          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort", "protocol"]}
            }}
        });
        let root = json!({"properties": {
            "metadata": {"properties": {"finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}}},
            "spec": {"properties": {"template": {"properties": {"spec": {"allOf": [{"$ref": "#/components/schemas/PodSpec"}]}}}}},
            "status": {"properties": {"conditions": {"type": "array", "items": {"type": "object"}}}}
        }});
        let components = components.as_object().expect("object");
        let meta = SchemaPatchMeta::new(&root, Some(components));
        let key = |k: &str| ListStrategy::Merge {
            key: Some(k.to_string()),
        };
        let cases: &[(&[&str], ListStrategy)] = &[
            (&["spec", "template", "spec", "containers"], key("name")),
            (
                &["spec", "template", "spec", "containers", "ports"],
                key("containerPort"),
            ),
            (&["spec", "template", "spec", "volumes"], key("name")),
            (
                &["spec", "template", "spec", "tolerations"],
                ListStrategy::Atomic,
            ),
            (
                &["metadata", "finalizers"],
                ListStrategy::Merge { key: None },
            ),
            (&["status", "conditions"], ListStrategy::Atomic),
            (&["spec", "nothing", "here"], ListStrategy::Atomic),
        ];
        for (path, expected) in cases {
            assert_eq!(meta.list_strategy(path), *expected, "{path:?}");
        }
        assert!(meta.retain_keys(&["spec", "template", "spec", "volumes"]));
        assert!(!meta.retain_keys(&["spec", "template", "spec", "containers"]));
    }
}
