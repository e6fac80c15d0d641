//! Properties of division and of whole scheduling runs.

use std::collections::BTreeMap;

use karmada_scheduler::division::{
    ClusterReplicas, ReplicaCandidate, TieBreak, dynamic, static_weight,
};
use proptest::prelude::*;
use serde_json::json;

use super::common::*;

fn names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("c{i}")).collect()
}

fn tie_break() -> impl Strategy<Value = TieBreak> {
    prop_oneof![
        Just(TieBreak::NameAscending),
        Just(TieBreak::NameDescending)
    ]
}

fn total(list: &[ClusterReplicas]) -> i64 {
    list.iter().map(|c| c.replicas).sum()
}

proptest! {
    #[test]
    fn static_division_sums_to_the_replicas(weights in prop::collection::vec(0i64..50, 1..8), replicas in 0i64..200, tie in tie_break()) {
        let weights: Vec<ClusterReplicas> = names(weights.len()).into_iter().zip(weights).map(|(name, replicas)| ClusterReplicas { name, replicas }).collect();
        let (result, _) = static_weight(replicas, &weights, tie).expect("candidates exist");
        prop_assert_eq!(total(&result), replicas);
        // Reordering the weights changes nothing.
        let mut reversed = weights.clone();
        reversed.reverse();
        let (again, _) = static_weight(replicas, &reversed, tie).expect("candidates exist");
        prop_assert_eq!(result, again);
    }

    #[test]
    fn dynamic_division_is_feasible_bounded_and_shrinks_on_scale_down(
        clusters in prop::collection::vec((0i64..30, 0i64..10), 1..7),
        replicas in 0i64..120,
        fresh in any::<bool>(),
        aggregated in any::<bool>(),
        tie in tie_break(),
    ) {
        let names = names(clusters.len());
        let candidates: Vec<ReplicaCandidate> = names.iter().zip(&clusters).map(|(name, (allocatable, _))| ReplicaCandidate { name: name.clone(), allocatable_replicas: *allocatable }).collect();
        let previous: Vec<ClusterReplicas> = names.iter().zip(&clusters).filter(|(_, (_, held))| *held > 0).map(|(name, (_, held))| ClusterReplicas { name: name.clone(), replicas: *held }).collect();
        let held: BTreeMap<&str, i64> = previous.iter().map(|p| (p.name.as_str(), p.replicas)).collect();
        let assigned = total(&previous);
        let capacity: i64 = clusters.iter().map(|(allocatable, held)| allocatable + held).sum();
        match dynamic(replicas, &candidates, &previous, fresh, aggregated, tie) {
            Ok((result, _)) => {
                prop_assert_eq!(total(&result), replicas, "a Divided result sums to the desired replicas");
                for target in &result {
                    let candidate = candidates.iter().find(|c| c.name == target.name).expect("only candidates");
                    let available = candidate.allocatable_replicas + held.get(target.name.as_str()).copied().unwrap_or(0);
                    prop_assert!(target.replicas <= available, "{} got {} but has {} available", target.name, target.replicas, available);
                    if !fresh && assigned > replicas {
                        prop_assert!(target.replicas <= held.get(target.name.as_str()).copied().unwrap_or(0), "scale down grew {}", target.name);
                    }
                }
            }
            Err(error) => {
                // Only infeasible requests fail, and they say so.
                let needed = if fresh || assigned > replicas { replicas } else { replicas - assigned };
                let weights = if fresh { capacity } else if assigned > replicas { assigned } else { clusters.iter().map(|(a, _)| a).sum() };
                prop_assert!(weights < needed, "failed although feasible: {}", error);
                prop_assert!(error.to_string().contains("not enough to schedule"));
            }
        }
    }
}

fn spread_policy(kind: u8, min: i32, max: i32) -> serde_json::Value {
    let scheduling = match kind % 4 {
        0 => json!(null),
        1 => json!({"replicaSchedulingType": "Divided"}),
        2 => {
            json!({"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}})
        }
        _ => json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}),
    };
    let mut placement = json!({"spreadConstraints": [
        {"spreadByField": "region", "minGroups": min, "maxGroups": max},
        {"spreadByField": "cluster", "minGroups": min, "maxGroups": max + 2}
    ]});
    if !scheduling.is_null() {
        placement["replicaScheduling"] = scheduling;
    }
    policy(placement)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn scheduling_is_deterministic_order_independent_and_never_panics(
        clusters in prop::collection::vec((0u8..4, 0i64..12, any::<bool>()), 0..9),
        replicas in 0i64..40,
        kind in 0u8..4,
        min in 0i32..4,
        extra in 0i32..3,
        rotate in 0usize..9,
    ) {
        let docs: Vec<ClusterDoc> = clusters
            .iter()
            .enumerate()
            .map(|(i, (region, cpu, tainted))| {
                let doc = cluster(&format!("c{i}")).region(&format!("r{region}")).capacity(&cpu.to_string(), "64Gi", 110);
                if *tainted { doc.taint("maintenance", "", "NoSchedule") } else { doc }
            })
            .collect();
        let workload = deployment("app", replicas, "1", "64Mi");
        let policy = spread_policy(kind, min, min.max(1) + extra);
        let first = try_run(&workload, &policy, &docs, &[]);
        let mut rotated = docs.clone();
        if !rotated.is_empty() {
            let by = rotate % rotated.len();
            rotated.rotate_left(by);
        }
        let second = try_run(&workload, &policy, &rotated, &[]);
        match (first, second) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.binding, &b.binding, "input order changed the result");
                if a.success() {
                    let sum: i64 = assignment(&a).iter().map(|(_, r)| r).sum();
                    if kind % 4 != 0 && replicas > 0 {
                        prop_assert_eq!(sum, replicas);
                    }
                } else {
                    prop_assert!(!a.explanation.message.is_empty());
                    prop_assert!(a.explanation.reason != "Success");
                }
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "different outcomes: {:?} vs {:?}", a.map(|p| p.scheduled), b.map(|p| p.scheduled)),
        }
    }
}

#[test]
fn the_annotation_stays_bounded_with_thousands_of_clusters() {
    let clusters = karmada_scheduler::bench::synthetic_clusters(3000).expect("clusters");
    let documents: Vec<ClusterDoc> = clusters
        .iter()
        .map(|c| ClusterDoc(serde_json::to_value(&c.cluster).expect("cluster json")))
        .collect();
    let policy = policy(json!({
        "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 3}],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    }));
    let plan = run(
        &deployment("app", 10, "250m", "64Mi"),
        &policy,
        &documents,
        None,
    );
    assert!(plan.success());
    let annotation = plan.binding["metadata"]["annotations"]
        [karmada_scheduler::explain::ANNOTATION_EXPLANATION]
        .as_str()
        .expect("annotation");
    assert!(
        annotation.len() <= karmada_scheduler::explain::ANNOTATION_BUDGET_BYTES,
        "{} bytes",
        annotation.len()
    );
    assert!(
        annotation.contains("2997 cluster entries and 0 unchosen groups omitted"),
        "{}",
        &annotation[annotation.len().saturating_sub(300)..]
    );
    // The full explanation is still on the plan.
    assert_eq!(plan.explanation.clusters.len(), 3000);
}
