//! Create, get, update, patch, subresources, dry-run, output shapes, CRDs.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::harness::{Harness, deployment};

pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.demo.example.com"},
        "spec": {
            "group": "demo.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

pub async fn install_widgets(h: &Harness) {
    let reply = h
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &widget_crd(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
}

#[tokio::test]
async fn version_and_health() {
    let h = Harness::new().await;
    let version = h.get("/version?timeout=5s").await;
    assert_eq!(version.status, StatusCode::OK);
    assert_eq!(version.body["major"], "1");
    assert_eq!(version.body["minor"], "32");
    for path in ["/healthz", "/readyz", "/livez"] {
        let reply = h.get(path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(&reply.raw[..], b"ok");
    }
    let v2 = h.get("/openapi/v2").await;
    assert_eq!(v2.status, StatusCode::OK);
    assert_eq!(v2.raw.len(), 30, "the protobuf stub kubectl accepts");
}

#[tokio::test]
async fn system_namespaces_exist_and_are_active() {
    let h = Harness::new().await;
    for ns in [
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "karmada-system",
        "karmada-cluster",
    ] {
        let reply = h.get(&format!("/api/v1/namespaces/{ns}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{ns}");
        assert_eq!(reply.body["status"]["phase"], "Active");
        assert_eq!(reply.body["spec"]["finalizers"], json!(["kubernetes"]));
    }
}

#[tokio::test]
async fn create_sets_server_metadata_and_get_returns_it() {
    let h = Harness::new().await;
    let created = h
        .create_configmap("default", "cfg", json!({"a": "1"}))
        .await;
    let meta = &created.body["metadata"];
    assert_eq!(
        uuid::Uuid::parse_str(meta["uid"].as_str().unwrap())
            .unwrap()
            .get_version_num(),
        4
    );
    let created_at = meta["creationTimestamp"].as_str().unwrap();
    assert!(
        created_at.ends_with('Z') && created_at.len() == 20,
        "{created_at}"
    );
    assert_eq!(meta["namespace"], "default");
    let rv: u64 = meta["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert_eq!(rv, h.revision().await);
    let got = h.get("/api/v1/namespaces/default/configmaps/cfg").await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body, created.body);
    assert_eq!(got.body["kind"], "ConfigMap");
    assert_eq!(got.body["apiVersion"], "v1");
}

#[tokio::test]
async fn missing_content_type_is_json_and_generate_name_works() {
    let h = Harness::new().await;
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cfg-"}});
    let reply = h
        .request(
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            None,
            body.to_string().into_bytes(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    let name = reply.body["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");
    assert!(
        name[4..]
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
    );
}

#[tokio::test]
async fn duplicate_create_is_409_already_exists() {
    let h = Harness::new().await;
    h.create_configmap("default", "dup", json!({})).await;
    let again = h
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "dup"}}),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.reason(), "AlreadyExists");
    assert_eq!(again.message(), "configmaps \"dup\" already exists");
}

#[tokio::test]
async fn get_missing_is_404_with_group_resource() {
    let h = Harness::new().await;
    let reply = h
        .get("/apis/apps/v1/namespaces/default/deployments/nosuch")
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.message(), "deployments.apps \"nosuch\" not found");
    assert_eq!(reply.body["details"]["kind"], "deployments");
}

#[tokio::test]
async fn update_bumps_generation_only_on_spec_changes() {
    let h = Harness::new().await;
    let created = h
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &deployment("web", 1),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(created.body["metadata"]["generation"], 1);

    let mut changed = created.body.clone();
    changed["spec"]["replicas"] = json!(3);
    let updated = h
        .put("/apis/apps/v1/namespaces/default/deployments/web", &changed)
        .await;
    assert_eq!(updated.status, StatusCode::OK, "{:?}", updated.body);
    assert_eq!(updated.body["metadata"]["generation"], 2);
    assert_eq!(
        updated.body["metadata"]["uid"],
        created.body["metadata"]["uid"]
    );

    let mut labelled = updated.body.clone();
    labelled["metadata"]["labels"]["tier"] = json!("fe");
    let relabelled = h
        .put(
            "/apis/apps/v1/namespaces/default/deployments/web",
            &labelled,
        )
        .await;
    assert_eq!(relabelled.status, StatusCode::OK);
    assert_eq!(
        relabelled.body["metadata"]["generation"], 2,
        "metadata changes keep generation"
    );

    let mut status = relabelled.body.clone();
    status["status"] = json!({"replicas": 3, "readyReplicas": 3});
    let status_written = h
        .put(
            "/apis/apps/v1/namespaces/default/deployments/web/status",
            &status,
        )
        .await;
    assert_eq!(
        status_written.status,
        StatusCode::OK,
        "{:?}",
        status_written.body
    );
    assert_eq!(status_written.body["status"]["readyReplicas"], 3);
    assert_eq!(
        status_written.body["metadata"]["generation"], 2,
        "status writes never bump generation"
    );

    // PUT on the main resource ignores status.
    let mut sneaky = status_written.body.clone();
    sneaky["status"]["readyReplicas"] = json!(0);
    let ignored = h
        .put("/apis/apps/v1/namespaces/default/deployments/web", &sneaky)
        .await;
    assert_eq!(ignored.status, StatusCode::OK);
    assert_eq!(ignored.body["status"]["readyReplicas"], 3);
}

#[tokio::test]
async fn noop_update_keeps_resource_version() {
    let h = Harness::new().await;
    let created = h
        .create_configmap("default", "same", json!({"k": "v"}))
        .await;
    let again = h
        .put("/api/v1/namespaces/default/configmaps/same", &created.body)
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(
        again.body["metadata"]["resourceVersion"],
        created.body["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn patch_types_merge_json_and_strategic() {
    let h = Harness::new().await;
    h.post(
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment("web", 1),
    )
    .await;
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let merged = h
        .patch(
            path,
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": "fe"}}}),
        )
        .await;
    assert_eq!(merged.status, StatusCode::OK, "{:?}", merged.body);
    assert_eq!(merged.body["metadata"]["labels"]["tier"], "fe");
    assert_eq!(merged.body["metadata"]["labels"]["app"], "web");

    let jsonp = h
        .patch(
            path,
            "application/json-patch+json",
            &json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]),
        )
        .await;
    assert_eq!(jsonp.status, StatusCode::OK, "{:?}", jsonp.body);
    assert_eq!(jsonp.body["spec"]["replicas"], 4);
    assert_eq!(jsonp.body["metadata"]["generation"], 2);

    let smp = h
        .patch(
            path,
            "application/strategic-merge-patch+json",
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(smp.status, StatusCode::OK, "{:?}", smp.body);
    assert_eq!(smp.body["spec"]["replicas"], 5);

    let missing = h
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/nope",
            "application/merge-patch+json",
            &json!({}),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn patch_with_stale_resource_version_is_409_and_changes_nothing() {
    let h = Harness::new().await;
    let created = h
        .create_configmap("default", "pre", json!({"k": "v"}))
        .await;
    h.patch(
        "/api/v1/namespaces/default/configmaps/pre",
        "application/merge-patch+json",
        &json!({"data": {"k": "w"}}),
    )
    .await;
    let before = h.get("/api/v1/namespaces/default/configmaps/pre").await;
    let stale = created.body["metadata"]["resourceVersion"].clone();
    let reply = h
        .patch(
            "/api/v1/namespaces/default/configmaps/pre",
            "application/merge-patch+json",
            &json!({"metadata": {"resourceVersion": stale}, "data": {"k": "x"}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    assert_eq!(reply.reason(), "Conflict");
    assert!(
        reply
            .message()
            .starts_with("Operation cannot be fulfilled on configmaps \"pre\""),
        "{}",
        reply.message()
    );
    assert_eq!(
        h.get("/api/v1/namespaces/default/configmaps/pre")
            .await
            .body,
        before.body
    );
}

#[tokio::test]
async fn apply_patch_creates_then_updates() {
    let h = Harness::new().await;
    let path = "/api/v1/namespaces/default/configmaps/applied?fieldManager=kubectl&force=false";
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}});
    let created = h.patch(path, "application/apply-patch+yaml", &body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let body2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "2"}});
    let updated = h.patch(path, "application/apply-patch+yaml", &body2).await;
    assert_eq!(updated.status, StatusCode::OK, "{:?}", updated.body);
    assert_eq!(updated.body["data"]["a"], "2");
    let no_manager = h
        .patch(
            "/api/v1/namespaces/default/configmaps/applied",
            "application/apply-patch+yaml",
            &body2,
        )
        .await;
    assert_eq!(no_manager.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_replicas() {
    let h = Harness::new().await;
    h.post(
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment("web", 2),
    )
    .await;
    let scale = h
        .get("/apis/apps/v1/namespaces/default/deployments/web/scale")
        .await;
    assert_eq!(scale.status, StatusCode::OK, "{:?}", scale.body);
    assert_eq!(scale.body["kind"], "Scale");
    assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
    assert_eq!(scale.body["spec"]["replicas"], 2);
    // As kube-apiserver renders it from the Deployment's spec.selector (what an HPA lists pods by).
    assert_eq!(scale.body["status"]["selector"], "app=web");

    let patched = h
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{:?}", patched.body);
    assert_eq!(patched.body["spec"]["replicas"], 5);
    let smp = h
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "application/strategic-merge-patch+json",
            &json!({"spec": {"replicas": 6}}),
        )
        .await;
    assert_eq!(smp.body["spec"]["replicas"], 6);
    let deploy = h
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .await;
    assert_eq!(deploy.body["spec"]["replicas"], 6);

    let mut stale = scale.body.clone();
    stale["spec"]["replicas"] = json!(1);
    let conflict = h
        .put(
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            &stale,
        )
        .await;
    assert_eq!(conflict.status, StatusCode::CONFLICT);
    let mut fresh = smp.body.clone();
    fresh["spec"]["replicas"] = json!(1);
    let put = h
        .put(
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            &fresh,
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{:?}", put.body);
    assert_eq!(
        h.get("/apis/apps/v1/namespaces/default/deployments/web")
            .await
            .body["spec"]["replicas"],
        1
    );
}

/// A scale patch's resourceVersion is a precondition only when the patch names one: the version the server read
/// to apply it is not (a status write in between must not fail `kubectl scale`).
#[tokio::test]
async fn scale_patch_checks_only_the_resource_version_it_names() {
    let h = Harness::new().await;
    let created = h
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &deployment("web", 1),
        )
        .await;
    let stale = created.body["metadata"]["resourceVersion"].clone();
    let status = h
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/web/status",
            "application/merge-patch+json",
            &json!({"status": {"observedGeneration": 1}}),
        )
        .await;
    assert_eq!(status.status, StatusCode::OK, "{:?}", status.body);

    let named = h
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "application/merge-patch+json",
            &json!({"metadata": {"resourceVersion": stale}, "spec": {"replicas": 4}}),
        )
        .await;
    assert_eq!(named.status, StatusCode::CONFLICT, "{:?}", named.body);
    let unnamed = h
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 4}}),
        )
        .await;
    assert_eq!(unnamed.status, StatusCode::OK, "{:?}", unnamed.body);
    assert_eq!(unnamed.body["spec"]["replicas"], 4);
}

