//! The cluster status controller: every period, for every Push cluster, probe the member and publish its status.
//!
//! Per round and cluster: `/readyz` (then `/healthz`) through the Secret's credentials, timed (the time goes to
//! the `cluster.karmada.io/api-latency` annotation the ClusterLatency scheduler plugin reads); when healthy also
//! the version, discovery, nodes and pods. The Ready condition goes through the [`ReadyDebouncer`]. The status is
//! written through the status subresource with the read resourceVersion as precondition; a 409 is left to the
//! next round. Clusters are probed concurrently, each bounded by the probe timeout.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod};
use karmada_api::cluster::{CONDITION_COMPLETE_API_ENABLEMENTS, CONDITION_READY};
use karmada_api::{Cluster, ClusterSyncMode};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{
    WatchStreamExt,
    watcher::{self, watcher},
};
use tokio_util::sync::CancellationToken;

use super::api::{self, ClusterApiError};
use super::discovery::discover;
use super::enablements::api_enablements;
use super::health::{ProbeOutcome, ReadyDebouncer, Thresholds, observed_ready_condition};
use super::metrics::{ClusterMetrics, ClusterNumbers};
use super::summary::{node_summary, resource_summary};
use crate::runtime::MemberClients;
use crate::runtime::metrics::{ReconcileMetrics, ReconcileResult};

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

/// Runs until `cancel` fires: one task per Push cluster, each probing on its own period (so a slow or
/// unreachable member never delays the others). Clusters are watched, so a newly joined cluster is probed
/// as soon as it is created, and the control plane is not asked to list every Cluster periodically.
pub async fn run_status_controller(
    client: kube::Client,
    config: StatusControllerConfig,
    metrics: ClusterMetrics,
    cancel: CancellationToken,
) {
    let members = MemberClients::new(client.clone(), config.probe_timeout);
    let mut running: HashMap<String, CancellationToken> = HashMap::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut events = std::pin::pin!(
        watcher(api::clusters(&client), watcher::Config::default()).default_backoff()
    );
    // Names seen since the watch (re)started listing: what is not among them at InitDone is gone.
    let mut relisted: HashSet<String> = HashSet::new();
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            event = events.next() => event,
        };
        let Some(event) = event else { break };
        let (object, gone) = match event {
            Ok(watcher::Event::Init) => {
                relisted.clear();
                continue;
            }
            Ok(watcher::Event::InitDone) => {
                running.retain(|name, token| {
                    let keep = relisted.contains(name);
                    if !keep {
                        token.cancel();
                        metrics.forget(name);
                    }
                    keep
                });
                continue;
            }
            Ok(watcher::Event::InitApply(object)) => {
                if let Some(name) = &object.metadata.name {
                    relisted.insert(name.clone());
                }
                (object, false)
            }
            Ok(watcher::Event::Apply(object)) => (object, false),
            Ok(watcher::Event::Delete(object)) => (object, true),
            Err(err) => {
                tracing::warn!(%err, "watching clusters");
                continue;
            }
        };
        let Some(name) = object.metadata.name.clone() else {
            continue;
        };
        let wanted = !gone
            && object.metadata.deletion_timestamp.is_none()
            && api::to_cluster(&object).is_ok_and(|c| c.spec.sync_mode == ClusterSyncMode::Push);
        if !wanted {
            if let Some(token) = running.remove(&name) {
                token.cancel();
                metrics.forget(&name);
            }
            continue;
        }
        if running.contains_key(&name) {
            continue;
        }
        let token = cancel.child_token();
        running.insert(name.clone(), token.clone());
        tasks.spawn(cluster_loop(
            client.clone(),
            members.clone(),
            name,
            config,
            metrics.clone(),
            token,
        ));
    }
    for token in running.values() {
        token.cancel();
    }
    while tasks.join_next().await.is_some() {}
}

