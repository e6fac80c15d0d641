//! Graceful eviction tasks, pure: adding one ([`evict_cluster`], Karmada's GracefulEvictCluster) and deciding
//! when each may go ([`plan_tasks`], the graceful-eviction controller; docs/karmada.md, "Graceful eviction") —
//! with the safety rules that make the dangerous outcomes impossible.
//!
//! Evicting moves a cluster from `spec.clusters` into `spec.gracefulEvictionTasks`: the scheduler no longer
//! counts it (so it places the replicas elsewhere) while the binding controller keeps its Work, so the old copy
//! runs until the task is removed. Removing a task is what deletes the old copy. Per task, first match wins:
//!
//! 1. the cluster no longer exists → remove (nothing is left to delete);
//! 2. the cluster is back in `spec.clusters` (rescheduled there) → remove (its Work is live again);
//! 3. no `creationTimestamp` → stamp it (the grace period counts from then);
//! 4. `suppressDeletion: false` (a user lifted a Never) → remove at once: explicitly asked for;
//! 5. the cause went away (the cluster recovered: reachable and, for a taint eviction, no untolerated NoExecute
//!    taint; for an application failure, its copy is Healthy again) while the replicas were not yet placed
//!    elsewhere → **restore**: the cluster goes back into `spec.clusters` with its replicas and the task goes
//!    (Karmada #5782/#5803: tasks that stay after recovery);
//! 6. `Never` (or `suppressDeletion: true`) → keep until a user sets `suppressDeletion: false` (rule 4); neither
//!    time nor healthy replacements end it (docs/karmada.md, "Graceful eviction");
//! 7. the replacements are scheduled for the current spec, cover the policy and are all Healthy → remove, unless
//!    the member is unreachable (then keep: nothing is deleted from a member that cannot be reached; the task,
//!    and so the Work, stays until it can be);
//! 8. `Directly`: the binding controller deleted the old copy when the task was added, so removing the task
//!    deletes nothing — it only lets the scheduler place replicas on the cluster again. The task therefore stays
//!    (keeping the cluster out of scheduling, as Karmada's ClusterEviction filter does) until the rules above or
//!    the grace period (the controller's timeout) end it, reachable or not. Removing it as soon as it was stamped
//!    let a reschedule put replicas straight back on the failing cluster, where they crashed and were evicted
//!    again;
//! 9. `Gracefully` → keep until the grace period (`gracePeriodSeconds`, else the controller's timeout) ends;
//!    then remove only if the member is reachable and either the old copy is reported Unhealthy (it serves
//!    nothing) or healthy replacements covering the policy exist — never the last healthy copy (Karmada #7455).

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::policy::PurgeMode;
use karmada_api::{
    GracefulEvictionTask, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};

use super::replicas::{covers_policy, is_healthy, is_unhealthy, replacements_healthy};

/// What an eviction writes into the task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictionRequest {
    pub from_cluster: String,
    /// `TaintUntolerated`, `ApplicationFailure`, ...
    pub reason: String,
    pub message: String,
    /// `TaintManager`, the application-failover controller's name, ...
    pub producer: String,
    pub purge_mode: PurgeMode,
    /// Only kept for Gracefully.
    pub grace_period_seconds: Option<i32>,
    pub preserved_label_state: BTreeMap<String, String>,
}

/// The spec with `request.from_cluster` moved from `spec.clusters` into a graceful eviction task stamped `now`;
/// `None` when the cluster is not a target (nothing to evict). A task already open for the cluster is kept as it
/// is (its clock keeps running) rather than duplicated.
pub fn evict_cluster(
    spec: &ResourceBindingSpec,
    request: &EvictionRequest,
    now: Timestamp,
) -> Option<ResourceBindingSpec> {
    let target = spec
        .clusters
        .iter()
        .find(|t| t.name == request.from_cluster)?;
    let mut next = spec.clusters.clone();
    next.retain(|t| t.name != request.from_cluster);
    let mut out = spec.clone();
    out.clusters = next;
    if !spec
        .graceful_eviction_tasks
        .iter()
        .any(|t| t.from_cluster == request.from_cluster)
    {
        let mode = request.purge_mode;
        out.graceful_eviction_tasks.push(GracefulEvictionTask {
            from_cluster: request.from_cluster.clone(),
            purge_mode: Some(mode),
            replicas: (target.replicas > 0).then_some(target.replicas),
            reason: request.reason.clone(),
            message: request.message.clone(),
            producer: request.producer.clone(),
            grace_period_seconds: (mode == PurgeMode::Gracefully)
                .then_some(request.grace_period_seconds)
                .flatten(),
            suppress_deletion: (mode == PurgeMode::Never).then_some(true),
            preserved_label_state: request.preserved_label_state.clone(),
            creation_timestamp: Some(Time(now)),
            clusters_before_failover: spec.clusters.iter().map(|t| t.name.clone()).collect(),
        });
    }
    Some(out)
}

