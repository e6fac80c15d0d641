//! Small facts about a binding the failover cores share: per-cluster health from `aggregatedStatus`, whether
//! replicas are divided, and the replicas the policy asks for.

use karmada_api::work::ResourceHealth;
use karmada_api::{ReplicaSchedulingType, ResourceBindingSpec, ResourceBindingStatus};

/// The health `aggregatedStatus` reports for `cluster` (None when the cluster has no item).
pub fn health_of(status: Option<&ResourceBindingStatus>, cluster: &str) -> Option<ResourceHealth> {
    status?
        .aggregated_status
        .iter()
        .find(|item| item.cluster_name == cluster)
        .and_then(|item| item.health)
}

/// Whether `cluster`'s copy is reported Healthy.
pub fn is_healthy(status: Option<&ResourceBindingStatus>, cluster: &str) -> bool {
    health_of(status, cluster) == Some(ResourceHealth::Healthy)
}

/// Whether `cluster`'s copy is reported Unhealthy (Unknown and absent are not: they may be healthy).
pub fn is_unhealthy(status: Option<&ResourceBindingStatus>, cluster: &str) -> bool {
    health_of(status, cluster) == Some(ResourceHealth::Unhealthy)
}

/// Whether the binding's replicas are divided among its clusters (a Divided placement of a workload with
/// replicas); otherwise every target runs the whole thing.
pub fn divided(spec: &ResourceBindingSpec) -> bool {
    spec.replicas > 0
        && spec
            .placement
            .as_ref()
            .is_some_and(|p| p.replica_scheduling_type() == ReplicaSchedulingType::Divided)
}

/// Replicas assigned by `spec.clusters`, leaving out `except`.
pub fn assigned(spec: &ResourceBindingSpec, except: Option<&str>) -> i64 {
    spec.clusters
        .iter()
        .filter(|t| Some(t.name.as_str()) != except)
        .map(|t| i64::from(t.replicas))
        .sum()
}

/// Whether `spec.clusters` (leaving out `except`) covers what the policy asks for: all desired replicas when
/// divided, at least one cluster otherwise. This is the floor a move may never go below before the old copy is
/// removed.
pub fn covers_policy(spec: &ResourceBindingSpec, except: Option<&str>) -> bool {
    let targets = spec
        .clusters
        .iter()
        .filter(|t| Some(t.name.as_str()) != except)
        .count();
    if targets == 0 {
        return false;
    }
    !divided(spec) || assigned(spec, except) >= i64::from(spec.replicas)
}

/// Whether the binding is scheduled for its current spec, every target (leaving out `except`) reports Healthy and
/// the targets cover the policy ([`covers_policy`]). An empty target list is never "all healthy" (Karmada
/// #7455: eviction deleted the only copy because no replacement fit).
pub fn replacements_healthy(
    spec: &ResourceBindingSpec,
    status: Option<&ResourceBindingStatus>,
    generation: i64,
    except: Option<&str>,
) -> bool {
    let Some(observed) = status else {
        return false;
    };
    observed.scheduler_observed_generation >= generation
        && covers_policy(spec, except)
        && spec
            .clusters
            .iter()
            .filter(|t| Some(t.name.as_str()) != except)
            .all(|t| is_healthy(status, &t.name))
}

#[cfg(test)]
mod tests {
    use karmada_api::work::AggregatedStatusItem;
    use karmada_api::{Placement, ReplicaSchedulingStrategy, TargetCluster};

    use super::*;

    fn spec(divided_total: Option<i32>, clusters: &[(&str, i32)]) -> ResourceBindingSpec {
        ResourceBindingSpec {
            replicas: divided_total.unwrap_or(2),
            placement: Some(Placement {
                replica_scheduling: divided_total.map(|_| ReplicaSchedulingStrategy {
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
            ..Default::default()
        }
    }

    fn status(observed: i64, health: &[(&str, ResourceHealth)]) -> ResourceBindingStatus {
        ResourceBindingStatus {
            scheduler_observed_generation: observed,
            aggregated_status: health
                .iter()
                .map(|(n, h)| AggregatedStatusItem {
                    cluster_name: n.to_string(),
                    health: Some(*h),
                    applied: true,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn replacements() {
        use ResourceHealth::*;
        let cases = [
            (
                "divided, covered, healthy",
                spec(Some(4), &[("b", 4)]),
                status(2, &[("b", Healthy)]),
                true,
            ),
            (
                "divided, short",
                spec(Some(4), &[("b", 3)]),
                status(2, &[("b", Healthy)]),
                false,
            ),
            (
                "not observed yet",
                spec(Some(4), &[("b", 4)]),
                status(1, &[("b", Healthy)]),
                false,
            ),
            (
                "empty targets are never healthy",
                spec(Some(4), &[]),
                status(2, &[]),
                false,
            ),
            (
                "unknown health",
                spec(Some(4), &[("b", 4)]),
                status(2, &[("b", Unknown)]),
                false,
            ),
            ("no item", spec(Some(4), &[("b", 4)]), status(2, &[]), false),
            (
                "duplicated, one healthy",
                spec(None, &[("b", 2)]),
                status(2, &[("b", Healthy)]),
                true,
            ),
            (
                "duplicated, one of two unhealthy",
                spec(None, &[("b", 2), ("c", 2)]),
                status(2, &[("b", Healthy), ("c", Unhealthy)]),
                false,
            ),
        ];
        for (name, spec, status, expected) in cases {
            assert_eq!(
                replacements_healthy(&spec, Some(&status), 2, None),
                expected,
                "{name}"
            );
        }
        assert!(!replacements_healthy(
            &spec(Some(1), &[("b", 1)]),
            None,
            0,
            None
        ));
    }
}
