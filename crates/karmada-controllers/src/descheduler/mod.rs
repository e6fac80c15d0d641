//! The descheduler (karmada-descheduler; docs/karmada.md, "Descheduler"): every `interval`, each ResourceBinding of a
//! Deployment with a dynamic division (Aggregated or dynamic weights) is checked for replicas that stay
//! unschedulable in a member beyond `unschedulable_threshold` — asked of the member's scheduler estimator
//! (`GetUnschedulableReplicas`) where there is one, else read from its reported status ([`decide`]); those
//! replicas are taken from that member's
//! assignment in `spec.clusters` (a replace with the read resourceVersion; a 409 waits for the next round) so the
//! scheduler places them elsewhere. When each shortfall was first seen is kept in memory: a restart only starts
//! the clocks over, which delays, never hastens, a deschedule.
//!
//! Metrics: the seed's `karmada_deschedule_evict_total{member_cluster}` (one per cluster descheduled from) and
//! `karmada_deschedule_evicted_replicas_total{member_cluster}`. Events `DescheduleBindingSucceed` /
//! `DescheduleBindingFailed` on the binding and its template.

pub mod decide;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use karmada_api::ResourceBinding;
use kube::api::{DynamicObject, ListParams, PostParams};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::failover::purge::normalize_legacy_purge_modes;
use crate::runtime::{ControllerError, EventRecorder, EventType, resources, typed};

/// Component name on the events.
pub const COMPONENT: &str = "karmada-descheduler";
pub const EVENT_DESCHEDULE_SUCCEED: &str = "DescheduleBindingSucceed";
pub const EVENT_DESCHEDULE_FAILED: &str = "DescheduleBindingFailed";

/// Settings.
#[derive(Clone)]
pub struct DeschedulerConfig {
    /// `--descheduling-interval` (2 minutes).
    pub interval: Duration,
    /// `--unschedulable-threshold` (5 minutes).
    pub unschedulable_threshold: Duration,
    /// The members' scheduler estimators (members without one are judged by their status).
    pub estimators: Option<Arc<karmada_scheduler_estimator::EstimatorClients>>,
}

impl std::fmt::Debug for DeschedulerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeschedulerConfig")
            .field("interval", &self.interval)
            .field("unschedulable_threshold", &self.unschedulable_threshold)
            .field("estimators", &self.estimators.is_some())
            .finish()
    }
}

impl Default for DeschedulerConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(120),
            unschedulable_threshold: Duration::from_secs(300),
            estimators: None,
        }
    }
}

/// The members' `GetUnschedulableReplicas` answers for `binding`'s undesired clusters (those with an estimator
/// that answered).
async fn unschedulable_answers(
    config: &DeschedulerConfig,
    binding: &ResourceBinding,
) -> BTreeMap<String, i32> {
    let Some(estimators) = &config.estimators else {
        return BTreeMap::new();
    };
    let clusters = decide::undesired_clusters(&binding.spec, binding.status.as_ref());
    let calls = clusters.iter().map(|cluster| async move {
        match estimators
            .unschedulable_replicas(
                cluster,
                &binding.spec.resource,
                config.unschedulable_threshold,
            )
            .await
        {
            Ok(count) => Some((cluster.clone(), count)),
            Err(err) => {
                tracing::debug!(%err, "no unschedulable count; judging by status");
                None
            }
        }
    });
    futures::future::join_all(calls)
        .await
        .into_iter()
        .flatten()
        .collect()
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    pub member_cluster: String,
}

/// The descheduler's metrics.
#[derive(Clone)]
pub struct DeschedulerMetrics {
    evictions: Family<ClusterLabels, Counter>,
    replicas: Family<ClusterLabels, Counter>,
}

impl DeschedulerMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            evictions: Family::default(),
            replicas: Family::default(),
        };
        registry.register(
            "karmada_deschedule_evict",
            "Times the descheduler took unschedulable replicas away from a member cluster",
            metrics.evictions.clone(),
        );
        registry.register(
            "karmada_deschedule_evicted_replicas",
            "Replicas the descheduler took away from a member cluster",
            metrics.replicas.clone(),
        );
        metrics
    }

    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    /// Creates the counters of `cluster` at 0 if they do not exist yet.
    fn watch_cluster(&self, cluster: &str) {
        let labels = ClusterLabels {
            member_cluster: cluster.to_string(),
        };
        if self.evictions.get(&labels).is_none() {
            drop(self.evictions.get_or_create(&labels));
            drop(self.replicas.get_or_create(&labels));
        }
    }

    fn evicted(&self, cluster: &str, replicas: i32) {
        let labels = ClusterLabels {
            member_cluster: cluster.to_string(),
        };
        self.evictions.get_or_create(&labels).inc();
        self.replicas
            .get_or_create(&labels)
            .inc_by(u64::try_from(replicas).unwrap_or(0));
    }
}

