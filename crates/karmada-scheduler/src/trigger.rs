//! When a binding is (re)scheduled (docs/karmada.md, "Scheduling triggers"): which bindings a scheduler serves, and
//! which change, if any, calls for a new decision. Pure; the live runner asks this before calling
//! [`crate::scheduler::schedule`].
//!
//! Invariants: the checks run in Karmada's order and the first that holds is the answer; `None` means "only
//! record the observed generation". A malformed applied-placement annotation counts as a placement change
//! (scheduling again is the safe answer) rather than an error.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::work::ResourceBindingStatus;
use karmada_api::{Placement, ReplicaSchedulingType, ResourceBindingSpec};

use crate::framework::DEFAULT_SCHEDULER_NAME;
use crate::plan::ANNOTATION_APPLIED_PLACEMENT;

/// Labels that mark a binding as made for a (Cluster)PropagationPolicy, and the managed-by label.
pub const POLICY_ID_LABELS: &[&str] = &[
    "propagationpolicy.karmada.io/permanent-id",
    "clusterpropagationpolicy.karmada.io/permanent-id",
    "binding.karmada.io/managed-by",
];

/// Why a binding must be scheduled now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleTrigger {
    /// The placement differs from the applied one (or none was applied yet).
    ReconcileSchedule,
    /// The desired replicas differ from what `spec.clusters` holds.
    ScaleSchedule,
    /// `rescheduleTriggeredAt` is after `lastScheduledTime`: divide afresh.
    FreshSchedule,
    /// Non-workloads and Duplicated bindings are always rescheduled.
    AlwaysSchedule,
    /// A target cluster is being deleted.
    ClusterTerminating,
}

/// Whether the scheduler named `scheduler_name` serves this binding.
pub fn served_by(metadata: &ObjectMeta, spec: &ResourceBindingSpec, scheduler_name: &str) -> bool {
    let wanted = if spec.scheduler_name.is_empty() {
        DEFAULT_SCHEDULER_NAME
    } else {
        spec.scheduler_name.as_str()
    };
    let labelled = metadata
        .labels
        .as_ref()
        .is_some_and(|labels| POLICY_ID_LABELS.iter().any(|key| labels.contains_key(*key)));
    wanted == scheduler_name && !spec.scheduling_suspended() && labelled
}

fn placement_changed(
    metadata: &ObjectMeta,
    placement: &Placement,
    observed_affinity: &str,
) -> bool {
    let applied = metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_APPLIED_PLACEMENT));
    let Some(applied) = applied else { return true };
    let Ok(applied) = serde_json::from_str::<Placement>(applied) else {
        return true;
    };
    if placement.cluster_affinities.is_empty() || applied.cluster_affinities.is_empty() {
        return &applied != placement;
    }
    // With clusterAffinities only the term in force is compared.
    let term = |p: &Placement| {
        p.cluster_affinities
            .iter()
            .find(|t| t.affinity_name == observed_affinity)
            .or_else(|| p.cluster_affinities.first())
            .cloned()
    };
    let without_terms = |p: &Placement| Placement {
        cluster_affinities: Vec::new(),
        ..p.clone()
    };
    term(&applied) != term(placement) || without_terms(&applied) != without_terms(placement)
}

/// The first reason, in Karmada's order, to schedule this binding now; `None` when nothing calls for it.
/// `terminating` says whether a cluster (by name) is being deleted.
pub fn schedule_trigger(
    metadata: &ObjectMeta,
    spec: &ResourceBindingSpec,
    status: Option<&ResourceBindingStatus>,
    terminating: impl Fn(&str) -> bool,
) -> Option<ScheduleTrigger> {
    let default_placement = Placement::default();
    let placement = spec.placement.as_ref().unwrap_or(&default_placement);
    let observed_affinity = status.map_or("", |s| s.scheduler_observed_affinity_name.as_str());
    if placement_changed(metadata, placement, observed_affinity) {
        return Some(ScheduleTrigger::ReconcileSchedule);
    }
    let duplicated = placement.replica_scheduling_type() == ReplicaSchedulingType::Duplicated;
    let replicas_changed = if duplicated {
        spec.clusters
            .iter()
            .any(|target| target.replicas != spec.replicas)
    } else {
        spec.clusters
            .iter()
            .map(|target| i64::from(target.replicas))
            .sum::<i64>()
            != i64::from(spec.replicas)
    };
    if replicas_changed {
        return Some(ScheduleTrigger::ScaleSchedule);
    }
    if let Some(triggered) = &spec.reschedule_triggered_at {
        let last = status.and_then(|s| s.last_scheduled_time.as_ref());
        if last.is_none_or(|last| triggered > last) {
            return Some(ScheduleTrigger::FreshSchedule);
        }
    }
    let non_workload =
        spec.replicas == 0 && spec.replica_requirements.is_none() && spec.components.is_empty();
    if non_workload || duplicated {
        return Some(ScheduleTrigger::AlwaysSchedule);
    }
    if spec.clusters.iter().any(|target| terminating(&target.name)) {
        return Some(ScheduleTrigger::ClusterTerminating);
    }
    None
}
