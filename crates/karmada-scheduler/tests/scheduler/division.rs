//! Replica division, rule by rule (docs/karmada.md, "Replica division"): the Webster examples, static weights, dynamic
//! weights in each mode, Aggregated, Duplicated, overflow affinities and clusterAffinities fallback.

use std::collections::BTreeMap;

use karmada_scheduler::division::{
    ClusterReplicas, DynamicMode, Party, ReplicaCandidate, TieBreak, dynamic, static_weight,
    webster,
};
use serde_json::json;

use super::common::*;

fn parties(votes: &[(&str, i64)], seats: &[(&str, i64)]) -> Vec<Party> {
    votes
        .iter()
        .map(|(name, votes)| Party {
            name: (*name).into(),
            votes: *votes,
            seats: seats.iter().find(|(n, _)| n == name).map_or(0, |(_, s)| *s),
        })
        .collect()
}

fn seats(result: &BTreeMap<String, i64>) -> String {
    result
        .iter()
        .filter(|(_, s)| **s > 0)
        .map(|(n, s)| format!("{n}{s}"))
        .collect::<Vec<_>>()
        .join("")
}

#[test]
fn webster_reference_vectors() {
    let w1 = parties(
        &[("A", 100_000), ("B", 80_000), ("C", 30_000), ("D", 20_000)],
        &[],
    );
    let expected_w1 = [
        "A1", "A1B1", "A2B1", "A2B1C1", "A2B2C1", "A2B2C1D1", "A3B2C1D1", "A3B3C1D1",
    ];
    for (n, expected) in expected_w1.iter().enumerate() {
        assert_eq!(
            seats(&webster(&w1, n as i64 + 1, TieBreak::NameAscending)),
            *expected,
            "W1 with {} seats",
            n + 1
        );
    }
    let cases: &[(&str, Vec<Party>, i64, &str)] = &[
        (
            "W2",
            parties(&[("Alpha", 1200), ("Beta", 900), ("Gamma", 400)], &[]),
            4,
            "Alpha2Beta1Gamma1",
        ),
        (
            "W3 tie goes to fewer seats",
            parties(&[("A", 3), ("B", 1)], &[("A", 1)]),
            1,
            "A1B1",
        ),
        (
            "W4 tie goes to name ascending",
            parties(&[("A", 1), ("B", 1)], &[]),
            1,
            "A1",
        ),
        (
            "v1.16 dispenser, 14 at 3:2:1",
            parties(&[("a", 3), ("b", 2), ("c", 1)], &[]),
            14,
            "a7b5c2",
        ),
    ];
    for (name, parties, count, expected) in cases {
        assert_eq!(
            seats(&webster(parties, *count, TieBreak::NameAscending)),
            *expected,
            "{name}"
        );
    }
}

#[test]
fn tie_break_follows_the_uid_hash() {
    assert_eq!(TieBreak::from_uid(""), TieBreak::NameAscending);
    assert_eq!(TieBreak::from_uid(UID_EVEN_HASH), TieBreak::NameAscending);
    assert_eq!(TieBreak::from_uid(UID_ODD_HASH), TieBreak::NameDescending);
    let tied = parties(&[("A", 1), ("B", 1)], &[]);
    assert_eq!(
        seats(&webster(&tied, 1, TieBreak::from_uid(UID_ODD_HASH))),
        "B1"
    );
}

fn replicas(list: &[(&str, i64)]) -> Vec<ClusterReplicas> {
    list.iter()
        .map(|(n, r)| ClusterReplicas {
            name: (*n).into(),
            replicas: *r,
        })
        .collect()
}

fn candidates(list: &[(&str, i64)]) -> Vec<ReplicaCandidate> {
    list.iter()
        .map(|(n, a)| ReplicaCandidate {
            name: (*n).into(),
            allocatable_replicas: *a,
        })
        .collect()
}

#[test]
fn static_weight_rules() {
    let cases: &[(&str, Vec<ClusterReplicas>, i64, Vec<ClusterReplicas>)] = &[
        (
            "proportional",
            replicas(&[("a", 2), ("b", 1)]),
            6,
            replicas(&[("a", 4), ("b", 2)]),
        ),
        (
            "weight 0 means no replicas",
            replicas(&[("a", 1), ("b", 0)]),
            3,
            replicas(&[("a", 3)]),
        ),
        (
            "all 0 means equal",
            replicas(&[("a", 0), ("b", 0), ("c", 0)]),
            3,
            replicas(&[("a", 1), ("b", 1), ("c", 1)]),
        ),
    ];
    for (name, weights, count, expected) in cases {
        let (result, _) = static_weight(*count, weights, TieBreak::NameAscending).expect(name);
        assert_eq!(&result, expected, "{name}");
    }
}

