//! What the scheduler runner writes, decided purely: which cluster changes call for rescheduling, the metric
//! label of a trigger, and the binding writes a scheduling result needs — none when nothing a reader relies on
//! would change.
//!
//! Why skip "no-op" writes: Duplicated and non-workload bindings are scheduled on every event (docs/karmada.md,
//! "Scheduling triggers", step 4); writing a fresh explanation and `lastScheduledTime` each time would turn every
//! cluster heartbeat into a write storm. So a result is written when `spec.clusters`, the applied placement, the
//! Scheduled condition (status, reason, message), the observed generation or affinity name change, or when a reschedule
//! was requested (`lastScheduledTime` must move past `rescheduleTriggeredAt`). The explanation annotation is written
//! with every such write and so always describes the decision in force.

use karmada_scheduler::explain::ANNOTATION_EXPLANATION;
use karmada_scheduler::patch::SchedulingResult;
use karmada_scheduler::trigger::ScheduleTrigger;
use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::cluster::status_controller::ANNOTATION_API_LATENCY;
use crate::runtime::status_write;

/// `schedule_type` label of `karmada_scheduler_schedule_attempts_total` and the e2e histogram. Karmada names
/// two: placement-driven (and every other trigger) is `ReconcileSchedule`, replica changes `ScaleSchedule`.
pub fn schedule_type(trigger: ScheduleTrigger) -> &'static str {
    match trigger {
        ScheduleTrigger::ScaleSchedule => "ScaleSchedule",
        ScheduleTrigger::ReconcileSchedule
        | ScheduleTrigger::FreshSchedule
        | ScheduleTrigger::AlwaysSchedule
        | ScheduleTrigger::ClusterTerminating => "ReconcileSchedule",
    }
}

fn ready_status(status: Option<&Value>) -> Option<&str> {
    status?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?
        .get("status")?
        .as_str()
}

/// Whether a Cluster update can change where bindings go: labels, spec (taints, region, ...), deletion,
/// readiness, API enablements, or the measured API latency when `latency_read` (a plugin in use, such as
/// ClusterLatency, filters and scores by it; the status controller rewrites it only when it moves by half).
/// Resource summaries alone (every status heartbeat) do not requeue. Compared in place (nothing serialized or
/// cloned): every member's status write comes through here.
pub fn cluster_changed(old: &DynamicObject, new: &DynamicObject, latency_read: bool) -> bool {
    old.metadata.labels != new.metadata.labels
        || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || (latency_read && latency(old) != latency(new))
        || old.data.get("spec") != new.data.get("spec")
        || status_field(old, "apiEnablements") != status_field(new, "apiEnablements")
        || ready_status(old.data.get("status")) != ready_status(new.data.get("status"))
}

fn latency(object: &DynamicObject) -> Option<&String> {
    object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_API_LATENCY))
}

fn status_field<'a>(object: &'a DynamicObject, field: &str) -> Option<&'a Value> {
    object
        .data
        .get("status")
        .and_then(|status| status.get(field))
}

/// Whether a Cluster update changed anything the scheduler reads at all (a write that moved only the
/// resourceVersion or managedFields did not: its cluster needs no new snapshot).
pub fn cluster_content_changed(old: &DynamicObject, new: &DynamicObject) -> bool {
    old.data != new.data
        || old.metadata.labels != new.metadata.labels
        || old.metadata.annotations != new.metadata.annotations
        || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || old.metadata.generation != new.metadata.generation
}

/// The writes for one decision.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingWrites {
    /// The binding with annotations and `spec.clusters` changed: replace the object (status is its own write).
    pub object: Option<Value>,
    /// The binding with its new status: replace the status subresource.
    pub status: Option<Value>,
}

fn scheduled_condition(binding: &Value) -> Option<&Value> {
    binding
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Scheduled"))
}

/// `binding` without what changes on every decision (explanation, times).
fn essentials(binding: &Value) -> Value {
    let mut annotations = binding
        .pointer("/metadata/annotations")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(map) = annotations.as_object_mut() {
        map.remove(ANNOTATION_EXPLANATION);
    }
    let condition = scheduled_condition(binding).map(|c| {
        json!({"status": c.get("status"), "reason": c.get("reason"), "message": c.get("message")})
    });
    json!({
        "annotations": annotations,
        "clusters": binding.pointer("/spec/clusters").cloned().unwrap_or_else(|| json!([])),
        "condition": condition,
        "observedGeneration": binding.pointer("/status/schedulerObservedGeneration"),
        "affinity": binding.pointer("/status/schedulerObservingAffinityName"),
    })
}

