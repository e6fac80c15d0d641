//! A cached object kept as its JSON text plus typed metadata.
//!
//! Why: a `DynamicObject` holds its body as a `serde_json::Value` tree, about nine times the size of its
//! JSON (a 2 KiB Work is ~18 KiB of small heap blocks), and the controller-manager caches every Work, binding,
//! template and member object. A [`CompactObject`] keeps the metadata typed (selectors, owner and label
//! lookups read it without decoding) and the rest as LZ4-compressed JSON text (Kubernetes JSON repeats its keys
//! and shrinks ~3×; decompressing a few KiB takes about a microsecond), decoded only when a reconcile needs it.
//! It is `Arc`-backed, so the shared caches and every subscriber's events hold one copy.

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject};
use kube::core::DynamicResourceScope;
use serde::de::DeserializeOwned;

use super::ControllerError;

#[derive(Clone, Debug)]
struct Inner {
    metadata: ObjectMeta,
    /// The whole object as JSON (apiVersion, kind, metadata without managedFields, spec, status), LZ4-compressed
    /// with its length prepended.
    packed: Box<[u8]>,
}

/// An object of any kind, as cached by the controllers (see the module documentation).
#[derive(Clone, Debug)]
pub struct CompactObject(Arc<Inner>);

impl CompactObject {
    /// The compact form of `object`, without its managedFields (no controller reads them, and they are often
    /// as large as the rest of the object).
    pub fn from_dynamic(object: &DynamicObject) -> Result<Self, ControllerError> {
        let mut metadata = object.metadata.clone();
        metadata.managed_fields = None;
        let slim = DynamicObjectRef {
            types: object.types.as_ref(),
            metadata: &metadata,
            data: &object.data,
        };
        let json = serde_json::to_vec(&slim)?;
        let packed = lz4_flex::compress_prepend_size(&json).into_boxed_slice();
        Ok(Self(Arc::new(Inner { metadata, packed })))
    }

    /// The object's metadata (without managedFields).
    pub fn metadata(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    /// The object's JSON text.
    pub fn json(&self) -> Result<String, ControllerError> {
        String::from_utf8(self.unpack()?).map_err(|err| ControllerError::Invalid(err.to_string()))
    }

    /// The object decoded as `T` (a typed Karmada object, or `serde_json::Value`).
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, ControllerError> {
        Ok(serde_json::from_slice(&self.unpack()?)?)
    }

    /// Bytes the object's body takes in the cache (compressed), for tests and accounting.
    pub fn packed_len(&self) -> usize {
        self.0.packed.len()
    }

    fn unpack(&self) -> Result<Vec<u8>, ControllerError> {
        lz4_flex::decompress_size_prepended(&self.0.packed)
            .map_err(|err| ControllerError::Invalid(format!("cached object: {err}")))
    }

    /// The object as a `DynamicObject`.
    pub fn to_dynamic(&self) -> Result<DynamicObject, ControllerError> {
        self.decode()
    }
}

/// Serializes like `DynamicObject` without cloning its body.
#[derive(serde::Serialize)]
struct DynamicObjectRef<'a> {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    types: Option<&'a kube::api::TypeMeta>,
    metadata: &'a ObjectMeta,
    #[serde(flatten)]
    data: &'a serde_json::Value,
}

impl TryFrom<&DynamicObject> for CompactObject {
    type Error = ControllerError;

    fn try_from(object: &DynamicObject) -> Result<Self, Self::Error> {
        Self::from_dynamic(object)
    }
}

impl Resource for CompactObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    /// Copies the object first when it is shared (a cache or another subscriber holds it).
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut Arc::make_mut(&mut self.0).metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn work() -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {
                "name": "w", "namespace": "karmada-es-a", "resourceVersion": "7",
                "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "operation": "Update"}]
            },
            "spec": {"workload": {"manifests": [{"kind": "Deployment", "spec": {"replicas": 2}}]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}]}
        }))
        .expect("work")
    }

    #[test]
    fn round_trips_everything_but_managed_fields() {
        let original = work();
        let compact = CompactObject::from_dynamic(&original).expect("compact");
        assert!(compact.metadata().managed_fields.is_none());
        assert!(!compact.json().expect("text").contains("managedFields"));
        let back = compact.to_dynamic().expect("decode");
        let mut expected = original.clone();
        expected.metadata.managed_fields = None;
        assert_eq!(
            serde_json::to_value(&back).expect("json"),
            serde_json::to_value(&expected).expect("json")
        );
        assert_eq!(back.types, original.types);
        let value: serde_json::Value = compact.decode().expect("value");
        assert_eq!(
            value["spec"]["workload"]["manifests"][0]["spec"]["replicas"],
            2
        );
        assert_eq!(compact.meta().labels.as_ref().expect("labels")["a"], "b");
    }

    #[test]
    fn a_typical_work_is_cached_in_little_more_than_half_its_json() {
        let text = r#"{"apiVersion":"work.karmada.io/v1alpha1","kind":"Work","metadata":{"name":"web-deployment","namespace":"karmada-es-member1","uid":"4f1a1c9e-8a5e-4b61-9b1a-1d2a3b4c5d6e","resourceVersion":"123456","generation":1,"creationTimestamp":"2026-11-30T01:02:03Z","labels":{"resourcebinding.karmada.io/permanent-id":"1d2a3b4c-8a5e-4b61-9b1a-4f1a1c9e5d6e","work.karmada.io/permanent-id":"9b1a1d2a-8a5e-4b61-9b1a-4f1a1c9e5d6e"},"annotations":{"resourcebinding.karmada.io/name":"web-deployment","resourcebinding.karmada.io/namespace":"default"},"finalizers":["karmada.io/execution-controller"]},"spec":{"workload":{"manifests":[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"app":"web","propagationpolicy.karmada.io/name":"web","propagationpolicy.karmada.io/namespace":"default","work.karmada.io/managed":"true"},"annotations":{"resourcetemplate.karmada.io/uid":"x-y-z","resourcetemplate.karmada.io/managed-labels":"app,propagationpolicy.karmada.io/name"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27","resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}]}},"status":{"conditions":[{"type":"Applied","status":"True","reason":"AppliedSuccessful","message":"Manifest has been successfully applied","lastTransitionTime":"2026-11-30T01:02:04Z"}],"manifestStatuses":[{"identifier":{"ordinal":0,"group":"apps","version":"v1","kind":"Deployment","namespace":"default","name":"web"},"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":1,"observedGeneration":1},"health":"Healthy"}]}}"#;
        let work: DynamicObject = serde_json::from_str(text).expect("work");
        let compact = CompactObject::from_dynamic(&work).expect("compact");
        assert!(
            compact.packed_len() * 10 < text.len() * 6,
            "{} packed of {} bytes",
            compact.packed_len(),
            text.len()
        );
        let back: serde_json::Value = compact.decode().expect("decodes");
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(text).expect("json")
        );
    }

    #[test]
    fn meta_mut_copies_a_shared_object_and_leaves_the_other_alone() {
        let shared = CompactObject::from_dynamic(&work()).expect("compact");
        let mut mine = shared.clone();
        mine.meta_mut().name = Some("renamed".into());
        assert_eq!(shared.meta().name.as_deref(), Some("w"));
        assert_eq!(mine.meta().name.as_deref(), Some("renamed"));
    }
}
