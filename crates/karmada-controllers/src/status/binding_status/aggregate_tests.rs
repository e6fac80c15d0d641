use jiff::Timestamp;
use serde_json::json;

use super::*;

fn time(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH))
}

fn spec(value: Value) -> ResourceBindingSpec {
    serde_json::from_value(value).expect("spec")
}

fn deployment_spec(clusters: Value) -> ResourceBindingSpec {
    spec(json!({
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"},
        "replicas": 6,
        "clusters": clusters,
    }))
}

/// A Work in `cluster` with the given Applied condition (None: no condition) and Deployment status.
fn work(cluster: &str, applied: Option<(&str, &str)>, ready: Option<i64>) -> Work {
    let conditions: Vec<Value> = applied
        .map(|(status, message)| {
            json!({"type": "Applied", "status": status, "reason": "x", "message": message,
                   "lastTransitionTime": "2026-01-01T00:00:00Z"})
        })
        .into_iter()
        .collect();
    let manifest_statuses: Vec<Value> = ready
        .map(|ready| {
            json!({"identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                                  "resource": "deployments", "namespace": "default", "name": "nginx"},
                   "status": {"replicas": ready, "readyReplicas": ready}, "health": "Healthy"})
        })
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": "nginx-687f7fb96f", "namespace": format!("karmada-es-{cluster}")},
        "status": {"conditions": conditions, "manifestStatuses": manifest_statuses},
    }))
    .expect("work")
}

#[test]
fn items_per_work_table() {
    let resource = deployment_spec(json!([])).resource;
    let cases: Vec<(&str, Vec<Work>, Value)> = vec![
        (
            "applied with status, sorted by cluster",
            vec![
                work("gcp", Some(("True", "ok")), Some(2)),
                work("aws", Some(("True", "ok")), Some(4)),
            ],
            json!([
                {"clusterName": "aws", "status": {"replicas": 4, "readyReplicas": 4}, "applied": true, "health": "Healthy"},
                {"clusterName": "gcp", "status": {"replicas": 2, "readyReplicas": 2}, "applied": true, "health": "Healthy"},
            ]),
        ),
        (
            "failed apply carries the message, no status",
            vec![work("aws", Some(("False", "already exists")), Some(4))],
            json!([{"clusterName": "aws", "appliedMessage": "already exists", "health": "Unknown"}]),
        ),
        (
            "no Applied condition yet",
            vec![work("aws", None, None)],
            json!([{"clusterName": "aws", "health": "Unknown"}]),
        ),
        (
            "applied but member status not collected yet",
            vec![work("aws", Some(("True", "ok")), None)],
            json!([{"clusterName": "aws", "applied": true, "health": "Unknown"}]),
        ),
    ];
    for (name, works, expected) in cases {
        let items = aggregated_status_items(&resource, &works);
        assert_eq!(
            serde_json::to_value(&items).expect("json"),
            expected,
            "{name}"
        );
    }
    // A Work outside an execution namespace is no cluster's.
    let mut stray = work("aws", Some(("True", "ok")), Some(1));
    stray.metadata.namespace = Some("default".into());
    assert!(aggregated_status_items(&resource, &[stray]).is_empty());
}

#[test]
fn manifest_status_of_another_object_is_ignored() {
    let resource = deployment_spec(json!([])).resource;
    let mut other = work("aws", Some(("True", "ok")), Some(3));
    if let Some(status) = other.status.as_mut() {
        status.manifest_statuses[0].identifier.name = "other".into();
    }
    let items = aggregated_status_items(&resource, &[other]);
    assert_eq!(items[0].status, None);
    assert_eq!(items[0].health, Some(ResourceHealth::Unknown));
}

