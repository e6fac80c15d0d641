//! A cached object kept as its JSON text plus typed metadata.
//!
//! Why: a `DynamicObject` holds its body as a `serde_json::Value` tree, about nine times the size of its
//! JSON (a 2 KiB Work is ~18 KiB of small heap blocks), and the controller-manager caches every Work, binding,
//! template and member object. A [`CompactObject`] keeps the metadata typed (selectors, owner and label
//! lookups read it without decoding) and the rest as LZ4-compressed JSON text (Kubernetes JSON repeats its keys
//! and shrinks ~3×; decompressing a few KiB takes about a microsecond), decoded only when a reconcile needs it.
//! Labels and annotations are kept apart from the typed metadata as [`Pairs`] (read them with
//! [`CompactObject::labels`] and [`CompactObject::annotations`]; `metadata()` has neither). An annotation value
//! longer than [`LARGE_ANNOTATION`] bytes (the scheduler's explanation, kubectl's last-applied-configuration:
//! JSON nobody looks up in a cache) stays only in the compressed body; [`CompactObject::large_annotations`]
//! fingerprints such values for change detection. It is
//! `Arc`-backed, so the shared caches and every subscriber's events hold one copy.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use serde::de::DeserializeOwned;

use super::meta::{Meta, Namespaces};
use super::raw::RawObject;
use super::{ControllerError, Pairs};

#[derive(Clone, Debug)]
struct Inner {
    /// The metadata without managedFields, labels and annotations.
    metadata: Meta,
    /// `None` when the object has no such map (as opposed to an empty one, which JSON keeps apart).
    labels: Option<Pairs>,
    annotations: Option<Pairs>,
    /// The object as JSON without its metadata (apiVersion, kind, spec, status), LZ4-compressed against
    /// `dictionary` with its length prepended. The metadata is spliced back in when the object is decoded.
    packed: Box<[u8]>,
    /// Earlier bodies of the same watch, which this body was compressed against (see [`Packer`]).
    dictionary: Option<Arc<[u8]>>,
    /// Whether `packed` holds the whole object, metadata included, because `metadata` lacks the large
    /// annotations.
    whole: bool,
    /// A hash of the annotations left out of `annotations` for their size, if any.
    large_annotations: Option<u64>,
    /// A hash of the `spec` text, computed on first use: several subscribers of one watch fingerprint each
    /// event, and finding the spec means unpacking and scanning the whole body.
    spec_hash: std::sync::OnceLock<Option<u64>>,
}

/// Annotation values longer than this are kept only in the compressed body.
pub const LARGE_ANNOTATION: usize = 512;

/// An object of any kind, as cached by the controllers (see the module documentation).
#[derive(Clone, Debug)]
pub struct CompactObject(Arc<Inner>);

impl CompactObject {
    /// The compact form of `object`, compressed on its own. Watches use a [`Packer`], which compresses each
    /// object against earlier ones of the same resource.
    pub fn from_dynamic(object: &DynamicObject) -> Result<Self, ControllerError> {
        let parts = object.split()?;
        let packed = compress(&parts.body, None);
        Self::new(parts, packed, None, &mut Namespaces::default())
    }

    fn new(
        parts: Parts,
        packed: Vec<u8>,
        dictionary: Option<Arc<[u8]>>,
        namespaces: &mut Namespaces,
    ) -> Result<Self, ControllerError> {
        let Parts {
            mut metadata,
            whole,
            large_annotations,
            ..
        } = parts;
        let labels = metadata.labels.take().as_ref().map(Pairs::from_map);
        let annotations = metadata.annotations.take().as_ref().map(Pairs::from_map);
        Ok(Self(Arc::new(Inner {
            metadata: Meta::new(metadata, namespaces),
            labels: labels.transpose()?,
            annotations: annotations.transpose()?,
            packed: packed.into_boxed_slice(),
            dictionary,
            whole,
            large_annotations,
            spec_hash: std::sync::OnceLock::new(),
        })))
    }

