//! A kind served at a version other than its storage version: `autoscaling/v1`
//! HorizontalPodAutoscalers over stored `autoscaling/v2` objects, through every verb.

use http::StatusCode;
use serde_json::{Value, json};

use super::harness::Harness;

const V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";

fn v1_hpa(name: &str, cpu: Option<i64>) -> Value {
    let mut hpa = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                 "maxReplicas": 5},
    });
    if let Some(cpu) = cpu {
        hpa["spec"]["targetCPUUtilizationPercentage"] = json!(cpu);
    }
    hpa
}

fn cpu_metric(utilization: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

fn memory_metric() -> Value {
    json!({"type": "Resource", "resource": {"name": "memory",
        "target": {"type": "AverageValue", "averageValue": "500Mi"}}})
}

#[tokio::test]
async fn a_v1_object_is_stored_as_v2_and_read_back_in_either_version() {
    let h = Harness::new().await;
    let created = h.post(V1, &v1_hpa("web", Some(70))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(created.body["apiVersion"], "autoscaling/v1");
    assert_eq!(created.body["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(created.body["spec"]["minReplicas"], 1, "defaulted");
    assert!(created.body["spec"].get("metrics").is_none());

    let as_v2 = h.get(&format!("{V2}/web")).await;
    assert_eq!(as_v2.status, StatusCode::OK);
    assert_eq!(as_v2.body["apiVersion"], "autoscaling/v2");
    assert_eq!(as_v2.body["spec"]["metrics"], json!([cpu_metric(70)]));
    assert_eq!(
        as_v2.body["metadata"]["resourceVersion"],
        created.body["metadata"]["resourceVersion"]
    );

    let as_v1 = h.get(&format!("{V1}/web")).await;
    assert_eq!(as_v1.body, created.body);
    let list = h.get(V1).await;
    assert_eq!(list.body["apiVersion"], "autoscaling/v1");
    assert_eq!(list.body["items"][0]["apiVersion"], "autoscaling/v1");
    assert_eq!(
        list.body["items"][0]["spec"]["targetCPUUtilizationPercentage"],
        70
    );

    // No CPU target and no other metric: v1 implies 80 %.
    let bare = h.post(V1, &v1_hpa("bare", None)).await;
    assert_eq!(bare.status, StatusCode::CREATED, "{:?}", bare.body);
    assert_eq!(bare.body["spec"]["targetCPUUtilizationPercentage"], 80);
    let bare_v2 = h.get(&format!("{V2}/bare")).await;
    assert_eq!(bare_v2.body["spec"]["metrics"], json!([cpu_metric(80)]));
}

#[tokio::test]
async fn v1_writes_keep_what_only_v2_can_say() {
    let h = Harness::new().await;
    let v2 = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "api", "annotations": {"autoscaling.alpha.kubernetes.io/metrics": "[]"}},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                 "minReplicas": 2, "maxReplicas": 10, "metrics": [memory_metric(), cpu_metric(60)],
                 "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}}},
    });
    let created = h.post(V2, &v2).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert!(
        created.body["metadata"].get("annotations").is_none(),
        "a v2 write sheds v1's round-trip annotations: {}",
        created.body["metadata"]
    );

    let v1 = h.get(&format!("{V1}/api")).await.body;
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    let annotations = &v1["metadata"]["annotations"];
    assert!(
        annotations["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .is_some_and(|m| m.contains("memory")),
        "{annotations}"
    );
    assert!(annotations["autoscaling.alpha.kubernetes.io/behavior"].is_string());

    // PUT back what was read, with a new maximum: the memory metric and the behavior survive.
    let mut changed = v1.clone();
    changed["spec"]["maxReplicas"] = json!(12);
    let put = h.put(&format!("{V1}/api"), &changed).await;
    assert_eq!(put.status, StatusCode::OK, "{:?}", put.body);
    assert_eq!(put.body["apiVersion"], "autoscaling/v1");
    let stored = h.get(&format!("{V2}/api")).await.body;
    assert_eq!(stored["spec"]["maxReplicas"], 12);
    assert_eq!(
        stored["spec"]["metrics"],
        json!([memory_metric(), cpu_metric(60)])
    );
    assert_eq!(
        stored["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        120
    );
    assert!(
        stored["metadata"].get("annotations").is_none(),
        "{}",
        stored["metadata"]
    );

    // A merge patch in v1 terms changes the CPU target only.
    let patched = h
        .patch(
            &format!("{V1}/api"),
            "application/merge-patch+json",
            &json!({"spec": {"targetCPUUtilizationPercentage": 45}}),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{:?}", patched.body);
    assert_eq!(patched.body["spec"]["targetCPUUtilizationPercentage"], 45);
    let stored = h.get(&format!("{V2}/api")).await.body;
    assert_eq!(
        stored["spec"]["metrics"],
        json!([memory_metric(), cpu_metric(45)])
    );

    // A patch that changes nothing writes nothing.
    let again = h
        .patch(
            &format!("{V1}/api"),
            "application/strategic-merge-patch+json",
            &json!({"spec": {"targetCPUUtilizationPercentage": 45}}),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);
    assert_eq!(
        again.body["metadata"]["resourceVersion"],
        patched.body["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn v1_status_writes_and_deletes_go_through_the_stored_version() {
    let h = Harness::new().await;
    let created = h.post(V1, &v1_hpa("web", Some(50))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let status = h
        .patch(
            &format!("{V1}/web/status"),
            "application/merge-patch+json",
            &json!({"status": {"currentReplicas": 3, "desiredReplicas": 4,
                               "currentCPUUtilizationPercentage": 90}}),
        )
        .await;
    assert_eq!(status.status, StatusCode::OK, "{:?}", status.body);
    assert_eq!(status.body["status"]["currentCPUUtilizationPercentage"], 90);
    let stored = h.get(&format!("{V2}/web")).await.body;
    assert_eq!(stored["status"]["desiredReplicas"], 4);
    assert_eq!(
        stored["status"]["currentMetrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 90}}}])
    );

    let deleted = h.delete(&format!("{V1}/web"), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);
    assert_eq!(deleted.body["apiVersion"], "autoscaling/v1");
    assert_eq!(deleted.body["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(
        h.get(&format!("{V2}/web")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn bad_v1_input_is_refused_in_v1_terms_and_nothing_is_stored() {
    let h = Harness::new().await;
    let mut zero_max = v1_hpa("web", Some(50));
    zero_max["spec"]["maxReplicas"] = json!(0);
    let refused = h.post(V1, &zero_max).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        refused.body
    );
    assert_eq!(
        refused.body["details"]["causes"][0]["field"],
        "spec.maxReplicas"
    );

    let mut garbled = v1_hpa("web", Some(50));
    garbled["metadata"]["annotations"] =
        json!({"autoscaling.alpha.kubernetes.io/metrics": "cpu=50"});
    let refused = h.post(V1, &garbled).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        refused.body
    );
    let cause = &refused.body["details"]["causes"][0];
    assert_eq!(
        cause["field"],
        "metadata.annotations[autoscaling.alpha.kubernetes.io/metrics]"
    );
    assert!(
        cause["message"]
            .as_str()
            .is_some_and(|m| m.contains("e.g. [{")),
        "shows the accepted form: {cause}"
    );

    let mut unknown = v1_hpa("web", Some(50));
    unknown["spec"]["metrics"] = json!([]);
    let strict = h
        .request(
            http::Method::POST,
            &format!("{V1}?fieldValidation=Strict"),
            Some("application/json"),
            unknown.to_string().into_bytes(),
        )
        .await;
    assert_eq!(strict.status, StatusCode::BAD_REQUEST, "{:?}", strict.body);
    assert!(
        strict.message().contains("unknown field \"spec.metrics\""),
        "{}",
        strict.message()
    );

    assert_eq!(
        h.get(&format!("{V2}/web")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(h.get(V2).await.body["items"], json!([]));
}

#[tokio::test]
async fn watches_and_tables_at_v1_show_v1_objects() {
    let h = Harness::new().await;
    let created = h.post(V1, &v1_hpa("web", Some(65))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    // The stream ends at the server's timeout, after the initial ADDED event.
    let watch = h
        .get(&format!(
            "{V1}?watch=true&resourceVersion=0&timeoutSeconds=1"
        ))
        .await;
    let event: Value =
        serde_json::from_slice(watch.raw.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(
        event["object"]["spec"]["targetCPUUtilizationPercentage"],
        65
    );

    let table = h
        .request_with(
            http::Method::GET,
            V1,
            None,
            Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
            Vec::new(),
        )
        .await;
    assert_eq!(table.status, StatusCode::OK, "{:?}", table.body);
    assert_eq!(table.body["rows"][0]["cells"][2], "cpu: <unknown>/65%");
}

#[tokio::test]
async fn discovery_prefers_v2_and_lists_v1() {
    let h = Harness::new().await;
    let group = h.get("/apis/autoscaling").await.body;
    assert_eq!(group["preferredVersion"]["version"], "v2");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);
    let v1 = h.get("/apis/autoscaling/v1").await.body;
    let resources: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        resources.contains(&"horizontalpodautoscalers"),
        "{resources:?}"
    );
    assert!(
        resources.contains(&"horizontalpodautoscalers/status"),
        "{resources:?}"
    );
}