/// Probes one cluster every period until `cancel` fires or the cluster goes.
async fn cluster_loop(
    client: kube::Client,
    members: MemberClients,
    name: String,
    config: StatusControllerConfig,
    metrics: ClusterMetrics,
    cancel: CancellationToken,
) {
    let mut debouncer = ReadyDebouncer::default();
    let mut ticker = tokio::time::interval(config.update_frequency);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // One loop per cluster, so as many workers as clusters.
    let reconciles = ReconcileMetrics::new("cluster-status-controller", 0);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let cluster = match api::clusters(&client).get_opt(&name).await {
            Ok(Some(object)) => match api::to_cluster(&object) {
                Ok(cluster) => cluster,
                Err(err) => {
                    tracing::warn!(cluster = %name, %err, "reading cluster");
                    continue;
                }
            },
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(cluster = %name, %err, "reading cluster");
                continue;
            }
        };
        let member = members.client(&cluster).await;
        let round = tokio::select! {
            () = cancel.cancelled() => return,
            r = reconciles.observe(
                sync_cluster_status(&client, cluster, member, &config, &mut debouncer, &metrics),
                |r| if r.is_ok() { ReconcileResult::Success } else { ReconcileResult::Error },
            ) => r,
        };
        if let Err(err) = round {
            if err.is_conflict() {
                tracing::debug!(cluster = %name, "status write conflicted; retrying next round");
            } else {
                tracing::warn!(cluster = %name, %err, "syncing cluster status");
            }
        }
    }
}

/// Whether a newly measured latency is worth an annotation write: the first one, or a change of more than half
/// and at least 5 ms. Writing every millisecond of jitter would wake every watcher of Clusters each period.
fn latency_changed(published: Option<&str>, measured_ms: u128) -> bool {
    let Some(old) = published
        .and_then(|v| v.strip_suffix("ms"))
        .and_then(|v| v.parse::<u128>().ok())
    else {
        return true;
    };
    let delta = old.abs_diff(measured_ms);
    delta >= 5 && delta * 2 > old
}

