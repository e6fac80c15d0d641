//! InterpretStatus (reflect): which part of a member object's status is collected into its Work.
//!
//! Deployment, StatefulSet and DaemonSet keep their replica counters and `observedGeneration`, plus `generation`
//! (the member object's `metadata.generation`) and `resourceTemplateGeneration` (from the
//! `resourcetemplate.karmada.io/generation` annotation) so aggregation can tell whether every member has caught
//! up with the template; a Deployment also keeps its conditions in the short form of
//! [`deployment_conditions::reflected`]. Job keeps its counters, conditions and times; PodDisruptionBudget its health counters;
//! HorizontalPodAutoscaler (autoscaling/v2) its current and desired replicas. A Service reflects its
//! `loadBalancer` only when it is of type LoadBalancer. Other kinds (Ingress, Pod, ReplicaSet, ...) reflect their
//! whole `.status` (the interpreter's default). An object without status reflects nothing.

use serde_json::{Map, Value, json};

use super::deployment_conditions;
use super::{
    DAEMON_SET, DEPLOYMENT, HORIZONTAL_POD_AUTOSCALER, JOB, POD_DISRUPTION_BUDGET, SERVICE,
    STATEFUL_SET, is, kind_of,
};
use crate::value::{int_at, str_at};
use crate::{ANNOTATION_RESOURCE_TEMPLATE_GENERATION, InterpretError};

const DEPLOYMENT_FIELDS: &[&str] = &[
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "observedGeneration",
];
const STATEFUL_SET_FIELDS: &[&str] = &[
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "availableReplicas",
    "observedGeneration",
];
const DAEMON_SET_FIELDS: &[&str] = &[
    "currentNumberScheduled",
    "desiredNumberScheduled",
    "numberAvailable",
    "numberMisscheduled",
    "numberReady",
    "updatedNumberScheduled",
    "numberUnavailable",
    "observedGeneration",
];
const JOB_FIELDS: &[&str] = &[
    "active",
    "succeeded",
    "failed",
    "conditions",
    "startTime",
    "completionTime",
];
const PDB_FIELDS: &[&str] = &[
    "disruptionsAllowed",
    "expectedPods",
    "desiredHealthy",
    "currentHealthy",
    "disruptedPods",
];
const HPA_FIELDS: &[&str] = &["currentReplicas", "desiredReplicas"];

/// The template generation recorded on a member object, if any.
pub(super) fn resource_template_generation(object: &Value) -> Result<Option<i64>, InterpretError> {
    let text = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_RESOURCE_TEMPLATE_GENERATION))
        .and_then(Value::as_str);
    match text {
        None => Ok(None),
        Some(text) => text.parse().map(Some).map_err(|_| {
            InterpretError::invalid(
                object,
                format!("metadata.annotations[{ANNOTATION_RESOURCE_TEMPLATE_GENERATION}]"),
                format!("must be an integer generation, got {text:?}"),
            )
        }),
    }
}

/// The listed status fields of `object`; with `generations`, also its `generation` and the template generation
/// it was rendered from. `None` when the object has no status (not collected yet).
fn picked_status(
    object: &Value,
    fields: &[&str],
    generations: bool,
) -> Result<Option<Value>, InterpretError> {
    let Some(status) = object.get("status").and_then(Value::as_object) else {
        return Ok(None);
    };
    let mut reflected = Map::new();
    for field in fields {
        if let Some(value) = status.get(*field).filter(|v| !v.is_null()) {
            reflected.insert((*field).to_string(), value.clone());
        }
    }
    if generations {
        if let Some(generation) = int_at(object, "/metadata/generation")? {
            reflected.insert("generation".into(), json!(generation));
        }
        if let Some(generation) = resource_template_generation(object)? {
            reflected.insert("resourceTemplateGeneration".into(), json!(generation));
        }
    }
    Ok((!reflected.is_empty()).then_some(Value::Object(reflected)))
}

pub(super) fn reflect_status(object: &Value) -> Result<Option<Value>, InterpretError> {
    let kind = kind_of(object)?;
    if is(&kind, DEPLOYMENT) {
        let mut reflected = picked_status(object, DEPLOYMENT_FIELDS, true)?;
        let conditions = object
            .get("status")
            .and_then(Value::as_object)
            .and_then(deployment_conditions::reflected);
        if let (Some(Value::Object(map)), Some(conditions)) = (reflected.as_mut(), conditions) {
            map.insert("conditions".into(), conditions);
        }
        Ok(reflected)
    } else if is(&kind, STATEFUL_SET) {
        picked_status(object, STATEFUL_SET_FIELDS, true)
    } else if is(&kind, DAEMON_SET) {
        picked_status(object, DAEMON_SET_FIELDS, true)
    } else if is(&kind, JOB) {
        picked_status(object, JOB_FIELDS, false)
    } else if is(&kind, POD_DISRUPTION_BUDGET) {
        picked_status(object, PDB_FIELDS, false)
    } else if is(&kind, HORIZONTAL_POD_AUTOSCALER) {
        picked_status(object, HPA_FIELDS, false)
    } else if is(&kind, SERVICE) {
        if str_at(object, "/spec/type") != "LoadBalancer" {
            return Ok(None);
        }
        picked_status(object, &["loadBalancer"], false)
    } else {
        Ok(object.get("status").filter(|v| !v.is_null()).cloned())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Interpreter;

    #[test]
    fn reflect_table() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "generation": 3, "annotations": {"resourcetemplate.karmada.io/generation": "5"}},
            "status": {"replicas": 4, "readyReplicas": 4, "updatedReplicas": 4, "availableReplicas": 4,
                       "observedGeneration": 3, "conditions": [{"type": "Available"}]}
        });
        let cases = vec![
            (
                deployment,
                Some(
                    json!({"replicas": 4, "readyReplicas": 4, "updatedReplicas": 4, "availableReplicas": 4,
                            "observedGeneration": 3, "generation": 3, "resourceTemplateGeneration": 5}),
                ),
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "generation": 1},
                       "status": {"numberReady": 2, "desiredNumberScheduled": 2, "observedGeneration": 1}}),
                Some(
                    json!({"numberReady": 2, "desiredNumberScheduled": 2, "observedGeneration": 1, "generation": 1}),
                ),
            ),
            (
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"},
                       "status": {"loadBalancer": {}}}),
                None,
            ),
            (
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "LoadBalancer"},
                       "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}),
                Some(json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}})),
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                None,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "new", "generation": 1}}),
                None,
            ),
            (
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                       "status": {"active": 1, "ready": 1, "uncountedTerminatedPods": {}, "startTime": "2026-01-01T00:00:00Z"}}),
                Some(json!({"active": 1, "startTime": "2026-01-01T00:00:00Z"})),
            ),
            (
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
                       "status": {"currentHealthy": 2, "desiredHealthy": 1, "observedGeneration": 4, "conditions": []}}),
                Some(json!({"currentHealthy": 2, "desiredHealthy": 1})),
            ),
            (
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
                       "status": {"currentReplicas": 3, "desiredReplicas": 4, "currentMetrics": []}}),
                Some(json!({"currentReplicas": 3, "desiredReplicas": 4})),
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"}, "status": {"replicas": 1, "conditions": []}}),
                Some(json!({"replicas": 1, "conditions": []})),
            ),
        ];
        let interpreter = Interpreter::native();
        for (object, expected) in cases {
            assert_eq!(
                interpreter.reflect_status(&object).expect("reflectable"),
                expected,
                "{object}"
            );
        }
    }
}
