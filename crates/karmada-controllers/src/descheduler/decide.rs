//! The descheduler's decision, pure (docs/karmada.md, "Descheduler"): for a Deployment binding whose placement
//! divides replicas dynamically (Divided with `Aggregated`, or `Weighted` with `dynamicWeight`), the replicas
//! that stay unready in a member longer than the unschedulable threshold are taken from that member, so the
//! scheduler places them elsewhere.
//!
//! As Karmada, a member whose scheduler estimator answers `GetUnschedulableReplicas` (pods unschedulable longer
//! than the threshold, counted by the estimator) gives up that many replicas — when its ready replicas (from
//! `aggregatedStatus`) are fewer than assigned, never below its ready replicas, and only when the assignment
//! covers them ([`plan`]'s `unschedulable` answers).
//!
//! A member without an estimator is judged from what it reports in `aggregatedStatus` (member-sim's Deployment
//! status: `replicas` counts the pods it created, Pending ones included; `readyReplicas` those Ready): the
//! shortfall `assigned − readyReplicas` of a member that has created all its pods and observed its latest spec is
//! timed from when it was first seen; once it has lasted the threshold, the member's assignment drops to its
//! ready replicas (never below: ready replicas are never taken away). A member without fresh status (no item,
//! not applied, health Unknown, status missing, or still rolling out) is left alone and untimed: no decision on
//! stale data.

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

/// The ready replicas a member reports (`aggregatedStatus[].status.readyReplicas`), `None` when it reports none.
pub fn reported_ready(status: Option<&ResourceBindingStatus>, cluster: &str) -> Option<i64> {
    let item = status?
        .aggregated_status
        .iter()
        .find(|i| i.cluster_name == cluster)?;
    int(item.status.as_ref()?, "readyReplicas")
}

/// The clusters worth asking their estimators about: those with fewer ready replicas than assigned (or none
/// reported), for a binding the descheduler handles.
pub fn undesired_clusters(
    spec: &ResourceBindingSpec,
    status: Option<&ResourceBindingStatus>,
) -> Vec<String> {
    if !applies(spec) {
        return Vec::new();
    }
    spec.clusters
        .iter()
        .filter(|t| {
            reported_ready(status, &t.name).is_none_or(|ready| ready < i64::from(t.replicas))
        })
        .map(|t| t.name.clone())
        .collect()
}

/// The plan for one binding; `unschedulable` holds the estimators' answers by cluster (members without an
/// estimator are judged by their reported status and the clocks in `tracked`).
pub fn plan(
    spec: &ResourceBindingSpec,
    status: Option<&ResourceBindingStatus>,
    unschedulable: &BTreeMap<String, i32>,
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
        if let Some(&stuck) = unschedulable.get(&target.name) {
            let ready = reported_ready(status, &target.name).unwrap_or(-1);
            if ready < i64::from(target.replicas) && stuck > 0 && target.replicas >= stuck {
                let mut keep = target.replicas - stuck;
                if i64::from(keep) < ready {
                    keep = i32::try_from(ready).unwrap_or(keep);
                }
                if keep < target.replicas {
                    out.evicted
                        .push((target.name.clone(), target.replicas - keep));
                    next.replicas = keep;
                }
            }
        } else if let Some(ready) = ready_replicas(status, &target.name, target.replicas) {
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

    /// `out` takes `clusters` to the placement given (None: unchanged) and evicts `evicted`, in case `name`.
    fn assert_placed(
        name: &str,
        out: &DeschedulePlan,
        clusters: Option<Vec<(&str, i32)>>,
        evicted: Vec<(&str, i32)>,
    ) {
        let got = out.clusters.as_ref().map(|c| {
            c.iter()
                .map(|t| (t.name.clone(), t.replicas))
                .collect::<Vec<_>>()
        });
        let owned = |pairs: Vec<(&str, i32)>| -> Vec<(String, i32)> {
            pairs.into_iter().map(|(n, r)| (n.to_string(), r)).collect()
        };
        assert_eq!(got, clusters.map(owned), "{name}");
        assert_eq!(out.evicted, owned(evicted), "{name}");
    }

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
            let out = plan(&s, Some(&st), &BTreeMap::new(), &tracked, t(now), threshold);
            assert_placed(name, &out, clusters, evicted);
            let want_tracked: BTreeMap<String, Timestamp> = expected_tracked
                .into_iter()
                .map(|(c, s)| (c.to_string(), t(s)))
                .collect();
            assert_eq!(out.tracked, want_tracked, "{name}");
        }
    }

    #[test]
    fn estimators_answers_decide_as_karmadas_descheduler() {
        use ResourceHealth::{Healthy, Unhealthy};
        let s = spec(aggregated(), &[("a", 5), ("b", 3), ("c", 2)]);
        let st = status(&[
            ("a", json!({"replicas": 5, "readyReplicas": 2}), Unhealthy),
            ("b", json!({"replicas": 3, "readyReplicas": 3}), Healthy),
            ("c", json!({"replicas": 2, "readyReplicas": 0}), Unhealthy),
        ]);
        assert_eq!(undesired_clusters(&s, Some(&st)), ["a", "c"]);
        type Case<'a> = (
            &'a str,
            Vec<(&'a str, i32)>,
            Option<Vec<(&'a str, i32)>>,
            Vec<(&'a str, i32)>,
        );
        let cases: Vec<Case> = vec![
            (
                "a: 3 stuck, 2 ready",
                vec![("a", 3)],
                Some(vec![("a", 2), ("b", 3), ("c", 2)]),
                vec![("a", 3)],
            ),
            (
                "never below ready",
                vec![("a", 5)],
                Some(vec![("a", 2), ("b", 3), ("c", 2)]),
                vec![("a", 3)],
            ),
            ("nothing stuck", vec![("a", 0), ("c", 0)], None, vec![]),
            (
                "more stuck than assigned: left alone",
                vec![("c", 3)],
                None,
                vec![],
            ),
            (
                "c loses all",
                vec![("c", 2)],
                Some(vec![("a", 5), ("b", 3)]),
                vec![("c", 2)],
            ),
            (
                "a ready member is not touched",
                vec![("b", 2)],
                None,
                vec![],
            ),
        ];
        for (name, answers, clusters, evicted) in cases {
            let answers: BTreeMap<String, i32> = answers
                .into_iter()
                .map(|(c, n)| (c.to_string(), n))
                .collect();
            let out = plan(
                &s,
                Some(&st),
                &answers,
                &BTreeMap::new(),
                t(0),
                SignedDuration::from_mins(5),
            );
            assert_placed(name, &out, clusters, evicted);
            assert!(
                answers.keys().all(|c| !out.tracked.contains_key(c)),
                "{name}: no clocks for members with an estimator"
            );
        }
    }
}
