//! Bad input: each case gets the right code and reason, and nothing stored changes.

use http::{Method, StatusCode};
use serde_json::json;
use store::{RangeRequest, Store};

use super::harness::{Harness, Reply};

/// Everything in the store, to compare before and after a rejected request.
async fn snapshot(h: &Harness) -> Vec<(String, u64)> {
    let all = h
        .store
        .range(RangeRequest {
            prefix: "/".into(),
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    all.kvs
        .into_iter()
        .map(|kv| (kv.key, kv.mod_revision))
        .collect()
}

async fn rejected(
    h: &Harness,
    send: impl AsyncFnOnce(&Harness) -> Reply,
    code: StatusCode,
    reason: &str,
) -> Reply {
    let before = snapshot(h).await;
    let revision = h.revision().await;
    let reply = send(h).await;
    assert_eq!(reply.status, code, "{:?}", reply.body);
    assert_eq!(reply.reason(), reason, "{:?}", reply.body);
    assert_eq!(reply.body["kind"], "Status");
    assert_eq!(reply.body["status"], "Failure");
    assert_eq!(h.revision().await, revision, "the store revision moved");
    assert_eq!(snapshot(h).await, before, "stored data changed");
    reply
}

const CM: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn malformed_json() {
    let h = Harness::new().await;
    let reply = rejected(
        &h,
        async |h| {
            h.request(
                Method::POST,
                CM,
                Some("application/json"),
                br#"{"apiVersion": "v1", "kind": "#.to_vec(),
            )
            .await
        },
        StatusCode::BAD_REQUEST,
        "BadRequest",
    )
    .await;
    assert!(
        reply.message().contains("json parse error"),
        "{}",
        reply.message()
    );
}

#[tokio::test]
async fn malformed_yaml() {
    let h = Harness::new().await;
    let reply = rejected(
        &h,
        async |h| {
            h.request(
                Method::POST,
                CM,
                Some("application/yaml"),
                b"apiVersion: v1\nkind: [ConfigMap\n".to_vec(),
            )
            .await
        },
        StatusCode::BAD_REQUEST,
        "BadRequest",
    )
    .await;
    assert!(reply.message().contains("yaml"), "{}", reply.message());
}

#[tokio::test]
async fn valid_yaml_is_accepted() {
    let h = Harness::new().await;
    let body =
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n".to_vec();
    let reply = h
        .request(Method::POST, CM, Some("application/yaml"), body)
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    assert_eq!(reply.body["data"]["k"], "v");
}

#[tokio::test]
async fn unknown_kind_or_api_version() {
    let h = Harness::new().await;
    let reply = rejected(
        &h,
        async |h| {
            h.post(
                CM,
                &json!({"apiVersion": "v1", "kind": "Gizmo", "metadata": {"name": "x"}}),
            )
            .await
        },
        StatusCode::BAD_REQUEST,
        "BadRequest",
    )
    .await;
    assert!(reply.message().contains("Gizmo"), "{}", reply.message());
    let reply = rejected(
        &h,
        async |h| {
            h.post(
                CM,
                &json!({"apiVersion": "nope/v9", "kind": "ConfigMap", "metadata": {"name": "x"}}),
            )
            .await
        },
        StatusCode::BAD_REQUEST,
        "BadRequest",
    )
    .await;
    assert!(reply.message().contains("nope/v9"), "{}", reply.message());
    rejected(
        &h,
        async |h| h.get("/apis/nope.io/v1/gizmos").await,
        StatusCode::NOT_FOUND,
        "NotFound",
    )
    .await;
    rejected(
        &h,
        async |h| {
            h.post("/apis/nope.io/v1/namespaces/default/gizmos", &json!({}))
                .await
        },
        StatusCode::NOT_FOUND,
        "NotFound",
    )
    .await;
}

#[tokio::test]
async fn missing_namespace() {
    let h = Harness::new().await;
    let reply = rejected(
        &h,
        async |h| {
            h.post(
                "/api/v1/namespaces/ghost/configmaps",
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
            )
            .await
        },
        StatusCode::NOT_FOUND,
        "NotFound",
    )
    .await;
    assert_eq!(reply.message(), "namespaces \"ghost\" not found");
}

#[tokio::test]
async fn namespace_mismatch() {
    let h = Harness::new().await;
    let reply = rejected(
        &h,
        async |h| {
            h.post(CM, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}}))
                .await
        },
        StatusCode::BAD_REQUEST,
        "BadRequest",
    )
    .await;
    assert_eq!(
        reply.message(),
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}

