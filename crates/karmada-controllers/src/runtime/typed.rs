//! Conversion between kube's `DynamicObject` (what watches and the dynamic API carry) and the typed Karmada API
//! or plain JSON (what the pure cores take).

use kube::api::{ApiResource, DynamicObject};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ControllerError;

/// A dynamic object as JSON (apiVersion and kind included when the object carried them).
pub fn to_json(object: &DynamicObject) -> Result<Value, ControllerError> {
    Ok(serde_json::to_value(object)?)
}

/// A dynamic object as a typed Karmada object.
pub fn to_typed<T: DeserializeOwned>(object: &DynamicObject) -> Result<T, ControllerError> {
    Ok(serde_json::from_value(serde_json::to_value(object)?)?)
}

/// A typed object (or JSON) as a dynamic object of `resource`, with apiVersion and kind set.
pub fn to_dynamic<T: Serialize>(
    object: &T,
    resource: &ApiResource,
) -> Result<DynamicObject, ControllerError> {
    let mut value = serde_json::to_value(object)?;
    if let Some(map) = value.as_object_mut() {
        map.insert(
            "apiVersion".into(),
            Value::String(resource.api_version.clone()),
        );
        map.insert("kind".into(), Value::String(resource.kind.clone()));
    }
    Ok(serde_json::from_value(value)?)
}
