//! What the work status controller keeps of a member object: who owns it and what the interpreter reads from it.
//!
//! Why: in Push mode the controller-manager watches every propagated object in every member, one per workload
//! and member, and a Work's status needs only two things from each — the status the interpreter reflects and
//! the health it interprets. Keeping the whole object (pod template, labels, member-side fields) made the member
//! caches the largest part of the controller-manager's heap per workload. The interpreter is fixed when the
//! controller starts, so its answers are computed when the watch delivers the object and cached instead of it;
//! the object itself passes on to the drift check and is then dropped.

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::work::ResourceHealth;
use karmada_interpreter::Interpreter;
use kube::api::{DynamicObject, TypeMeta};
use kube::runtime::watcher::Event;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::keys::{ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE};
use crate::runtime::compact::Packer;
use crate::runtime::{CacheWriter, CompactObject, ControllerError};

/// The interpreter's view of one member object, as cached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    pub health: ResourceHealth,
    /// Why the status could not be reflected (the Work gets an Event saying so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflect_error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Body {
    observed: Observed,
}

impl Observed {
    /// What `interpreter` reads from `object` (the member object as JSON).
    pub fn of(interpreter: &Interpreter, object: &Value) -> Self {
        let (status, reflect_error) = match interpreter.reflect_status(object) {
            Ok(status) => (status, None),
            Err(err) => (None, Some(err.to_string())),
        };
        Self {
            status,
            health: interpreter.interpret_health(object),
            reflect_error,
        }
    }

    /// The observation a cached member object holds.
    pub fn cached(object: &CompactObject) -> Result<Self, ControllerError> {
        Ok(object.decode::<Body>()?.observed)
    }
}

/// The object cached for a member object of `types` and `metadata`: its identity, the annotations naming its
/// Work, and `observed`.
fn observation(
    types: Option<TypeMeta>,
    metadata: &ObjectMeta,
    observed: Observed,
    shape: Option<u64>,
) -> Result<DynamicObject, ControllerError> {
    let kept = [ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE];
    let mut annotations: std::collections::BTreeMap<String, String> = metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(key, _)| kept.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if let Some(shape) = shape {
        annotations.insert(SHAPE_ANNOTATION.to_string(), format!("{shape:x}"));
    }
    Ok(DynamicObject {
        types,
        metadata: ObjectMeta {
            name: metadata.name.clone(),
            namespace: metadata.namespace.clone(),
            uid: metadata.uid.clone(),
            resource_version: metadata.resource_version.clone(),
            generation: metadata.generation,
            deletion_timestamp: metadata.deletion_timestamp.clone(),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..ObjectMeta::default()
        },
        data: serde_json::to_value(Body { observed })?,
    })
}

/// `object` as JSON, its body moved rather than copied (a member event's spec and status are most of it).
fn into_json(
    types: Option<&TypeMeta>,
    metadata: &ObjectMeta,
    data: Value,
) -> Result<Value, ControllerError> {
    let mut map = match data {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        other => return Ok(other),
    };
    if let Some(types) = types {
        map.insert(
            "apiVersion".into(),
            Value::String(types.api_version.clone()),
        );
        map.insert("kind".into(), Value::String(types.kind.clone()));
    }
    map.insert("metadata".into(), serde_json::to_value(metadata)?);
    Ok(Value::Object(map))
}

/// Cached with an observation only (never written anywhere): the [`shape`] of the object it was made from.
const SHAPE_ANNOTATION: &str = "karmada-rs.io/observed-shape";

/// One member object event as passed on: the object (as JSON), and whether it may have drifted since the
/// previous event of the same object.
#[derive(Debug)]
pub struct MemberEvent {
    pub event: Event<Value>,
    /// False only for an update whose [`shape`] equals the previous event's: a status-only change, which
    /// cannot make the object differ from its manifest where it did not before.
    pub may_have_drifted: bool,
}

