use proptest::prelude::*;
use serde_json::{Value, json};

use super::{storage_version, to_served, to_storage};
use crate::builtin::resource_defs;

fn hpa_def(version: &str) -> apimachinery::ResourceDef {
    resource_defs()
        .into_iter()
        .find(|d| d.kind == "HorizontalPodAutoscaler" && d.version == version)
        .unwrap()
}

fn v2(spec: Value, status: Option<Value>) -> Value {
    let mut object = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
        "spec": spec,
    });
    if let Some(status) = status {
        object["status"] = status;
    }
    object
}

fn annotation(object: &Value, key: &str) -> Value {
    let text = object["metadata"]["annotations"][key].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

const TARGET: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}"#;

fn target_ref() -> Value {
    serde_json::from_str(TARGET).unwrap()
}

#[test]
fn only_v1_horizontal_pod_autoscalers_are_converted_views() {
    assert_eq!(storage_version(&hpa_def("v1")), Some("v2"));
    assert_eq!(storage_version(&hpa_def("v2")), None);
    let deployment = resource_defs()
        .into_iter()
        .find(|d| d.kind == "Deployment")
        .unwrap();
    assert_eq!(storage_version(&deployment), None);
    let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"annotations": {
        "autoscaling.alpha.kubernetes.io/metrics": "[]"}}});
    assert_eq!(to_served(&deployment, object.clone()), object);
    assert_eq!(to_storage(&deployment, object.clone()).unwrap(), object);
}

#[test]
fn a_v1_cpu_target_becomes_a_v2_utilization_metric() {
    let v1 = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": target_ref(), "minReplicas": 2, "maxReplicas": 5,
                 "targetCPUUtilizationPercentage": 60},
    });
    let stored = to_storage(&hpa_def("v1"), v1.clone()).unwrap();
    assert_eq!(stored["apiVersion"], "autoscaling/v2");
    assert_eq!(
        stored["spec"],
        json!({"scaleTargetRef": target_ref(), "minReplicas": 2, "maxReplicas": 5, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu",
             "target": {"type": "Utilization", "averageUtilization": 60}}}]})
    );
    assert!(stored.get("status").is_none());
    assert_eq!(to_served(&hpa_def("v1"), stored), v1);
}

#[test]
fn a_v1_object_without_a_target_gets_the_implied_80_percent() {
    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"}, "spec": {"scaleTargetRef": target_ref(), "maxReplicas": 3}});
    let stored = to_storage(&hpa_def("v1"), v1).unwrap();
    assert_eq!(
        stored["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
}

#[test]
fn what_v1_cannot_hold_travels_in_annotations() {
    let memory = json!({"type": "Resource", "resource": {"name": "memory",
        "target": {"type": "AverageValue", "averageValue": "500Mi"}}});
    let cpu = json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": 50}}});
    let behavior = json!({"scaleDown": {"stabilizationWindowSeconds": 300}});
    let conditions =
        json!([{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]);
    let stored = v2(
        json!({"scaleTargetRef": target_ref(), "minReplicas": 1, "maxReplicas": 10,
               "metrics": [memory, cpu], "behavior": behavior}),
        Some(
            json!({"currentReplicas": 3, "desiredReplicas": 4, "conditions": conditions,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "300Mi"}}},
                {"type": "Resource", "resource": {"name": "cpu",
                 "current": {"averageUtilization": 72, "averageValue": "144m"}}}]}),
        ),
    );
    let v1 = to_served(&hpa_def("v1"), stored.clone());
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert!(v1["spec"].get("metrics").is_none());
    assert_eq!(
        v1["status"],
        json!({"currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 72})
    );
    assert_eq!(v1["metadata"]["annotations"]["team"], "a");
    assert_eq!(
        annotation(&v1, "autoscaling.alpha.kubernetes.io/metrics"),
        json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}}])
    );
    assert_eq!(
        annotation(&v1, "autoscaling.alpha.kubernetes.io/current-metrics"),
        json!([
            {"type": "Resource", "resource": {"name": "memory", "currentAverageValue": "300Mi"}},
            {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 72,
             "currentAverageValue": "144m"}}])
    );
    assert_eq!(
        annotation(&v1, "autoscaling.alpha.kubernetes.io/conditions"),
        conditions
    );
    assert_eq!(
        annotation(&v1, "autoscaling.alpha.kubernetes.io/behavior"),
        behavior
    );
    // Written back as read, the v2 object is what was stored.
    assert_eq!(to_storage(&hpa_def("v1"), v1).unwrap(), stored);
}

