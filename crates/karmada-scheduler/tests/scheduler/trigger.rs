//! When a binding is (re)scheduled (docs/karmada.md, "Scheduling triggers"), rule by rule.

use karmada_api::ResourceBinding;
use karmada_scheduler::trigger::{ScheduleTrigger, schedule_trigger, served_by};
use serde_json::{Value, json};

fn divided() -> Value {
    json!({"replicaScheduling": {"replicaSchedulingType": "Divided"}})
}

fn binding(placement: Value, applied: Option<&Value>, replicas: i64, clusters: Value) -> Value {
    let mut annotations = json!({});
    if let Some(applied) = applied {
        annotations["policy.karmada.io/applied-placement"] = json!(applied.to_string());
    }
    json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "app-deployment", "namespace": "default", "annotations": annotations,
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "abc"}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
                 "replicas": replicas, "placement": placement, "clusters": clusters,
                 "replicaRequirements": {"resourceRequest": {"cpu": "1"}}},
        "status": {"lastScheduledTime": "2026-11-29T10:00:00Z"}
    })
}

fn trigger(value: &Value, terminating: &[&str]) -> Option<ScheduleTrigger> {
    let binding: ResourceBinding = serde_json::from_value(value.clone()).expect("binding");
    schedule_trigger(
        &binding.metadata,
        &binding.spec,
        binding.status.as_ref(),
        |name| terminating.contains(&name),
    )
}

#[test]
fn trigger_rules_in_order() {
    let placement = divided();
    let steady = json!([{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}]);
    let cases: Vec<(&str, Value, &[&str], Option<ScheduleTrigger>)> = vec![
        (
            "no applied placement",
            binding(placement.clone(), None, 3, steady.clone()),
            &[],
            Some(ScheduleTrigger::ReconcileSchedule),
        ),
        (
            "applied placement differs",
            binding(
                placement.clone(),
                Some(&json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}})),
                3,
                steady.clone(),
            ),
            &[],
            Some(ScheduleTrigger::ReconcileSchedule),
        ),
        (
            "nothing changed",
            binding(placement.clone(), Some(&placement), 3, steady.clone()),
            &[],
            None,
        ),
        (
            "divided sum differs",
            binding(placement.clone(), Some(&placement), 5, steady.clone()),
            &[],
            Some(ScheduleTrigger::ScaleSchedule),
        ),
        (
            "duplicated replica differs",
            binding(
                json!({}),
                Some(&json!({})),
                2,
                json!([{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}]),
            ),
            &[],
            Some(ScheduleTrigger::ScaleSchedule),
        ),
        (
            "duplicated is always rescheduled",
            binding(
                json!({}),
                Some(&json!({})),
                2,
                json!([{"name": "a", "replicas": 2}]),
            ),
            &[],
            Some(ScheduleTrigger::AlwaysSchedule),
        ),
        (
            "a target cluster is terminating",
            binding(placement.clone(), Some(&placement), 3, steady.clone()),
            &["b"],
            Some(ScheduleTrigger::ClusterTerminating),
        ),
        (
            "reschedule requested after the last schedule",
            {
                let mut b = binding(placement.clone(), Some(&placement), 3, steady.clone());
                b["spec"]["rescheduleTriggeredAt"] = json!("2026-11-29T11:00:00Z");
                b
            },
            &[],
            Some(ScheduleTrigger::FreshSchedule),
        ),
        (
            "reschedule requested before the last schedule",
            {
                let mut b = binding(placement.clone(), Some(&placement), 3, steady.clone());
                b["spec"]["rescheduleTriggeredAt"] = json!("2026-11-29T09:00:00Z");
                b
            },
            &[],
            None,
        ),
        (
            "clusterAffinities: only the observed term is compared",
            {
                let current = json!({"clusterAffinities": [{"affinityName": "x", "clusterNames": ["a"]}, {"affinityName": "y", "clusterNames": ["c"]}],
                                     "replicaScheduling": {"replicaSchedulingType": "Divided"}});
                let applied = json!({"clusterAffinities": [{"affinityName": "x", "clusterNames": ["a"]}, {"affinityName": "y", "clusterNames": ["b"]}],
                                     "replicaScheduling": {"replicaSchedulingType": "Divided"}});
                let mut b = binding(current, Some(&applied), 3, steady.clone());
                b["status"]["schedulerObservingAffinityName"] = json!("x");
                b
            },
            &[],
            None,
        ),
    ];
    for (name, value, terminating, expected) in cases {
        assert_eq!(trigger(&value, terminating), expected, "{name}");
    }
}

