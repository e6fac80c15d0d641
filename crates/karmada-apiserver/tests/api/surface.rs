//! Non-resource endpoints, discovery, OpenAPI, protobuf bodies, authorization and metrics.

use std::sync::Arc;

use apiserver_auth::{Authorizer, Decision, RequestAttributes, UserInfo};
use http::{Method, StatusCode};
use karmada_apiserver::{Anonymous, ApiServerOptions};
use serde_json::json;

use super::harness::Harness;

const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[tokio::test]
async fn discovery_aggregated_only_when_asked() {
    let h = Harness::new().await;
    let aggregated = h
        .request_with(
            Method::GET,
            "/apis?timeout=32s",
            None,
            Some(AGGREGATED_ACCEPT),
            Vec::new(),
        )
        .await;
    assert_eq!(aggregated.status, StatusCode::OK);
    assert_eq!(
        aggregated.headers.get("content-type").unwrap(),
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(aggregated.body["kind"], "APIGroupDiscoveryList");
    let groups: Vec<&str> = aggregated.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        groups.contains(&"apps") && groups.contains(&"policy.karmada.io"),
        "{groups:?}"
    );

    let legacy = h.get("/apis").await;
    assert_eq!(
        legacy.headers.get("content-type").unwrap(),
        "application/json"
    );
    assert_eq!(legacy.body["kind"], "APIGroupList");
    let core = h.get("/api").await;
    assert_eq!(core.body["kind"], "APIVersions");
    let v1 = h.get("/api/v1").await;
    assert_eq!(v1.body["kind"], "APIResourceList");
    assert!(
        v1.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "configmaps")
    );
    let apps = h.get("/apis/apps/v1").await;
    assert!(
        apps.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "deployments/scale")
    );
    assert_eq!(h.get("/apis/nope.io").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn crd_kinds_appear_in_discovery() {
    let h = Harness::new().await;
    let group_names = |body: &serde_json::Value, key: &str| -> Vec<String> {
        body[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                g["metadata"]["name"]
                    .as_str()
                    .unwrap_or(g["name"].as_str().unwrap_or_default())
                    .to_string()
            })
            .collect()
    };
    let aggregated = || {
        h.request_with(
            Method::GET,
            "/apis",
            None,
            Some(AGGREGATED_ACCEPT),
            Vec::new(),
        )
    };
    // Read (and so cache) discovery before the CRD exists: it must not be served stale afterwards.
    assert!(
        !group_names(&h.get("/apis").await.body, "groups")
            .contains(&"demo.example.com".to_string())
    );
    assert!(
        !group_names(&aggregated().await.body, "items").contains(&"demo.example.com".to_string())
    );
    assert_eq!(
        h.get("/apis/demo.example.com/v1").await.status,
        StatusCode::NOT_FOUND
    );
    super::crud::install_widgets(&h).await;
    assert!(
        group_names(&h.get("/apis").await.body, "groups").contains(&"demo.example.com".to_string())
    );
    assert!(
        group_names(&aggregated().await.body, "items").contains(&"demo.example.com".to_string())
    );
    let doc = h.get("/apis/demo.example.com/v1").await;
    assert_eq!(doc.status, StatusCode::OK, "{:?}", doc.body);
    assert!(
        doc.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "widgets")
    );
}

