//! Writes to a version served as a view of another (`autoscaling/v1` HorizontalPodAutoscalers over
//! stored `autoscaling/v2` objects, see `apiserver_views::conversion`): the object is converted to
//! the stored version and written through that version's definition, so defaulting, validation and
//! storage only ever see stored shapes, and the answer is converted back to the version asked for.
//! Reads convert in [`crate::storage::stamp`].

use std::sync::Arc;

use apimachinery::{ApiError, ResourceDef};
use apiserver_views::conversion;
use serde_json::Value;

use super::Written;
use crate::objects;
use crate::server::ApiServer;

/// The definition `def`'s objects are stored through, when `def` is a converted view.
pub(crate) fn stored_def(server: &ApiServer, def: &ResourceDef) -> Option<Arc<ResourceDef>> {
    let version = conversion::storage_version(def)?;
    server.registry().lookup(&def.group, version, &def.plural)
}

/// `object` (at `def`'s version) as it is to be stored; a 422 naming the field that cannot be converted.
pub(crate) fn to_storage(def: &ResourceDef, object: Value) -> Result<Value, ApiError> {
    if !conversion::applies_to(def) {
        return Ok(object);
    }
    let name = objects::name_of(&object).to_string();
    conversion::to_storage(def, object)
        .map_err(|error| ApiError::invalid(&def.group, &def.kind, &name, &[*error]))
}

/// A write's answer in `def`'s version: the object converted, the stored-bytes shortcut dropped
/// (those bytes are the stored version's).
pub(crate) fn present(def: &ResourceDef, written: Written) -> Written {
    if written.object.get("kind").and_then(Value::as_str) != Some(def.kind.as_str()) {
        // A Status (an immediate delete's answer) has no version to convert.
        return written;
    }
    let mut object = crate::storage::served_view(def, written.object);
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(def.api_version()));
    }
    Written {
        object,
        json: None,
        ..written
    }
}
