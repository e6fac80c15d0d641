//! The cluster controller: keeps each Cluster's finalizer, execution namespace and health taints.
//!
//! Level-triggered: every period it lists the Clusters and reconciles each one.
//! - live cluster: finalizer `karmada.io/cluster-controller`; namespace `karmada-es-<name>` labelled
//!   `karmada.io/system: "true"`; taints from the Ready condition ([`super::taints`]).
//! - Pull cluster: Ready=Unknown once its agent renewed neither the status nor the Lease
//!   `karmada-cluster/<name>` within the grace period ([`super::health::pull_monitor_condition`]); the taint
//!   follows on the next round.
//! - deleting cluster: delete `karmada-es-<name>` (and with it the cluster's Works) and wait until it is gone,
//!   then drop the finalizer so the Cluster goes.
//!
//! Writes carry the read resourceVersion; a 409 is retried on the next round.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use karmada_api::cluster::FINALIZER_CLUSTER_CONTROLLER;
use karmada_api::{Cluster, ClusterSyncMode};
use kube::api::{Api, DeleteParams, PostParams};
use tokio_util::sync::CancellationToken;

use super::api::{self, ClusterApiError};
use super::health::{MonitorGrace, pull_monitor_condition};
use super::metrics::ClusterMetrics;
use super::taints::desired_taints;
use crate::keys::{LABEL_KARMADA_SYSTEM, MANAGED_VALUE};
use crate::names::execution_namespace;
use crate::runtime::metrics::{ReconcileMetrics, ReconcileResult};

/// Namespace of the Pull clusters' Leases.
pub const LEASE_NAMESPACE: &str = "karmada-cluster";

/// Settings of the cluster controller.
#[derive(Clone, Copy, Debug)]
pub struct ClusterControllerConfig {
    /// `--cluster-monitor-period`: how often every Cluster is reconciled.
    pub period: Duration,
    /// `--cluster-monitor-grace-period` / `--cluster-startup-grace-period` (Pull clusters).
    pub grace: MonitorGrace,
}

/// Runs until `cancel` fires, reconciling every `period` (default grace periods).
pub async fn run_cluster_controller(
    client: kube::Client,
    period: Duration,
    cancel: CancellationToken,
) {
    let config = ClusterControllerConfig {
        period,
        grace: MonitorGrace::default(),
    };
    run_cluster_controller_with(client, config, ClusterMetrics::default(), cancel).await;
}

/// Runs until `cancel` fires; every round publishes the Clusters' taints in `metrics`.
pub async fn run_cluster_controller_with(
    client: kube::Client,
    config: ClusterControllerConfig,
    metrics: ClusterMetrics,
    cancel: CancellationToken,
) {
    let mut ticker = tokio::time::interval(config.period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let reconciles = ReconcileMetrics::new("cluster-controller", 1);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let clusters = match api::list_clusters(&client).await {
            Ok(c) => c,
            Err(err) => {
                tracing::warn!(%err, "listing clusters");
                continue;
            }
        };
        metrics.record_taints(clusters.iter().map(|cluster| {
            let name = cluster.metadata.name.as_deref().unwrap_or_default();
            let taints = cluster.spec.taints.iter();
            (name, taints.map(|t| (t.key.as_str(), t.effect.as_str())))
        }));
        for cluster in clusters {
            let name = cluster.metadata.name.clone().unwrap_or_default();
            let result = tokio::select! {
                () = cancel.cancelled() => return,
                r = reconciles.observe(reconcile_with(&client, cluster, config.grace), |r| {
                    if r.is_ok() { ReconcileResult::Success } else { ReconcileResult::Error }
                }) => r,
            };
            match result {
                Err(err) if err.is_conflict() => {
                    tracing::debug!(cluster = %name, "conflict; retrying next round")
                }
                Err(err) => tracing::warn!(cluster = %name, %err, "reconciling cluster"),
                Ok(()) => {}
            }
        }
    }
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

/// One reconcile of one Cluster (default grace periods).
pub async fn reconcile(client: &kube::Client, cluster: Cluster) -> Result<(), ClusterApiError> {
    reconcile_with(client, cluster, MonitorGrace::default()).await
}

/// Ready=Unknown for a Pull cluster whose agent went silent. True when the status was written
/// (the Cluster's resourceVersion moved on: the rest waits for the next round).
async fn monitor_pull(
    client: &kube::Client,
    cluster: &Cluster,
    grace: MonitorGrace,
) -> Result<bool, ClusterApiError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let renewed = leases
        .get_opt(&name)
        .await?
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.renew_time)
        .map(|t| t.0);
    let created = cluster
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or_else(Timestamp::now, |t| t.0);
    let Some(unknown) = pull_monitor_condition(
        cluster.ready_condition(),
        renewed,
        created,
        cluster.metadata.generation.unwrap_or(0),
        grace,
        Timestamp::now(),
    ) else {
        return Ok(false);
    };
    tracing::info!(cluster = %name, reason = %unknown.reason, "agent silent; Ready=Unknown");
    let mut updated = cluster.clone();
    let status = updated.status.get_or_insert_with(Default::default);
    status.conditions.retain(|c| c.type_ != unknown.type_);
    status.conditions.insert(0, unknown);
    let body = api::to_object(&updated)?;
    api::clusters(client)
        .replace_status(&name, &PostParams::default(), &body)
        .await?;
    Ok(true)
}

