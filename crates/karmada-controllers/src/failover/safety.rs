//! The failover safety invariants as checkable functions. The cores are built to keep them; tests (table-driven
//! and the randomized simulation in `sim_tests`) check every transition against them.
//!
//! A *copy* of a binding is a cluster whose Work is kept: every cluster of `spec.clusters` and of a graceful
//! eviction task, except Directly tasks (their Works go at once). A transition (before → after spec) *drops* a
//! copy when its cluster is a copy before and not after. Unless the drop was explicitly asked for (an eviction or
//! task with purge mode Directly, or a user lifting `suppressDeletion`), a drop must:
//!
//! - not target an unreachable member ([`Violation::UnreachableMember`]) — a cluster that no longer exists is
//!   fine: nothing is left to delete;
//! - not remove the last healthy copy ([`Violation::LastHealthyCopy`]);
//! - leave `spec.clusters` covering the policy — all desired replicas when divided, some cluster otherwise —
//!   unless the dropped copy was reported Unhealthy ([`Violation::ReplicaFloor`]).
//!
//! Plus: the eviction budget ([`budget_holds`]) and no stale tasks after the graceful-eviction controller has run
//! ([`stale_tasks`]).

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use karmada_api::policy::PurgeMode;
use karmada_api::{ResourceBindingSpec, ResourceBindingStatus};

use super::replicas::{covers_policy, is_healthy, is_unhealthy};
use super::tasks::{MemberState, effective_mode};

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("copy in cluster {0} dropped while the member is unreachable")]
    UnreachableMember(String),
    #[error("copy in cluster {0} dropped although it was the last healthy copy")]
    LastHealthyCopy(String),
    #[error("copy in cluster {0} dropped before the remaining clusters covered the policy")]
    ReplicaFloor(String),
}

/// The copies of a binding: cluster → whether dropping it was explicitly asked for.
pub fn copies(spec: &ResourceBindingSpec) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = spec
        .clusters
        .iter()
        .map(|t| (t.name.clone(), false))
        .collect();
    for task in &spec.graceful_eviction_tasks {
        if effective_mode(task) == PurgeMode::Directly {
            continue;
        }
        let explicit = task.suppress_deletion == Some(false);
        out.entry(task.from_cluster.clone()).or_insert(explicit);
    }
    out
}

/// Checks one transition of a binding's spec; `status` is what the deciding controller saw.
pub fn check_transition(
    before: &ResourceBindingSpec,
    after: &ResourceBindingSpec,
    status: Option<&ResourceBindingStatus>,
    member: impl Fn(&str) -> MemberState,
) -> Result<(), Violation> {
    let kept_before = copies(before);
    let kept_after = copies(after);
    let healthy = |copies: &BTreeMap<String, bool>| copies.keys().any(|c| is_healthy(status, c));
    let directly_after = |cluster: &str| {
        after
            .graceful_eviction_tasks
            .iter()
            .any(|t| t.from_cluster == cluster && effective_mode(t) == PurgeMode::Directly)
    };
    for (cluster, explicit) in &kept_before {
        if kept_after.contains_key(cluster) || *explicit || directly_after(cluster) {
            continue;
        }
        match member(cluster) {
            MemberState::Gone => continue,
            MemberState::Unreachable => return Err(Violation::UnreachableMember(cluster.clone())),
            MemberState::Reachable => {}
        }
        if healthy(&kept_before) && !healthy(&kept_after) {
            return Err(Violation::LastHealthyCopy(cluster.clone()));
        }
        if !is_unhealthy(status, cluster) && !covers_policy(after, None) {
            return Err(Violation::ReplicaFloor(cluster.clone()));
        }
    }
    Ok(())
}

/// Whether, in every window of length `interval`, evictions started from at most `max_clusters` distinct
/// clusters. `admissions` are (when, cluster) in any order.
pub fn budget_holds(
    admissions: &[(Timestamp, String)],
    max_clusters: usize,
    interval: SignedDuration,
) -> bool {
    let mut sorted: Vec<&(Timestamp, String)> = admissions.iter().collect();
    sorted.sort();
    sorted.iter().enumerate().all(|(i, (start, _))| {
        let end = start.checked_add(interval).unwrap_or(Timestamp::MAX);
        let clusters: BTreeSet<&str> = sorted[i..]
            .iter()
            .take_while(|(t, _)| *t < end)
            .map(|(_, c)| c.as_str())
            .collect();
        clusters.len() <= max_clusters
    })
}