#[test]
fn only_labelled_unsuspended_bindings_of_this_scheduler_are_served() {
    let base = binding(divided(), None, 1, json!([]));
    let served = |value: &Value, scheduler: &str| {
        let binding: ResourceBinding = serde_json::from_value(value.clone()).expect("binding");
        served_by(&binding.metadata, &binding.spec, scheduler)
    };
    assert!(served(&base, "default-scheduler"));
    assert!(!served(&base, "other-scheduler"));
    let mut suspended = base.clone();
    suspended["spec"]["suspension"] = json!({"scheduling": true});
    assert!(!served(&suspended, "default-scheduler"));
    let mut unlabelled = base.clone();
    unlabelled["metadata"]["labels"] = json!({});
    assert!(!served(&unlabelled, "default-scheduler"));
}

#[test]
fn decisions_become_karmadas_two_merge_patches() {
    use karmada_scheduler::framework::{Framework, Registry};
    use karmada_scheduler::patch::scheduling_result;
    use karmada_scheduler::placement::prepare;
    use karmada_scheduler::scheduler::{ScheduleRequest, schedule};
    use karmada_scheduler::snapshot::ClusterSnapshot;

    let registry = Registry::in_tree().expect("registry");
    let framework = Framework::with_defaults(&registry).expect("framework");
    let value = binding(
        json!({"clusterAffinity": {"clusterNames": ["a"]}, "replicaScheduling": {"replicaSchedulingType": "Divided"}}),
        None,
        2,
        json!([{"name": "old", "replicas": 2}]),
    );
    let bound: ResourceBinding = serde_json::from_value(value).expect("binding");
    let placement = bound.spec.placement.clone().expect("placement");
    let prepared = prepare(&placement, "placement").expect("valid");
    let existing = vec![
        json!({"type": "FullyApplied", "status": "True"}),
        json!({"type": "Scheduled", "status": "True"}),
    ];
    let cases = [
        (
            "a",
            "True",
            Some(json!([{"name": "a", "replicas": 2}])),
            true,
        ),
        ("b", "False", Some(json!([])), false),
    ];
    for (cluster_name, status, clusters, scheduled) in cases {
        let cluster = super::common::cluster(cluster_name)
            .capacity("4", "8Gi", 10)
            .0;
        let snapshot = ClusterSnapshot::new(serde_json::from_value(cluster).expect("cluster"))
            .expect("snapshot");
        let request = ScheduleRequest {
            spec: &bound.spec,
            placement: &placement,
            prepared: &prepared,
            workload: None,
            observed_affinity: None,
            fresh: false,
            keep_empty: false,
            scheduler_name: "default-scheduler",
            accurate: None,
        };
        let outcome = schedule(&framework, &request, &[snapshot]).expect("schedule");
        let result = scheduling_result(
            &outcome,
            Some(&placement),
            Some(7),
            Some("2026-11-29T12:00:00Z"),
        )
        .expect("result");
        let (spec_patch, status_patch) = result.merge_patches(&existing);
        assert_eq!(
            spec_patch["spec"]["clusters"],
            clusters.clone().unwrap_or(Value::Null),
            "{cluster_name}"
        );
        assert!(
            spec_patch["metadata"]["annotations"]["policy.karmada.io/applied-placement"]
                .is_string()
        );
        let conditions = status_patch["status"]["conditions"]
            .as_array()
            .expect("conditions");
        assert_eq!(
            conditions.len(),
            2,
            "the Scheduled condition replaces the old one, others stay"
        );
        assert_eq!(conditions[0]["status"], status);
        assert_eq!(
            status_patch["status"]["schedulerObservedGeneration"].as_i64(),
            scheduled.then_some(7)
        );
        assert_eq!(
            status_patch["status"]["lastScheduledTime"].is_string(),
            scheduled
        );
    }
}
