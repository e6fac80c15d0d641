//! `plan`: the what-if behind `karmadactl plan`. From parsed YAML documents (a workload, the policy that claims
//! it, Cluster objects, optionally the current ResourceBinding and SchedulerProfiles) to the ResourceBinding
//! (work.karmada.io/v1alpha2) the scheduler would produce, with its explanation and a readable rendering.
//!
//! Invariants: pure (the time comes in as an argument); bad input is an [`InputError`] saying what is accepted;
//! an infeasible request is a [`Plan`] with `scheduled == false`, a Scheduled=False condition and its reason.
//! Normalisations applied to the policy are listed in [`Plan::notes`] (e.g. the seed's `spreadByField: Cluster`
//! read as Karmada's lower-case `cluster`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::{Cluster, Placement, ResourceBindingSpec};
use serde_json::{Value, json};

use crate::custom::clusterlatency::ClusterLatency;
use crate::error::InputError;
use crate::explain::Explanation;
use crate::framework::{
    DEFAULT_SCHEDULER_NAME, Framework, PluginSelection, Registry, SchedulerProfile,
};
use crate::patch::scheduling_result;
use crate::placement::prepare;
use crate::scheduler::{ScheduleRequest, schedule};
use crate::snapshot::ClusterSnapshot;
use crate::workload::interpret;

/// Annotation Karmada stores the applied placement in.
pub const ANNOTATION_APPLIED_PLACEMENT: &str = "policy.karmada.io/applied-placement";

/// The documents a plan reads.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    pub workload: &'a Value,
    /// A PropagationPolicy or ClusterPropagationPolicy.
    pub policy: &'a Value,
    pub clusters: &'a [Value],
    /// The workload's current ResourceBinding: its `spec.clusters` is the previous assignment.
    pub binding: Option<&'a Value>,
    /// SchedulerProfiles; the one named like the policy's `schedulerName` is used.
    pub profiles: &'a [Value],
    /// RFC 3339 time for `lastTransitionTime` and `lastScheduledTime`; `None` leaves them out.
    pub now: Option<&'a str>,
    /// The scheduler's `--plugins` (`None`: `*`).
    pub plugins: Option<&'a PluginSelection>,
}

/// The scheduler's answer for one workload.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The ResourceBinding the scheduler would write.
    pub binding: Value,
    pub explanation: Explanation,
    pub scheduled: bool,
    /// Normalisations applied to the input.
    pub notes: Vec<String>,
}

/// The registry `plan` uses: the in-tree plugins plus the ClusterLatency example.
pub fn default_registry() -> Result<Registry, InputError> {
    let mut registry = Registry::in_tree()?;
    ClusterLatency::register(&mut registry)?;
    Ok(registry)
}

/// Plans with [`default_registry`].
pub fn plan(input: &PlanInput<'_>) -> Result<Plan, InputError> {
    plan_with(input, &default_registry()?)
}

fn object_label(object: &Value) -> String {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Lower-cases `spreadByField` values (the seed writes `Cluster`), recording what changed.
fn normalise_placement(placement: &mut Value, notes: &mut Vec<String>) {
    let Some(constraints) = placement
        .get_mut("spreadConstraints")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for constraint in constraints {
        if let Some(Value::String(field)) = constraint.get_mut("spreadByField") {
            let lower = field.to_lowercase();
            if *field != lower
                && ["cluster", "region", "zone", "provider"].contains(&lower.as_str())
            {
                notes.push(format!(
                    "spreadByField {field:?} read as {lower:?} (Karmada's values are lower-case)"
                ));
                *field = lower;
            }
        }
    }
}

fn time(value: Option<&Value>, at: &str) -> Result<Option<Time>, InputError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|e| InputError::new(at, format!("{e}; expected an RFC 3339 time"))),
    }
}

