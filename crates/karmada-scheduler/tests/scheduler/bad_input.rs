//! Bad input gets a clear message that says what is accepted — never a panic.

use serde_json::{Value, json};

use super::common::*;

#[test]
fn input_errors_table() {
    let app = deployment("app", 3, "100m", "64Mi");
    let cases: Vec<(&str, Value, Vec<ClusterDoc>, &str)> = vec![
        (
            "weight 0 in a static weight rule",
            policy(
                json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": ["a"]}, "weight": 0}]}}}),
            ),
            vec![cluster("a")],
            "staticWeightList[0].weight: must be at least 1, got 0",
        ),
        (
            "malformed label selector operator",
            policy(
                json!({"clusterAffinity": {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Within", "values": ["a"]}]}}}),
            ),
            vec![cluster("a")],
            "placement.clusterAffinity.labelSelector: malformed label selector",
        ),
        (
            "field selector on an unsupported key",
            policy(
                json!({"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "name", "operator": "In", "values": ["a"]}]}}}),
            ),
            vec![cluster("a")],
            "unsupported key \"name\": supported keys are provider, region and zone",
        ),
        (
            "field selector In without values",
            policy(
                json!({"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In"}]}}}),
            ),
            vec![cluster("a")],
            "values: must be non-empty for operator In",
        ),
        (
            "spreadByField and spreadByLabel together",
            policy(
                json!({"spreadConstraints": [{"spreadByField": "region", "spreadByLabel": "x"}]}),
            ),
            vec![cluster("a")],
            "spreadByField and spreadByLabel are exclusive",
        ),
        (
            "maxGroups below minGroups",
            policy(
                json!({"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 3, "maxGroups": 2}]}),
            ),
            vec![cluster("a")],
            "maxGroups 2 is lower than minGroups 3",
        ),
        (
            "region constraint without a cluster constraint",
            policy(
                json!({"spreadConstraints": [{"spreadByField": "region", "minGroups": 1, "maxGroups": 2}]}),
            ),
            vec![cluster("a")],
            "needs a spreadByField: cluster constraint beside it",
        ),
        (
            "unknown spreadByField",
            policy(json!({"spreadConstraints": [{"spreadByField": "rack"}]})),
            vec![cluster("a")],
            "unknown variant `rack`",
        ),
        (
            "clusterAffinity with clusterAffinities",
            policy(json!({"clusterAffinity": {}, "clusterAffinities": [{"affinityName": "a"}]})),
            vec![cluster("a")],
            "cannot be used together with clusterAffinity",
        ),
        (
            "overflow with static weights",
            policy(
                json!({"clusterAffinities": [{"affinityName": "a", "overflowAffinities": [{"affinityName": "b"}]}], "replicaScheduling": {"replicaSchedulingType": "Divided"}}),
            ),
            vec![cluster("a")],
            "only allowed with Divided replicas and dynamicWeight or Aggregated",
        ),
        (
            "bad quantity in a cluster",
            policy(json!({})),
            vec![cluster("a").capacity("lots", "1Gi", 1)],
            "Cluster a: status.resourceSummary.allocatable.cpu: invalid quantity \"lots\"",
        ),
        (
            "cluster without a name",
            policy(json!({})),
            vec![cluster("").capacity("1", "1Gi", 1)],
            "Cluster metadata.name: is required",
        ),
        (
            "the same cluster twice",
            policy(json!({})),
            vec![cluster("a"), cluster("a")],
            "Cluster a: is given twice",
        ),
    ];
    for (name, policy, clusters, expected) in cases {
        let error = try_run(&app, &policy, &clusters, &[]).expect_err(name);
        assert!(error.contains(expected), "{name}: {error}");
    }
}

#[test]
fn bad_workload_and_policy_documents() {
    let not_a_policy = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let error = try_run(
        &deployment("app", 1, "1", "1Gi"),
        &not_a_policy,
        &[cluster("a")],
        &[],
    )
    .expect_err("kind");
    assert!(
        error.contains("expected a PropagationPolicy or ClusterPropagationPolicy"),
        "{error}"
    );
    let mut negative = deployment("app", 1, "1", "1Gi");
    negative["spec"]["replicas"] = json!(-2);
    let error = try_run(&negative, &policy(json!({})), &[cluster("a")], &[]).expect_err("replicas");
    assert!(
        error.contains("spec.replicas: must be a non-negative integer, got -2"),
        "{error}"
    );
    let error = try_run(
        &deployment("app", 1, "a lot", "1Gi"),
        &policy(json!({})),
        &[cluster("a")],
        &[],
    )
    .expect_err("cpu");
    assert!(
        error.contains("containers[0].resources.requests.cpu: invalid quantity"),
        "{error}"
    );
}

#[test]
fn infeasible_requests_are_unscheduled_with_a_reason() {
    let app = deployment("app", 4, "1", "1Gi");
    let cases: Vec<(&str, Value, Vec<ClusterDoc>, &str, &str)> = vec![
        (
            "minGroups above the number of clusters",
            policy(
                json!({"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 3, "maxGroups": 3}],
                          "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
            ),
            vec![
                cluster("a").capacity("8", "8Gi", 10),
                cluster("b").capacity("8", "8Gi", 10),
            ],
            "SchedulerError",
            "failed to select clusters: the number of feasible clusters 2 is less than spreadConstraint (cluster) minGroups 3",
        ),
        (
            "maxGroups 0",
            policy(
                json!({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 0}],
                          "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
            ),
            vec![cluster("a").capacity("8", "8Gi", 10)],
            "SchedulerError",
            "failed to select clusters: spreadConstraint (cluster) has maxGroups 0, so nothing can be selected",
        ),
        (
            "no static weight rule matches and weights fall back to equal",
            policy(
                json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": ["elsewhere"]}, "weight": 5}]}}}),
            ),
            vec![cluster("a"), cluster("b")],
            "Success",
            "Binding has been scheduled successfully.",
        ),
        (
            "not enough capacity for Aggregated",
            policy(
                json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}),
            ),
            vec![
                cluster("a").capacity("1", "8Gi", 10),
                cluster("b").capacity("2", "8Gi", 10),
            ],
            "Unschedulable",
            "Clusters available replicas 3 are not enough to schedule.",
        ),
        (
            "every cluster filtered",
            policy(json!({})),
            vec![
                cluster("a").taint("cluster.karmada.io/unreachable", "", "NoSchedule"),
                cluster("b").without_api_enablements(),
            ],
            "NoClusterFit",
            "0/2 clusters are available: 1 cluster(s) did not have the API resource, 1 cluster(s) had untolerated taint {cluster.karmada.io/unreachable:NoSchedule}.",
        ),
        (
            "no clusters at all",
            policy(json!({})),
            vec![],
            "NoClusterFit",
            "0/0 clusters are available: no clusters to schedule to.",
        ),
    ];
    for (name, policy, clusters, reason, message) in cases {
        let plan = try_run(&app, &policy, &clusters, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(plan.explanation.reason, reason, "{name}");
        assert!(
            plan.explanation.message.starts_with(message),
            "{name}: {}",
            plan.explanation.message
        );
        assert_eq!(plan.success(), reason == "Success", "{name}");
        assert_eq!(
            plan.binding["status"]["conditions"][0]["status"],
            if reason == "Success" { "True" } else { "False" },
            "{name}"
        );
    }
}