/// Whether a member cluster can be reached (Ready=True), cannot, or no longer exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberState {
    Reachable,
    Unreachable,
    Gone,
}

/// What the runtime knows about a task's cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskFacts {
    pub member: MemberState,
    /// The eviction's cause persists: an untolerated NoExecute taint for `TaintUntolerated`; for
    /// `ApplicationFailure` the runtime passes `false` and the plan reads the copy's health itself.
    pub still_failing: bool,
}

/// Why a task is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoveReason {
    ClusterGone,
    Rescheduled,
    SuppressionLifted,
    ReplacementHealthy,
    GracePeriodExpired,
}

/// Why a task stays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepReason {
    /// Replacements are not (yet) healthy and the grace period runs.
    WaitingForReplacement,
    /// Removing would delete from a member that cannot be reached: deferred.
    MemberUnreachable,
    /// The grace period ended but the old copy may be the last healthy one: kept.
    LastHealthyCopy,
    /// Never / suppressDeletion: only healthy replacements end it.
    Suppressed,
}

impl KeepReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WaitingForReplacement => "WaitingForReplacement",
            Self::MemberUnreachable => "MemberUnreachable",
            Self::LastHealthyCopy => "LastHealthyCopy",
            Self::Suppressed => "Suppressed",
        }
    }
}

impl RemoveReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClusterGone => "ClusterGone",
            Self::Rescheduled => "Rescheduled",
            Self::SuppressionLifted => "SuppressionLifted",
            Self::ReplacementHealthy => "ReplacementHealthy",
            Self::GracePeriodExpired => "GracePeriodExpired",
        }
    }
}

/// The decision for one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskAction {
    Stamp,
    Keep(KeepReason),
    Remove(RemoveReason),
    /// Put the cluster back into `spec.clusters` with the task's replicas and drop the task.
    Restore,
}

/// What [`plan_tasks`] needs besides the per-task facts.
#[derive(Clone, Copy, Debug)]
pub struct LifecycleInput<'a> {
    pub spec: &'a ResourceBindingSpec,
    pub status: Option<&'a ResourceBindingStatus>,
    /// `metadata.generation` of the binding (compared with `schedulerObservedGeneration`).
    pub generation: i64,
    pub now: Timestamp,
    /// `--graceful-eviction-timeout` (Karmada's default 10 minutes), for tasks without `gracePeriodSeconds`.
    pub default_grace: SignedDuration,
}

/// The plan for a binding's tasks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LifecyclePlan {
    /// The new spec, when any task changes.
    pub spec: Option<ResourceBindingSpec>,
    /// One entry per task, in order.
    pub actions: Vec<(String, TaskAction)>,
    /// When a kept task's grace period ends (look again then).
    pub recheck_at: Option<Timestamp>,
}

/// The effective purge mode of a task: `suppressDeletion: true` means Never; absent means Gracefully.
pub fn effective_mode(task: &GracefulEvictionTask) -> PurgeMode {
    if task.suppress_deletion == Some(true) {
        return PurgeMode::Never;
    }
    task.purge_mode.unwrap_or(PurgeMode::Gracefully)
}