/// Tasks that should not exist: their cluster is gone or is a target again.
pub fn stale_tasks(
    spec: &ResourceBindingSpec,
    member: impl Fn(&str) -> MemberState,
) -> Vec<String> {
    spec.graceful_eviction_tasks
        .iter()
        .filter(|t| {
            member(&t.from_cluster) == MemberState::Gone
                || spec.clusters.iter().any(|c| c.name == t.from_cluster)
        })
        .map(|t| t.from_cluster.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
    use karmada_api::{
        GracefulEvictionTask, Placement, ReplicaSchedulingStrategy, ReplicaSchedulingType,
        TargetCluster,
    };

    use super::*;

    fn spec(clusters: &[(&str, i32)], tasks: &[(&str, PurgeMode)]) -> ResourceBindingSpec {
        ResourceBindingSpec {
            replicas: 4,
            placement: Some(Placement {
                replica_scheduling: Some(ReplicaSchedulingStrategy {
                    replica_scheduling_type: ReplicaSchedulingType::Divided,
                    ..Default::default()
                }),
                ..Placement::default()
            }),
            clusters: clusters
                .iter()
                .map(|(n, r)| TargetCluster {
                    name: n.to_string(),
                    replicas: *r,
                    components: vec![],
                })
                .collect(),
            graceful_eviction_tasks: tasks
                .iter()
                .map(|(n, m)| GracefulEvictionTask {
                    from_cluster: n.to_string(),
                    purge_mode: Some(*m),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn status(health: &[(&str, ResourceHealth)]) -> ResourceBindingStatus {
        ResourceBindingStatus {
            aggregated_status: health
                .iter()
                .map(|(n, h)| AggregatedStatusItem {
                    cluster_name: n.to_string(),
                    health: Some(*h),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    #[allow(clippy::type_complexity)] // table rows are plain tuples
    fn transitions() {
        use MemberState::*;
        use PurgeMode::*;
        use ResourceHealth::*;
        let reachable = |_: &str| Reachable;
        let a_down = |c: &str| if c == "a" { Unreachable } else { Reachable };
        let a_gone = |c: &str| if c == "a" { Gone } else { Reachable };
        let cases: Vec<(
            &str,
            ResourceBindingSpec,
            ResourceBindingSpec,
            ResourceBindingStatus,
            &dyn Fn(&str) -> MemberState,
            Result<(), Violation>,
        )> = vec![
            (
                "evicting keeps the copy",
                spec(&[("a", 2), ("b", 2)], &[]),
                spec(&[("b", 2)], &[("a", Gracefully)]),
                status(&[("a", Healthy)]),
                &reachable,
                Ok(()),
            ),
            (
                "healthy replacement then removal",
                spec(&[("b", 4)], &[("a", Gracefully)]),
                spec(&[("b", 4)], &[]),
                status(&[("a", Healthy), ("b", Healthy)]),
                &reachable,
                Ok(()),
            ),
            (
                "removal of the last healthy copy",
                spec(&[("b", 4)], &[("a", Gracefully)]),
                spec(&[("b", 4)], &[]),
                status(&[("a", Healthy), ("b", Unknown)]),
                &reachable,
                Err(Violation::LastHealthyCopy("a".into())),
            ),
            (
                "removal from an unreachable member",
                spec(&[("b", 4)], &[("a", Never)]),
                spec(&[("b", 4)], &[]),
                status(&[("b", Healthy)]),
                &a_down,
                Err(Violation::UnreachableMember("a".into())),
            ),
            (
                "removal below the floor",
                spec(&[("b", 2)], &[("a", Gracefully)]),
                spec(&[("b", 2)], &[]),
                status(&[("a", Unknown), ("b", Healthy)]),
                &reachable,
                Err(Violation::ReplicaFloor("a".into())),
            ),
            (
                "an unhealthy copy may go below the floor",
                spec(&[("b", 2)], &[("a", Gracefully)]),
                spec(&[("b", 2)], &[]),
                status(&[("a", Unhealthy), ("b", Healthy)]),
                &reachable,
                Ok(()),
            ),
            (
                "directly is explicit",
                spec(&[("b", 2)], &[("a", Directly)]),
                spec(&[("b", 2)], &[]),
                status(&[("a", Healthy)]),
                &a_down,
                Ok(()),
            ),
            (
                "a gone cluster has nothing to delete",
                spec(&[("b", 2)], &[("a", Gracefully)]),
                spec(&[("b", 2)], &[]),
                status(&[("a", Healthy)]),
                &a_gone,
                Ok(()),
            ),
            (
                "dropping a target outright",
                spec(&[("a", 4)], &[]),
                spec(&[], &[]),
                status(&[("a", Healthy)]),
                &reachable,
                Err(Violation::LastHealthyCopy("a".into())),
            ),
        ];
        for (name, before, after, status, member, expected) in cases {
            assert_eq!(
                check_transition(&before, &after, Some(&status), member),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn budget_windows() {
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).expect("t");
        let window = SignedDuration::from_secs(60);
        let a = |s: i64, c: &str| (t(s), c.to_string());
        assert!(budget_holds(&[a(0, "x"), a(1, "x"), a(2, "x")], 1, window));
        assert!(!budget_holds(&[a(0, "x"), a(59, "y")], 1, window));
        assert!(budget_holds(&[a(0, "x"), a(60, "y")], 1, window));
        assert!(budget_holds(
            &[a(0, "x"), a(10, "y"), a(70, "z")],
            2,
            window
        ));
        assert!(!budget_holds(
            &[a(0, "x"), a(10, "y"), a(20, "z")],
            2,
            window
        ));
    }

    #[test]
    fn stale() {
        let s = spec(
            &[("a", 2)],
            &[
                ("a", PurgeMode::Gracefully),
                ("b", PurgeMode::Never),
                ("c", PurgeMode::Never),
            ],
        );
        let member = |c: &str| {
            if c == "c" {
                MemberState::Gone
            } else {
                MemberState::Reachable
            }
        };
        assert_eq!(
            stale_tasks(&s, member),
            vec!["a".to_string(), "c".to_string()]
        );
    }
}