/// How long a probe may wait: the probe timeout, but never longer than the failure threshold (at least a
/// second), since a member silent for that long is failing anyway. With failures counted from the probe's
/// start, a dead member is then marked not Ready at most one period plus the threshold after it died.
fn probe_bound(config: &StatusControllerConfig) -> Duration {
    let threshold = Duration::try_from(config.thresholds.failure).unwrap_or(config.probe_timeout);
    config
        .probe_timeout
        .min(threshold.max(Duration::from_secs(1)))
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

/// `/readyz`, falling back to `/healthz` only when the member answered (an old server without `/readyz`):
/// a member that does not answer at all is not asked twice, so an unreachable one costs one timeout.
async fn probe(member: &kube::Client, timeout: Duration) -> ProbeOutcome {
    let ask = async {
        let mut reachable = false;
        for path in ["/readyz", "/healthz"] {
            let Ok(request) = http::Request::get(path).body(Vec::new()) else {
                continue;
            };
            match member.request_text(request).await {
                Ok(body) if body.trim() == "ok" => return ProbeOutcome::Healthy,
                Ok(_) | Err(kube::Error::Api(_)) => reachable = true,
                Err(_) => break,
            }
        }
        if reachable {
            ProbeOutcome::Unhealthy
        } else {
            ProbeOutcome::Unreachable
        }
    };
    tokio::time::timeout(timeout, ask)
        .await
        .unwrap_or(ProbeOutcome::Unreachable)
}

async fn collect(member: &kube::Client, now: Timestamp) -> Result<Collected, kube::Error> {
    let version = member.apiserver_version().await?.git_version;
    let discovered = discover(member).await;
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
        enablements: Some(api_enablements(&discovered.lists, &discovered.failed, now)),
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

/// How often a status write that lost a race is redone on a freshly read Cluster within one round. Joins,
/// taints and the latency annotation all bump the Cluster while a probe runs; leaving the retry to the next
/// period delayed a new cluster's first Ready by whole periods.
const WRITE_ATTEMPTS: usize = 3;

/// One round for one cluster with a member client the caller built (the controller-manager from the
/// Cluster's Secret; a Pull cluster's agent from its own kubeconfig): probe, collect, publish the status and
/// the latency annotation.
///
/// The observation is stamped with the time the probe started: a member that failed to answer was already
/// failing then, so the failure threshold counts from there and a probe timeout is not added on top.
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
    let started_at = Timestamp::now();
    let outcome = match &member {
        Ok(member) => probe(member, probe_bound(config)).await,
        Err(err) => {
            tracing::warn!(cluster = %name, %err, "no usable credentials");
            ProbeOutcome::Unreachable
        }
    };
    let latency = started.elapsed();
    let collected = match (&member, outcome) {
        (Ok(member), ProbeOutcome::Healthy) => collect(member, started_at).await.ok(),
        _ => None,
    };
    let round = Round {
        outcome,
        observed_at: started_at,
        collected,
    };
    let mut cluster = cluster;
    let mut attempt = 1;
    loop {
        match publish(client, &cluster, &round, config, debouncer, metrics).await {
            Ok(()) => break,
            Err(err) if err.is_conflict() && attempt < WRITE_ATTEMPTS => {
                attempt += 1;
                let Some(object) = api::clusters(client).get_opt(&name).await? else {
                    return Ok(());
                };
                cluster = api::to_cluster(&object)?;
            }
            Err(err) => return Err(err),
        }
    }
    if outcome != ProbeOutcome::Unreachable {
        let value = format!("{}ms", latency.as_millis());
        let published = cluster
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_API_LATENCY))
            .map(String::as_str);
        if latency_changed(published, latency.as_millis()) {
            let patch =
                serde_json::json!({"metadata": {"annotations": {ANNOTATION_API_LATENCY: value}}});
            api::clusters(client)
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    metrics.observe_sync_status(&name, started.elapsed());
    Ok(())
}

/// What one round observed, independent of the Cluster object it is published onto.
struct Round {
    outcome: ProbeOutcome,
    /// When the probe started.
    observed_at: Timestamp,
    collected: Option<Collected>,
}

/// Writes the status `round` implies onto `cluster` (read with its resourceVersion), if it differs.
async fn publish(
    client: &kube::Client,
    cluster: &Cluster,
    round: &Round,
    config: &StatusControllerConfig,
    debouncer: &mut ReadyDebouncer,
    metrics: &ClusterMetrics,
) -> Result<(), ClusterApiError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let generation = cluster.metadata.generation.unwrap_or(0);
    let observed = observed_ready_condition(round.outcome, generation, round.observed_at);
    let published_ready = cluster.ready_condition().cloned();
    let ready = debouncer.adjust(
        published_ready.as_ref(),
        observed,
        config.thresholds,
        Timestamp::now(),
    );
    let ready_true = ready.status == "True";

    let mut status = cluster.status.clone().unwrap_or_default();
    upsert(&mut status.conditions, ready);
    if let Some(c) = &round.collected {
        status.kubernetes_version = c.version.clone();
        if let Some((enablements, condition)) = &c.enablements {
            status.api_enablements = enablements.clone();
            upsert(&mut status.conditions, condition.clone());
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
    Ok(())
}

#[cfg(test)]
mod latency_tests {
    use super::{StatusControllerConfig, Thresholds, latency_changed, probe_bound};
    use jiff::SignedDuration;
    use std::time::Duration;

    #[test]
    fn a_probe_never_waits_longer_than_the_failure_threshold() {
        // (probe timeout s, failure threshold s, bound s)
        let table = [(5, 30, 5), (5, 2, 2), (5, 0, 1), (1, 0, 1), (5, 5, 5)];
        for (timeout, failure, want) in table {
            let config = StatusControllerConfig {
                update_frequency: Duration::from_secs(10),
                thresholds: Thresholds {
                    success: SignedDuration::from_secs(30),
                    failure: SignedDuration::from_secs(failure),
                },
                probe_timeout: Duration::from_secs(timeout),
            };
            assert_eq!(
                probe_bound(&config),
                Duration::from_secs(want),
                "{timeout} {failure}"
            );
        }
    }

    #[test]
    fn latency_writes_only_on_real_changes() {
        let cases = [
            (None, 12, true, "first measurement"),
            (Some("garbage"), 12, true, "unreadable annotation"),
            (Some("12ms"), 13, false, "jitter"),
            (Some("12ms"), 17, false, "under half"),
            (Some("12ms"), 19, true, "over half and 5 ms"),
            (Some("2ms"), 5, false, "under 5 ms"),
            (Some("100ms"), 200, true, "doubled"),
            (Some("100ms"), 40, true, "fell by more than half"),
        ];
        for (published, measured, expected, why) in cases {
            assert_eq!(latency_changed(published, measured), expected, "{why}");
        }
    }
}
