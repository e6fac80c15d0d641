//! The overriders of one override rule applied to a manifest, in Karmada's order: image, command, args,
//! labels, annotations, field, plaintext (docs/karmada.md, "Override policies").
//!
//! Image, command and args overriders without an explicit path act on the containers of a Pod
//! (`spec.containers`) or of the pod template of a ReplicaSet, Deployment, DaemonSet, StatefulSet or Job
//! (`spec.template.spec.containers`); init containers are not touched, and other kinds are left alone.
//! Labels/annotations: `add` sets keys, `replace` changes only keys that exist, `remove` deletes keys that
//! exist. `fieldOverrider` edits a JSON or YAML document held in a string field. `plaintext` is RFC 6902.
//!
//! Invariant: on error the manifest passed in is unchanged (work happens on a copy) and the error says which
//! overrider and field failed.

use apimachinery::json_patch;
use karmada_api::policy::{
    CommandArgsOverrider, FieldOverrider, ImageOverrider, LabelAnnotationOverrider,
    OverriderOperator, Overriders, PatchOperation, PlaintextOverrider,
};
use serde_json::{Map, Value, json};

use super::image::ImageRef;

/// Kinds whose containers are found without a predicate, with the pointer of their container list.
fn containers_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec/containers"),
        "ReplicaSet" | "Deployment" | "DaemonSet" | "StatefulSet" | "Job" => {
            Some("/spec/template/spec/containers")
        }
        _ => None,
    }
}

fn kind_of(manifest: &Value) -> &str {
    manifest
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Applies every overrider of one rule. Errors name the overrider (e.g. `imageOverrider[0]`).
pub fn apply_overriders(manifest: &Value, overriders: &Overriders) -> Result<Value, String> {
    let mut result = manifest.clone();
    for (index, overrider) in overriders.image_overrider.iter().enumerate() {
        image(&mut result, overrider).map_err(|e| format!("imageOverrider[{index}]: {e}"))?;
    }
    for (index, overrider) in overriders.command_overrider.iter().enumerate() {
        command_args(&mut result, overrider, "command")
            .map_err(|e| format!("commandOverrider[{index}]: {e}"))?;
    }
    for (index, overrider) in overriders.args_overrider.iter().enumerate() {
        command_args(&mut result, overrider, "args")
            .map_err(|e| format!("argsOverrider[{index}]: {e}"))?;
    }
    for (index, overrider) in overriders.labels_overrider.iter().enumerate() {
        metadata_map(&mut result, overrider, "labels")
            .map_err(|e| format!("labelsOverrider[{index}]: {e}"))?;
    }
    for (index, overrider) in overriders.annotations_overrider.iter().enumerate() {
        metadata_map(&mut result, overrider, "annotations")
            .map_err(|e| format!("annotationsOverrider[{index}]: {e}"))?;
    }
    for (index, overrider) in overriders.field_overrider.iter().enumerate() {
        result = field(&result, overrider).map_err(|e| format!("fieldOverrider[{index}]: {e}"))?;
    }
    if !overriders.plaintext.is_empty() {
        result =
            plaintext(&result, &overriders.plaintext).map_err(|e| format!("plaintext: {e}"))?;
    }
    Ok(result)
}

fn image(manifest: &mut Value, overrider: &ImageOverrider) -> Result<(), String> {
    let pointers: Vec<String> = match &overrider.predicate {
        Some(predicate) => {
            if !predicate.path.starts_with('/') {
                return Err(format!(
                    "predicate.path {:?} is not a JSON pointer: it must start with '/', e.g. /spec/template/spec/containers/0/image",
                    predicate.path
                ));
            }
            vec![predicate.path.clone()]
        }
        None => {
            let Some(list) = containers_pointer(kind_of(manifest)) else {
                return Ok(());
            };
            let count = manifest
                .pointer(list)
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            (0..count)
                .map(|i| format!("{list}/{i}/image"))
                .filter(|p| manifest.pointer(p).is_some())
                .collect()
        }
    };
    for pointer in pointers {
        let slot = manifest
            .pointer_mut(&pointer)
            .ok_or_else(|| format!("no image at {pointer}"))?;
        let current = slot
            .as_str()
            .ok_or_else(|| format!("{pointer} is not a string image reference"))?;
        let mut parsed = ImageRef::parse(current).map_err(|e| format!("{pointer}: {e}"))?;
        parsed
            .apply(overrider.component, overrider.operator, &overrider.value)
            .map_err(|e| format!("{pointer}: {e}"))?;
        *slot = json!(parsed.to_string());
    }
    Ok(())
}

fn command_args(
    manifest: &mut Value,
    overrider: &CommandArgsOverrider,
    field: &str,
) -> Result<(), String> {
    if overrider.operator == OverriderOperator::Replace {
        return Err("operator replace is not supported: use add or remove".into());
    }
    let Some(list) = containers_pointer(kind_of(manifest)) else {
        return Ok(());
    };
    let Some(containers) = manifest.pointer_mut(list).and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for container in containers.iter_mut() {
        if container.get("name").and_then(Value::as_str) != Some(overrider.container_name.as_str())
        {
            continue;
        }
        let Some(container) = container.as_object_mut() else {
            continue;
        };
        let mut entries: Vec<Value> = match container.get(field) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.clone(),
            Some(other) => {
                return Err(format!(
                    "container {} {field} is not a list: {other}",
                    overrider.container_name
                ));
            }
        };
        match overrider.operator {
            OverriderOperator::Add => entries.extend(overrider.value.iter().map(|v| json!(v))),
            _ => entries.retain(|e| {
                !overrider
                    .value
                    .iter()
                    .any(|v| e.as_str() == Some(v.as_str()))
            }),
        }
        container.insert(field.into(), Value::Array(entries));
    }
    Ok(())
}