/// Decides every task of a binding; see the module documentation for the rules.
pub fn plan_tasks(
    input: LifecycleInput<'_>,
    facts: impl Fn(&GracefulEvictionTask) -> TaskFacts,
) -> LifecyclePlan {
    let spec = input.spec;
    let mut plan = LifecyclePlan::default();
    let mut next = spec.clone();
    next.graceful_eviction_tasks.clear();
    let mut changed = false;
    for task in &spec.graceful_eviction_tasks {
        let (action, recheck) = decide_task(&input, task, facts(task));
        if let Some(at) = recheck {
            plan.recheck_at = Some(plan.recheck_at.map_or(at, |r| r.min(at)));
        }
        match action {
            TaskAction::Keep(_) => next.graceful_eviction_tasks.push(task.clone()),
            TaskAction::Stamp => {
                let mut stamped = task.clone();
                stamped.creation_timestamp = Some(Time(input.now));
                next.graceful_eviction_tasks.push(stamped);
                changed = true;
            }
            TaskAction::Remove(_) => changed = true,
            TaskAction::Restore => {
                if !next.clusters.iter().any(|t| t.name == task.from_cluster) {
                    next.clusters.push(TargetCluster {
                        name: task.from_cluster.clone(),
                        replicas: task.replicas.unwrap_or(0),
                        components: Vec::new(),
                    });
                }
                changed = true;
            }
        }
        plan.actions.push((task.from_cluster.clone(), action));
    }
    if changed {
        plan.spec = Some(next);
    }
    plan
}

fn decide_task(
    input: &LifecycleInput<'_>,
    task: &GracefulEvictionTask,
    facts: TaskFacts,
) -> (TaskAction, Option<Timestamp>) {
    let spec = input.spec;
    let from = task.from_cluster.as_str();
    if facts.member == MemberState::Gone {
        return (TaskAction::Remove(RemoveReason::ClusterGone), None);
    }
    if spec.clusters.iter().any(|t| t.name == from) {
        return (TaskAction::Remove(RemoveReason::Rescheduled), None);
    }
    let Some(created) = task.creation_timestamp.as_ref().map(|t| t.0) else {
        return (TaskAction::Stamp, None);
    };
    if task.suppress_deletion == Some(false) {
        return (TaskAction::Remove(RemoveReason::SuppressionLifted), None);
    }
    let mode = effective_mode(task);
    let reachable = facts.member == MemberState::Reachable;
    let healthy_elsewhere = replacements_healthy(spec, input.status, input.generation, Some(from));
    let recovered = reachable
        && !facts.still_failing
        && (task.reason != karmada_api::work::EVICTION_REASON_APPLICATION_FAILURE
            || is_healthy(input.status, from));
    if recovered && !healthy_elsewhere && restorable(spec, task) {
        return (TaskAction::Restore, None);
    }
    // Never (suppressDeletion: true) waits for the user, not for the replacement
    // (docs/karmada.md, "Graceful eviction").
    if mode == PurgeMode::Never {
        return (TaskAction::Keep(KeepReason::Suppressed), None);
    }
    // Directly: the old copy is already gone, so nothing below protects it (rule 8).
    let copy_kept = mode != PurgeMode::Directly;
    if healthy_elsewhere {
        return if reachable || !copy_kept {
            (TaskAction::Remove(RemoveReason::ReplacementHealthy), None)
        } else {
            (TaskAction::Keep(KeepReason::MemberUnreachable), None)
        };
    }
    let grace = task.grace_period_seconds.map_or(input.default_grace, |s| {
        SignedDuration::from_secs(i64::from(s))
    });
    let deadline = created.checked_add(grace).unwrap_or(Timestamp::MAX);
    if input.now < deadline {
        return (
            TaskAction::Keep(KeepReason::WaitingForReplacement),
            Some(deadline),
        );
    }
    if !copy_kept {
        return (TaskAction::Remove(RemoveReason::GracePeriodExpired), None);
    }
    if !reachable {
        return (TaskAction::Keep(KeepReason::MemberUnreachable), None);
    }
    let healthy_copy_left = covers_policy(spec, Some(from))
        && spec
            .clusters
            .iter()
            .any(|t| is_healthy(input.status, &t.name));
    if is_unhealthy(input.status, from) || healthy_copy_left {
        (TaskAction::Remove(RemoveReason::GracePeriodExpired), None)
    } else {
        (TaskAction::Keep(KeepReason::LastHealthyCopy), None)
    }
}

/// Whether putting the task's replicas back keeps the binding within what it asks for (divided: the scheduler
/// has not already placed them elsewhere).
fn restorable(spec: &ResourceBindingSpec, task: &GracefulEvictionTask) -> bool {
    if !super::replicas::divided(spec) {
        return true;
    }
    super::replicas::assigned(spec, None) + i64::from(task.replicas.unwrap_or(0))
        <= i64::from(spec.replicas)
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