    /// A hash of the annotations whose values are too large to be kept typed ([`LARGE_ANNOTATION`]); `None`
    /// when there are none. Their values are in the decoded object only; fingerprints include this.
    pub fn large_annotations(&self) -> Option<u64> {
        self.0.large_annotations
    }

    /// The object's metadata without managedFields, labels and annotations (read those with
    /// [`Self::labels`] and [`Self::annotations`]).
    pub fn metadata(&self) -> &Meta {
        &self.0.metadata
    }

    /// The object's labels.
    pub fn labels(&self) -> &Pairs {
        self.0.labels.as_ref().unwrap_or(&*EMPTY)
    }

    /// The object's annotations up to [`LARGE_ANNOTATION`] bytes.
    pub fn annotations(&self) -> &Pairs {
        self.0.annotations.as_ref().unwrap_or(&*EMPTY)
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().get(key)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations().get(key)
    }

    /// The metadata with its labels and annotations (decoding writes them without rebuilding the maps).
    #[cfg(test)]
    fn full_metadata(&self) -> ObjectMeta {
        let mut metadata = self.0.metadata.to_object_meta();
        metadata.labels = self.0.labels.as_ref().map(Pairs::to_map);
        metadata.annotations = self.0.annotations.as_ref().map(Pairs::to_map);
        metadata
    }

    /// A hash of the object's `spec` as JSON text (`None` without a spec or when the body does not decode),
    /// computed once per object however many subscribers ask.
    pub fn spec_hash(&self) -> Option<u64> {
        *self.0.spec_hash.get_or_init(|| {
            #[derive(serde::Deserialize)]
            struct SpecText<'a> {
                #[serde(borrow)]
                spec: Option<&'a serde_json::value::RawValue>,
            }
            let json = self.unpack().ok()?;
            let spec = serde_json::from_slice::<SpecText<'_>>(&json).ok()?.spec?;
            let mut hasher = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(spec.get(), &mut hasher);
            Some(std::hash::Hasher::finish(&hasher))
        })
    }

    /// The object's JSON text.
    pub fn json(&self) -> Result<String, ControllerError> {
        String::from_utf8(self.unpack()?).map_err(|err| ControllerError::Invalid(err.to_string()))
    }

    /// The object decoded as `T` (a typed Karmada object, or `serde_json::Value`).
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, ControllerError> {
        Ok(serde_json::from_slice(&self.unpack()?)?)
    }

    /// Bytes the object's body takes in the cache (compressed; the shared dictionary is not counted), for
    /// tests and accounting.
    pub fn packed_len(&self) -> usize {
        self.0.packed.len()
    }

    /// The whole object's JSON: the metadata first, then the body's fields.
    fn unpack(&self) -> Result<Vec<u8>, ControllerError> {
        let dictionary = self.0.dictionary.as_deref().unwrap_or_default();
        let body = lz4_flex::block::decompress_size_prepended_with_dict(&self.0.packed, dictionary)
            .map_err(|err| ControllerError::Invalid(format!("cached object: {err}")))?;
        if self.0.whole {
            return Ok(body);
        }
        let fields = body
            .strip_prefix(b"{")
            .and_then(|rest| rest.strip_suffix(b"}"))
            .ok_or_else(|| ControllerError::Invalid("cached object is not a JSON object".into()))?;
        let mut json = Vec::with_capacity(body.len() + 512);
        json.extend_from_slice(br#"{"metadata":"#);
        self.write_metadata(&mut json)?;
        if !fields.is_empty() {
            json.push(b',');
            json.extend_from_slice(fields);
        }
        json.push(b'}');
        Ok(json)
    }

    /// Writes the metadata as JSON, labels and annotations first, without rebuilding their maps.
    fn write_metadata(&self, json: &mut Vec<u8>) -> Result<(), ControllerError> {
        let mut separator = b'{';
        for (key, pairs) in [
            ("labels", &self.0.labels),
            ("annotations", &self.0.annotations),
        ] {
            if let Some(pairs) = pairs {
                json.push(separator);
                serde_json::to_writer(&mut *json, key)?;
                json.push(b':');
                serde_json::to_writer(&mut *json, pairs)?;
                separator = b',';
            }
        }
        let rest = serde_json::to_vec(&self.0.metadata)?;
        let rest = rest
            .strip_prefix(b"{")
            .ok_or_else(|| ControllerError::Invalid("metadata is not a JSON object".into()))?;
        if separator == b',' && rest != b"}" {
            json.push(b',');
        } else if separator == b'{' {
            json.push(b'{');
        }
        json.extend_from_slice(rest);
        Ok(())
    }

    /// The object as a `DynamicObject`.
    pub fn to_dynamic(&self) -> Result<DynamicObject, ControllerError> {
        self.decode()
    }
}