#[test]
fn dynamic_weight_modes() {
    struct Case {
        name: &'static str,
        replicas: i64,
        allocatable: Vec<ReplicaCandidate>,
        previous: Vec<ClusterReplicas>,
        fresh: bool,
        aggregated: bool,
        mode: DynamicMode,
        expected: Vec<ClusterReplicas>,
    }
    let cases = vec![
        Case {
            name: "first schedule divides by allocatable",
            replicas: 9,
            allocatable: candidates(&[("a", 40), ("b", 35), ("c", 25)]),
            previous: vec![],
            fresh: false,
            aggregated: false,
            mode: DynamicMode::ScaleUp,
            expected: replicas(&[("a", 4), ("b", 3), ("c", 2)]),
        },
        Case {
            name: "scale up divides only the difference and keeps what runs",
            replicas: 10,
            allocatable: candidates(&[("a", 0), ("b", 10)]),
            previous: replicas(&[("a", 6), ("b", 2)]),
            fresh: false,
            aggregated: false,
            mode: DynamicMode::ScaleUp,
            expected: replicas(&[("a", 6), ("b", 4)]),
        },
        Case {
            name: "scale down shrinks the previous assignment proportionally",
            replicas: 4,
            allocatable: candidates(&[("a", 100), ("b", 100)]),
            previous: replicas(&[("a", 6), ("b", 2)]),
            fresh: false,
            aggregated: false,
            mode: DynamicMode::ScaleDown,
            expected: replicas(&[("a", 3), ("b", 1)]),
        },
        Case {
            name: "fresh divides everything by allocatable plus held",
            replicas: 8,
            allocatable: candidates(&[("a", 2), ("b", 10)]),
            previous: replicas(&[("a", 6), ("b", 2)]),
            fresh: true,
            aggregated: false,
            mode: DynamicMode::Fresh,
            // weights a 2+6=8, b 10+2=12: Webster(8) gives 3 and 5.
            expected: replicas(&[("a", 3), ("b", 5)]),
        },
        Case {
            name: "reference A3: Aggregated scale up puts holders first",
            replicas: 24,
            allocatable: candidates(&[("m1", 4), ("m2", 6), ("m3", 8)]),
            previous: replicas(&[("m1", 4), ("m2", 8)]),
            fresh: false,
            aggregated: true,
            mode: DynamicMode::ScaleUp,
            expected: replicas(&[("m1", 7), ("m2", 12), ("m3", 5)]),
        },
        Case {
            name: "Aggregated first schedule packs into the largest clusters",
            replicas: 10,
            allocatable: candidates(&[("a", 8), ("b", 6), ("c", 30)]),
            previous: vec![],
            fresh: false,
            aggregated: true,
            mode: DynamicMode::ScaleUp,
            expected: replicas(&[("c", 10)]),
        },
        Case {
            name: "clusters no longer candidates are dropped before counting",
            replicas: 4,
            allocatable: candidates(&[("a", 10)]),
            previous: replicas(&[("gone", 4)]),
            fresh: false,
            aggregated: false,
            mode: DynamicMode::ScaleUp,
            expected: replicas(&[("a", 4)]),
        },
    ];
    for case in cases {
        let (result, trace) = dynamic(
            case.replicas,
            &case.allocatable,
            &case.previous,
            case.fresh,
            case.aggregated,
            TieBreak::NameAscending,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(result, case.expected, "{}", case.name);
        assert_eq!(trace.mode, Some(case.mode), "{}", case.name);
    }
}

#[test]
fn duplicated_gives_every_cluster_all_replicas() {
    let policy = policy(json!({"clusterAffinity": {"clusterNames": ["a", "b"]}}));
    let plan = run(
        &deployment("app", 3, "100m", "64Mi"),
        &policy,
        &[cluster("a"), cluster("b"), cluster("c")],
        None,
    );
    assert_eq!(assignment(&plan), expect(&[("a", 3), ("b", 3)]));
    assert_eq!(plan.explanation.strategy, "Duplicated");
}

#[test]
fn static_weight_takes_the_highest_matching_rule() {
    let policy = policy(json!({
        "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"staticWeightList": [
            {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "gold"}}}, "weight": 1},
            {"targetCluster": {"clusterNames": ["a"]}, "weight": 3}
        ]}}
    }));
    let clusters = [
        cluster("a").label("tier", "gold"),
        cluster("b").label("tier", "gold"),
        cluster("c"),
    ];
    let plan = run(
        &deployment("app", 8, "100m", "64Mi"),
        &policy,
        &clusters,
        None,
    );
    assert_eq!(assignment(&plan), expect(&[("a", 6), ("b", 2)]));
}

