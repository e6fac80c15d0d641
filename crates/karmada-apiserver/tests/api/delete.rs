//! Delete semantics: finalizers and deletionTimestamp, preconditions, deletecollection.

use http::StatusCode;
use serde_json::json;

use super::harness::Harness;

const CM: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn finalizers_hold_the_object_until_removed() {
    let h = Harness::new().await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(h.post(CM, &body).await.status, StatusCode::CREATED);
    let deleted = h
        .delete(
            &format!("{CM}/held"),
            Some(&json!({"propagationPolicy": "Background"})),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert!(deleted.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(deleted.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let still = h.get(&format!("{CM}/held")).await;
    assert_eq!(still.status, StatusCode::OK);
    // Repeated delete answers with the object.
    assert_eq!(
        h.delete(&format!("{CM}/held"), None).await.status,
        StatusCode::OK
    );
    // No new finalizers while deleting.
    let added = h
        .patch(
            &format!("{CM}/held"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": ["example.com/hold", "x.io/y"]}}),
        )
        .await;
    assert_eq!(
        added.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        added.body
    );
    // Removing the last finalizer completes the deletion.
    let released = h
        .patch(
            &format!("{CM}/held"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(released.status, StatusCode::OK, "{:?}", released.body);
    assert_eq!(
        h.get(&format!("{CM}/held")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn delete_preconditions() {
    let h = Harness::new().await;
    let created = h.create_configmap("default", "pc", json!({})).await;
    let wrong_uid = h
        .delete(
            &format!("{CM}/pc"),
            Some(&json!({"preconditions": {"uid": "nope"}})),
        )
        .await;
    assert_eq!(wrong_uid.status, StatusCode::CONFLICT);
    let wrong_rv = h
        .delete(
            &format!("{CM}/pc"),
            Some(&json!({"preconditions": {"resourceVersion": "1"}})),
        )
        .await;
    assert_eq!(wrong_rv.status, StatusCode::CONFLICT);
    assert_eq!(h.get(&format!("{CM}/pc")).await.status, StatusCode::OK);
    let uid = created.body["metadata"]["uid"].clone();
    let ok = h
        .delete(
            &format!("{CM}/pc"),
            Some(&json!({"preconditions": {"uid": uid}})),
        )
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(
        h.get(&format!("{CM}/pc")).await.status,
        StatusCode::NOT_FOUND
    );
    let bad_policy = h
        .delete(&format!("{CM}/pc?propagationPolicy=Sideways"), None)
        .await;
    assert_eq!(bad_policy.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn delete_collection_with_selector() {
    let h = Harness::new().await;
    for (name, app) in [("a", "x"), ("b", "y"), ("c", "x")] {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}}});
        h.post(CM, &body).await;
    }
    let reply = h.delete(&format!("{CM}?labelSelector=app%3Dx"), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["items"].as_array().unwrap().len(), 2);
    let left = h.get(CM).await;
    let names: Vec<&str> = left.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test]
async fn system_namespaces_cannot_be_deleted() {
    let h = Harness::new().await;
    let reply = h.delete("/api/v1/namespaces/default", None).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply.message(),
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
    assert_eq!(
        h.get("/api/v1/namespaces/default").await.body["status"]["phase"],
        "Active"
    );
}