/// Plans with an explicit plugin registry (for user plugins).
pub fn plan_with(input: &PlanInput<'_>, registry: &Registry) -> Result<Plan, InputError> {
    let mut notes = Vec::new();
    let policy_label = object_label(input.policy);
    let policy_kind = input
        .policy
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !matches!(
        policy_kind,
        "PropagationPolicy" | "ClusterPropagationPolicy"
    ) {
        return Err(InputError::new(
            policy_label,
            "expected a PropagationPolicy or ClusterPropagationPolicy (policy.karmada.io/v1alpha1)",
        ));
    }
    let mut placement_value = input
        .policy
        .pointer("/spec/placement")
        .cloned()
        .unwrap_or_else(|| json!({}));
    normalise_placement(&mut placement_value, &mut notes);
    let placement: Placement = serde_json::from_value(placement_value)
        .map_err(|e| InputError::new(format!("{policy_label}: spec.placement"), e.to_string()))?;
    let scheduler_name = input
        .policy
        .pointer("/spec/schedulerName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_SCHEDULER_NAME);

    let profiles = input
        .profiles
        .iter()
        .map(SchedulerProfile::from_value)
        .collect::<Result<Vec<_>, _>>()?;
    let default_selection = PluginSelection::default();
    let selection = input.plugins.unwrap_or(&default_selection);
    let framework = match profiles
        .iter()
        .find(|profile| profile.name == scheduler_name)
    {
        Some(profile) => Framework::from_profile_in(registry, selection, profile)?,
        None if scheduler_name == DEFAULT_SCHEDULER_NAME => {
            Framework::from_selection(registry, selection)?
        }
        None => {
            let known: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
            return Err(InputError::new(
                format!("{policy_label}: spec.schedulerName"),
                format!(
                    "{scheduler_name:?} has no SchedulerProfile among the inputs (given: {}); use {DEFAULT_SCHEDULER_NAME} or add the profile",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
    };

    let facts = interpret(input.workload)?;
    let binding = input.binding;
    let binding_spec = |pointer: &str| binding.and_then(|b| b.pointer(pointer)).cloned();
    let mut spec_value = json!({
        "resource": {
            "apiVersion": facts.api_version, "kind": facts.kind, "name": facts.name,
            "namespace": facts.namespace.clone().unwrap_or_default(), "uid": facts.uid, "resourceVersion": facts.resource_version,
        },
        "replicas": facts.replicas,
        "schedulerName": scheduler_name,
    });
    if let Some(requirements) = &facts.replica_requirements {
        spec_value["replicaRequirements"] = requirements.clone();
    }
    for field in ["clusters", "gracefulEvictionTasks", "rescheduleTriggeredAt"] {
        if let Some(value) = binding_spec(&format!("/spec/{field}")) {
            spec_value[field] = value;
        }
    }
    let mut spec: ResourceBindingSpec = serde_json::from_value(spec_value)
        .map_err(|e| InputError::new("ResourceBinding spec", e.to_string()))?;
    spec.placement = Some(placement.clone());

    let rescheduled = time(
        binding_spec("/spec/rescheduleTriggeredAt").as_ref(),
        "ResourceBinding spec.rescheduleTriggeredAt",
    )?;
    let last_scheduled = time(
        binding_spec("/status/lastScheduledTime").as_ref(),
        "ResourceBinding status.lastScheduledTime",
    )?;
    let fresh = match (rescheduled, last_scheduled) {
        (Some(triggered), Some(last)) => triggered > last,
        (Some(_), None) => true,
        _ => false,
    };
    let observed_affinity = binding
        .and_then(|b| b.pointer("/status/schedulerObservingAffinityName"))
        .and_then(Value::as_str);

    let snapshots = input
        .clusters
        .iter()
        .map(|value| {
            let cluster: Cluster = serde_json::from_value(value.clone())
                .map_err(|e| InputError::new(object_label(value), e.to_string()))?;
            ClusterSnapshot::new(cluster)
        })
        .collect::<Result<Vec<_>, _>>()?;

    let prepared = prepare(&placement, &format!("{policy_label}: spec.placement"))?;
    let request = ScheduleRequest {
        spec: &spec,
        placement: &placement,
        prepared: &prepared,
        workload: Some(input.workload),
        observed_affinity,
        fresh,
        keep_empty: false,
        scheduler_name,
        accurate: None,
    };
    let mut outcome = schedule(&framework, &request, &snapshots)?;
    outcome.explanation.notes.extend(notes.iter().cloned());
    if fresh {
        outcome.explanation.notes.push(
            "rescheduleTriggeredAt is after lastScheduledTime: replicas are divided afresh".into(),
        );
    }
    let binding_value = render_binding(input, &facts, &spec, &outcome, policy_kind, binding)?;
    let scheduled = outcome.result.is_ok();
    Ok(Plan {
        binding: binding_value,
        explanation: outcome.explanation,
        scheduled,
        notes,
    })
}

fn render_binding(
    input: &PlanInput<'_>,
    facts: &crate::workload::WorkloadFacts,
    spec: &ResourceBindingSpec,
    outcome: &crate::scheduler::ScheduleOutcome,
    policy_kind: &str,
    current: Option<&Value>,
) -> Result<Value, InputError> {
    let cluster_scoped = facts.namespace.is_none() && policy_kind == "ClusterPropagationPolicy";
    let kind = if cluster_scoped {
        "ClusterResourceBinding"
    } else {
        "ResourceBinding"
    };
    let mut metadata = current
        .and_then(|b| b.get("metadata"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    if metadata.get("name").is_none() {
        metadata["name"] = Value::String(format!("{}-{}", facts.name, facts.kind).to_lowercase());
    }
    if !cluster_scoped && metadata.get("namespace").is_none() {
        let namespace = facts
            .namespace
            .clone()
            .or_else(|| {
                input
                    .policy
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "default".to_string());
        metadata["namespace"] = Value::String(namespace);
    }
    let spec_value = serde_json::to_value(spec)
        .map_err(|e| InputError::new("ResourceBinding spec", e.to_string()))?;
    let status = current
        .and_then(|b| b.get("status"))
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let generation = current
        .and_then(|b| b.pointer("/metadata/generation"))
        .and_then(Value::as_i64);
    let result = scheduling_result(outcome, spec.placement.as_ref(), generation, input.now)?;
    let mut binding = json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": kind,
        "metadata": metadata,
        "spec": spec_value,
        "status": status,
    });
    result.apply_to(&mut binding);
    Ok(binding)
}