/// What of a member object a change outside its status would move: its uid, its generation (which the member's
/// API server bumps on every change outside `metadata` and `status`), and its metadata but the fields every
/// write moves (resourceVersion, managedFields). `None` for an object without a generation (a ConfigMap's
/// data changes leave no trace in its metadata), which is then always checked.
fn shape(metadata: &mut ObjectMeta) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let generation = metadata.generation?;
    let mut hasher = std::hash::DefaultHasher::new();
    generation.hash(&mut hasher);
    // The moving fields are taken out for the hash and put back, not copied around: this runs on every member
    // event, and managedFields can be most of the metadata.
    let resource_version = metadata.resource_version.take();
    let managed_fields = metadata.managed_fields.take();
    // Serialized, not hashed field by field, so a field added to ObjectMeta is covered too.
    let text = serde_json::to_string(&*metadata).ok();
    metadata.resource_version = resource_version;
    metadata.managed_fields = managed_fields;
    text?.hash(&mut hasher);
    Some(hasher.finish())
}

/// The watch of one member resource: `writer`'s cache gets each object's observation, and the stream yields
/// the objects themselves (as JSON) for whatever else reacts to them, each marked with whether it may have
/// drifted.
pub fn reflect_observations(
    events: impl Stream<Item = Event<DynamicObject>> + Send,
    mut writer: CacheWriter,
    interpreter: Interpreter,
) -> impl Stream<Item = MemberEvent> + Send {
    let mut packer = Packer::default();
    let cache = writer.as_reader();
    events.filter_map(move |event| {
        let passed = match observe(&interpreter, &cache, event) {
            Ok((cached, passed)) => {
                match packer.event(cached) {
                    Ok(cached) => writer.apply_watcher_event(&cached),
                    Err(err) => tracing::warn!(%err, "member object not cached"),
                }
                Some(passed)
            }
            Err(err) => {
                tracing::warn!(%err, "member object not cached");
                None
            }
        };
        std::future::ready(passed)
    })
}

