//! The taint manager (cluster failover; docs/karmada.md, "Taint manager"): for each binding, the NoExecute taints of
//! its target clusters against the placement's `clusterTolerations` ([`super::toleration`]). A cluster whose taint is
//! not tolerated (or no longer: `tolerationSeconds` ran out) is evicted: moved from `spec.clusters` into a graceful
//! eviction task {reason `TaintUntolerated`, producer `TaintManager`, purge mode from `spec.failover.cluster.purgeMode`
//! or the configured default}. The scheduler then places the replicas elsewhere; the graceful-eviction controller
//! removes the task when that is safe.
//!
//! Evictions are paced (rate limit and cluster budget, shared with application failover); a held-back binding is
//! requeued for when pacing allows. Tolerated taints requeue the binding for when their toleration runs out.
//! Events `EvictWorkloadFromClusterSucceed` / `EvictWorkloadFromClusterFailed` go on the binding and its
//! template.

use std::sync::Arc;

use crate::runtime::runner::Action;
use jiff::Timestamp;
use karmada_api::policy::PurgeMode;
use karmada_api::work::{EVICTION_PRODUCER_TAINT_MANAGER, EVICTION_REASON_TAINT_UNTOLERATED};

use super::driver::{BindingCtx, requeue_at};
use super::preservation::preserved_label_state;
use super::tasks::{EvictionRequest, evict_cluster};
use super::toleration::{decide, tolerations_in_force};
use super::{EVENT_EVICT_FAILED, EVENT_EVICT_SUCCEED};
use crate::runtime::{CompactObject, ControllerError, EventType};

/// Controller name (metrics, queue depth).
pub const NAME: &str = "taint-manager";

pub(crate) async fn reconcile(
    object: Arc<CompactObject>,
    ctx: Arc<BindingCtx>,
) -> Result<Action, ControllerError> {
    let read = ctx.decode(&object)?;
    let shared = &ctx.shared;
    if read.binding.metadata.deletion_timestamp.is_some() {
        shared.not_waiting(NAME, &read.key);
        return Ok(Action::await_change());
    }
    let now = Timestamp::now();
    let spec = &read.binding.spec;
    let applied = read
        .binding
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(karmada_api::work::ANNOTATION_APPLIED_PLACEMENT))
        .map(String::as_str);
    let tolerations = tolerations_in_force(applied, spec.placement.as_ref());
    let taints = shared.taints(spec.clusters.iter().map(|t| t.name.as_str()));
    let decision = decide(&spec.clusters, &tolerations, &taints, now);
    if decision.evict.is_empty() {
        shared.not_waiting(NAME, &read.key);
        return Ok(decision.recheck_at.map_or_else(Action::await_change, |at| {
            Action::requeue(requeue_at(now, at))
        }));
    }
    let cluster_failover = spec.failover.as_ref().and_then(|f| f.cluster.as_ref());
    let mode = cluster_failover
        .and_then(|c| c.purge_mode)
        .unwrap_or(shared.config.default_purge_mode);
    let rules = cluster_failover
        .and_then(|c| c.state_preservation.as_ref())
        .map(|p| p.rules.as_slice())
        .unwrap_or_default();
    let mut next = spec.clone();
    let mut evicted = Vec::new();
    let mut wait = None;
    let mut failed = false;
    for (cluster, why) in &decision.evict {
        if let Err(held) = shared.admit_recorded(NAME, &read.key, cluster, now).await {
            let (reason, delay) = held.reason_and_delay();
            shared.metrics.deferred(NAME, reason);
            wait = Some(wait.map_or(delay, |w: std::time::Duration| w.min(delay)));
            continue;
        }
        let copy_status = read.binding.status.as_ref().and_then(|s| {
            s.aggregated_status
                .iter()
                .find(|i| i.cluster_name == *cluster)
                .and_then(|i| i.status.as_ref())
        });
        let preserved = match preserved_label_state(rules, copy_status) {
            Ok(state) => state,
            Err(err) => {
                for reference in ctx.references(&read) {
                    shared
                        .recorder
                        .record(
                            &reference,
                            EventType::Warning,
                            EVENT_EVICT_FAILED,
                            &err.to_string(),
                        )
                        .await;
                }
                failed = true;
                continue;
            }
        };
        let request = EvictionRequest {
            from_cluster: cluster.clone(),
            reason: EVICTION_REASON_TAINT_UNTOLERATED.to_string(),
            message: format!("Taint {why} of cluster {cluster} is not tolerated"),
            producer: EVICTION_PRODUCER_TAINT_MANAGER.to_string(),
            purge_mode: mode,
            grace_period_seconds: (mode == PurgeMode::Gracefully).then(|| {
                i32::try_from(shared.config.graceful_eviction_timeout.as_secs()).unwrap_or(i32::MAX)
            }),
            preserved_label_state: preserved,
        };
        if let Some(spec) = evict_cluster(&next, &request, now) {
            next = spec;
            evicted.push(cluster.clone());
        }
    }
    if !evicted.is_empty() {
        if let Err(err) = ctx.write(&read, Some(&next), None).await {
            if !err.is_conflict() {
                for reference in ctx.references(&read) {
                    shared
                        .recorder
                        .record(
                            &reference,
                            EventType::Warning,
                            EVENT_EVICT_FAILED,
                            &format!("Evicting from cluster(s) {}: {err}", evicted.join(",")),
                        )
                        .await;
                }
            }
            return Err(err);
        }
        for cluster in &evicted {
            shared.metrics.evicted(cluster, &spec.resource.kind);
            for reference in ctx.references(&read) {
                shared
                    .recorder
                    .record(
                        &reference,
                        EventType::Normal,
                        EVENT_EVICT_SUCCEED,
                        &format!(
                            "Evicted from cluster {cluster} by TaintManager (TaintUntolerated, purgeMode {})",
                            mode.as_str()
                        ),
                    )
                    .await;
            }
            tracing::info!(binding = %read.key, cluster, "taint manager evicted");
        }
    }
    if failed {
        let retry = super::RETRY_FAILED_EVICTION.min(shared.config.resync);
        wait = Some(wait.map_or(retry, |w: std::time::Duration| w.min(retry)));
    }
    Ok(match (wait, decision.recheck_at) {
        (Some(w), _) => Action::requeue(w),
        (None, Some(at)) => Action::requeue(requeue_at(now, at)),
        (None, None) => Action::await_change(),
    })
}
