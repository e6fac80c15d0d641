//! CustomResourceDefinition lifecycle: a stored CRD makes its kinds served; its status says so
//! (`NamesAccepted`, `Established`, `acceptedNames`); deleting it stops serving them and
//! deletes their objects. On start every stored CRD is registered again.

use apimachinery::{ApiError, FieldError, ResourceDef};
use serde_json::Value;
use store::RangeRequest;

use crate::objects;
use crate::server::ApiServer;
use crate::storage;

fn crd_def(server: &ApiServer) -> Option<std::sync::Arc<ResourceDef>> {
    server
        .registry()
        .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

/// Registers the kinds of every CRD in the store.
pub async fn register_stored(server: &ApiServer) -> Result<(), ApiError> {
    let Some(def) = crd_def(server) else {
        return Ok(());
    };
    let prefix = storage::collection_prefix(&def, None);
    let page = server
        .store
        .range(RangeRequest {
            prefix,
            ..RangeRequest::default()
        })
        .await
        .map_err(storage::store_error)?;
    for kv in &page.kvs {
        let crd = storage::decode(&def, kv)?;
        on_crd_written(server, &crd);
    }
    Ok(())
}

fn defs_or_invalid(def: &ResourceDef, crd: &Value) -> Result<Vec<ResourceDef>, ApiError> {
    let name = objects::name_of(crd).to_string();
    let defs = crate::hooks::crd_resource_defs(crd)
        .map_err(|errors| ApiError::invalid(&def.group, &def.kind, &name, &errors))?;
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let expected = format!("{plural}.{group}");
    if name != expected {
        let errors = [FieldError::invalid(
            "metadata.name",
            Value::String(name.clone()),
            format!("must be spec.names.plural+\".\"+spec.group (\"{expected}\")"),
        )];
        return Err(ApiError::invalid(&def.group, &def.kind, &name, &errors));
    }
    Ok(defs)
}

/// Validates a new CRD and fills its status.
pub fn prepare(def: &ResourceDef, crd: &mut Value, now: jiff::Timestamp) -> Result<(), ApiError> {
    defs_or_invalid(def, crd)?;
    let status = crate::hooks::crd_status(crd, now);
    if let Some(map) = crd.as_object_mut() {
        map.insert("status".into(), status);
    }
    Ok(())
}

/// Validates an updated CRD.
pub fn check_update(def: &ResourceDef, crd: &Value) -> Result<(), ApiError> {
    defs_or_invalid(def, crd).map(|_| ())
}

/// Serves the kinds of a stored CRD (replacing what it served before).
pub fn on_crd_written(server: &ApiServer, crd: &Value) {
    let name = objects::name_of(crd).to_string();
    match crate::hooks::crd_resource_defs(crd) {
        Ok(defs) => server.update_registry(|registry| registry.with_crd(&name, defs)),
        Err(errors) => {
            tracing::warn!(crd = %name, ?errors, "stored CRD is invalid; its kinds are not served")
        }
    }
}

/// Stops serving a deleted CRD's kinds and deletes their objects.
pub async fn on_crd_deleted(server: &ApiServer, crd: &Value) {
    let name = objects::name_of(crd).to_string();
    let defs = crate::hooks::crd_resource_defs(crd).unwrap_or_default();
    server.update_registry(|registry| registry.without_crd(&name));
    let Some(def) = defs.first() else { return };
    let prefix = storage::collection_prefix(def, None);
    let Ok(page) = server
        .store
        .range(RangeRequest {
            prefix,
            ..RangeRequest::default()
        })
        .await
    else {
        return;
    };
    for kv in page.kvs {
        if let Err(err) = server.store.delete(&kv.key, None).await {
            tracing::warn!(key = %kv.key, %err, "deleting an object of a removed CRD");
        }
    }
}
