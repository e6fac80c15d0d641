//! The graceful-eviction controller (docs/karmada.md, "Graceful eviction"): per binding with eviction tasks, the
//! task plan of [`super::tasks::plan_tasks`] — stamp, keep, remove, or restore a recovered cluster — written as one
//! replace. The facts per task come from the Cluster cache: whether the member is reachable (Ready=True) or gone,
//! and, for taint evictions, whether the cluster still carries a NoExecute taint the binding does not tolerate for
//! ever.
//!
//! Removing a task is what lets the binding controller delete the old copy's Work, so every removal here has
//! passed the safety rules; a task kept for safety (member unreachable, last healthy copy) is counted in
//! `eviction_deferred_total` and looked at again on the next binding or cluster change, or after
//! [`super::FailoverConfig::resync`]. Events: `GracefulEvictionTaskRemoved` per removal, `EvictionCancelled`
//! when a recovered cluster gets its replicas back.

use std::sync::Arc;

use crate::runtime::runner::Action;
use jiff::{SignedDuration, Timestamp};
use karmada_api::work::EVICTION_REASON_TAINT_UNTOLERATED;

use super::driver::{BindingCtx, requeue_at};
use super::tasks::{KeepReason, LifecycleInput, TaskAction, TaskFacts, plan_tasks};
use super::toleration::{TaintVerdict, tolerations_in_force, verdict};
use super::{EVENT_EVICTION_CANCELLED, EVENT_TASK_REMOVED};
use crate::runtime::{CompactObject, ControllerError, EventType};

/// Controller name (metrics).
pub const NAME: &str = "graceful-eviction";

pub(crate) async fn reconcile(
    object: Arc<CompactObject>,
    ctx: Arc<BindingCtx>,
) -> Result<Action, ControllerError> {
    let read = ctx.decode(&object)?;
    let shared = &ctx.shared;
    let spec = &read.binding.spec;
    if spec.graceful_eviction_tasks.is_empty() || read.binding.metadata.deletion_timestamp.is_some()
    {
        return Ok(Action::await_change());
    }
    let now = Timestamp::now();
    let applied = read
        .binding
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(karmada_api::work::ANNOTATION_APPLIED_PLACEMENT))
        .map(String::as_str);
    let tolerations = tolerations_in_force(applied, spec.placement.as_ref());
    let taints = shared.taints(
        spec.graceful_eviction_tasks
            .iter()
            .map(|t| t.from_cluster.as_str()),
    );
    let input = LifecycleInput {
        spec,
        status: read.binding.status.as_ref(),
        generation: read.binding.metadata.generation.unwrap_or(0),
        now,
        default_grace: SignedDuration::try_from(shared.config.graceful_eviction_timeout)
            .unwrap_or(SignedDuration::from_mins(10)),
    };
    let plan = plan_tasks(input, |task| {
        let still_failing = if task.reason == EVICTION_REASON_TAINT_UNTOLERATED {
            taints
                .get(&task.from_cluster)
                .is_some_and(|taints| verdict(&tolerations, taints, now) != TaintVerdict::Keep)
        } else {
            task.reason != karmada_api::work::EVICTION_REASON_APPLICATION_FAILURE
        };
        TaskFacts {
            member: shared.member_state(&task.from_cluster),
            still_failing,
        }
    });
    for (cluster, action) in &plan.actions {
        if let TaskAction::Keep(
            reason @ (KeepReason::MemberUnreachable | KeepReason::LastHealthyCopy),
        ) = action
        {
            shared.metrics.deferred(NAME, reason.as_str());
            tracing::debug!(binding = %read.key, cluster, reason = reason.as_str(), "eviction task kept");
        }
    }
    if let Some(next) = &plan.spec {
        ctx.write(&read, Some(next), None).await?;
        for (cluster, action) in &plan.actions {
            let (reason, message) = match action {
                TaskAction::Remove(why) => {
                    shared.metrics.task_removed(why.as_str());
                    (
                        EVENT_TASK_REMOVED,
                        format!(
                            "Removed the eviction task of cluster {cluster}: {}",
                            why.as_str()
                        ),
                    )
                }
                TaskAction::Restore => {
                    shared.metrics.task_removed("Restored");
                    (
                        EVENT_EVICTION_CANCELLED,
                        format!(
                            "Cluster {cluster} recovered before its replicas were placed elsewhere; eviction cancelled"
                        ),
                    )
                }
                TaskAction::Keep(_) | TaskAction::Stamp => continue,
            };
            for reference in ctx.references(&read) {
                shared
                    .recorder
                    .record(&reference, EventType::Normal, reason, &message)
                    .await;
            }
            tracing::info!(binding = %read.key, cluster, %message, "graceful eviction");
        }
    }
    let resync = shared.config.resync;
    Ok(Action::requeue(
        plan.recheck_at
            .map_or(resync, |at| requeue_at(now, at).min(resync)),
    ))
}