/// What an object without labels (or annotations) has.
static EMPTY: std::sync::LazyLock<Pairs> = std::sync::LazyLock::new(Pairs::default);

/// Makes the objects of one watch compact. Objects of one resource share most of their text (keys, defaults,
/// the same pod template), so each body is compressed against a dictionary of earlier bodies: a body that
/// compresses worse than [`LEARN_BELOW_RATIO`]:1 is new enough to learn from, until the dictionary holds
/// [`DICTIONARY_LIMIT`] bytes. Every object keeps the dictionary it was packed with (an `Arc`), so a grown
/// dictionary never invalidates the objects already cached — and so the dictionary grows in steps of at least
/// [`LEARN_STEP`] bytes: grown per body, a watch of small bodies (a few hundred bytes each) left a hundred
/// versions of up to 32 KiB alive, one per step, held by the objects packed in between.
#[derive(Default)]
pub struct Packer {
    dictionary: Option<Arc<[u8]>>,
    /// Bodies to learn from that are not in the dictionary yet.
    learning: Vec<u8>,
    namespaces: Namespaces,
}

/// LZ4 matches reach back 64 KiB; a smaller dictionary keeps each watch's overhead bounded.
const DICTIONARY_LIMIT: usize = 32 * 1024;
/// A body that the dictionary shrinks less than this many times over is new enough to learn from.
const LEARN_BELOW_RATIO: usize = 4;
/// The dictionary grows by at least this much at a time (the first body starts it at once).
const LEARN_STEP: usize = 4 * 1024;

impl Packer {
    /// The compact form of `object` (without managedFields), learning from it if it is new.
    pub fn pack(&mut self, object: &impl Packable) -> Result<CompactObject, ControllerError> {
        let parts = object.split()?;
        let body = &parts.body;
        let mut packed = compress(body, self.dictionary.as_deref());
        let known = self.dictionary.as_ref().map_or(0, |d| d.len());
        if packed.len() * LEARN_BELOW_RATIO > body.len()
            && known + self.learning.len() + body.len() <= DICTIONARY_LIMIT
        {
            self.learning.extend_from_slice(body);
            if self.dictionary.is_none() || self.learning.len() >= LEARN_STEP {
                let mut dictionary = self.dictionary.as_deref().unwrap_or_default().to_vec();
                dictionary.append(&mut self.learning);
                let dictionary: Arc<[u8]> = dictionary.into();
                packed = compress(body, Some(&dictionary));
                self.dictionary = Some(dictionary);
                self.learning = Vec::new();
            }
        }
        CompactObject::new(parts, packed, self.dictionary.clone(), &mut self.namespaces)
    }

    /// A watch event with its object made compact.
    pub fn event<O: Packable>(
        &mut self,
        event: Event<O>,
    ) -> Result<Event<CompactObject>, ControllerError> {
        Ok(match event {
            Event::Apply(o) => Event::Apply(self.pack(&o)?),
            Event::Delete(o) => Event::Delete(self.pack(&o)?),
            Event::InitApply(o) => Event::InitApply(self.pack(&o)?),
            Event::Init => Event::Init,
            Event::InitDone => Event::InitDone,
        })
    }
}