#[tokio::test]
async fn dry_run_persists_nothing() {
    let h = Harness::new().await;
    let rev = h.revision().await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}});
    let reply = h
        .post("/api/v1/namespaces/default/configmaps?dryRun=All", &body)
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.body["metadata"]["name"], "dry");
    assert_eq!(h.revision().await, rev);
    assert_eq!(
        h.get("/api/v1/namespaces/default/configmaps/dry")
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    let bad = h
        .post("/api/v1/namespaces/default/configmaps?dryRun=Some", &body)
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    h.create_configmap("default", "keep", json!({})).await;
    let rev = h.revision().await;
    let deleted = h
        .delete(
            "/api/v1/namespaces/default/configmaps/keep",
            Some(&json!({"dryRun": ["All"]})),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(h.revision().await, rev);
    assert_eq!(
        h.get("/api/v1/namespaces/default/configmaps/keep")
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn table_and_partial_metadata_outputs() {
    let h = Harness::new().await;
    h.create_configmap("default", "t1", json!({})).await;
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let table = h
        .request_with(
            Method::GET,
            "/api/v1/namespaces/default/configmaps?limit=500",
            None,
            Some(table_accept),
            Vec::new(),
        )
        .await;
    assert_eq!(table.status, StatusCode::OK);
    assert_eq!(table.body["kind"], "Table");
    assert_eq!(table.body["rows"][0]["object"]["metadata"]["name"], "t1");
    assert!(table.body["metadata"]["resourceVersion"].is_string());

    let partial = h
        .request_with(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/t1",
            None,
            Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            Vec::new(),
        )
        .await;
    assert_eq!(partial.body["kind"], "PartialObjectMetadata");
    assert_eq!(partial.body["metadata"]["name"], "t1");

    let unacceptable = h
        .request_with(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/t1",
            None,
            Some("text/html"),
            Vec::new(),
        )
        .await;
    assert_eq!(unacceptable.status, StatusCode::NOT_ACCEPTABLE);
}

#[tokio::test]
async fn crd_registers_kind_with_status_and_rejects_strategic_patch() {
    let h = Harness::new().await;
    install_widgets(&h).await;
    let crd = h
        .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.demo.example.com")
        .await;
    let conditions: Vec<&str> = crd.body["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "True")
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert!(conditions.contains(&"Established") && conditions.contains(&"NamesAccepted"));

    let w = json!({"apiVersion": "demo.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1}});
    let created = h
        .post("/apis/demo.example.com/v1/namespaces/default/widgets", &w)
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let smp = h
        .patch(
            "/apis/demo.example.com/v1/namespaces/default/widgets/w1",
            "application/strategic-merge-patch+json",
            &json!({"spec": {"size": 2}}),
        )
        .await;
    assert_eq!(smp.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(smp.reason(), "UnsupportedMediaType");
    assert!(smp.message().contains("application/merge-patch+json"));

    // Custom kinds require a resourceVersion on update.
    let mut no_rv = created.body.clone();
    no_rv["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let rejected = h
        .put(
            "/apis/demo.example.com/v1/namespaces/default/widgets/w1",
            &no_rv,
        )
        .await;
    assert_eq!(rejected.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Deleting the CRD stops serving the kind and removes its objects.
    let deleted = h
        .delete(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.demo.example.com",
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    let gone = h
        .get("/apis/demo.example.com/v1/namespaces/default/widgets/w1")
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(
        gone.message(),
        "the server could not find the requested resource"
    );
    install_widgets(&h).await;
    let fresh = h
        .get("/apis/demo.example.com/v1/namespaces/default/widgets")
        .await;
    assert_eq!(fresh.body["items"], json!([]));
}

#[tokio::test]
async fn field_validation_warn_adds_warning_for_duplicates() {
    let h = Harness::new().await;
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dupe"},"data":{"a":"1","a":"2"}}"#.to_vec();
    let strict = h
        .request(
            Method::POST,
            "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
            Some("application/json"),
            body.clone(),
        )
        .await;
    assert_eq!(strict.status, StatusCode::BAD_REQUEST);
    assert!(
        strict.message().contains("duplicate field \"data.a\""),
        "{}",
        strict.message()
    );
    let warn = h
        .request(
            Method::POST,
            "/api/v1/namespaces/default/configmaps?fieldValidation=Warn",
            Some("application/json"),
            body,
        )
        .await;
    assert_eq!(warn.status, StatusCode::CREATED);
    let warning = warn
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(warning.starts_with("299 - \"duplicate field"), "{warning}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_read_modify_write_loses_no_update() {
    let h = std::sync::Arc::new(Harness::new().await);
    h.create_configmap("default", "counter", json!({"n": "0"}))
        .await;
    let path = "/api/v1/namespaces/default/configmaps/counter";
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let h = std::sync::Arc::clone(&h);
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for _ in 0..10 {
                loop {
                    let mut current = h.get(path).await.body;
                    let n: u64 = current["data"]["n"].as_str().unwrap().parse().unwrap();
                    current["data"]["n"] = json!((n + 1).to_string());
                    let reply = h.put(path, &current).await;
                    if reply.status == StatusCode::OK {
                        break;
                    }
                    assert_eq!(reply.status, StatusCode::CONFLICT, "{:?}", reply.body);
                    conflicts += 1;
                }
            }
            conflicts
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(h.get(path).await.body["data"]["n"], "80");
}