/// The writes `result` needs on `current`; `force` writes even when only times would change.
pub fn binding_writes(current: &Value, result: &SchedulingResult, force: bool) -> BindingWrites {
    let mut next = current.clone();
    result.apply_to(&mut next);
    // lastTransitionTime moves only when the condition's status does.
    if let (Some(old), Some(conditions)) = (
        scheduled_condition(current),
        next.pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut),
    ) && let Some(new) = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Scheduled"))
        && old.get("status") == new.get("status")
    {
        match old.get("lastTransitionTime") {
            Some(time) => new["lastTransitionTime"] = time.clone(),
            None => {
                if let Some(map) = new.as_object_mut() {
                    map.remove("lastTransitionTime");
                }
            }
        }
    }
    let (before, after) = (essentials(current), essentials(&next));
    let spec_changed =
        before["annotations"] != after["annotations"] || before["clusters"] != after["clusters"];
    let status_changed = force || spec_changed || before != after;
    BindingWrites {
        object: spec_changed.then(|| next.clone()),
        status: status_changed.then_some(next),
    }
}

/// The spec write as Karmada sends it ([`SchedulingResult::spec_merge_patch`]), made conditional on
/// `resource_version` (the version read).
pub fn spec_patch(result: &SchedulingResult, resource_version: &str) -> Value {
    let mut patch = result.spec_merge_patch();
    patch["metadata"]["resourceVersion"] = Value::String(resource_version.to_string());
    patch
}

/// The status fields a decision sets.
const DECIDED_STATUS: [&str; 4] = [
    "conditions",
    "schedulerObservedGeneration",
    "lastScheduledTime",
    "schedulerObservingAffinityName",
];

/// The status write as a JSON merge patch of what `desired` decided, conditional on `resource_version` (what
/// the spec write returned, else the version read). A scheduled decision observes `written_generation`, the
/// generation the spec write produced. A decided field `desired` lacks is removed, except the observed
/// generation and the schedule time, which a failed decision leaves as they were.
pub fn status_patch(
    desired: &Value,
    written_generation: Option<i64>,
    resource_version: &str,
) -> Value {
    let mut status = serde_json::Map::new();
    for field in DECIDED_STATUS {
        match desired.pointer(&format!("/status/{field}")) {
            Some(value) => {
                status.insert(field.to_string(), value.clone());
            }
            None if field == "schedulerObservingAffinityName" || field == "conditions" => {
                status.insert(field.to_string(), Value::Null);
            }
            None => {}
        }
    }
    let scheduled = scheduled_condition(desired)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True");
    if scheduled && let Some(generation) = written_generation {
        status.insert("schedulerObservedGeneration".into(), json!(generation));
    }
    status_write::status_patch(Value::Object(status), Some(resource_version))
}

/// A merge patch moving only `status.schedulerObservedGeneration` to the binding's `generation` (docs/karmada.md,
/// "Scheduling triggers", step 6), conditional on the version read; `None` when it is already there.
pub fn observed_generation_write(
    generation: Option<i64>,
    observed: Option<i64>,
    resource_version: &str,
) -> Option<Value> {
    let generation = generation?;
    if observed == Some(generation) {
        return None;
    }
    Some(status_write::status_patch(
        json!({"schedulerObservedGeneration": generation}),
        Some(resource_version),
    ))
}