/// What a compact object is made of, before compression.
pub struct Parts {
    /// The typed metadata (labels and annotations still in it).
    metadata: ObjectMeta,
    /// The JSON to compress: without metadata, or the whole object when `whole`.
    body: Vec<u8>,
    whole: bool,
    large_annotations: Option<u64>,
}

/// What a watch delivers that a [`Packer`] can make compact: kube's `DynamicObject`, or a [`RawObject`] (read
/// without building a JSON tree; what the controllers' own watches use).
pub trait Packable {
    /// The object's metadata without managedFields (no controller reads them, and they are often as large as
    /// the rest of the object), and the JSON of everything else. With annotations over [`LARGE_ANNOTATION`]
    /// bytes the body is the whole object and the typed metadata goes without them.
    fn split(&self) -> Result<Parts, ControllerError>;
}

impl Packable for DynamicObject {
    fn split(&self) -> Result<Parts, ControllerError> {
        let mut metadata = self.metadata.clone();
        metadata.managed_fields = None;
        if has_large_annotation(&metadata) {
            let body = serde_json::to_vec(&WholeRef {
                types: self.types.as_ref(),
                metadata: &metadata,
                data: &self.data,
            })?;
            return Ok(Parts::whole(metadata, body));
        }
        let body = serde_json::to_vec(&BodyRef {
            types: self.types.as_ref(),
            data: &self.data,
        })?;
        Ok(Parts::thin(metadata, body))
    }
}

impl Packable for RawObject {
    fn split(&self) -> Result<Parts, ControllerError> {
        // The raw metadata is already without managedFields.
        let metadata = self.metadata.clone();
        if has_large_annotation(&metadata) {
            return Ok(Parts::whole(metadata, self.whole_json()?.into_bytes()));
        }
        Ok(Parts::thin(metadata, self.body().as_bytes().to_vec()))
    }
}

fn is_large(value: &str) -> bool {
    value.len() > LARGE_ANNOTATION
}

fn has_large_annotation(metadata: &ObjectMeta) -> bool {
    metadata
        .annotations
        .iter()
        .flatten()
        .any(|(_, v)| is_large(v))
}

impl Parts {
    fn thin(metadata: ObjectMeta, body: Vec<u8>) -> Self {
        Parts {
            metadata,
            body,
            whole: false,
            large_annotations: None,
        }
    }

    /// `body` is the whole object; the large annotations leave the typed metadata, fingerprinted.
    fn whole(mut metadata: ObjectMeta, body: Vec<u8>) -> Self {
        let mut hasher = std::hash::DefaultHasher::new();
        if let Some(annotations) = metadata.annotations.as_mut() {
            annotations.retain(|key, value| {
                let large = is_large(value);
                if large {
                    std::hash::Hash::hash(&(key, &*value), &mut hasher);
                }
                !large
            });
        }
        Parts {
            metadata,
            body,
            whole: true,
            large_annotations: Some(std::hash::Hasher::finish(&hasher)),
        }
    }
}

fn compress(body: &[u8], dictionary: Option<&[u8]>) -> Vec<u8> {
    lz4_flex::block::compress_prepend_size_with_dict(body, dictionary.unwrap_or_default())
}

/// Serializes like `DynamicObject` without its metadata and without cloning its body.
#[derive(serde::Serialize)]
struct BodyRef<'a> {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    types: Option<&'a kube::api::TypeMeta>,
    #[serde(flatten)]
    data: &'a serde_json::Value,
}