fn metadata_map(
    manifest: &mut Value,
    overrider: &LabelAnnotationOverrider,
    key: &str,
) -> Result<(), String> {
    let root = manifest
        .as_object_mut()
        .ok_or("the manifest is not a JSON object")?;
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("metadata is not an object")?;
    let mut map = match metadata.get(key) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => return Err(format!("metadata.{key} is not a map: {other}")),
    };
    for (name, value) in &overrider.value {
        match overrider.operator {
            OverriderOperator::Add => {
                map.insert(name.clone(), json!(value));
            }
            OverriderOperator::Replace => {
                if let Some(slot) = map.get_mut(name) {
                    *slot = json!(value);
                }
            }
            OverriderOperator::Remove => {
                map.remove(name);
            }
        }
    }
    metadata.insert(key.into(), Value::Object(map));
    Ok(())
}

fn patch_operations(operations: &[PatchOperation]) -> Result<Value, String> {
    let mut patch = Vec::new();
    for (index, operation) in operations.iter().enumerate() {
        if !operation.sub_path.starts_with('/') {
            return Err(format!(
                "[{index}].subPath {:?} is not a JSON pointer: it must start with '/'",
                operation.sub_path
            ));
        }
        patch.push(operation_json(
            &operation.sub_path,
            operation.operator,
            operation.value.as_ref(),
        ));
    }
    Ok(Value::Array(patch))
}

fn operation_json(path: &str, operator: OverriderOperator, value: Option<&Value>) -> Value {
    let op = match operator {
        OverriderOperator::Add => "add",
        OverriderOperator::Remove => "remove",
        OverriderOperator::Replace => "replace",
    };
    match (operator, value) {
        (OverriderOperator::Remove, _) => json!({"op": op, "path": path}),
        (_, value) => {
            json!({"op": op, "path": path, "value": value.cloned().unwrap_or(Value::Null)})
        }
    }
}

