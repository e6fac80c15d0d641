//! The cluster status controller: every period, for every Push cluster, probe the member and publish its status.
//!
//! Per round and cluster: `/readyz` (then `/healthz`) through the Secret's credentials, timed (the time goes to
//! the `cluster.karmada.io/api-latency` annotation the ClusterLatency scheduler plugin reads); when healthy also
//! the version, discovery, nodes and pods. The Ready condition goes through the [`ReadyDebouncer`]. The status is
//! written through the status subresource with the read resourceVersion as precondition; a 409 is left to the
//! next round. Clusters are probed concurrently, each bounded by the probe timeout.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList, APIVersions};
use karmada_api::cluster::{CONDITION_COMPLETE_API_ENABLEMENTS, CONDITION_READY};
use karmada_api::{Cluster, ClusterSyncMode};
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio_util::sync::CancellationToken;

use super::api::{self, ClusterApiError};
use super::enablements::api_enablements;
use super::health::{ProbeOutcome, ReadyDebouncer, Thresholds, observed_ready_condition};
use super::metrics::{ClusterMetrics, ClusterNumbers};
use super::summary::{node_summary, resource_summary};

/// The annotation the measured API latency is written to (milliseconds, e.g. `"12ms"`).
pub const ANNOTATION_API_LATENCY: &str = "cluster.karmada.io/api-latency";

/// Settings of the status controller.
#[derive(Clone, Copy, Debug)]
pub struct StatusControllerConfig {
    /// `--cluster-status-update-frequency`.
    pub update_frequency: Duration,
    pub thresholds: Thresholds,
    /// Bound on each request to a member.
    pub probe_timeout: Duration,
}

impl Default for StatusControllerConfig {
    fn default() -> Self {
        Self {
            update_frequency: Duration::from_secs(10),
            thresholds: Thresholds {
                success: SignedDuration::from_secs(30),
                failure: SignedDuration::from_secs(30),
            },
            probe_timeout: Duration::from_secs(5),
        }
    }
}

/// Runs until `cancel` fires.
pub async fn run_status_controller(
    client: kube::Client,
    config: StatusControllerConfig,
    metrics: ClusterMetrics,
    cancel: CancellationToken,
) {
    let mut debouncers: HashMap<String, ReadyDebouncer> = HashMap::new();
    let mut ticker = tokio::time::interval(config.update_frequency);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
        let live: Vec<String> = clusters
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        for gone in debouncers
            .keys()
            .filter(|k| !live.contains(k))
            .cloned()
            .collect::<Vec<_>>()
        {
            debouncers.remove(&gone);
            metrics.forget(&gone);
        }
        let rounds = clusters
            .into_iter()
            .filter(|c| c.spec.sync_mode == ClusterSyncMode::Push && c.metadata.deletion_timestamp.is_none())
            .map(|cluster| {
                let name = cluster.metadata.name.clone().unwrap_or_default();
                let debouncer = debouncers.remove(&name).unwrap_or_default();
                let client = client.clone();
                let metrics = metrics.clone();
                async move {
                    let mut debouncer = debouncer;
                    if let Err(err) = sync_one(&client, cluster, &config, &mut debouncer, &metrics).await {
                        if err.is_conflict() {
                            tracing::debug!(cluster = %name, "status write conflicted; retrying next round");
                        } else {
                            tracing::warn!(cluster = %name, %err, "syncing cluster status");
                        }
                    }
                    (name, debouncer)
                }
            });
        let results = tokio::select! {
            () = cancel.cancelled() => return,
            r = futures::future::join_all(rounds) => r,
        };
        debouncers.extend(results);
    }
}

/// What one round learnt from a member.
struct Collected {
    version: String,
    enablements: Option<(
        Vec<karmada_api::cluster::ApiEnablement>,
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
    )>,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
}

async fn probe(member: &kube::Client) -> ProbeOutcome {
    let mut reachable = false;
    for path in ["/readyz", "/healthz"] {
        let Ok(request) = http::Request::get(path).body(Vec::new()) else {
            continue;
        };
        match member.request_text(request).await {
            Ok(body) if body.trim() == "ok" => return ProbeOutcome::Healthy,
            Ok(_) | Err(kube::Error::Api(_)) => reachable = true,
            Err(_) => {}
        }
    }
    if reachable {
        ProbeOutcome::Unhealthy
    } else {
        ProbeOutcome::Unreachable
    }
}

async fn get_json<T: serde::de::DeserializeOwned>(
    member: &kube::Client,
    path: &str,
) -> Result<T, kube::Error> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    member.request(request).await
}

async fn discover(member: &kube::Client) -> (Vec<APIResourceList>, Vec<String>) {
    let mut group_versions = Vec::new();
    if let Ok(core) = get_json::<APIVersions>(member, "/api").await {
        group_versions.extend(core.versions);
    }
    if let Ok(groups) = get_json::<APIGroupList>(member, "/apis").await {
        group_versions.extend(
            groups
                .groups
                .into_iter()
                .flat_map(|g| g.versions.into_iter().map(|v| v.group_version)),
        );
    }
    let mut lists = Vec::new();
    let mut failed = Vec::new();
    for gv in group_versions {
        let path = if gv.contains('/') {
            format!("/apis/{gv}")
        } else {
            format!("/api/{gv}")
        };
        match get_json::<APIResourceList>(member, &path).await {
            Ok(list) => lists.push(list),
            Err(_) => failed.push(gv),
        }
    }
    (lists, failed)
}

