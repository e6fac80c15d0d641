//! The execution controller: applies each Work's manifests to its member cluster
//! (docs/karmada.md, "Execution controller").
//!
//! Push mode runs it in the controller-manager for every Push cluster; Pull mode runs it in an agent for
//! exactly one cluster — [`ServedClusters`] says which, and the member's client always comes through
//! [`crate::runtime::MemberClients`]. [`run_with_status`] runs it together with the work status controller
//! ([`crate::status::work_status`]), which hands it the Works whose member objects drifted and to which it hands
//! its successful Applied conditions ([`handoff`]), so a Work's first status is one write.
//!
//! Pure cores: [`conditions`] (Applied and Dispatching), [`drift`] (does a member object already say what the
//! manifest says). Runtime: [`discovery`] (a manifest's resource in a member), [`apply`] (one manifest against
//! one member), [`controller`] (the watch-driven loop), [`recheck`] (which Works read their member back),
//! [`metrics`]; [`queue`] holds the plumbing the propagation controllers share (watch-fed caches, requeue
//! channels, retry backoff).

pub mod apply;
pub mod conditions;
pub mod controller;
pub mod discovery;
pub mod drift;
pub mod handoff;
pub mod metrics;
pub mod queue;
pub mod recheck;

use karmada_api::{Cluster, ClusterSyncMode};
use kube::runtime::watcher;

pub use controller::{ExecutionConfig, run};
pub use handoff::{ConditionHandoff, HandoffReceiver, condition_handoff};
pub use metrics::ExecutionMetrics;
pub use queue::{WorkRequeue, WorkRequeueReceiver, work_requeue};

use crate::names::execution_namespace;
use crate::runtime::{RawObject, resources};
use crate::status::work_status::{self, WorkStatusConfig};

/// The execution and work status controllers for `config.served`, wired together (drift the work status
/// controller sees is re-applied by execution, and execution's Applied condition is written with the manifest
/// statuses, [`handoff`]): what the controller-manager (Push) and an agent (one Pull cluster) run. Returns when
/// `cancel` fires.
pub async fn run_with_status(
    client: kube::Client,
    config: ExecutionConfig,
    metrics: ExecutionMetrics,
    cancel: tokio_util::sync::CancellationToken,
) {
    run_chosen(client, config, metrics, (true, true), cancel).await;
}

/// Like [`run_with_status`], running only the controllers chosen as `(execution, work status)` (the
/// controller-manager's `--controllers`).
pub async fn run_chosen(
    client: kube::Client,
    mut config: ExecutionConfig,
    metrics: ExecutionMetrics,
    (execution, status_on): (bool, bool),
    cancel: tokio_util::sync::CancellationToken,
) {
    let (requeue, receiver) = work_requeue();
    // The Applied condition is handed over only when the work status controller runs to write it.
    let handed = if execution && status_on {
        let (handoff, handed) = condition_handoff();
        config.handoff = Some(handoff);
        Some(handed)
    } else {
        config.handoff = None;
        None
    };
    let status = WorkStatusConfig {
        served: config.served.clone(),
        members: config.members.clone(),
        interpreter: config.interpreter.clone(),
        concurrency: config.concurrency,
        // The same registry: both controllers read one Work watch and one cache.
        informers: config.informers.clone(),
    };
    let execution_client = client.clone();
    let execution_cancel = cancel.clone();
    tokio::join!(
        async move {
            if execution {
                run(
                    execution_client,
                    config,
                    metrics,
                    receiver,
                    execution_cancel,
                )
                .await;
            }
        },
        async move {
            if status_on {
                work_status::run_with_handoff(client, status, requeue, handed, cancel).await;
            }
        },
    );
}

/// The member clusters a controller instance acts for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServedClusters {
    /// Every cluster in Push mode (the controller-manager).
    Push,
    /// Exactly this cluster, whatever its mode (an agent in Pull mode, or a test).
    Only(String),
}

impl ServedClusters {
    /// Whether Works of `cluster` are this instance's.
    pub fn serves(&self, cluster: &Cluster) -> bool {
        match self {
            ServedClusters::Push => cluster.spec.sync_mode == ClusterSyncMode::Push,
            ServedClusters::Only(name) => cluster.metadata.name.as_deref() == Some(name.as_str()),
        }
    }

    /// Whether Works of the cluster named `name` may be this instance's (before its Cluster is known).
    pub fn may_serve(&self, name: &str) -> bool {
        match self {
            ServedClusters::Push => true,
            ServedClusters::Only(only) => only == name,
        }
    }

    /// The Works this instance watches: every namespace, or the one execution namespace.
    pub fn works_api(&self, client: &kube::Client) -> kube::Api<RawObject> {
        match self {
            ServedClusters::Push => resources::all_raw(client, &resources::work()),
            ServedClusters::Only(name) => {
                resources::namespaced_raw(client, &resources::work(), &execution_namespace(name))
            }
        }
    }

    /// The Clusters this instance watches (an agent may only read its own).
    pub fn clusters_config(&self) -> watcher::Config {
        match self {
            ServedClusters::Push => watcher::Config::default(),
            ServedClusters::Only(name) => {
                watcher::Config::default().fields(&format!("metadata.name={name}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, mode: ClusterSyncMode) -> Cluster {
        let mut c = Cluster::default();
        c.metadata.name = Some(name.into());
        c.spec.sync_mode = mode;
        c
    }

    #[test]
    fn push_serves_push_clusters_and_only_serves_its_one() {
        let push = ServedClusters::Push;
        assert!(push.serves(&cluster("a", ClusterSyncMode::Push)));
        assert!(!push.serves(&cluster("b", ClusterSyncMode::Pull)));
        let only = ServedClusters::Only("b".into());
        assert!(only.serves(&cluster("b", ClusterSyncMode::Pull)));
        assert!(!only.serves(&cluster("a", ClusterSyncMode::Push)));
        assert!(only.may_serve("b") && !only.may_serve("a"));
    }
}