#[test]
fn object_pods_and_external_metrics_convert_field_by_field() {
    let selector = json!({"matchLabels": {"queue": "jobs"}});
    let metrics = json!([
        {"type": "Object", "object": {
            "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
            "metric": {"name": "requests-per-second"},
            "target": {"type": "Value", "value": "10k"}}},
        {"type": "Pods", "pods": {"metric": {"name": "packets", "selector": selector},
            "target": {"type": "AverageValue", "averageValue": "1k"}}},
        {"type": "External", "external": {"metric": {"name": "queue_depth", "selector": selector},
            "target": {"type": "AverageValue", "averageValue": "30"}}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
            "target": {"type": "Utilization", "averageUtilization": 60}}},
    ]);
    let current = json!([
        {"type": "Object", "object": {
            "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
            "metric": {"name": "requests-per-second"}, "current": {"value": "9k"}}},
        {"type": "Pods", "pods": {"metric": {"name": "packets"}, "current": {"averageValue": "800"}}},
        {"type": "External", "external": {"metric": {"name": "queue_depth", "selector": selector},
            "current": {"value": "90", "averageValue": "30"}}},
    ]);
    let stored = v2(
        json!({"scaleTargetRef": target_ref(), "maxReplicas": 4, "metrics": metrics}),
        Some(json!({"desiredReplicas": 3, "currentMetrics": current})),
    );
    let v1 = to_served(&hpa_def("v1"), stored.clone());
    assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
    assert_eq!(
        annotation(&v1, "autoscaling.alpha.kubernetes.io/metrics"),
        json!([
            {"type": "Object", "object": {
                "target": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                "metricName": "requests-per-second", "targetValue": "10k"}},
            {"type": "Pods", "pods": {"metricName": "packets", "selector": selector,
                "targetAverageValue": "1k"}},
            {"type": "External", "external": {"metricName": "queue_depth", "metricSelector": selector,
                "targetAverageValue": "30"}},
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
                "targetAverageUtilization": 60}},
        ])
    );
    assert_eq!(
        annotation(&v1, "autoscaling.alpha.kubernetes.io/current-metrics"),
        json!([
            {"type": "Object", "object": {
                "target": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                "metricName": "requests-per-second", "currentValue": "9k"}},
            {"type": "Pods", "pods": {"metricName": "packets", "currentAverageValue": "800"}},
            {"type": "External", "external": {"metricName": "queue_depth", "metricSelector": selector,
                "currentValue": "90", "currentAverageValue": "30"}},
        ])
    );
    assert_eq!(to_storage(&hpa_def("v1"), v1).unwrap(), stored);
}

#[test]
fn a_malformed_round_trip_annotation_is_a_field_error_showing_the_accepted_form() {
    for (key, value) in [
        ("autoscaling.alpha.kubernetes.io/metrics", "not json"),
        (
            "autoscaling.alpha.kubernetes.io/metrics",
            r#"{"type": "Resource"}"#,
        ),
        ("autoscaling.alpha.kubernetes.io/conditions", "[1]"),
        ("autoscaling.alpha.kubernetes.io/behavior", "[]"),
    ] {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {key: value}},
            "spec": {"scaleTargetRef": target_ref(), "maxReplicas": 3}});
        let error = to_storage(&hpa_def("v1"), v1).unwrap_err();
        assert_eq!(
            error.field,
            format!("metadata.annotations[{key}]"),
            "{value}"
        );
        assert!(error.detail.contains("e.g. "), "{}", error.detail);
    }
}

#[test]
fn a_v2_write_sheds_the_annotations_only_v1_views_carry() {
    let mut written = v2(
        json!({"scaleTargetRef": target_ref(), "maxReplicas": 3}),
        None,
    );
    written["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"] = json!("[]");
    let stored = to_storage(&hpa_def("v2"), written).unwrap();
    assert_eq!(stored["metadata"]["annotations"], json!({"team": "a"}));
}

fn resource_metric() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["memory", "ephemeral-storage", "cpu"]),
        prop::option::of(1..200i64),
        prop::option::of(prop::sample::select(vec!["1", "250m", "2Gi"])),
    )
        .prop_map(|(name, utilization, average)| {
            let mut target = serde_json::Map::new();
            target.insert(
                "type".into(),
                json!(if utilization.is_some() {
                    "Utilization"
                } else {
                    "AverageValue"
                }),
            );
            if let Some(average) = average {
                target.insert("averageValue".into(), json!(average));
            }
            if let Some(utilization) = utilization {
                target.insert("averageUtilization".into(), json!(utilization));
            }
            json!({"type": "Resource", "resource": {"name": name, "target": target}})
        })
}

proptest! {
    /// A v2 object read as v1 and written back is the stored object, whenever the CPU utilization
    /// metric (which v1 keeps in its own field) is the last one, as v1 writes put it.
    #[test]
    fn v2_objects_survive_a_v1_round_trip(
        others in prop::collection::vec(resource_metric(), 0..4),
        cpu in prop::option::of(1..100i64),
        min in prop::option::of(1..5i64),
        current in prop::option::of(0..9i64),
    ) {
        let mut metrics: Vec<Value> = others
            .into_iter()
            .filter(|m| !(m["resource"]["name"] == "cpu" && m["resource"]["target"].get("averageUtilization").is_some()))
            .collect();
        if let Some(cpu) = cpu {
            metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": cpu}}}));
        }
        prop_assume!(!metrics.is_empty());
        let mut spec = json!({"scaleTargetRef": target_ref(), "maxReplicas": 9, "metrics": metrics});
        if let Some(min) = min {
            spec["minReplicas"] = json!(min);
        }
        let status = current.map(|n| json!({"currentReplicas": n, "desiredReplicas": n}));
        let stored = v2(spec, status);
        let v1 = to_served(&hpa_def("v1"), stored.clone());
        prop_assert_eq!(to_storage(&hpa_def("v1"), v1).unwrap(), stored);
    }
}