/// Shortfall clocks per binding uid.
type Clocks = BTreeMap<String, BTreeMap<String, Timestamp>>;

/// Runs until `cancel` fires: one round at once, then one per `interval`.
pub async fn run(
    client: kube::Client,
    config: DeschedulerConfig,
    metrics: DeschedulerMetrics,
    cancel: CancellationToken,
) {
    let recorder = EventRecorder::new(client.clone(), COMPONENT);
    let mut clocks = Clocks::new();
    loop {
        if let Err(err) = round(&client, &config, &metrics, &recorder, &mut clocks).await {
            tracing::warn!(%err, "descheduler round");
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(config.interval) => {}
        }
    }
}

/// One descheduling round over every ResourceBinding.
async fn round(
    client: &kube::Client,
    config: &DeschedulerConfig,
    metrics: &DeschedulerMetrics,
    recorder: &EventRecorder,
    clocks: &mut Clocks,
) -> Result<(), ControllerError> {
    let resource = resources::resource_binding();
    let list = resources::all(client, &resource)
        .list(&ListParams::default())
        .await?;
    let now = Timestamp::now();
    let threshold = SignedDuration::try_from(config.unschedulable_threshold)
        .unwrap_or(SignedDuration::from_mins(5));
    let mut seen = Clocks::new();
    for object in list.items {
        let mut json = typed::to_json(&object)?;
        json["apiVersion"] = Value::String(resource.api_version.clone());
        json["kind"] = Value::String(resource.kind.clone());
        normalize_legacy_purge_modes(&mut json);
        let Ok(binding) = serde_json::from_value::<ResourceBinding>(json.clone()) else {
            continue;
        };
        if binding.metadata.deletion_timestamp.is_some() {
            continue;
        }
        // Every cluster a binding is placed in has its counters from the start (at 0), so the first eviction there
        // shows in `increase()` (a series born at 1 would count from 1).
        for target in &binding.spec.clusters {
            metrics.watch_cluster(&target.name);
        }
        let uid = binding.metadata.uid.clone().unwrap_or_default();
        let tracked = clocks.remove(&uid).unwrap_or_default();
        let answers = unschedulable_answers(config, &binding).await;
        let plan = decide::plan(
            &binding.spec,
            binding.status.as_ref(),
            &answers,
            &tracked,
            now,
            threshold,
        );
        if !plan.tracked.is_empty() {
            seen.insert(uid, plan.tracked.clone());
        }
        let Some(clusters) = plan.clusters else {
            continue;
        };
        json["spec"]["clusters"] = serde_json::to_value(&clusters)?;
        if let Some(metadata) = json.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        let name = binding.metadata.name.clone().unwrap_or_default();
        let namespace = binding.metadata.namespace.clone().unwrap_or_default();
        let body: DynamicObject = serde_json::from_value(json)?;
        let summary: Vec<String> = plan
            .evicted
            .iter()
            .map(|(cluster, replicas)| format!("{cluster}: {replicas}"))
            .collect();
        let references = references(&binding);
        match resources::namespaced(client, &resource, &namespace)
            .replace(&name, &PostParams::default(), &body)
            .await
        {
            Ok(_) => {
                for (cluster, replicas) in &plan.evicted {
                    metrics.evicted(cluster, *replicas);
                }
                let message = format!(
                    "Descheduled unschedulable replicas ({})",
                    summary.join(", ")
                );
                for reference in &references {
                    recorder
                        .record(
                            reference,
                            EventType::Normal,
                            EVENT_DESCHEDULE_SUCCEED,
                            &message,
                        )
                        .await;
                }
                tracing::info!(binding = %format!("{namespace}/{name}"), %message, "descheduled");
            }
            Err(err) => {
                let err = ControllerError::from(err);
                if !err.is_conflict() {
                    for reference in &references {
                        recorder
                            .record(
                                reference,
                                EventType::Warning,
                                EVENT_DESCHEDULE_FAILED,
                                &format!("Descheduling ({}): {err}", summary.join(", ")),
                            )
                            .await;
                    }
                }
                // Keep the clocks: the next round decides again on fresh data.
                seen.insert(binding.metadata.uid.clone().unwrap_or_default(), tracked);
            }
        }
    }
    *clocks = seen;
    Ok(())
}

fn references(binding: &ResourceBinding) -> [ObjectReference; 2] {
    let meta = &binding.metadata;
    let resource = &binding.spec.resource;
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let rb = resources::resource_binding();
    [
        ObjectReference {
            api_version: Some(rb.api_version),
            kind: Some(rb.kind),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            ..ObjectReference::default()
        },
        ObjectReference {
            api_version: some(&resource.api_version),
            kind: some(&resource.kind),
            name: some(&resource.name),
            namespace: some(&resource.namespace),
            uid: some(&resource.uid),
            ..ObjectReference::default()
        },
    ]
}