/// One reconcile of one Cluster.
pub async fn reconcile_with(
    client: &kube::Client,
    cluster: Cluster,
    grace: MonitorGrace,
) -> Result<(), ClusterApiError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let es = execution_namespace(&name);
    let finalizers = cluster.metadata.finalizers.clone().unwrap_or_default();
    let has_finalizer = finalizers.iter().any(|f| f == FINALIZER_CLUSTER_CONTROLLER);

    if cluster.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(());
        }
        match namespaces.get_opt(&es).await? {
            Some(ns) => {
                if ns.metadata.deletion_timestamp.is_none() {
                    match namespaces.delete(&es, &DeleteParams::background()).await {
                        Ok(_) => {
                            tracing::info!(cluster = %name, namespace = %es, "deleting execution namespace")
                        }
                        Err(e) if is_not_found(&e) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                // Wait for the namespace (and its Works) to be gone before letting the Cluster go.
                return Ok(());
            }
            None => {
                let mut updated = cluster.clone();
                updated.metadata.finalizers = Some(
                    finalizers
                        .into_iter()
                        .filter(|f| f != FINALIZER_CLUSTER_CONTROLLER)
                        .collect(),
                );
                let body = api::to_object(&updated)?;
                api::clusters(client)
                    .replace(&name, &PostParams::default(), &body)
                    .await?;
                tracing::info!(cluster = %name, "execution namespace gone; finalizer removed");
                return Ok(());
            }
        }
    }

    if namespaces.get_opt(&es).await?.is_none() {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(es.clone()),
                labels: Some(BTreeMap::from([(
                    LABEL_KARMADA_SYSTEM.to_string(),
                    MANAGED_VALUE.to_string(),
                )])),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => {
                tracing::info!(cluster = %name, namespace = %es, "created execution namespace")
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }

    if cluster.spec.sync_mode == ClusterSyncMode::Pull
        && monitor_pull(client, &cluster, grace).await?
    {
        return Ok(());
    }

    let taints = desired_taints(
        &cluster.spec.taints,
        cluster.ready_condition(),
        Time(Timestamp::now()),
    );
    if has_finalizer && taints.is_none() {
        return Ok(());
    }
    let mut updated = cluster.clone();
    if !has_finalizer {
        updated
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(FINALIZER_CLUSTER_CONTROLLER.to_string());
    }
    if let Some(taints) = taints {
        updated.spec.taints = taints;
    }
    let body = api::to_object(&updated)?;
    api::clusters(client)
        .replace(&name, &PostParams::default(), &body)
        .await?;
    Ok(())
}
