//! Application failover (docs/karmada.md, "Application failover"): per binding with `spec.failover.application`, the
//! copies reported Unhealthy in `aggregatedStatus` are timed ([`super::app_health`], first-unhealthy times kept in the
//! binding annotation [`super::app_health::ANNOTATION_UNHEALTHY_SINCE`]); a copy unhealthy for longer than
//! `decisionConditions.tolerationSeconds` is evicted with reason `ApplicationFailure`, the policy's purge mode and
//! grace period, and the state its `statePreservation` rules extract. Evictions share the pacing of the taint manager.
//! A state-preservation rule that finds nothing fails that eviction (event `EvictWorkloadFromClusterFailed`) and it is
//! retried.

use std::sync::Arc;

use crate::runtime::runner::Action;
use jiff::Timestamp;

use super::app_health::{
    ANNOTATION_UNHEALTHY_SINCE, PRODUCER_CLUSTER_RESOURCE_BINDING, PRODUCER_RESOURCE_BINDING,
    decide, eviction_request, parse_tracked, render_tracked,
};
use super::driver::{BindingCtx, requeue_at};
use super::tasks::evict_cluster;
use super::{EVENT_EVICT_FAILED, EVENT_EVICT_SUCCEED};
use crate::runtime::{CompactObject, ControllerError, EventType};

/// Controller name (metrics, queue depth).
pub const NAME: &str = "application-failover";

pub(crate) async fn reconcile(
    object: Arc<CompactObject>,
    ctx: Arc<BindingCtx>,
) -> Result<Action, ControllerError> {
    let read = ctx.decode(&object)?;
    let shared = &ctx.shared;
    let annotations = read
        .binding
        .metadata
        .annotations
        .clone()
        .unwrap_or_default();
    let current = annotations.get(ANNOTATION_UNHEALTHY_SINCE).cloned();
    let spec = &read.binding.spec;
    let status = read.binding.status.as_ref();
    let now = Timestamp::now();
    let decision = if read.binding.metadata.deletion_timestamp.is_some() {
        None
    } else {
        decide(spec, status, &parse_tracked(current.as_deref()), now)
    };
    let Some(mut decision) = decision else {
        shared.not_waiting(NAME, &read.key);
        if current.is_some() {
            ctx.write(&read, None, Some((ANNOTATION_UNHEALTHY_SINCE, None)))
                .await?;
        }
        return Ok(Action::await_change());
    };
    let behavior = spec
        .failover
        .as_ref()
        .and_then(|f| f.application.clone())
        .unwrap_or_default();
    let producer = if ctx.cluster_scoped {
        PRODUCER_CLUSTER_RESOURCE_BINDING
    } else {
        PRODUCER_RESOURCE_BINDING
    };
    let mut next = spec.clone();
    let mut evicted = Vec::new();
    let mut wait = None;
    let mut failed = Vec::new();
    for cluster in &decision.evict {
        if let Err(held) = shared.admit_recorded(NAME, &read.key, cluster, now).await {
            let (reason, delay) = held.reason_and_delay();
            shared.metrics.deferred(NAME, reason);
            wait = Some(wait.map_or(delay, |w: std::time::Duration| w.min(delay)));
            continue;
        }
        match eviction_request(&behavior, status, cluster, producer) {
            Ok(request) => {
                if let Some(spec) = evict_cluster(&next, &request, now) {
                    next = spec;
                    evicted.push((cluster.clone(), request.purge_mode));
                }
            }
            Err(err) => failed.push(err.to_string()),
        }
    }
    for (cluster, _) in &evicted {
        decision.tracked.remove(cluster);
    }
    let annotation = render_tracked(&decision.tracked);
    let spec_changed = !evicted.is_empty();
    if spec_changed || annotation != current {
        ctx.write(
            &read,
            spec_changed.then_some(&next),
            Some((ANNOTATION_UNHEALTHY_SINCE, annotation)),
        )
        .await?;
    }
    for message in &failed {
        for reference in ctx.references(&read) {
            shared
                .recorder
                .record(&reference, EventType::Warning, EVENT_EVICT_FAILED, message)
                .await;
        }
    }
    for (cluster, mode) in &evicted {
        shared.metrics.evicted(cluster, &spec.resource.kind);
        for reference in ctx.references(&read) {
            shared
                .recorder
                .record(
                    &reference,
                    EventType::Normal,
                    EVENT_EVICT_SUCCEED,
                    &format!(
                        "Evicted from cluster {cluster}: application unhealthy beyond its toleration (ApplicationFailure, purgeMode {})",
                        mode.as_str()
                    ),
                )
                .await;
        }
        tracing::info!(binding = %read.key, cluster, "application failover evicted");
    }
    if !failed.is_empty() {
        return Ok(Action::requeue(
            super::RETRY_FAILED_EVICTION.min(shared.config.resync),
        ));
    }
    Ok(match (wait, decision.recheck_at) {
        (Some(w), _) => Action::requeue(w),
        (None, Some(at)) => Action::requeue(requeue_at(now, at)),
        (None, None) => Action::await_change(),
    })
}