/// The event for the cache and the event passed on, for one watch event; `cache` holds the observation of the
/// object's previous event.
fn observe(
    interpreter: &Interpreter,
    cache: &crate::runtime::Cache,
    event: Event<DynamicObject>,
) -> Result<(Event<DynamicObject>, MemberEvent), ControllerError> {
    let both = |object: DynamicObject| -> Result<(DynamicObject, Value, bool), ControllerError> {
        let DynamicObject {
            types,
            mut metadata,
            data,
        } = object;
        let shape = shape(&mut metadata);
        let previous = cache
            .get_named(
                metadata.namespace.as_deref(),
                metadata.name.as_deref().unwrap_or_default(),
            )
            .and_then(|cached| cached.annotation(SHAPE_ANNOTATION).map(str::to_string));
        let unchanged = shape.is_some_and(|s| previous == Some(format!("{s:x}")));
        let json = into_json(types.as_ref(), &metadata, data)?;
        let observed = Observed::of(interpreter, &json);
        Ok((
            observation(types, &metadata, observed, shape)?,
            json,
            !unchanged,
        ))
    };
    let passed = |event: Event<Value>, may_have_drifted: bool| MemberEvent {
        event,
        may_have_drifted,
    };
    Ok(match event {
        Event::Apply(o) => {
            let (cached, json, changed) = both(o)?;
            (Event::Apply(cached), passed(Event::Apply(json), changed))
        }
        Event::InitApply(o) => {
            // A relist: what happened between the watches is unknown.
            let (cached, json, _) = both(o)?;
            (
                Event::InitApply(cached),
                passed(Event::InitApply(json), true),
            )
        }
        Event::Delete(o) => {
            let (cached, json, _) = both(o)?;
            (Event::Delete(cached), passed(Event::Delete(json), true))
        }
        Event::Init => (Event::Init, passed(Event::Init, true)),
        Event::InitDone => (Event::InitDone, passed(Event::InitDone, true)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(ready: i64) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "web", "namespace": "default", "resourceVersion": "7", "generation": 2,
                "labels": {"app": "web", "karmada.io/managed": "true"},
                "annotations": {
                    ANNOTATION_WORK_NAME: "web-deployment", ANNOTATION_WORK_NAMESPACE: "karmada-es-m1",
                    "other": "x"
                }
            },
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                       "readyReplicas": ready, "availableReplicas": ready}
        }))
        .expect("deployment")
    }

    #[tokio::test]
    async fn the_cache_holds_what_the_interpreter_reads_and_the_stream_the_object() {
        let interpreter = Interpreter::native();
        let writer = CacheWriter::new();
        let cache = writer.as_reader();
        let events = futures::stream::iter([
            Event::Init,
            Event::InitApply(deployment(1)),
            Event::InitDone,
            Event::Apply(deployment(2)),
        ]);
        let passed: Vec<Event<Value>> = reflect_observations(events, writer, interpreter.clone())
            .map(|passed| passed.event)
            .collect()
            .await;
        assert_eq!(passed.len(), 4);
        let Event::Apply(last) = &passed[3] else {
            panic!("the object passes on: {passed:?}");
        };
        assert_eq!(
            last["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx"
        );
        assert_eq!(
            last,
            &serde_json::to_value(deployment(2)).expect("json"),
            "the object passes on as the watch read it"
        );

        let cached = cache.get_named(Some("default"), "web").expect("cached");
        assert_eq!(
            cached.annotation(ANNOTATION_WORK_NAME),
            Some("web-deployment")
        );
        assert_eq!(cached.annotation("other"), None);
        let expected = Observed::of(
            &interpreter,
            &serde_json::to_value(deployment(2)).expect("json"),
        );
        assert_eq!(Observed::cached(&cached).expect("observed"), expected);
        assert_eq!(
            expected.status.as_ref().expect("status")["readyReplicas"],
            2
        );
        let text = cached.json().expect("json");
        assert!(
            !text.contains("nginx"),
            "the pod template is not kept: {text}"
        );
    }

    #[tokio::test]
    async fn a_deleted_object_leaves_the_cache_and_still_passes_on() {
        let writer = CacheWriter::new();
        let cache = writer.as_reader();
        let events =
            futures::stream::iter([Event::Apply(deployment(2)), Event::Delete(deployment(2))]);
        let passed: Vec<Event<Value>> = reflect_observations(events, writer, Interpreter::native())
            .map(|passed| passed.event)
            .collect()
            .await;
        assert!(matches!(passed[1], Event::Delete(_)));
        assert!(cache.get_named(Some("default"), "web").is_none());
    }

    /// `deployment(ready)` with `edit` applied to its JSON.
    fn edited(ready: i64, edit: impl FnOnce(&mut Value)) -> DynamicObject {
        let mut json = serde_json::to_value(deployment(ready)).expect("json");
        edit(&mut json);
        serde_json::from_value(json).expect("deployment")
    }

    async fn drift_marks(events: Vec<Event<DynamicObject>>) -> Vec<bool> {
        let writer = CacheWriter::new();
        reflect_observations(futures::stream::iter(events), writer, Interpreter::native())
            .map(|passed| passed.may_have_drifted)
            .collect()
            .await
    }

    #[tokio::test]
    async fn only_a_status_update_is_passed_as_unable_to_drift() {
        let marks = drift_marks(vec![
            Event::Apply(deployment(1)),
            // Status only, with the resourceVersion and managedFields every write moves.
            Event::Apply(edited(2, |o| {
                o["metadata"]["resourceVersion"] = json!("8");
                o["metadata"]["managedFields"] = json!([{"manager": "sim", "operation": "Update"}]);
            })),
            // A spec change: the member bumps the generation.
            Event::Apply(edited(2, |o| {
                o["metadata"]["generation"] = json!(3);
                o["spec"]["replicas"] = json!(5);
            })),
            // A label edited: same generation, different metadata.
            Event::Apply(edited(2, |o| {
                o["metadata"]["generation"] = json!(3);
                o["spec"]["replicas"] = json!(5);
                o["metadata"]["labels"]["app"] = json!("other");
            })),
            Event::Apply(edited(3, |o| {
                o["metadata"]["generation"] = json!(3);
                o["spec"]["replicas"] = json!(5);
                o["metadata"]["labels"]["app"] = json!("other");
            })),
            Event::Delete(deployment(3)),
        ])
        .await;
        assert_eq!(marks, [true, false, true, true, false, true]);
    }

    #[tokio::test]
    async fn an_object_without_a_generation_and_a_relist_are_always_checked() {
        let config_map = |value: &str| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": "default", "resourceVersion": "3"},
                "data": {"k": value},
            }))
            .expect("config map")
        };
        let marks = drift_marks(vec![
            Event::Apply(config_map("a")),
            Event::Apply(config_map("b")),
            Event::Init,
            Event::InitApply(deployment(1)),
            Event::InitApply(deployment(1)),
            Event::InitDone,
        ])
        .await;
        assert!(marks.iter().all(|m| *m), "{marks:?}");
    }
}