#[tokio::test]
async fn openapi_v3_index_and_documents() {
    let h = Harness::new().await;
    let index = h.get("/openapi/v3").await;
    assert_eq!(index.status, StatusCode::OK);
    let url = index.body["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .expect("apps/v1 listed")
        .to_string();
    let doc = h.get(&url).await;
    assert_eq!(doc.status, StatusCode::OK);
    assert!(doc.body["paths"].as_object().is_some_and(|p| !p.is_empty()));
    assert_eq!(
        h.get("/openapi/v3/apis/nope.io/v1").await.status,
        StatusCode::NOT_FOUND
    );
    // The index names each document by a hash of what the document request answers.
    let hash = url.split("hash=").nth(1).expect("hash");
    assert_eq!(
        hash,
        apiserver_views::openapi::document_hash(&doc.body),
        "{url}"
    );
    // The index is rendered once per registry snapshot: a CRD created after it was read shows.
    assert!(index.body["paths"]["apis/demo.example.com/v1"].is_null());
    super::crud::install_widgets(&h).await;
    let index = h.get("/openapi/v3").await;
    let url = index.body["paths"]["apis/demo.example.com/v1"]["serverRelativeURL"]
        .as_str()
        .expect("the new group-version listed")
        .to_string();
    let doc = h.get(&url).await;
    assert_eq!(doc.status, StatusCode::OK);
    assert!(
        doc.body["components"]["schemas"]
            .to_string()
            .contains("Widget")
    );
}

/// `k8s\0` + runtime.Unknown{typeMeta{v1, ConfigMap}, raw: ConfigMap{metadata{name: pb}, data{k: v}}}.
fn protobuf_configmap() -> Vec<u8> {
    let mut body = b"k8s\0".to_vec();
    let type_meta = [&[0x0a, 0x02][..], b"v1", &[0x12, 0x09], b"ConfigMap"].concat();
    let raw = [
        &[0x0a, 0x04, 0x0a, 0x02][..],
        b"pb",
        &[0x12, 0x06, 0x0a, 0x01],
        b"k",
        &[0x12, 0x01],
        b"v",
    ]
    .concat();
    body.extend([0x0a, type_meta.len() as u8]);
    body.extend(type_meta);
    body.extend([0x12, raw.len() as u8]);
    body.extend(raw);
    body
}

#[tokio::test]
async fn protobuf_create_for_builtin_kinds_and_415_for_custom() {
    let h = Harness::new().await;
    let reply = h
        .request(
            Method::POST,
            "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create&fieldValidation=Strict",
            Some("application/vnd.kubernetes.protobuf"),
            protobuf_configmap(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    assert_eq!(reply.body["metadata"]["name"], "pb");
    assert_eq!(reply.body["data"]["k"], "v");

    super::crud::install_widgets(&h).await;
    let custom = h
        .request(
            Method::POST,
            "/apis/demo.example.com/v1/namespaces/default/widgets",
            Some("application/vnd.kubernetes.protobuf"),
            protobuf_configmap(),
        )
        .await;
    assert_eq!(custom.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

/// Allows reads only.
struct ReadOnly;

#[async_trait::async_trait]
impl Authorizer for ReadOnly {
    async fn authorize(&self, _user: &UserInfo, attrs: &RequestAttributes) -> Decision {
        if !attrs.resource_request || matches!(attrs.verb.as_str(), "get" | "list" | "watch") {
            Decision::Allow
        } else {
            Decision::Deny("read-only".into())
        }
    }
}

#[tokio::test]
async fn unauthorized_writes_are_403_and_change_nothing() {
    let options = ApiServerOptions {
        authorizer: Arc::new(ReadOnly),
        ..Default::default()
    };
    let h = Harness::with_options(options).await;
    let rev = h.revision().await;
    let reply = h
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(reply.reason(), "Forbidden");
    assert_eq!(
        reply.message(),
        "configmaps is forbidden: User \"system:admin\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(h.revision().await, rev);
    assert_eq!(
        h.get("/api/v1/namespaces/default/configmaps").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn requests_without_a_user_are_401_when_anonymous_is_rejected() {
    let options = ApiServerOptions {
        anonymous: Anonymous::Reject,
        ..Default::default()
    };
    let h = Harness::with_options(options).await;
    let reply = h.get("/api/v1/namespaces/default/configmaps").await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.reason(), "Unauthorized");
}

#[tokio::test]
async fn metrics_count_requests() {
    let h = Harness::new().await;
    h.get("/api/v1/namespaces/default/configmaps").await;
    let reply = h.get("/metrics").await;
    assert_eq!(reply.status, StatusCode::OK);
    let text = String::from_utf8_lossy(&reply.raw);
    assert!(text.contains("apiserver_request"), "{text}");
    assert!(text.contains("configmaps"), "{text}");
    // The list reached the store, and the store's own latency is reported apart from the request's.
    assert!(
        text.lines().any(|line| line.starts_with(
            r#"etcd_request_duration_seconds_count{operation="list",type="configmaps"}"#
        )),
        "{text}"
    );
}

#[tokio::test]
async fn stored_objects_are_counted_per_resource() {
    let h = Harness::new().await;
    for name in ["a", "b", "c"] {
        h.create_configmap("default", name, serde_json::json!({}))
            .await;
    }
    karmada_apiserver::storage_objects::count_all(&h.server).await;
    let reply = h.get("/metrics").await;
    let text = String::from_utf8_lossy(&reply.raw);
    assert!(
        text.lines()
            .any(|line| line == r#"apiserver_storage_objects{resource="configmaps"} 3"#),
        "{text}"
    );
    // Namespaces live in the core group too; a grouped resource is named plural.group.
    assert!(
        text.contains(
            r#"apiserver_storage_objects{resource="clusterroles.rbac.authorization.k8s.io"}"#
        ) || text.contains(r#"apiserver_storage_objects{resource="deployments.apps"} 0"#),
        "{text}"
    );
}
