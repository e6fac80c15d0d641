//! The `scale` subresource: an `autoscaling/v1` Scale view of the parent's replicas, read and
//! written through the paths the kind's [`ScaleSubresource`] names.

use apimachinery::{ApiError, ResourceDef, ScaleSubresource};
use serde_json::{Value, json};

use super::update::commit;
use super::{WriteOptions, Written, not_found};
use crate::hooks::PatchType;
use crate::objects::{self, Part};
use crate::server::ApiServer;
use crate::storage;

/// `.spec.replicas` → `/spec/replicas`.
fn pointer(path: &str) -> String {
    path.trim_start_matches('.')
        .split('.')
        .fold(String::new(), |acc, seg| format!("{acc}/{seg}"))
}

fn scale_def(def: &ResourceDef) -> Result<&ScaleSubresource, ApiError> {
    def.scale_subresource
        .as_ref()
        .ok_or_else(ApiError::not_found_path)
}

fn to_scale(def: &ResourceDef, sub: &ScaleSubresource, parent: &Value) -> Value {
    let meta = objects::meta(parent).cloned().unwrap_or_default();
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let mut metadata = json!({
        "name": pick("name"),
        "uid": pick("uid"),
        "resourceVersion": pick("resourceVersion"),
        "creationTimestamp": pick("creationTimestamp"),
    });
    if let Some(ns) = meta.get("namespace") {
        metadata["namespace"] = ns.clone();
    }
    let replicas = parent
        .pointer(&pointer(&sub.spec_replicas_path))
        .cloned()
        .unwrap_or(json!(0));
    let status_replicas = parent
        .pointer(&pointer(&sub.status_replicas_path))
        .cloned()
        .unwrap_or(json!(0));
    let mut status = json!({"replicas": status_replicas});
    let selector = if def.builtin {
        apiserver_views::builtin::scale_selector(&def.kind, parent).map(Value::from)
    } else {
        sub.label_selector_path
            .as_ref()
            .and_then(|path| parent.pointer(&pointer(path)))
            .cloned()
    };
    if let Some(selector) = selector {
        status["selector"] = selector;
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

/// GET `.../{name}/scale`.
pub async fn get_scale(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    let sub = scale_def(def)?;
    let (parent, _) = server
        .read_object(def, namespace, name)
        .await?
        .ok_or_else(|| not_found(def, name))?;
    Ok(to_scale(def, sub, &parent))
}

/// PUT `.../{name}/scale` with a Scale body.
pub async fn update_scale(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    scale: &Value,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let sub = scale_def(def)?.clone();
    let (parent, revision) = server
        .read_object(def, namespace, name)
        .await?
        .ok_or_else(|| not_found(def, name))?;
    if let Some(rv) = objects::meta_str(scale, "resourceVersion").filter(|rv| !rv.is_empty())
        && storage::parse_resource_version(rv)? != revision
    {
        return Err(ApiError::conflict(&def.group, &def.plural, name));
    }
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        let errors = [apimachinery::FieldError::invalid(
            "spec.replicas",
            json!(replicas),
            "must be greater than or equal to 0",
        )];
        return Err(ApiError::invalid("autoscaling", "Scale", name, &errors));
    }
    let mut next = parent.clone();
    set_path(
        &mut next,
        &pointer(&sub.spec_replicas_path),
        json!(replicas),
    );
    let next = objects::prepare_update(def, &parent, next, Part::Main)?;
    let written = commit(
        server,
        def,
        namespace,
        name,
        &parent,
        revision,
        next,
        Part::Main,
        options,
        Vec::new(),
    )
    .await?;
    Ok(Written {
        code: written.code,
        object: to_scale(def, &sub, &written.object),
        warnings: written.warnings,
        json: None,
    })
}

/// PATCH `.../{name}/scale`: the patch applies to the Scale view.
pub async fn patch_scale(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    kind: PatchType,
    body: &[u8],
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let mut scale = get_scale(server, def, namespace, name).await?;
    let read_version = objects::meta_str(&scale, "resourceVersion").map(str::to_owned);
    match kind {
        PatchType::Json => {
            let patch: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding JSON patch: {e}")))?;
            json_patch::patch(&mut scale, &patch)
                .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
        }
        PatchType::Merge | PatchType::Strategic | PatchType::Apply => {
            let patch = crate::content::decode_json_or_yaml(body)?;
            json_patch::merge(&mut scale, &patch);
        }
    }
    // The version read above is not the client's precondition: a write in between (a controller updating the
    // status) must not fail a patch that named none. One the patch itself sets stays.
    if objects::meta_str(&scale, "resourceVersion") == read_version.as_deref()
        && let Some(meta) = scale.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("resourceVersion");
    }
    update_scale(server, def, namespace, name, &scale, options).await
}

fn set_path(target: &mut Value, pointer: &str, value: Value) {
    let mut current = target;
    let segments: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, seg) in segments.iter().enumerate() {
        if !current.is_object() {
            *current = json!({});
        }
        let Some(map) = current.as_object_mut() else {
            return;
        };
        if i + 1 == segments.len() {
            map.insert((*seg).to_string(), value);
            return;
        }
        current = map.entry((*seg).to_string()).or_insert_with(|| json!({}));
    }
}