#[tokio::test]
async fn invalid_and_too_long_names() {
    let h = Harness::new().await;
    let cases: Vec<(String, &str)> = vec![
        ("Bad_Name".into(), "a lowercase RFC 1123 subdomain"),
        ("a".repeat(254), "must be no more than 253 characters"),
        (String::new(), "name or generateName is required"),
    ];
    for (name, expected) in cases {
        let reply = rejected(
            &h,
            async |h| {
                h.post(
                    CM,
                    &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
                )
                .await
            },
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
        )
        .await;
        assert!(
            reply.message().contains(expected),
            "{name:?}: {}",
            reply.message()
        );
        assert_eq!(reply.body["details"]["causes"][0]["field"], "metadata.name");
    }
    let ns = rejected(
        &h,
        async |h| h.post("/api/v1/namespaces", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a".repeat(64)}})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
    )
    .await;
    assert!(
        ns.message().contains("must be no more than 63 characters"),
        "{}",
        ns.message()
    );
}

#[tokio::test]
async fn body_over_three_mebibytes() {
    let h = Harness::new().await;
    let big = "x".repeat(3 * 1024 * 1024 + 1);
    rejected(
        &h,
        async |h| h.post(CM, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"x": big}})).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
    )
    .await;
}

#[tokio::test]
async fn stale_resource_version_on_update() {
    let h = Harness::new().await;
    let created = h
        .create_configmap("default", "cas", json!({"k": "1"}))
        .await;
    let mut first = created.body.clone();
    first["data"]["k"] = json!("2");
    assert_eq!(
        h.put(&format!("{CM}/cas"), &first).await.status,
        StatusCode::OK
    );
    let mut stale = created.body.clone();
    stale["data"]["k"] = json!("3");
    let reply = rejected(
        &h,
        async |h| h.put(&format!("{CM}/cas"), &stale).await,
        StatusCode::CONFLICT,
        "Conflict",
    )
    .await;
    assert_eq!(reply.body["details"]["name"], "cas");
    assert_eq!(h.get(&format!("{CM}/cas")).await.body["data"]["k"], "2");
}

#[tokio::test]
async fn watch_from_compacted_revision_is_410_expired() {
    let h = Harness::new().await;
    h.create_configmap("default", "w1", json!({})).await;
    h.create_configmap("default", "w2", json!({})).await;
    let old = h.revision().await - 1;
    h.create_configmap("default", "w3", json!({})).await;
    let now = h.revision().await;
    h.store.compact(now).await.unwrap();
    let reply = rejected(
        &h,
        async |h| {
            h.get(&format!("{CM}?watch=true&resourceVersion={old}"))
                .await
        },
        StatusCode::GONE,
        "Expired",
    )
    .await;
    assert!(
        reply
            .message()
            .starts_with(&format!("too old resource version: {old}")),
        "{}",
        reply.message()
    );
}

#[tokio::test]
async fn unsupported_media_type_and_bad_verbs() {
    let h = Harness::new().await;
    rejected(
        &h,
        async |h| {
            h.request(Method::POST, CM, Some("text/plain"), b"hello".to_vec())
                .await
        },
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "UnsupportedMediaType",
    )
    .await;
    rejected(
        &h,
        async |h| {
            h.request(
                Method::POST,
                &format!("{CM}/x"),
                Some("application/json"),
                b"{}".to_vec(),
            )
            .await
        },
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
    )
    .await;
    rejected(
        &h,
        async |h| {
            h.request(
                Method::PATCH,
                &format!("{CM}/x"),
                Some("application/json"),
                b"{}".to_vec(),
            )
            .await
        },
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "UnsupportedMediaType",
    )
    .await;
}

/// The field names of a JSON object in the order they appear in `raw`.
fn top_level_keys(raw: &[u8]) -> Vec<String> {
    let body: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(raw).expect("a JSON object");
    body.keys().cloned().collect()
}

#[tokio::test]
async fn status_bodies_on_the_wire_are_kube_apiservers_bytes() {
    let h = Harness::new().await;
    let missing = h.get(&format!("{CM}/absent")).await;
    assert_eq!(
        std::str::from_utf8(&missing.raw).unwrap().trim_end(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"absent\" not found","reason":"NotFound","details":{"name":"absent","kind":"configmaps"},"code":404}"#
    );

    let mut invalid = super::harness::deployment("web", 1);
    invalid["spec"]["replicas"] = json!(-1);
    let reply = h
        .post("/apis/apps/v1/namespaces/default/deployments", &invalid)
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        top_level_keys(&reply.raw),
        [
            "kind",
            "apiVersion",
            "metadata",
            "status",
            "message",
            "reason",
            "details",
            "code"
        ]
    );
    let details: serde_json::Map<String, serde_json::Value> =
        serde_json::from_value(reply.body["details"].clone()).unwrap();
    assert_eq!(
        details.keys().collect::<Vec<_>>(),
        ["name", "group", "kind", "causes"]
    );
    let cause: serde_json::Map<String, serde_json::Value> =
        serde_json::from_value(reply.body["details"]["causes"][0].clone()).unwrap();
    assert_eq!(
        cause.keys().collect::<Vec<_>>(),
        ["reason", "message", "field"]
    );

    h.create_configmap("default", "w1", json!({})).await;
    let old = h.revision().await;
    h.create_configmap("default", "w2", json!({})).await;
    h.store.compact(h.revision().await).await.unwrap();
    let expired = h
        .get(&format!("{CM}?watch=true&resourceVersion={old}"))
        .await;
    assert_eq!(
        std::str::from_utf8(&expired.raw).unwrap().trim_end(),
        format!(
            r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"too old resource version: {old} ({})","reason":"Expired","code":410}}"#,
            old + 1
        )
    );
}