#[test]
fn fully_applied_table() {
    let now = time(100);
    let two = json!([{"name": "aws", "replicas": 4}, {"name": "gcp", "replicas": 2}]);
    let cases: Vec<(&str, ResourceBindingSpec, Vec<Work>, &str)> = vec![
        (
            "every scheduled cluster applied",
            deployment_spec(two.clone()),
            vec![
                work("aws", Some(("True", "")), Some(4)),
                work("gcp", Some(("True", "")), Some(2)),
            ],
            "True",
        ),
        (
            "one cluster failed",
            deployment_spec(two.clone()),
            vec![
                work("aws", Some(("True", "")), Some(4)),
                work("gcp", Some(("False", "boom")), None),
            ],
            "False",
        ),
        (
            "one Work missing",
            deployment_spec(two.clone()),
            vec![work("aws", Some(("True", "")), Some(4))],
            "False",
        ),
        (
            "a Work outside the target clusters",
            deployment_spec(json!([{"name": "aws", "replicas": 6}])),
            vec![work("gcp", Some(("True", "")), Some(6))],
            "False",
        ),
        ("not scheduled", deployment_spec(json!([])), vec![], "False"),
        (
            "requiredBy clusters count",
            spec(json!({
                "resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "cfg"},
                "requiredBy": [{"namespace": "default", "name": "nginx-deployment", "clusters": [{"name": "aws"}]}],
            })),
            vec![work("aws", Some(("True", "")), None)],
            "True",
        ),
        (
            "gracefully evicted cluster still counts",
            spec(json!({
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"},
                "clusters": [{"name": "aws", "replicas": 6}],
                "gracefulEvictionTasks": [{"fromCluster": "gcp", "reason": "TaintUntolerated", "producer": "TaintManager"}],
            })),
            vec![work("aws", Some(("True", "")), Some(6))],
            "False",
        ),
    ];
    for (name, spec, works, expected) in cases {
        let items = aggregated_status_items(&spec.resource, &works);
        let condition = fully_applied_condition(&spec, &items, &now);
        assert_eq!(condition.status, expected, "{name}");
        assert_eq!(condition.type_, CONDITION_FULLY_APPLIED);
        let (reason, message) = if expected == "True" {
            (REASON_FULLY_APPLIED_SUCCESS, MESSAGE_FULLY_APPLIED_SUCCESS)
        } else {
            (REASON_FULLY_APPLIED_FAILED, MESSAGE_FULLY_APPLIED_FAILED)
        };
        assert_eq!(
            (condition.reason.as_str(), condition.message.as_str()),
            (reason, message),
            "{name}"
        );
    }
}

#[test]
fn transition_time_moves_only_on_status_change() {
    let spec = deployment_spec(json!([{"name": "aws", "replicas": 6}]));
    let applied = [work("aws", Some(("True", "")), Some(6))];
    let scheduled = Condition {
        type_: "Scheduled".into(),
        status: "True".into(),
        reason: "Success".into(),
        message: String::new(),
        last_transition_time: time(1),
        observed_generation: Some(3),
    };
    let current = ResourceBindingStatus {
        scheduler_observed_generation: 3,
        scheduler_observed_affinity_name: "primary".into(),
        last_scheduled_time: Some(time(2)),
        conditions: vec![scheduled.clone()],
        ..ResourceBindingStatus::default()
    };
    let first = desired_binding_status(
        Some(&current),
        &spec,
        aggregated_status_items(&spec.resource, &applied),
        &time(10),
    );
    assert_eq!(first.scheduler_observed_generation, 3);
    assert_eq!(first.scheduler_observed_affinity_name, "primary");
    assert_eq!(first.last_scheduled_time, Some(time(2)));
    assert_eq!(first.conditions[0], scheduled);
    assert_eq!(first.conditions[1].last_transition_time, time(10));
    // Same outcome later: nothing changes, so the controller writes nothing.
    let again = desired_binding_status(
        Some(&first),
        &spec,
        aggregated_status_items(&spec.resource, &applied),
        &time(20),
    );
    assert_eq!(again, first);
    // A failure flips the condition and moves its time.
    let failed = [work("aws", Some(("False", "quota")), None)];
    let flipped = desired_binding_status(
        Some(&first),
        &spec,
        aggregated_status_items(&spec.resource, &failed),
        &time(30),
    );
    assert_eq!(flipped.conditions[1].status, "False");
    assert_eq!(flipped.conditions[1].last_transition_time, time(30));
    assert_eq!(flipped.aggregated_status[0].applied_message, "quota");
}

#[test]
fn ready_replicas_sum_workload_and_daemonset_counters() {
    let items: Vec<AggregatedStatusItem> = serde_json::from_value(json!([
        {"clusterName": "a", "status": {"readyReplicas": 4}},
        {"clusterName": "b", "status": {"numberReady": 2}},
        {"clusterName": "c"},
    ]))
    .expect("items");
    assert_eq!(ready_replicas(&items), 6);
    assert!(existing_clusters(&deployment_spec(json!([]))).is_empty());
}

#[test]
fn template_conditions_keep_their_transition_time_until_their_status_changes() {
    let previous = json!({"conditions": [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
         "lastTransitionTime": "2026-12-01T10:00:00Z"},
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
         "lastTransitionTime": "2026-12-01T09:00:00Z"}]});
    let mut status = json!({"replicas": 4, "conditions": [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"},
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate"},
        {"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-30T00:00:00Z"}]});
    stamp_transition_times(Some(&previous), Some(&mut status), &time(1_764_633_600));
    let times: Vec<&str> = status["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| c["lastTransitionTime"].as_str().expect("stamped"))
        .collect();
    assert_eq!(
        times,
        [
            "2026-12-01T10:00:00Z", // same status: the previous time
            "2025-12-02T00:00:00Z", // status changed: now
            "2025-12-02T00:00:00Z", // new condition: now
            "2026-11-30T00:00:00Z", // the aggregator's own time stays
        ]
    );
    let mut none = json!({"replicas": 1});
    stamp_transition_times(None, Some(&mut none), &time(0));
    assert_eq!(none, json!({"replicas": 1}));
}
