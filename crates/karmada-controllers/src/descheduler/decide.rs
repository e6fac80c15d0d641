//! The descheduler's decision, pure (reference/karmada.md §5.5): for a Deployment binding whose placement
//! divides replicas dynamically (Divided with `Aggregated`, or `Weighted` with `dynamicWeight`), the replicas
//! that stay unready in a member longer than the unschedulable threshold are taken from that member, so the
//! scheduler places them elsewhere.
//!
//! Karmada asks a per-cluster estimator how many pods are unschedulable. We read what the member reports in
//! `aggregatedStatus` (member-sim's Deployment status: `replicas` counts the pods it created, Pending ones
//! included; `readyReplicas` those Ready): the shortfall `assigned − readyReplicas` of a member that has created
//! all its pods and observed its latest spec is timed from when it was first seen; once it has lasted the
//! threshold, the member's assignment drops to its ready replicas (never below: ready replicas are never taken
//! away). A member without fresh status (no item, not applied, health Unknown, status missing, or still rolling
//! out) is left alone and untimed: no decision on stale data.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use karmada_api::work::ResourceHealth;
use karmada_api::{
    ReplicaDivisionPreference, ReplicaSchedulingType, ResourceBindingSpec, ResourceBindingStatus,
    TargetCluster,
};
use serde_json::Value;

/// Whether the descheduler looks at this binding at all.
pub fn applies(spec: &ResourceBindingSpec) -> bool {
    let resource = &spec.resource;
    if resource.api_version != "apps/v1" || resource.kind != "Deployment" {
        return false;
    }
    let Some(strategy) = spec
        .placement
        .as_ref()
        .and_then(|p| p.replica_scheduling.as_ref())
    else {
        return false;
    };
    if strategy.replica_scheduling_type != ReplicaSchedulingType::Divided {
        return false;
    }
    match strategy
        .replica_division_preference
        .unwrap_or(ReplicaDivisionPreference::Weighted)
    {
        ReplicaDivisionPreference::Aggregated => true,
        ReplicaDivisionPreference::Weighted => strategy
            .weight_preference
            .as_ref()
            .is_some_and(|w| w.dynamic_weight.is_some()),
    }
}

/// What to do with one binding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeschedulePlan {
    /// The new `spec.clusters`, when replicas are taken away (clusters left with none are dropped).
    pub clusters: Option<Vec<TargetCluster>>,
    /// (cluster, replicas taken away).
    pub evicted: Vec<(String, i32)>,
    /// When each cluster's shortfall was first seen (the next call's input).
    pub tracked: BTreeMap<String, Timestamp>,
    /// When the next tracked shortfall reaches the threshold.
    pub recheck_at: Option<Timestamp>,
}

fn int(status: &Value, field: &str) -> Option<i64> {
    status.get(field).and_then(Value::as_i64)
}

/// Ready replicas of a cluster whose status is fresh; `None` when it is not.
fn ready_replicas(
    status: Option<&ResourceBindingStatus>,
    cluster: &str,
    assigned: i32,
) -> Option<i64> {
    let item = status?
        .aggregated_status
        .iter()
        .find(|i| i.cluster_name == cluster)?;
    if !item.applied || item.health.is_none_or(|h| h == ResourceHealth::Unknown) {
        return None;
    }
    let reflected = item.status.as_ref()?;
    if let (Some(generation), Some(observed)) = (
        int(reflected, "generation"),
        int(reflected, "observedGeneration"),
    ) && observed < generation
    {
        return None;
    }
    if int(reflected, "replicas").unwrap_or(0) < i64::from(assigned) {
        return None;
    }
    Some(int(reflected, "readyReplicas").unwrap_or(0).max(0))
}

/// The plan for one binding.
pub fn plan(
    spec: &ResourceBindingSpec,
    status: Option<&ResourceBindingStatus>,
    tracked: &BTreeMap<String, Timestamp>,
    now: Timestamp,
    threshold: SignedDuration,
) -> DeschedulePlan {
    let mut out = DeschedulePlan::default();
    if !applies(spec) {
        return out;
    }
    let mut clusters = Vec::new();
    for target in &spec.clusters {
        let mut next = target.clone();
        if let Some(ready) = ready_replicas(status, &target.name, target.replicas) {
            let shortfall = i64::from(target.replicas) - ready;
            if shortfall > 0 {
                let since = tracked.get(&target.name).copied().unwrap_or(now).min(now);
                out.tracked.insert(target.name.clone(), since);
                let due = since.checked_add(threshold).unwrap_or(Timestamp::MAX);
                if due <= now {
                    let keep = i32::try_from(ready).unwrap_or(target.replicas);
                    out.evicted
                        .push((target.name.clone(), target.replicas - keep));
                    next.replicas = keep;
                    out.tracked.remove(&target.name);
                } else {
                    out.recheck_at = Some(out.recheck_at.map_or(due, |r| r.min(due)));
                }
            }
        }
        if next.replicas > 0 {
            clusters.push(next);
        }
    }
    if !out.evicted.is_empty() {
        out.clusters = Some(clusters);
    }
    out
}

