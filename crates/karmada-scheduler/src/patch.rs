//! What a scheduling decision writes to its binding (docs/karmada.md, "Scheduling triggers"): `spec.clusters`, the
//! applied-placement and explanation annotations, and in status the Scheduled condition — plus, only when
//! scheduled, `schedulerObservedGeneration` and `lastScheduledTime` — and `schedulerObservingAffinityName`.
//!
//! Invariants: NoClusterFit clears `spec.clusters` (Karmada patches the empty result); other failures leave it
//! untouched; the Scheduled condition replaces any previous one and other conditions are kept. Used by
//! [`mod@crate::plan`] and meant for the live runner, which sends [`SchedulingResult::merge_patches`].

use karmada_api::Placement;
use serde_json::{Value, json};

use crate::error::InputError;
use crate::explain::ANNOTATION_EXPLANATION;
use crate::plan::ANNOTATION_APPLIED_PLACEMENT;
use crate::scheduler::{REASON_NO_CLUSTER_FIT, ScheduleOutcome};

/// The changes one decision makes to its binding.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulingResult {
    /// The new `spec.clusters`; `None` leaves it as it is.
    pub clusters: Option<Vec<Value>>,
    /// Annotations to set (applied placement, explanation).
    pub annotations: Vec<(String, String)>,
    /// The Scheduled condition.
    pub condition: Value,
    /// `status.schedulerObservedGeneration`, set only when scheduled.
    pub observed_generation: Option<i64>,
    /// `status.lastScheduledTime`, set only when scheduled and a time was given.
    pub last_scheduled_time: Option<String>,
    /// `status.schedulerObservingAffinityName` (`None` removes it).
    pub affinity_name: Option<String>,
}

/// Turns a decision into binding changes. `generation` is the binding's `metadata.generation`; `now` an RFC 3339
/// time for the condition and `lastScheduledTime`.
pub fn scheduling_result(
    outcome: &ScheduleOutcome,
    placement: Option<&Placement>,
    generation: Option<i64>,
    now: Option<&str>,
) -> Result<SchedulingResult, InputError> {
    let explanation = &outcome.explanation;
    let clusters = match &outcome.result {
        Ok(result) => Some(
            result
                .iter()
                .map(|target| {
                    if target.replicas > 0 {
                        json!({"name": target.name, "replicas": target.replicas})
                    } else {
                        json!({"name": target.name})
                    }
                })
                .collect(),
        ),
        Err(failure) if failure.reason == REASON_NO_CLUSTER_FIT => Some(Vec::new()),
        Err(_) => None,
    };
    let mut annotations = vec![(
        ANNOTATION_EXPLANATION.to_string(),
        explanation
            .to_annotation()
            .map_err(|e| InputError::new("explanation", e.to_string()))?,
    )];
    if let Some(placement) = placement {
        let applied = serde_json::to_string(placement)
            .map_err(|e| InputError::new("placement", e.to_string()))?;
        annotations.push((ANNOTATION_APPLIED_PLACEMENT.to_string(), applied));
    }
    let message = if explanation.scheduled {
        format!("{} {}", explanation.message, explanation.summary())
    } else {
        explanation.message.clone()
    };
    let mut condition = json!({
        "type": "Scheduled",
        "status": if explanation.scheduled { "True" } else { "False" },
        "reason": explanation.reason,
        "message": message,
    });
    if let Some(now) = now {
        condition["lastTransitionTime"] = Value::String(now.to_string());
    }
    Ok(SchedulingResult {
        clusters,
        annotations,
        condition,
        observed_generation: generation.filter(|_| explanation.scheduled),
        last_scheduled_time: now.filter(|_| explanation.scheduled).map(str::to_string),
        affinity_name: outcome.affinity_name.clone(),
    })
}

fn with_condition(existing: &[Value], condition: &Value) -> Value {
    let mut conditions: Vec<Value> = existing
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some("Scheduled"))
        .cloned()
        .collect();
    conditions.insert(0, condition.clone());
    Value::Array(conditions)
}

impl SchedulingResult {
    /// Applies the changes to a binding object in place.
    pub fn apply_to(&self, binding: &mut Value) {
        if !binding.is_object() {
            *binding = json!({});
        }
        if !binding["metadata"]["annotations"].is_object() {
            binding["metadata"]["annotations"] = json!({});
        }
        for (key, value) in &self.annotations {
            binding["metadata"]["annotations"][key] = Value::String(value.clone());
        }
        if let Some(clusters) = &self.clusters {
            binding["spec"]["clusters"] = Value::Array(clusters.clone());
        }
        if !binding["status"].is_object() {
            binding["status"] = json!({});
        }
        let existing = binding["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let status = &mut binding["status"];
        status["conditions"] = with_condition(&existing, &self.condition);
        if let Some(generation) = self.observed_generation {
            status["schedulerObservedGeneration"] = json!(generation);
        }
        if let Some(time) = &self.last_scheduled_time {
            status["lastScheduledTime"] = Value::String(time.clone());
        }
        match &self.affinity_name {
            Some(name) => status["schedulerObservingAffinityName"] = Value::String(name.clone()),
            None => {
                if let Some(object) = status.as_object_mut() {
                    object.remove("schedulerObservingAffinityName");
                }
            }
        }
    }

    /// The first of Karmada's two merge patches: the annotations and, when placed, `spec.clusters`.
    pub fn spec_merge_patch(&self) -> Value {
        let annotations: serde_json::Map<String, Value> = self
            .annotations
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let mut binding = json!({"metadata": {"annotations": annotations}});
        if let Some(clusters) = &self.clusters {
            binding["spec"] = json!({"clusters": clusters});
        }
        binding
    }

    /// Karmada's two JSON merge patches: first metadata annotations and `spec.clusters`, then status.
    /// `existing_conditions` are the binding's current status conditions (merge patch replaces lists).
    pub fn merge_patches(&self, existing_conditions: &[Value]) -> (Value, Value) {
        let binding = self.spec_merge_patch();
        let mut status = json!({
            "conditions": with_condition(existing_conditions, &self.condition),
            "schedulerObservingAffinityName": self.affinity_name,
        });
        if let Some(generation) = self.observed_generation {
            status["schedulerObservedGeneration"] = json!(generation);
        }
        if let Some(time) = &self.last_scheduled_time {
            status["lastScheduledTime"] = Value::String(time.clone());
        }
        (binding, json!({"status": status}))
    }
}