fn field(manifest: &Value, overrider: &FieldOverrider) -> Result<Value, String> {
    if !overrider.json.is_empty() && !overrider.yaml.is_empty() {
        return Err("json and yaml are exclusive: give one of them".into());
    }
    if overrider.json.is_empty() && overrider.yaml.is_empty() {
        return Ok(manifest.clone());
    }
    let pointer = &overrider.field_path;
    if !pointer.starts_with('/') {
        return Err(format!(
            "fieldPath {pointer:?} is not a JSON pointer: it must start with '/', e.g. /data/config.yaml"
        ));
    }
    let text = manifest
        .pointer(pointer)
        .ok_or_else(|| format!("fieldPath {pointer} does not exist"))?
        .as_str()
        .ok_or_else(|| {
            format!("fieldPath {pointer} is not a string holding a JSON or YAML document")
        })?;
    let rewritten = if overrider.json.is_empty() {
        let document: Value = serde_saphyr::from_str(text)
            .map_err(|e| format!("fieldPath {pointer} does not hold YAML: {e}"))?;
        let patched = json_patch(
            &document,
            &patch_operations(&overrider.yaml).map_err(|e| format!("yaml{e}"))?,
        )
        .map_err(|e| format!("yaml: {e}"))?;
        serde_saphyr::to_string(&patched).map_err(|e| format!("re-encoding YAML: {e}"))?
    } else {
        let document: Value = serde_json::from_str(text)
            .map_err(|e| format!("fieldPath {pointer} does not hold JSON: {e}"))?;
        let patched = json_patch(
            &document,
            &patch_operations(&overrider.json).map_err(|e| format!("json{e}"))?,
        )
        .map_err(|e| format!("json: {e}"))?;
        serde_json::to_string(&patched).map_err(|e| format!("re-encoding JSON: {e}"))?
    };
    let mut result = manifest.clone();
    if let Some(slot) = result.pointer_mut(pointer) {
        *slot = json!(rewritten);
    }
    Ok(result)
}