#[test]
fn dynamic_weight_through_plan_scales_up_from_the_current_binding() {
    let policy = policy(
        json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
    );
    // 1 cpu per replica: a can take 2 more, b 6 more.
    let clusters = [
        cluster("a").capacity("2", "64Gi", 110),
        cluster("b").capacity("6", "64Gi", 110),
    ];
    let current = binding(&[("a", 3), ("b", 1)]);
    let plan = run(
        &deployment("app", 8, "1", "64Mi"),
        &policy,
        &clusters,
        Some(&current),
    );
    assert_eq!(assignment(&plan), expect(&[("a", 4), ("b", 4)]));
    let division = &plan.explanation.divisions[0];
    assert_eq!(division.mode, Some(DynamicMode::ScaleUp));
    assert_eq!(division.target, 4);
}

#[test]
fn reschedule_triggered_after_last_schedule_is_fresh() {
    let policy = policy(
        json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
    );
    let clusters = [
        cluster("a").capacity("0", "64Gi", 110),
        cluster("b").capacity("6", "64Gi", 110),
    ];
    let mut current = binding(&[("a", 6), ("b", 0)]);
    current["spec"]["rescheduleTriggeredAt"] = json!("2026-11-29T11:00:00Z");
    let plan = run(
        &deployment("app", 6, "1", "64Mi"),
        &policy,
        &clusters,
        Some(&current),
    );
    assert_eq!(plan.explanation.divisions[0].mode, Some(DynamicMode::Fresh));
    assert_eq!(assignment(&plan), expect(&[("a", 3), ("b", 3)]));
}

#[test]
fn overflow_affinities_fill_the_primary_tier_first() {
    let policy = policy(json!({
        "clusterAffinities": [{
            "affinityName": "local",
            "clusterNames": ["on-prem"],
            "overflowAffinities": [{"affinityName": "cloud", "clusterNames": ["cloud-1", "cloud-2"]}]
        }],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    }));
    let clusters = [
        cluster("on-prem").capacity("4", "64Gi", 110),
        cluster("cloud-1").capacity("30", "64Gi", 110),
        cluster("cloud-2").capacity("10", "64Gi", 110),
    ];
    let plan = run(
        &deployment("app", 12, "1", "64Mi"),
        &policy,
        &clusters,
        None,
    );
    assert_eq!(
        assignment(&plan),
        expect(&[("cloud-1", 6), ("cloud-2", 2), ("on-prem", 4)])
    );
    assert_eq!(
        plan.binding["status"]["schedulerObservingAffinityName"],
        "local"
    );
    let overflow: Vec<(String, usize)> = plan
        .explanation
        .clusters
        .iter()
        .map(|c| (c.name.to_string(), c.overflow_order))
        .collect();
    assert!(overflow.contains(&("cloud-1".into(), 1)), "{overflow:?}");
}

#[test]
fn cluster_affinities_fall_back_in_order() {
    let policy = policy(json!({
        "clusterAffinities": [
            {"affinityName": "primary", "clusterNames": ["down"]},
            {"affinityName": "backup", "clusterNames": ["up"]}
        ],
        "replicaScheduling": {"replicaSchedulingType": "Divided"}
    }));
    let clusters = [
        cluster("down").taint("cluster.karmada.io/not-ready", "", "NoSchedule"),
        cluster("up"),
    ];
    let plan = run(
        &deployment("app", 2, "100m", "64Mi"),
        &policy,
        &clusters,
        None,
    );
    assert_eq!(assignment(&plan), expect(&[("up", 2)]));
    assert_eq!(
        plan.binding["status"]["schedulerObservingAffinityName"],
        "backup"
    );
    let attempts: Vec<(String, bool)> = plan
        .explanation
        .affinity_attempts
        .iter()
        .map(|a| (a.name.clone(), a.scheduled))
        .collect();
    assert_eq!(
        attempts,
        vec![("primary".to_string(), false), ("backup".to_string(), true)]
    );
}

#[test]
fn all_affinity_terms_failing_reports_the_first_error_and_keeps_the_observed_name() {
    let policy = policy(json!({
        "clusterAffinities": [
            {"affinityName": "first", "clusterNames": ["x"]},
            {"affinityName": "second", "clusterNames": ["y"]}
        ]
    }));
    let mut current = binding(&[]);
    current["status"]["schedulerObservingAffinityName"] = json!("first");
    let plan = run(
        &deployment("app", 1, "100m", "64Mi"),
        &policy,
        &[cluster("z")],
        Some(&current),
    );
    assert!(!plan.success());
    assert_eq!(
        plan.binding["status"]["conditions"][0]["reason"],
        "NoClusterFit"
    );
    assert_eq!(
        plan.binding["status"]["schedulerObservingAffinityName"],
        "first"
    );
    assert_eq!(
        plan.explanation.message,
        "0/1 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint."
    );
}
