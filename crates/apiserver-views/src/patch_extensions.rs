//! Marks the lists and maps of a built-in kind's schema with the strategic-merge extensions
//! (`x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`, list types and map keys).
//!
//! kubectl 1.32 computes client-side `apply`/`edit` patches from the OpenAPI v3 schema: without
//! these marks it treats every list as atomic and sends whole lists, which a server merging by
//! key cannot read as deletions. The marks come from the same table the server merges with
//! ([`apimachinery::patch::BuiltinPatchMeta`]), so client and server cannot disagree.

use apimachinery::patch::{ListStrategy, PatchMeta};
use serde_json::{Value, json};

/// Annotates `schema` (an inlined object schema) in place.
pub(crate) fn annotate(schema: &mut Value, meta: &dyn PatchMeta) {
    let mut path = Vec::new();
    walk(schema, meta, &mut path);
}

fn walk(node: &mut Value, meta: &dyn PatchMeta, path: &mut Vec<String>) {
    let Some(map) = node.as_object_mut() else {
        return;
    };
    let segments: Vec<&str> = path.iter().map(String::as_str).collect();
    if map.get("type").and_then(Value::as_str) == Some("array") {
        match meta.list_strategy(&segments) {
            ListStrategy::Merge { key: Some(key) } => {
                let strategy = if meta.retain_keys(&segments) {
                    "merge,retainKeys"
                } else {
                    "merge"
                };
                map.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
                map.insert("x-kubernetes-patch-merge-key".into(), json!(key));
                map.insert("x-kubernetes-list-type".into(), json!("map"));
                map.insert("x-kubernetes-list-map-keys".into(), json!([key]));
            }
            ListStrategy::Merge { key: None } => {
                map.insert("x-kubernetes-patch-strategy".into(), json!("merge"));
                map.insert("x-kubernetes-list-type".into(), json!("set"));
            }
            ListStrategy::Atomic => {}
        }
        if let Some(items) = map.get_mut("items") {
            walk(items, meta, path);
        }
        return;
    }
    if !segments.is_empty() && meta.retain_keys(&segments) {
        map.insert("x-kubernetes-patch-strategy".into(), json!("retainKeys"));
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (name, child) in properties.iter_mut() {
            path.push(name.clone());
            walk(child, meta, path);
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::patch::BuiltinPatchMeta;

    use super::*;

    #[test]
    fn deployment_containers_merge_by_name() {
        let defs = crate::builtin::resource_defs();
        let deploy = defs.iter().find(|d| d.kind == "Deployment").unwrap();
        let schema = deploy.schema.as_ref().unwrap();
        let containers = schema
            .pointer("/properties/spec/properties/template/properties/spec/properties/containers")
            .unwrap();
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        let ports = containers.pointer("/items/properties/ports").unwrap();
        assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
        let args = containers.pointer("/items/properties/args").unwrap();
        assert!(
            args.get("x-kubernetes-patch-strategy").is_none(),
            "atomic lists stay unmarked"
        );
        let strategy = schema
            .pointer("/properties/spec/properties/strategy")
            .unwrap();
        assert_eq!(strategy["x-kubernetes-patch-strategy"], "retainKeys");
    }

    #[test]
    fn finalizers_are_a_set() {
        let mut schema = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
            "finalizers": {"type": "array", "items": {"type": "string"}}}}}});
        annotate(&mut schema, &BuiltinPatchMeta::for_kind("ConfigMap"));
        let finalizers = schema
            .pointer("/properties/metadata/properties/finalizers")
            .unwrap();
        assert_eq!(finalizers["x-kubernetes-list-type"], "set");
        assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
    }
}