fn plaintext(manifest: &Value, overriders: &[PlaintextOverrider]) -> Result<Value, String> {
    let mut operations = Vec::new();
    for (index, overrider) in overriders.iter().enumerate() {
        if !overrider.path.starts_with('/') {
            return Err(format!(
                "[{index}].path {:?} is not a JSON pointer: it must start with '/', e.g. /spec/replicas",
                overrider.path
            ));
        }
        operations.push(operation_json(
            &overrider.path,
            overrider.operator,
            overrider.value.as_ref(),
        ));
    }
    json_patch(manifest, &Value::Array(operations)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web", "tier": "fe"}},
            "spec": {"replicas": 2, "template": {"spec": {
                "initContainers": [{"name": "init", "image": "busybox:1"}],
                "containers": [
                    {"name": "web", "image": "nginx:1.27", "command": ["nginx"], "args": ["-g", "daemon off;"]},
                    {"name": "sidecar", "image": "docker.io/envoy:v1"}
                ]
            }}}
        })
    }

    fn overriders(value: Value) -> Overriders {
        serde_json::from_value(value).expect("overriders")
    }

    #[test]
    fn overrider_table() {
        // (name, overriders, pointer, expected)
        let cases = vec![
            (
                "registry replaced in every container, init containers untouched",
                json!({"imageOverrider": [{"component": "Registry", "operator": "replace", "value": "gcr.io/p"}]}),
                "/spec/template/spec",
                json!({
                    "initContainers": [{"name": "init", "image": "busybox:1"}],
                    "containers": [
                        {"name": "web", "image": "gcr.io/p/nginx:1.27", "command": ["nginx"], "args": ["-g", "daemon off;"]},
                        {"name": "sidecar", "image": "gcr.io/p/envoy:v1"}
                    ]
                }),
            ),
            (
                "predicate path limits the image overrider",
                json!({"imageOverrider": [{"predicate": {"path": "/spec/template/spec/containers/1/image"}, "component": "Tag", "operator": "replace", "value": "v2"}]}),
                "/spec/template/spec/containers",
                json!([
                    {"name": "web", "image": "nginx:1.27", "command": ["nginx"], "args": ["-g", "daemon off;"]},
                    {"name": "sidecar", "image": "docker.io/envoy:v2"}
                ]),
            ),
            (
                "command add and args remove by container name",
                json!({"commandOverrider": [{"containerName": "web", "operator": "add", "value": ["-c", "/etc/nginx.conf"]}],
                       "argsOverrider": [{"containerName": "web", "operator": "remove", "value": ["-g"]}]}),
                "/spec/template/spec/containers/0",
                json!({"name": "web", "image": "nginx:1.27", "command": ["nginx", "-c", "/etc/nginx.conf"], "args": ["daemon off;"]}),
            ),
            (
                "args added to a container without args",
                json!({"argsOverrider": [{"containerName": "sidecar", "operator": "add", "value": ["--v=2"]}]}),
                "/spec/template/spec/containers/1/args",
                json!(["--v=2"]),
            ),
            (
                "labels add, replace existing only, remove",
                json!({"labelsOverrider": [
                    {"operator": "add", "value": {"cluster": "gcp"}},
                    {"operator": "replace", "value": {"tier": "be", "missing": "x"}},
                    {"operator": "remove", "value": {"app": ""}}
                ]}),
                "/metadata/labels",
                json!({"tier": "be", "cluster": "gcp"}),
            ),
            (
                "annotations added to an object without annotations",
                json!({"annotationsOverrider": [{"operator": "add", "value": {"team": "infra"}}]}),
                "/metadata/annotations",
                json!({"team": "infra"}),
            ),
            (
                "plaintext patch",
                json!({"plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 5},
                                     {"path": "/metadata/labels/extra", "operator": "add", "value": "1"}]}),
                "/spec/replicas",
                json!(5),
            ),
            (
                "plaintext runs after labels",
                json!({"labelsOverrider": [{"operator": "add", "value": {"x": "from-labels"}}],
                       "plaintext": [{"path": "/metadata/labels/x", "operator": "replace", "value": "from-plaintext"}]}),
                "/metadata/labels/x",
                json!("from-plaintext"),
            ),
        ];
        for (name, raw, pointer, expected) in cases {
            let result = apply_overriders(&deployment(), &overriders(raw)).expect(name);
            assert_eq!(result.pointer(pointer), Some(&expected), "{name}");
        }
    }

    #[test]
    fn field_overrider_json_and_yaml() {
        let config_map = json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
            "data": {"app.json": "{\"db\":{\"host\":\"old\"},\"debug\":true}", "app.yaml": "db:\n  host: old\nport: 80\n"}
        });
        let json_case = overriders(
            json!({"fieldOverrider": [{"fieldPath": "/data/app.json", "json": [
                {"subPath": "/db/host", "operator": "replace", "value": "new"},
                {"subPath": "/debug", "operator": "remove"}
            ]}]}),
        );
        let result = apply_overriders(&config_map, &json_case).expect("json field");
        let text = result
            .pointer("/data/app.json")
            .and_then(Value::as_str)
            .expect("string");
        assert_eq!(
            serde_json::from_str::<Value>(text).expect("json"),
            json!({"db": {"host": "new"}})
        );

        let yaml_case = overriders(
            json!({"fieldOverrider": [{"fieldPath": "/data/app.yaml", "yaml": [
                {"subPath": "/port", "operator": "replace", "value": 8080},
                {"subPath": "/db/user", "operator": "add", "value": "admin"}
            ]}]}),
        );
        let result = apply_overriders(&config_map, &yaml_case).expect("yaml field");
        let text = result
            .pointer("/data/app.yaml")
            .and_then(Value::as_str)
            .expect("string");
        let parsed: Value = serde_saphyr::from_str(text).expect("yaml");
        assert_eq!(
            parsed,
            json!({"db": {"host": "old", "user": "admin"}, "port": 8080})
        );
    }

    #[test]
    fn errors_are_values_naming_the_overrider() {
        let cases = [
            (
                json!({"plaintext": [{"path": "spec/replicas", "operator": "replace", "value": 1}]}),
                "plaintext: [0].path",
            ),
            (
                json!({"plaintext": [{"path": "/spec/nothing/here", "operator": "replace", "value": 1}]}),
                "plaintext:",
            ),
            (
                json!({"imageOverrider": [{"predicate": {"path": "/spec/replicas"}, "component": "Tag", "operator": "replace", "value": "1"}]}),
                "imageOverrider[0]: /spec/replicas is not a string",
            ),
            (
                json!({"imageOverrider": [{"predicate": {"path": "/spec/x"}, "component": "Tag", "operator": "replace", "value": "1"}]}),
                "imageOverrider[0]: no image at /spec/x",
            ),
            (
                json!({"imageOverrider": [{"component": "Repository", "operator": "remove"}]}),
                "has no repository",
            ),
            (
                json!({"fieldOverrider": [{"fieldPath": "/spec/replicas", "json": [{"subPath": "/a", "operator": "remove"}]}]}),
                "fieldOverrider[0]: fieldPath /spec/replicas is not a string",
            ),
            (
                json!({"commandOverrider": [{"containerName": "web", "operator": "replace", "value": ["x"]}]}),
                "commandOverrider[0]: operator replace",
            ),
        ];
        let original = deployment();
        for (raw, fragment) in cases {
            let error =
                apply_overriders(&original, &overriders(raw.clone())).expect_err("rejected");
            assert!(error.contains(fragment), "{raw}: {error}");
        }
        assert_eq!(original, deployment(), "input untouched");
    }
}
