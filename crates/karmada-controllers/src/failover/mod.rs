//! Failover, eviction and their safety (docs/karmada.md, "Cluster health and taints" to "Application failover";
//! issue 7): cluster failover (the taint manager over NoExecute taints, and ClusterTaintPolicy that sets them from
//! cluster conditions), application failover, and the graceful-eviction controller that ends eviction tasks.
//!
//! Pure cores (no I/O; time passed in): [`toleration`] (which clusters to evict and when), [`tasks`] (adding an
//! eviction task and each task's fate), [`app_health`] (unhealthy long enough?), [`preservation`]
//! (statePreservation), [`budget`] (rate limit and cluster budget), [`taint_rules`] (conditions → taints),
//! [`safety`] (the invariants, as functions the tests check every transition with), [`purge`] (legacy
//! purge-mode spellings). Runtime: [`taint_manager`], [`graceful_eviction`], [`application`],
//! [`cluster_taint_policy`], started together by [`run`].
//!
//! Safety beyond Karmada, by construction: an old copy is removed only once replacements are scheduled for the
//! current spec, cover the policy and are Healthy (or, after the grace period, when the old copy is itself
//! Unhealthy) — never the last healthy copy, unless purge mode Directly was asked for; nothing is removed while
//! its member is unreachable (the task, and so the Work, stays until it can be reached); evictions are rate
//! limited and budgeted (at most N clusters per interval); a cluster that recovers before its replicas were
//! placed elsewhere gets them back and its task goes; tasks for clusters that are gone or targets again are
//! removed.

pub mod app_health;
pub mod application;
pub mod budget;
pub mod cluster_taint_policy;
mod driver;
pub use driver::ANNOTATION_EVICTION_WINDOW;
pub mod graceful_eviction;
pub mod metrics;
pub mod preservation;
pub mod purge;
pub mod replicas;
pub mod safety;
pub mod taint_manager;
pub mod taint_rules;
pub mod tasks;
pub mod toleration;

#[cfg(test)]
mod sim_tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use karmada_api::policy::PurgeMode;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

pub use driver::COMPONENT;
pub use metrics::FailoverMetrics;

use crate::runtime::{Informers, resources};

/// The eviction budget's defaults: at most this many distinct clusters evicted from per interval. The dashboard
/// reads them to show when a window recorded on a Cluster ([`ANNOTATION_EVICTION_WINDOW`]) closes.
pub const DEFAULT_EVICTION_BUDGET_CLUSTERS: usize = 2;
pub const DEFAULT_EVICTION_BUDGET_INTERVAL: Duration = Duration::from_secs(300);

/// Cluster wake-ups buffered per failover controller; one that falls further behind wakes every binding.
const WAKE_CAPACITY: usize = 256;

/// How soon an eviction that failed (a state-preservation rule found nothing yet) is tried again: the status it
/// reads does not wake the failover controllers (only health does), so it is polled.
pub(crate) const RETRY_FAILED_EVICTION: Duration = Duration::from_secs(5);

/// Event reasons, as Karmada names them.
pub const EVENT_EVICT_SUCCEED: &str = "EvictWorkloadFromClusterSucceed";
pub const EVENT_EVICT_FAILED: &str = "EvictWorkloadFromClusterFailed";
/// Ours: a task removed by the graceful-eviction controller, and an eviction undone because the cluster
/// recovered first.
pub const EVENT_TASK_REMOVED: &str = "GracefulEvictionTaskRemoved";
pub const EVENT_EVICTION_CANCELLED: &str = "EvictionCancelled";

/// Settings of the failover controllers.
#[derive(Clone)]
pub struct FailoverConfig {
    /// `--enable-taint-manager` and `--enable-no-execute-taint-eviction` together: evict on NoExecute taints.
    /// Off by default, as in Karmada.
    pub taint_eviction: bool,
    /// Run application failover (acts only on bindings whose policy asks for it).
    pub application_failover: bool,
    /// Run the graceful-eviction controller (without it tasks are never removed).
    pub graceful_eviction: bool,
    /// Run the ClusterTaintPolicy controller.
    pub cluster_taint_policy: bool,
    /// Create the default ClusterTaintPolicy (Ready False/Unknown → `not-ready:NoExecute`) when absent.
    pub default_taint_policy: bool,
    /// Purge mode for cluster failover when the policy does not say (`Gracefully`).
    pub default_purge_mode: PurgeMode,
    /// `--graceful-eviction-timeout` (10 minutes).
    pub graceful_eviction_timeout: Duration,
    /// Evictions per second and burst across all bindings (Karmada's `--resource-eviction-rate` is 0.5/s; ours
    /// defaults higher because the cluster budget is the guard against mass eviction: 500 workloads must move
    /// within seconds of their cluster failing).
    pub eviction_rate: f64,
    pub eviction_burst: u32,
    /// At most this many distinct clusters evicted from per `eviction_budget_interval`.
    pub eviction_budget_clusters: usize,
    pub eviction_budget_interval: Duration,
    /// How often a binding with open tasks is looked at without any change (a safety net).
    pub resync: Duration,
    /// Concurrent reconciles per controller.
    pub concurrency: u16,
    /// The process's shared watches; every failover controller reads the (Cluster)ResourceBindings through
    /// them, so the three controllers share one watch and one cache per binding kind.
    pub informers: Informers,
}

