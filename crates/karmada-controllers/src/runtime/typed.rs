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

/// Typed conversions of cached objects, remembered per object until its resourceVersion changes. Why: a
/// Cluster's status (resource summaries, API enablements) makes it large, and the execution and work status
/// controllers read their cluster on every reconcile; converting it each time cost about a twentieth of the
/// controller-manager's CPU in a propagation burst.
pub struct TypedMemo<T> {
    converted: std::sync::Mutex<std::collections::HashMap<String, (String, std::sync::Arc<T>)>>,
}

impl<T> Default for TypedMemo<T> {
    fn default() -> Self {
        Self {
            converted: std::sync::Mutex::default(),
        }
    }
}

impl<T: DeserializeOwned> TypedMemo<T> {
    /// `object` as `T`, converted once per resourceVersion. An object without a resourceVersion (not from a
    /// server) is converted every time.
    pub fn typed(&self, object: &DynamicObject) -> Result<std::sync::Arc<T>, ControllerError> {
        let key = format!(
            "{}/{}",
            object.metadata.namespace.as_deref().unwrap_or_default(),
            object.metadata.name.as_deref().unwrap_or_default()
        );
        let version = object.metadata.resource_version.clone();
        self.remembered(key, version, || to_typed::<T>(object))
    }

    /// A cached compact object as `T`, converted once per resourceVersion (see [`Self::typed`]).
    pub fn typed_compact(
        &self,
        object: &crate::runtime::CompactObject,
    ) -> Result<std::sync::Arc<T>, ControllerError> {
        let metadata = object.metadata();
        let key = format!(
            "{}/{}",
            metadata.namespace().unwrap_or_default(),
            metadata.name()
        );
        let version = metadata.resource_version.as_deref().map(str::to_string);
        self.remembered(key, version, || object.decode::<T>())
    }

    fn remembered(
        &self,
        key: String,
        version: Option<String>,
        convert: impl FnOnce() -> Result<T, ControllerError>,
    ) -> Result<std::sync::Arc<T>, ControllerError> {
        let lock = || {
            self.converted
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(version) = &version
            && let Some((seen, typed)) = lock().get(&key)
            && seen == version
        {
            return Ok(typed.clone());
        }
        let typed = std::sync::Arc::new(convert()?);
        if let Some(version) = version {
            lock().insert(key, (version, typed.clone()));
        }
        Ok(typed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(version: &str, value: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": version},
            "data": {"k": value}
        }))
        .expect("object")
    }

    #[test]
    fn a_memo_converts_once_per_resource_version() {
        let memo = TypedMemo::<k8s_openapi::api::core::v1::ConfigMap>::default();
        let first = memo.typed(&config_map("1", "a")).expect("typed");
        let again = memo.typed(&config_map("1", "a")).expect("typed");
        assert!(
            std::sync::Arc::ptr_eq(&first, &again),
            "same version: reused"
        );
        let changed = memo.typed(&config_map("2", "b")).expect("typed");
        assert_eq!(
            changed.data.as_ref().expect("data")["k"],
            "b",
            "new version: converted"
        );
        assert!(!std::sync::Arc::ptr_eq(&first, &changed));
    }

    #[test]
    fn compact_objects_are_converted_once_per_resource_version_too() {
        let memo = TypedMemo::<k8s_openapi::api::core::v1::ConfigMap>::default();
        let compact = |version: &str, value: &str| {
            crate::runtime::CompactObject::from_dynamic(&config_map(version, value))
                .expect("compact")
        };
        let first = memo.typed_compact(&compact("1", "a")).expect("typed");
        let again = memo.typed_compact(&compact("1", "a")).expect("typed");
        assert!(
            std::sync::Arc::ptr_eq(&first, &again),
            "same version: reused"
        );
        let changed = memo.typed_compact(&compact("2", "b")).expect("typed");
        assert_eq!(changed.data.as_ref().expect("data")["k"], "b");
        assert_eq!(
            changed.metadata.resource_version.as_deref(),
            Some("2"),
            "the whole object, metadata included"
        );
    }
}
