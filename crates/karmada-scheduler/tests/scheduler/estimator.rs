//! The general estimator (docs/karmada.md, "Scheduler estimators"), observed through the available replicas the
//! explanation reports.

use serde_json::{Value, json};

use super::common::*;

fn dynamic_policy() -> Value {
    policy(
        json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
    )
}

fn available(cluster_doc: ClusterDoc, workload: &Value) -> (Option<i64>, String) {
    let plan = run(
        workload,
        &dynamic_policy(),
        &[
            cluster_doc.clone(),
            cluster("spare").capacity("1000", "1000Gi", 1000),
        ],
        None,
    );
    let decision = plan
        .explanation
        .clusters
        .iter()
        .find(|c| cluster_doc.0["metadata"]["name"] == *c.name)
        .expect("decision");
    let method = decision
        .estimate
        .as_ref()
        .map(|e| format!("{:?}", e.method))
        .unwrap_or_default();
    (decision.available_replicas, method)
}

#[test]
fn summary_mode_table() {
    let workload = deployment("app", 1, "500m", "1Gi");
    let cases: Vec<(&str, ClusterDoc, i64)> = vec![
        ("cpu bounds", cluster("c").capacity("2", "64Gi", 110), 4),
        ("memory bounds", cluster("c").capacity("64", "3Gi", 110), 3),
        ("pods bound", cluster("c").capacity("64", "64Gi", 5), 5),
        (
            "allocated and allocating are subtracted",
            cluster("c").summary(json!({
                "allocatable": {"cpu": "4", "memory": "64Gi", "pods": "110"},
                "allocated": {"cpu": "1500m", "pods": "10"},
                "allocating": {"cpu": "500m"}
            })),
            4,
        ),
        ("a resource missing from allocatable counts as 0", cluster("c").summary(json!({"allocatable": {"cpu": "4", "pods": "110"}})), 0),
        ("no pods reported allows no replicas", cluster("c").summary(json!({"allocatable": {"cpu": "4", "memory": "8Gi"}})), 0),
        ("over-allocated clamps at 0", cluster("c").summary(json!({"allocatable": {"cpu": "1", "memory": "8Gi", "pods": "10"}, "allocated": {"cpu": "2"}})), 0),
    ];
    for (name, doc, expected) in cases {
        let (replicas, method) = available(doc, &workload);
        assert_eq!(replicas, Some(expected), "{name}");
        assert_eq!(method, "Summary", "{name}");
    }
}

#[test]
fn no_requirements_counts_free_pods() {
    let mut workload = deployment("app", 1, "0", "0");
    workload["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({});
    let (replicas, method) = available(cluster("c").capacity("1", "1Gi", 7), &workload);
    assert_eq!((replicas, method.as_str()), (Some(7), "Pods"));
}

#[test]
fn resource_models_simulate_nodes_at_grade_minimums() {
    let workload = deployment("app", 1, "1", "1Gi");
    // Default models: grade 2 is [2,4) cores, [16,32) GiB, so each of 3 nodes takes 2 replicas.
    let with_defaults = cluster("c").summary(json!({
        "allocatable": {"cpu": "100", "memory": "1000Gi", "pods": "100"},
        "allocatableModelings": [{"grade": 2, "count": 3}]
    }));
    assert_eq!(
        available(with_defaults, &workload),
        (Some(6), "ResourceModels".to_string())
    );
    // Custom models: grade 1 starts at 4 cores and 8Gi.
    let workload = deployment("app", 1, "2", "1Gi");
    let custom = cluster("c")
        .set("/spec", "resourceModels", json!([
            {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "4"}, {"name": "memory", "min": "0", "max": "8Gi"}]},
            {"grade": 1, "ranges": [{"name": "cpu", "min": "4", "max": "1000"}, {"name": "memory", "min": "8Gi", "max": "1Ti"}]}
        ]))
        .summary(json!({"allocatable": {"cpu": "100", "memory": "1000Gi", "pods": "3"}, "allocatableModelings": [{"grade": 0, "count": 5}, {"grade": 1, "count": 2}]}));
    // 2 nodes × 2 replicas = 4, but only 3 pods are allowed.
    assert_eq!(
        available(custom, &workload),
        (Some(3), "ResourceModels".to_string())
    );
}

#[test]
fn missing_resource_summary_counts_zero_and_says_why() {
    let plan = run(
        &deployment("app", 3, "100m", "64Mi"),
        &dynamic_policy(),
        &[cluster("blind")],
        None,
    );
    assert!(!plan.success());
    assert_eq!(
        plan.binding["status"]["conditions"][0]["reason"],
        "Unschedulable"
    );
    assert_eq!(
        plan.explanation.message,
        "Clusters available replicas 0 are not enough to schedule."
    );
    let table = plan.render_table();
    assert!(table.contains("no status.resourceSummary"), "{table}");
}

#[test]
fn what_a_cluster_cannot_hold_moves_to_the_others() {
    // The seed's rebalancing: weights by capacity, so the small cluster is never given more than it holds.
    let clusters = [
        cluster("small").capacity("1", "64Gi", 110),
        cluster("large").capacity("20", "64Gi", 110),
    ];
    let plan = run(
        &deployment("app", 12, "500m", "64Mi"),
        &dynamic_policy(),
        &clusters,
        None,
    );
    assert_eq!(assignment(&plan), expect(&[("large", 11), ("small", 1)]));
}