impl std::fmt::Debug for FailoverConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailoverConfig")
            .field("taint_eviction", &self.taint_eviction)
            .field("application_failover", &self.application_failover)
            .field("graceful_eviction", &self.graceful_eviction)
            .field("cluster_taint_policy", &self.cluster_taint_policy)
            .field("default_taint_policy", &self.default_taint_policy)
            .field("default_purge_mode", &self.default_purge_mode)
            .field("graceful_eviction_timeout", &self.graceful_eviction_timeout)
            .field("eviction_rate", &self.eviction_rate)
            .field("eviction_burst", &self.eviction_burst)
            .field("eviction_budget_clusters", &self.eviction_budget_clusters)
            .field("eviction_budget_interval", &self.eviction_budget_interval)
            .field("resync", &self.resync)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

impl Default for FailoverConfig {
    fn default() -> Self {
        Self {
            taint_eviction: false,
            application_failover: true,
            graceful_eviction: true,
            cluster_taint_policy: true,
            default_taint_policy: false,
            default_purge_mode: PurgeMode::Gracefully,
            graceful_eviction_timeout: Duration::from_secs(600),
            eviction_rate: 100.0,
            eviction_burst: 500,
            eviction_budget_clusters: DEFAULT_EVICTION_BUDGET_CLUSTERS,
            eviction_budget_interval: DEFAULT_EVICTION_BUDGET_INTERVAL,
            // Every reason a task is kept has an event that ends it (a Cluster's Ready or taints, the copies'
            // health, a user's edit) or a deadline; this only backs those up, and at 500 bindings a short one
            // is a steady stream of reconciles that change nothing.
            resync: Duration::from_secs(300),
            // Evicting is a few API calls (the binding, two events); 500 bindings must move in seconds.
            concurrency: 16,
            informers: Informers::default(),
        }
    }
}

impl FailoverConfig {
    /// Everything on: the one switch that turns the failover chain on — a member unreachable beyond the cluster
    /// status controller's failure threshold is tainted `not-ready:NoExecute` by the default ClusterTaintPolicy,
    /// the taint manager evicts bindings that do not tolerate it, the scheduler places their replicas elsewhere
    /// and the graceful-eviction controller removes the old copies once that is safe. (Karmada hides this behind
    /// the Failover feature gate, `--enable-no-execute-taint-eviction` and a policy the user writes.)
    pub fn enabled() -> Self {
        Self {
            taint_eviction: true,
            default_taint_policy: true,
            ..Self::default()
        }
    }
}

/// Runs the enabled failover controllers until `cancel` fires. Register `metrics` with
/// [`FailoverMetrics::register`] in the registry the process serves.
pub async fn run(
    client: kube::Client,
    config: FailoverConfig,
    metrics: FailoverMetrics,
    cancel: CancellationToken,
) {
    let writer: Writer<kube::api::DynamicObject> = Writer::new(resources::cluster());
    let clusters = writer.as_reader();
    let (wake, _) = tokio::sync::broadcast::channel(WAKE_CAPACITY);
    let shared = Arc::new(driver::Shared::new(
        client.clone(),
        config.clone(),
        metrics,
        clusters.clone(),
        wake.clone(),
    ));
    let mut tasks = tokio::task::JoinSet::new();
    let cluster_api = resources::all(&client, &resources::cluster());
    let reflect_cancel = cancel.clone();
    tasks.spawn(async move {
        // The reflector updates the cache before it yields the event, so the wake-up sent here is seen by
        // reconciles that read the change.
        let stream = reflector::reflector(writer, watcher(cluster_api, watcher::Config::default()))
            .default_backoff();
        futures::pin_mut!(stream);
        // Cluster status is rewritten often (summaries, the latency annotation); only what failover reads wakes
        // the bindings placed there.
        let mut seen: HashMap<String, String> = HashMap::new();
        loop {
            let event = tokio::select! {
                () = reflect_cancel.cancelled() => return,
                next = stream.next() => match next {
                    None => return,
                    Some(Ok(event)) => event,
                    Some(Err(_)) => continue,
                },
            };
            match event {
                watcher::Event::Apply(cluster) | watcher::Event::InitApply(cluster) => {
                    let name = cluster.metadata.name.clone().unwrap_or_default();
                    let fingerprint = driver::failover_relevant(&cluster);
                    if seen.insert(name.clone(), fingerprint.clone()) != Some(fingerprint) {
                        // No receiver yet (the first list) is fine: controllers start with every binding.
                        let _ = wake.send(name);
                    }
                }
                watcher::Event::Delete(cluster) => {
                    let name = cluster.metadata.name.clone().unwrap_or_default();
                    seen.remove(&name);
                    let _ = wake.send(name);
                }
                watcher::Event::Init | watcher::Event::InitDone => {}
            }
        }
    });
    tokio::select! {
        () = cancel.cancelled() => {}
        _ = clusters.wait_until_ready() => {
            for cluster_scoped in [false, true] {
                if config.taint_eviction {
                    tasks.spawn(driver::run_binding_controller(
                        shared.clone(), taint_manager::NAME, cluster_scoped,
                        taint_manager::reconcile, cancel.clone(),
                    ));
                }
                if config.application_failover {
                    tasks.spawn(driver::run_binding_controller(
                        shared.clone(), application::NAME, cluster_scoped,
                        application::reconcile, cancel.clone(),
                    ));
                }
                if config.graceful_eviction {
                    tasks.spawn(driver::run_binding_controller(
                        shared.clone(), graceful_eviction::NAME, cluster_scoped,
                        graceful_eviction::reconcile, cancel.clone(),
                    ));
                }
            }
            if config.cluster_taint_policy {
                if config.default_taint_policy
                    && let Err(err) = cluster_taint_policy::ensure_default_policy(&client).await
                {
                    tracing::warn!(%err, "creating the default ClusterTaintPolicy");
                }
                tasks.spawn(cluster_taint_policy::run(client.clone(), cancel.clone()));
            }
            tracing::info!(?config, "failover controllers started");
        }
    }
    cancel.cancelled().await;
    while tasks.join_next().await.is_some() {}
}
