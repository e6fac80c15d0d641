//! The Select phase (docs/karmada.md, "Select and spread constraints"): the cluster algorithm, the region algorithm,
//! and the same group algorithm applied to zone, provider and spreadByLabel.

use serde_json::{Value, json};

use super::common::*;

fn dynamic_with_spread(spread: Value) -> Value {
    policy(json!({
        "spreadConstraints": spread,
        "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    }))
}

#[test]
fn cluster_constraint_takes_the_best_max_groups() {
    let policy =
        dynamic_with_spread(json!([{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]));
    let clusters = [
        cluster("a").capacity("3", "64Gi", 110),
        cluster("b").capacity("8", "64Gi", 110),
        cluster("c").capacity("5", "64Gi", 110),
    ];
    let plan = run(&deployment("app", 4, "1", "64Mi"), &policy, &clusters, None);
    let selected: Vec<&str> = plan
        .explanation
        .clusters
        .iter()
        .filter(|c| c.selected)
        .map(|c| &*c.name)
        .collect();
    assert_eq!(selected, vec!["b", "c"]);
    let total: i64 = assignment(&plan).iter().map(|(_, r)| r).sum();
    assert_eq!(total, 4);
}

#[test]
fn cluster_constraint_without_enough_room_explains_the_shortfall() {
    let policy =
        dynamic_with_spread(json!([{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]));
    let clusters = [
        cluster("a").capacity("3", "64Gi", 110),
        cluster("b").capacity("2", "64Gi", 110),
    ];
    let plan = run(&deployment("app", 4, "1", "64Mi"), &policy, &clusters, None);
    assert!(!plan.success());
    assert_eq!(plan.explanation.reason, "SchedulerError");
    assert!(
        plan.explanation
            .message
            .contains("no enough resource when selecting 1 clusters"),
        "{}",
        plan.explanation.message
    );
}

#[test]
fn region_constraint_chooses_groups_by_score() {
    let policy = dynamic_with_spread(json!([
        {"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 3}
    ]));
    let clusters = [
        cluster("a").region("r1").capacity("10", "64Gi", 110),
        cluster("b").region("r1").capacity("10", "64Gi", 110),
        cluster("c").region("r2").capacity("10", "64Gi", 110),
        cluster("d").region("r3").capacity("1", "64Gi", 110),
        cluster("e").capacity("10", "64Gi", 110),
    ];
    let plan = run(
        &deployment("app", 10, "1", "64Mi"),
        &policy,
        &clusters,
        None,
    );
    assert_eq!(assignment(&plan), expect(&[("a", 4), ("b", 3), ("c", 3)]));
    let chosen: Vec<(&str, i64, bool)> = plan
        .explanation
        .selection
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.score, g.chosen))
        .collect();
    assert_eq!(
        chosen,
        vec![("r2", 5000, true), ("r3", 1000, false), ("r1", 5000, true)]
    );
    let e = plan
        .explanation
        .clusters
        .iter()
        .find(|c| &*c.name == "e")
        .expect("e");
    assert_eq!(
        e.filtered_by.as_ref().map(|f| f.reason.as_str()),
        Some("cluster(s) did not have region property")
    );
}

#[test]
fn zone_provider_and_label_constraints_group_the_same_way() {
    let cases: Vec<(&str, Value, Vec<ClusterDoc>, Vec<&str>)> = vec![
        (
            "zone",
            json!([{"spreadByField": "zone", "minGroups": 2, "maxGroups": 2}, {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}]),
            vec![
                cluster("a").zones(&["z1"]),
                cluster("b").zones(&["z2"]),
                cluster("c").zones(&["z2"]),
                cluster("d"),
            ],
            vec!["a", "b"],
        ),
        (
            "provider",
            json!([{"spreadByField": "provider", "minGroups": 1, "maxGroups": 1}, {"spreadByField": "cluster", "minGroups": 1, "maxGroups": 5}]),
            vec![
                cluster("a").provider("aws"),
                cluster("b").provider("gcp"),
                cluster("c").provider("gcp"),
            ],
            vec!["b", "c"],
        ),
        (
            "label",
            json!([{"spreadByLabel": "example.com/site", "minGroups": 1, "maxGroups": 1}]),
            vec![
                cluster("a").label("example.com/site", "s1"),
                cluster("b").label("example.com/site", "s1"),
                cluster("c").label("example.com/site", "s2"),
            ],
            vec!["a", "b"],
        ),
    ];
    for (name, spread, clusters, expected) in cases {
        let clusters: Vec<ClusterDoc> = clusters
            .into_iter()
            .map(|c| c.capacity("10", "64Gi", 110))
            .collect();
        let plan = run(
            &deployment("app", 2, "1", "64Mi"),
            &policy(json!({"spreadConstraints": spread})),
            &clusters,
            None,
        );
        let placed: Vec<String> = assignment(&plan).into_iter().map(|(n, _)| n).collect();
        assert_eq!(placed, expected, "{name}: {}", plan.render_wide());
        assert!(
            assignment(&plan).iter().all(|(_, r)| *r == 2),
            "{name}: Duplicated"
        );
    }
}

#[test]
fn static_weights_ignore_spread_constraints() {
    let policy = policy(json!({
        "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"staticWeightList": [
            {"targetCluster": {"clusterNames": ["a"]}, "weight": 1},
            {"targetCluster": {"clusterNames": ["b"]}, "weight": 1}
        ]}}
    }));
    let plan = run(
        &deployment("app", 4, "1", "64Mi"),
        &policy,
        &[cluster("a"), cluster("b")],
        None,
    );
    assert_eq!(assignment(&plan), expect(&[("a", 2), ("b", 2)]));
}

#[test]
fn duplicated_cluster_constraint_takes_the_first_candidates_ignoring_resources() {
    // Candidate order: score desc (ClusterLocality favours the current cluster c), then available desc, then name.
    let policy = policy(
        json!({"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]}),
    );
    let clusters = [
        cluster("a").capacity("1", "64Gi", 110),
        cluster("b").capacity("9", "64Gi", 110),
        cluster("c").capacity("0", "64Gi", 110),
    ];
    let plan = run(
        &deployment("app", 5, "1", "64Mi"),
        &policy,
        &clusters,
        Some(&binding(&[("c", 5)])),
    );
    assert_eq!(assignment(&plan), expect(&[("b", 5), ("c", 5)]));
}

#[test]
fn group_score_formula_table() {
    use karmada_scheduler::select::{GroupScoreInput, SelectCandidate, SelectDemand, group_score};
    let candidate = |score: i64, available: i64| SelectCandidate {
        name: format!("c{score}-{available}").into(),
        score,
        available,
        group: None,
    };
    let divided = |replicas: i64| SelectDemand {
        need_replicas: Some(replicas),
        replicas,
        duplicated: false,
    };
    let duplicated = |replicas: i64| SelectDemand {
        need_replicas: None,
        replicas,
        duplicated: true,
    };
    // (name, clusters (score, available), demand, group minGroups, cluster minGroups, expected)
    type Case = (&'static str, Vec<(i64, i64)>, SelectDemand, i64, i64, i64);
    let cases: Vec<Case> = vec![
        (
            "duplicated: 2 of 3 clusters hold 5, mean score of those",
            vec![(100, 9), (0, 5), (50, 1)],
            duplicated(5),
            1,
            1,
            2 * 1000 + 100 / 2,
        ),
        (
            "duplicated: none holds all replicas",
            vec![(100, 1)],
            duplicated(5),
            1,
            1,
            0,
        ),
        (
            "divided: target 10 met by the first cluster",
            vec![(100, 12), (0, 9)],
            divided(10),
            1,
            1,
            10 * 1000 + 100,
        ),
        (
            "divided: cluster minGroups 2 takes two clusters",
            vec![(100, 12), (0, 9)],
            divided(10),
            1,
            2,
            10 * 1000 + 100 / 2,
        ),
        (
            "divided: group minGroups 2 halves the target and raises the cluster minimum",
            vec![(100, 6), (0, 9)],
            divided(10),
            2,
            1,
            5 * 1000 + 100 / 2,
        ),
        (
            "divided: short of the target scores what it has",
            vec![(100, 2), (50, 1)],
            divided(10),
            1,
            1,
            3 * 1000 + 150 / 2,
        ),
    ];
    for (name, clusters, demand, group_min, cluster_min, expected) in cases {
        let owned: Vec<SelectCandidate> = clusters.iter().map(|(s, a)| candidate(*s, *a)).collect();
        let refs: Vec<&SelectCandidate> = owned.iter().collect();
        let score = group_score(GroupScoreInput {
            clusters: &refs,
            demand,
            group_min,
            cluster_min,
        });
        assert_eq!(score, expected, "{name}");
    }
}