/// Serializes like `DynamicObject` without cloning its body.
#[derive(serde::Serialize)]
struct WholeRef<'a> {
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
    fn the_spec_hash_follows_the_spec_text_only() {
        let hash = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut object = serde_json::to_value(work()).expect("json");
            edit(&mut object);
            let dynamic: DynamicObject = serde_json::from_value(object).expect("dynamic");
            let compact = CompactObject::from_dynamic(&dynamic).expect("compact");
            let first = compact.spec_hash();
            assert_eq!(compact.clone().spec_hash(), first, "asked again: the same");
            first
        };
        let base = hash(&|_| {});
        assert!(base.is_some());
        assert_eq!(
            hash(&|o| o["status"] = json!({"conditions": []})),
            base,
            "status"
        );
        assert_eq!(
            hash(&|o| o["metadata"]["labels"] = json!({"c": "d"})),
            base,
            "metadata"
        );
        assert_ne!(
            hash(&|o| o["spec"]["workload"]["manifests"][0]["spec"]["replicas"] = json!(3)),
            base,
            "spec"
        );
        assert_eq!(
            hash(&|o| {
                o.as_object_mut().expect("object").remove("spec");
            }),
            None,
            "no spec"
        );
    }

    /// A raw object and kube's `DynamicObject` of the same text make the same compact object, with and without
    /// large annotations (the body is then the whole object).
    #[test]
    fn raw_and_dynamic_objects_pack_alike() {
        let explanation = "x".repeat(LARGE_ANNOTATION + 1);
        for annotations in [
            json!({"small": "s"}),
            json!({"small": "s", "big": explanation}),
        ] {
            let mut object = serde_json::to_value(work()).expect("json");
            object["metadata"]["annotations"] = annotations;
            object["metadata"]["ownerReferences"] =
                json!([{"apiVersion": "v1", "kind": "Namespace", "name": "n", "uid": "u"}]);
            let text = object.to_string();
            let dynamic: DynamicObject = serde_json::from_str(&text).expect("dynamic");
            let raw: RawObject = serde_json::from_str(&text).expect("raw");
            let mut packer = Packer::default();
            let (from_dynamic, from_raw) = (
                packer.pack(&dynamic).expect("packed"),
                packer.pack(&raw).expect("packed"),
            );
            assert_eq!(
                from_raw.decode::<serde_json::Value>().expect("raw decode"),
                from_dynamic
                    .decode::<serde_json::Value>()
                    .expect("dynamic decode")
            );
            assert_eq!(from_raw.annotations(), from_dynamic.annotations());
            assert_eq!(from_raw.labels(), from_dynamic.labels());
            assert_eq!(
                from_raw.large_annotations(),
                from_dynamic.large_annotations()
            );
            assert_eq!(
                from_raw.metadata().owner_references[0].name,
                from_dynamic.metadata().owner_references[0].name
            );
            assert!(!from_raw.json().expect("text").contains("managedFields"));
        }
    }

    #[test]
    fn every_metadata_field_survives_the_thin_metadata() {
        let original: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {
                "name": "web-deployment", "namespace": "default", "uid": "u-2", "resourceVersion": "9",
                "generation": 4, "generateName": "web-", "selfLink": "/apis/x",
                "creationTimestamp": "2026-01-02T03:04:05Z", "deletionTimestamp": "2026-01-02T03:09:05Z",
                "deletionGracePeriodSeconds": 0,
                "finalizers": ["karmada.io/binding-controller"],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                     "uid": "u-1", "controller": true, "blockOwnerDeletion": true}],
                "labels": {"app": "web"}, "annotations": {"note": "n"}
            },
            "spec": {"replicas": 3}
        }))
        .expect("binding");
        for compact in [
            CompactObject::from_dynamic(&original).expect("compact"),
            Packer::default().pack(&original).expect("packed"),
        ] {
            assert_eq!(
                compact.decode::<serde_json::Value>().expect("decode"),
                serde_json::to_value(&original).expect("json")
            );
            let meta = compact.metadata();
            assert_eq!(
                (meta.namespace(), meta.name()),
                (Some("default"), "web-deployment")
            );
            assert_eq!(meta.owner_references[0].name, "web");
            assert_eq!(&*meta.finalizers[0], "karmada.io/binding-controller");
            assert!(meta.deletion_timestamp.is_some());
        }
    }

    #[test]
    fn round_trips_everything_but_managed_fields() {
        let original = work();
        let compact = CompactObject::from_dynamic(&original).expect("compact");
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
        assert_eq!(compact.label("a"), Some("b"));
        assert_eq!(
            compact.full_metadata().labels,
            Some([("a".to_string(), "b".to_string())].into())
        );
    }

    #[test]
    fn an_empty_map_and_no_map_stay_apart() {
        let object: DynamicObject = serde_json::from_value(json!({
            "metadata": {"name": "x", "labels": {}, "annotations": {"note": "kept"}},
        }))
        .expect("object");
        let compact = Packer::default().pack(&object).expect("pack");
        assert!(compact.labels().is_empty());
        assert_eq!(compact.annotation("note"), Some("kept"));
        assert_eq!(
            compact.decode::<serde_json::Value>().expect("decode"),
            json!({"metadata": {"name": "x", "labels": {}, "annotations": {"note": "kept"}}})
        );
        for metadata in [
            json!({"labels": {"a": "b"}}),
            json!({}),
            json!({"annotations": {}}),
        ] {
            let object: DynamicObject =
                serde_json::from_value(json!({"metadata": metadata})).expect("object");
            let compact = Packer::default().pack(&object).expect("pack");
            assert_eq!(
                compact.decode::<serde_json::Value>().expect("decode"),
                json!({"metadata": metadata}),
            );
        }
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

    fn deployment(i: usize) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("web-{i}"), "namespace": "default", "uid": format!("uid-{i:08}"),
                         "resourceVersion": format!("{}", 1000 + i), "labels": {"app": format!("web-{i}")}},
            "spec": {
                "replicas": i % 5,
                "selector": {"matchLabels": {"app": format!("web-{i}")}},
                "template": {"metadata": {"labels": {"app": format!("web-{i}")}},
                             "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                      "imagePullPolicy": "IfNotPresent",
                                                      "terminationMessagePath": "/dev/termination-log",
                                                      "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                                      "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                                      "schedulerName": "default-scheduler"}}
            },
            "status": {"replicas": i % 5, "readyReplicas": i % 5, "observedGeneration": 1,
                       "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}
        }))
        .expect("deployment")
    }

    fn without_managed_fields(object: &DynamicObject) -> serde_json::Value {
        let mut object = object.clone();
        object.metadata.managed_fields = None;
        serde_json::to_value(&object).expect("json")
    }

    #[test]
    fn a_watch_packs_similar_objects_against_earlier_ones() {
        let mut packer = Packer::default();
        let objects: Vec<DynamicObject> = (0..200).map(deployment).collect();
        let packed: Vec<CompactObject> = objects
            .iter()
            .map(|o| packer.pack(o).expect("pack"))
            .collect();
        let alone: usize = objects
            .iter()
            .map(|o| {
                CompactObject::from_dynamic(o)
                    .expect("compact")
                    .packed_len()
            })
            .sum();
        let shared: usize = packed.iter().map(CompactObject::packed_len).sum();
        assert!(
            shared * 4 < alone,
            "{shared} bytes against a dictionary, {alone} alone"
        );
        for (object, compact) in objects.iter().zip(&packed) {
            let back: serde_json::Value = compact.decode().expect("decode");
            assert_eq!(back, without_managed_fields(object));
        }
    }

    /// An object whose body hardly compresses: `len` letters from a seeded generator.
    fn noise(seed: usize, len: usize) -> DynamicObject {
        let mut state = (seed as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let text: String = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "x"}, "data": {"k": text}}))
            .expect("object")
    }

    #[test]
    fn objects_packed_before_the_dictionary_grew_still_decode() {
        let mut packer = Packer::default();
        let first = packer.pack(&deployment(1)).expect("pack");
        let before = packer.dictionary.clone().expect("learned the first body");
        let mut others = vec![(work(), packer.pack(&work()).expect("pack"))];
        let mut seed = 0;
        while packer.dictionary.as_ref().map(|d| d.len()) == Some(before.len()) {
            let object = noise(seed, 1000);
            seed += 1;
            let compact = packer.pack(&object).expect("pack");
            others.push((object, compact));
        }
        assert_eq!(
            first.decode::<serde_json::Value>().expect("decode"),
            without_managed_fields(&deployment(1))
        );
        for (object, compact) in &others {
            assert_eq!(
                compact.decode::<serde_json::Value>().expect("decode"),
                without_managed_fields(object)
            );
        }
    }

    #[test]
    fn small_new_bodies_grow_the_dictionary_in_steps() {
        let mut packer = Packer::default();
        let packed: Vec<CompactObject> = (0..1000)
            .map(|i| packer.pack(&noise(i, 200)).expect("pack"))
            .collect();
        let mut versions: Vec<*const u8> = packed
            .iter()
            .filter_map(|o| o.0.dictionary.as_ref().map(|d| d.as_ptr()))
            .collect();
        versions.sort();
        versions.dedup();
        assert!(
            versions.len() <= DICTIONARY_LIMIT / LEARN_STEP + 1,
            "{} dictionaries alive",
            versions.len()
        );
        for (i, compact) in packed.iter().enumerate().step_by(97) {
            assert_eq!(
                compact.decode::<serde_json::Value>().expect("decode"),
                without_managed_fields(&noise(i, 200))
            );
        }
    }

    #[test]
    fn the_dictionary_stops_growing_at_its_limit() {
        let mut packer = Packer::default();
        for i in 0..200 {
            // Bodies of random letters hardly compress, so each one is learned until the limit.
            let object = noise(i, 2000);
            let compact = packer.pack(&object).expect("pack");
            assert_eq!(
                compact.decode::<serde_json::Value>().expect("decode"),
                without_managed_fields(&object)
            );
        }
        let size = packer.dictionary.as_ref().map_or(0, |d| d.len());
        assert!(
            size <= DICTIONARY_LIMIT && size > DICTIONARY_LIMIT / 2,
            "{size}"
        );
    }

    #[test]
    fn an_object_of_metadata_only_round_trips() {
        let object: DynamicObject =
            serde_json::from_value(json!({"metadata": {"name": "bare"}})).expect("object");
        let compact = Packer::default().pack(&object).expect("pack");
        assert_eq!(
            compact.decode::<serde_json::Value>().expect("decode"),
            without_managed_fields(&object)
        );
    }

    #[test]
    fn large_annotations_stay_only_in_the_body_and_are_fingerprinted() {
        let large = "x".repeat(LARGE_ANNOTATION + 1);
        let with = |value: &str| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "ns", "labels": {"app": "web"},
                             "annotations": {"small": "kept", "big": value}},
                "data": {"k": "v"}
            }))
            .expect("object")
        };
        for pack in [
            |o: &DynamicObject| Packer::default().pack(o),
            |o: &DynamicObject| CompactObject::from_dynamic(o),
        ] {
            let object = with(&large);
            let compact = pack(&object).expect("pack");
            assert_eq!(compact.annotation("small"), Some("kept"));
            assert_eq!(compact.annotation("big"), None, "not kept typed");
            assert_eq!(compact.label("app"), Some("web"));
            let back: serde_json::Value = compact.decode().expect("decode");
            assert_eq!(
                back,
                without_managed_fields(&object),
                "decoding returns it all"
            );
            // A change of the large value alone changes the fingerprint; the same value keeps it.
            let same = pack(&with(&large)).expect("pack");
            let changed = pack(&with(&"y".repeat(LARGE_ANNOTATION + 1))).expect("pack");
            assert!(compact.large_annotations().is_some());
            assert_eq!(compact.large_annotations(), same.large_annotations());
            assert_ne!(compact.large_annotations(), changed.large_annotations());
            // At the limit a value is still kept typed, and the object is split as usual.
            let small = pack(&with(&"z".repeat(LARGE_ANNOTATION))).expect("pack");
            assert_eq!(small.large_annotations(), None);
            assert_eq!(
                small.annotation("big").map(str::len),
                Some(LARGE_ANNOTATION)
            );
            let back: serde_json::Value = small.decode().expect("decode");
            assert_eq!(
                back,
                without_managed_fields(&with(&"z".repeat(LARGE_ANNOTATION)))
            );
        }
    }
}