/// A Scheduled=False/SchedulerError result for input the scheduler cannot read (e.g. a malformed placement).
pub fn scheduler_error(message: &str, now: &str) -> SchedulingResult {
    SchedulingResult {
        clusters: None,
        annotations: Vec::new(),
        condition: json!({
            "type": "Scheduled",
            "status": "False",
            "reason": karmada_scheduler::scheduler::REASON_SCHEDULER_ERROR,
            "message": message,
            "lastTransitionTime": now,
        }),
        observed_generation: None,
        last_scheduled_time: None,
        affinity_name: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        clusters: Option<Value>,
        status: &str,
        reason: &str,
        message: &str,
    ) -> SchedulingResult {
        SchedulingResult {
            clusters: clusters.and_then(|c| c.as_array().cloned()),
            annotations: vec![
                (
                    ANNOTATION_EXPLANATION.to_string(),
                    format!("{{\"at\":\"{message}\"}}"),
                ),
                (
                    "policy.karmada.io/applied-placement".to_string(),
                    "{}".to_string(),
                ),
            ],
            condition: json!({"type": "Scheduled", "status": status, "reason": reason, "message": message,
                              "lastTransitionTime": "2026-11-29T10:00:00Z"}),
            observed_generation: (status == "True").then_some(2),
            last_scheduled_time: (status == "True").then(|| "2026-11-29T10:00:00Z".to_string()),
            affinity_name: None,
        }
    }

    /// RFC 7386 JSON merge patch, as the API server applies it.
    fn merge(target: &mut Value, patch: &Value) {
        let Some(fields) = patch.as_object() else {
            *target = patch.clone();
            return;
        };
        if !target.is_object() {
            *target = json!({});
        }
        for (key, value) in fields {
            if value.is_null() {
                target.as_object_mut().map(|map| map.remove(key));
            } else {
                merge(&mut target[key.as_str()], value);
            }
        }
    }

    fn scheduled_binding() -> Value {
        json!({
            "metadata": {"name": "web-deployment", "generation": 2,
                         "annotations": {"policy.karmada.io/applied-placement": "{}",
                                         ANNOTATION_EXPLANATION: "{\"at\":\"old\"}"}},
            "spec": {"replicas": 6, "clusters": [{"name": "a", "replicas": 4}, {"name": "b", "replicas": 2}]},
            "status": {"schedulerObservedGeneration": 2, "lastScheduledTime": "2026-11-29T09:00:00Z",
                       "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success", "message": "ok",
                                       "lastTransitionTime": "2026-11-29T09:00:00Z"}]}
        })
    }

    #[test]
    fn writes_table() {
        let same = json!([{"name": "a", "replicas": 4}, {"name": "b", "replicas": 2}]);
        let moved = json!([{"name": "a", "replicas": 3}, {"name": "b", "replicas": 3}]);
        // (case, result, force, expect object write, expect status write)
        let cases = [
            (
                "same decision: nothing",
                result(Some(same.clone()), "True", "Success", "ok"),
                false,
                false,
                false,
            ),
            (
                "same decision, reschedule requested",
                result(Some(same.clone()), "True", "Success", "ok"),
                true,
                false,
                true,
            ),
            (
                "new placement of replicas",
                result(Some(moved), "True", "Success", "ok"),
                false,
                true,
                true,
            ),
            (
                "failure keeps clusters, changes condition",
                result(None, "False", "Unschedulable", "no room"),
                false,
                false,
                true,
            ),
            (
                "NoClusterFit clears clusters",
                result(Some(json!([])), "False", "NoClusterFit", "0/2"),
                false,
                true,
                true,
            ),
        ];
        for (name, result, force, object, status) in cases {
            let writes = binding_writes(&scheduled_binding(), &result, force);
            assert_eq!(writes.object.is_some(), object, "{name}");
            assert_eq!(writes.status.is_some(), status, "{name}");
        }
    }

    #[test]
    fn transition_time_moves_only_with_the_condition_status() {
        let binding = scheduled_binding();
        let same_status = binding_writes(
            &binding,
            &result(None, "True", "Success", "new message"),
            false,
        );
        let status = same_status.status.expect("message changed");
        assert_eq!(
            status["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-29T09:00:00Z"
        );
        let flipped = binding_writes(
            &binding,
            &result(None, "False", "Unschedulable", "no room"),
            false,
        );
        let status = flipped.status.expect("status changed");
        assert_eq!(
            status["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-29T10:00:00Z"
        );
        assert_eq!(status["status"]["conditions"][0]["reason"], "Unschedulable");
    }

    #[test]
    fn status_follows_the_generation_of_the_spec_write() {
        let decided = result(
            Some(json!([{"name": "a", "replicas": 6}])),
            "True",
            "Success",
            "ok",
        );
        let desired = binding_writes(&scheduled_binding(), &decided, false);
        let object = desired.object.expect("spec changes");
        let spec = spec_patch(&decided, "41");
        assert_eq!(spec["metadata"]["resourceVersion"], "41");
        assert_eq!(
            spec["spec"]["clusters"],
            json!([{"name": "a", "replicas": 6}])
        );
        assert_eq!(
            spec["metadata"]["annotations"]["policy.karmada.io/applied-placement"],
            "{}"
        );
        assert!(spec.get("status").is_none());
        let status = status_patch(&desired.status.expect("status"), Some(3), "42");
        assert_eq!(status["status"]["schedulerObservedGeneration"], 3);
        assert_eq!(status["metadata"]["resourceVersion"], "42");
        assert_eq!(
            status["status"]["lastScheduledTime"],
            "2026-11-29T10:00:00Z"
        );
        assert_eq!(
            status["status"]["schedulerObservingAffinityName"],
            Value::Null
        );
        assert!(status.get("spec").is_none());
        // Applying both patches to the binding read gives what the decision wanted.
        let mut applied = scheduled_binding();
        merge(&mut applied, &spec);
        merge(&mut applied, &status);
        assert_eq!(applied["spec"]["clusters"], object["spec"]["clusters"]);
        assert_eq!(
            applied["status"]["conditions"],
            object["status"]["conditions"]
        );
    }

    #[test]
    fn a_failed_decision_keeps_the_placement_and_its_generation() {
        let failed = result(None, "False", "NoClusterFit", "0/2 clusters are available");
        let writes = binding_writes(&scheduled_binding(), &failed, false);
        let spec = spec_patch(&failed, "7");
        assert!(
            spec.get("spec").is_none(),
            "no placement, no clusters: {spec}"
        );
        let status = status_patch(&writes.status.expect("status"), Some(9), "7");
        // Not scheduled: the generation observed stays the one of the last placement.
        assert_eq!(status["status"]["schedulerObservedGeneration"], 2);
        assert_eq!(status["status"]["conditions"][0]["status"], "False");
    }

    #[test]
    fn observed_generation_catches_up() {
        assert_eq!(observed_generation_write(Some(2), Some(2), "11"), None);
        assert_eq!(observed_generation_write(None, Some(2), "11"), None);
        for observed in [Some(2), None] {
            assert_eq!(
                observed_generation_write(Some(5), observed, "12"),
                Some(json!({"metadata": {"resourceVersion": "12"},
                            "status": {"schedulerObservedGeneration": 5}}))
            );
        }
    }

    #[test]
    fn a_cluster_write_that_moves_only_its_version_changes_nothing_read() {
        let cluster =
            |value: Value| -> DynamicObject { serde_json::from_value(value).expect("cluster") };
        let at = |version: &str, cpu: &str| {
            cluster(json!({
                "metadata": {"name": "a", "resourceVersion": version, "labels": {"region": "eu"},
                             "managedFields": [{"manager": "status", "operation": "Update",
                                                "time": format!("2026-01-01T00:00:0{version}Z")}]},
                "spec": {"taints": []},
                "status": {"resourceSummary": {"allocatable": {"cpu": cpu}}}
            }))
        };
        assert!(!cluster_content_changed(&at("1", "4"), &at("2", "4")));
        assert!(cluster_content_changed(&at("1", "4"), &at("2", "8")));
        assert!(
            !cluster_changed(&at("1", "4"), &at("2", "8"), true),
            "a summary is re-read, nothing requeued"
        );
    }

    #[test]
    fn cluster_changes_that_requeue() {
        let base = json!({
            "metadata": {"name": "a", "labels": {"region": "eu"}},
            "spec": {"taints": []},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"}],
                       "resourceSummary": {"allocatable": {"cpu": "4"}}}
        });
        let with = |pointer: &str, value: Value| {
            let mut cluster = base.clone();
            if let Some(slot) = cluster.pointer_mut(pointer) {
                *slot = value;
            }
            cluster
        };
        let cases = [
            (
                "heartbeat",
                with("/status/conditions/0/lastHeartbeatTime", json!("t2")),
                false,
            ),
            (
                "resource summary",
                with(
                    "/status/resourceSummary",
                    json!({"allocatable": {"cpu": "8"}}),
                ),
                false,
            ),
            (
                "labels",
                with("/metadata/labels", json!({"region": "us"})),
                true,
            ),
            (
                "taints",
                with(
                    "/spec/taints",
                    json!([{"key": "k", "effect": "NoSchedule"}]),
                ),
                true,
            ),
            (
                "not ready",
                with("/status/conditions/0/status", json!("False")),
                true,
            ),
        ];
        let object = |value: &Value| -> DynamicObject {
            serde_json::from_value(value.clone()).expect("cluster")
        };
        for (name, new, expected) in cases {
            for latency_read in [false, true] {
                assert_eq!(
                    cluster_changed(&object(&base), &object(&new), latency_read),
                    expected,
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn a_latency_change_requeues_only_when_a_plugin_reads_it() {
        let at = |latency: &str| -> DynamicObject {
            serde_json::from_value(json!({
                "metadata": {"name": "a", "annotations": {ANNOTATION_API_LATENCY: latency}},
                "spec": {},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}
            }))
            .expect("cluster")
        };
        assert!(cluster_changed(&at("3ms"), &at("40ms"), true));
        assert!(
            !cluster_changed(&at("3ms"), &at("40ms"), false),
            "no framework in use reads the latency: nothing to requeue"
        );
    }

    #[test]
    fn schedule_types_are_karmadas() {
        assert_eq!(
            schedule_type(ScheduleTrigger::ScaleSchedule),
            "ScaleSchedule"
        );
        for trigger in [
            ScheduleTrigger::ReconcileSchedule,
            ScheduleTrigger::FreshSchedule,
            ScheduleTrigger::AlwaysSchedule,
            ScheduleTrigger::ClusterTerminating,
        ] {
            assert_eq!(schedule_type(trigger), "ReconcileSchedule");
        }
    }
}