#[cfg(test)]
mod tests {
    use karmada_api::work::AggregatedStatusItem;
    use serde_json::json;

    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).expect("t")
    }

    fn spec(placement: Value, clusters: &[(&str, i32)]) -> ResourceBindingSpec {
        serde_json::from_value(json!({
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "replicas": clusters.iter().map(|(_, r)| r).sum::<i32>(),
            "placement": placement,
            "clusters": clusters.iter().map(|(n, r)| json!({"name": n, "replicas": r})).collect::<Vec<_>>(),
        }))
        .expect("spec")
    }

    fn aggregated() -> Value {
        json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})
    }

    fn status(items: &[(&str, Value, ResourceHealth)]) -> ResourceBindingStatus {
        ResourceBindingStatus {
            aggregated_status: items
                .iter()
                .map(|(n, s, h)| AggregatedStatusItem {
                    cluster_name: n.to_string(),
                    status: Some(s.clone()),
                    applied: true,
                    health: Some(*h),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn which_bindings() {
        let cases = [
            (aggregated(), true),
            (
                json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                          "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
                true,
            ),
            (
                json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}),
                false,
            ),
            (
                json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
                false,
            ),
            (json!({}), false),
        ];
        for (placement, expected) in cases {
            assert_eq!(
                applies(&spec(placement.clone(), &[("a", 1)])),
                expected,
                "{placement}"
            );
        }
        let mut stateful = spec(aggregated(), &[("a", 1)]);
        stateful.resource.kind = "StatefulSet".into();
        assert!(!applies(&stateful));
    }

    #[test]
    #[allow(clippy::type_complexity)] // table rows are plain tuples
    fn plans() {
        use ResourceHealth::*;
        let threshold = SignedDuration::from_mins(5);
        let s = spec(aggregated(), &[("a", 5), ("b", 3)]);
        let pending_a = json!({"replicas": 5, "readyReplicas": 2});
        let ready_b = json!({"replicas": 3, "readyReplicas": 3});
        let cases: Vec<(
            &str,
            ResourceBindingStatus,
            Vec<(&str, i64)>,
            i64,
            Option<Vec<(&str, i32)>>,
            Vec<(&str, i32)>,
            Vec<(&str, i64)>,
        )> = vec![
            (
                "first sight starts the clock",
                status(&[
                    ("a", pending_a.clone(), Unhealthy),
                    ("b", ready_b.clone(), Healthy),
                ]),
                vec![],
                0,
                None,
                vec![],
                vec![("a", 0)],
            ),
            (
                "before the threshold",
                status(&[
                    ("a", pending_a.clone(), Unhealthy),
                    ("b", ready_b.clone(), Healthy),
                ]),
                vec![("a", 0)],
                299,
                None,
                vec![],
                vec![("a", 0)],
            ),
            (
                "at the threshold: down to ready",
                status(&[
                    ("a", pending_a.clone(), Unhealthy),
                    ("b", ready_b.clone(), Healthy),
                ]),
                vec![("a", 0)],
                300,
                Some(vec![("a", 2), ("b", 3)]),
                vec![("a", 3)],
                vec![],
            ),
            (
                "nothing ready: the cluster goes",
                status(&[("a", json!({"replicas": 5, "readyReplicas": 0}), Unhealthy)]),
                vec![("a", 0)],
                300,
                Some(vec![("b", 3)]),
                vec![("a", 5)],
                vec![],
            ),
            (
                "recovered: untracked",
                status(&[("a", json!({"replicas": 5, "readyReplicas": 5}), Healthy)]),
                vec![("a", 0)],
                300,
                None,
                vec![],
                vec![],
            ),
            (
                "unknown health: no decision",
                status(&[("a", pending_a.clone(), Unknown)]),
                vec![("a", 0)],
                300,
                None,
                vec![],
                vec![],
            ),
            (
                "still creating pods: no decision",
                status(&[("a", json!({"replicas": 3, "readyReplicas": 2}), Unhealthy)]),
                vec![("a", 0)],
                300,
                None,
                vec![],
                vec![],
            ),
            (
                "rolling out: no decision",
                status(&[(
                    "a",
                    json!({"replicas": 5, "readyReplicas": 2, "generation": 3, "observedGeneration": 2}),
                    Unhealthy,
                )]),
                vec![("a", 0)],
                300,
                None,
                vec![],
                vec![],
            ),
        ];
        for (name, st, tracked, now, clusters, evicted, expected_tracked) in cases {
            let tracked = tracked
                .into_iter()
                .map(|(c, s)| (c.to_string(), t(s)))
                .collect();
            let out = plan(&s, Some(&st), &tracked, t(now), threshold);
            let got = out.clusters.map(|c| {
                c.into_iter()
                    .map(|t| (t.name, t.replicas))
                    .collect::<Vec<_>>()
            });
            let want = clusters.map(|c| {
                c.into_iter()
                    .map(|(n, r)| (n.to_string(), r))
                    .collect::<Vec<_>>()
            });
            assert_eq!(got, want, "{name}");
            let want_evicted: Vec<(String, i32)> = evicted
                .into_iter()
                .map(|(n, r)| (n.to_string(), r))
                .collect();
            assert_eq!(out.evicted, want_evicted, "{name}");
            let want_tracked: BTreeMap<String, Timestamp> = expected_tracked
                .into_iter()
                .map(|(c, s)| (c.to_string(), t(s)))
                .collect();
            assert_eq!(out.tracked, want_tracked, "{name}");
        }
    }
}