async fn collect(member: &kube::Client, now: Timestamp) -> Result<Collected, kube::Error> {
    let version = member.apiserver_version().await?.git_version;
    let (lists, failed) = discover(member).await;
    let nodes = Api::<Node>::all(member.clone())
        .list(&Default::default())
        .await?
        .items;
    let pods = Api::<Pod>::all(member.clone())
        .list(&Default::default())
        .await?
        .items;
    Ok(Collected {
        version,
        enablements: Some(api_enablements(&lists, &failed, now)),
        nodes,
        pods,
    })
}

fn numbers(ready: bool, status: &karmada_api::ClusterStatus) -> ClusterNumbers {
    let q = |list: Option<&karmada_api::ResourceList>, key: &str| {
        list.and_then(|l| l.get(key))
            .and_then(|v| apimachinery::Quantity::parse(&v.0).ok())
            .map(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    let summary = status.resource_summary.as_ref();
    let allocatable = summary.map(|s| &s.allocatable);
    let allocated = summary.map(|s| &s.allocated);
    #[allow(clippy::cast_possible_truncation)]
    ClusterNumbers {
        ready,
        nodes: status
            .node_summary
            .as_ref()
            .map_or(0, |n| i64::from(n.total_num)),
        ready_nodes: status
            .node_summary
            .as_ref()
            .map_or(0, |n| i64::from(n.ready_num)),
        cpu_allocatable: q(allocatable, "cpu"),
        memory_allocatable_bytes: q(allocatable, "memory"),
        pod_allocatable: q(allocatable, "pods") as i64,
        cpu_allocated: q(allocated, "cpu"),
        memory_allocated_bytes: q(allocated, "memory"),
        pod_allocated: q(allocated, "pods") as i64,
    }
}

fn upsert(
    conditions: &mut Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    mut c: k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
) {
    match conditions.iter_mut().find(|x| x.type_ == c.type_) {
        Some(existing) => {
            if existing.status == c.status {
                c.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = c;
        }
        None => conditions.push(c),
    }
}

async fn sync_one(
    client: &kube::Client,
    cluster: Cluster,
    config: &StatusControllerConfig,
    debouncer: &mut ReadyDebouncer,
    metrics: &ClusterMetrics,
) -> Result<(), ClusterApiError> {
    let member = api::member_client(client, &cluster, config.probe_timeout).await;
    sync_cluster_status(client, cluster, member, config, debouncer, metrics).await
}

/// One round for one cluster with a member client the caller built (the controller-manager from the
/// Cluster's Secret; a Pull cluster's agent from its own kubeconfig): probe, collect, publish the status and
/// the latency annotation.
pub async fn sync_cluster_status<E: std::fmt::Display>(
    client: &kube::Client,
    cluster: Cluster,
    member: Result<kube::Client, E>,
    config: &StatusControllerConfig,
    debouncer: &mut ReadyDebouncer,
    metrics: &ClusterMetrics,
) -> Result<(), ClusterApiError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let started = Instant::now();
    let outcome = match &member {
        Ok(member) => probe(member).await,
        Err(err) => {
            tracing::warn!(cluster = %name, %err, "no usable credentials");
            ProbeOutcome::Unreachable
        }
    };
    let latency = started.elapsed();
    let now = Timestamp::now();
    let collected = match (&member, outcome) {
        (Ok(member), ProbeOutcome::Healthy) => collect(member, now).await.ok(),
        _ => None,
    };
    let generation = cluster.metadata.generation.unwrap_or(0);
    let observed = observed_ready_condition(outcome, generation, now);
    let published_ready = cluster.ready_condition().cloned();
    let ready = debouncer.adjust(published_ready.as_ref(), observed, config.thresholds, now);
    let ready_true = ready.status == "True";

    let mut status = cluster.status.clone().unwrap_or_default();
    upsert(&mut status.conditions, ready);
    if let Some(c) = collected {
        status.kubernetes_version = c.version;
        if let Some((enablements, condition)) = c.enablements {
            status.api_enablements = enablements;
            upsert(&mut status.conditions, condition);
        }
        status.node_summary = Some(node_summary(&c.nodes));
        status.resource_summary = Some(resource_summary(
            &c.nodes,
            &c.pods,
            &cluster.spec.resource_models,
        ));
    }
    status.conditions.sort_by_key(|c| match c.type_.as_str() {
        CONDITION_READY => 0,
        CONDITION_COMPLETE_API_ENABLEMENTS => 1,
        _ => 2,
    });
    if ready_true {
        metrics.record(&name, &numbers(true, &status));
    } else {
        metrics.record_ready(&name, false);
    }
    if cluster.status.as_ref() != Some(&status) {
        let mut updated = cluster.clone();
        updated.status = Some(status);
        let body = api::to_object(&updated)?;
        api::clusters(client)
            .replace_status(&name, &PostParams::default(), &body)
            .await?;
    }
    if outcome != ProbeOutcome::Unreachable {
        let value = format!("{}ms", latency.as_millis());
        let unchanged = cluster
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_API_LATENCY))
            == Some(&value);
        if !unchanged {
            let patch =
                serde_json::json!({"metadata": {"annotations": {ANNOTATION_API_LATENCY: value}}});
            api::clusters(client)
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    Ok(())
}
