//! Namespace termination and ownerReference garbage collection (background controllers).

use http::StatusCode;
use serde_json::{Value, json};

use super::crud::install_widgets;
use super::harness::{Harness, deployment};

async fn exists(h: &Harness, path: &str) -> bool {
    h.get(path).await.status == StatusCode::OK
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents_then_itself() {
    let h = Harness::new().await;
    install_widgets(&h).await;
    let ns = h
        .post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
        )
        .await;
    assert_eq!(ns.status, StatusCode::CREATED);
    h.create_configmap("team-a", "cfg", json!({})).await;
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/x"]}});
    assert_eq!(
        h.post("/api/v1/namespaces/team-a/configmaps", &held)
            .await
            .status,
        StatusCode::CREATED
    );
    let widget =
        json!({"apiVersion": "demo.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(
        h.post(
            "/apis/demo.example.com/v1/namespaces/team-a/widgets",
            &widget
        )
        .await
        .status,
        StatusCode::CREATED
    );

    let deleted = h.delete("/api/v1/namespaces/team-a", None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(deleted.body["status"]["phase"], "Terminating");
    let refused = h
        .post(
            "/api/v1/namespaces/team-a/configmaps",
            &json!({"metadata": {"name": "late"}}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(
        refused.message(),
        "configmaps \"late\" is forbidden: unable to create new content in namespace team-a because it is being terminated"
    );

    h.wait_for("contents deleted", async || {
        !exists(&h, "/api/v1/namespaces/team-a/configmaps/cfg").await
            && !exists(&h, "/apis/demo.example.com/v1/namespaces/team-a/widgets/w").await
    })
    .await;
    // The finalizer-held object keeps the namespace.
    assert!(exists(&h, "/api/v1/namespaces/team-a").await);
    h.patch(
        "/api/v1/namespaces/team-a/configmaps/held",
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    h.wait_for("namespace gone", async || {
        !exists(&h, "/api/v1/namespaces/team-a").await
    })
    .await;
}

async fn owned_configmap(h: &Harness, name: &str, owner: &Value, block: bool) {
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block
        }]}
    });
    assert_eq!(
        h.post("/api/v1/namespaces/default/configmaps", &body)
            .await
            .status,
        StatusCode::CREATED
    );
}

const WEB: &str = "/apis/apps/v1/namespaces/default/deployments/web";

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let h = Harness::new().await;
    let owner = h
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &deployment("web", 1),
        )
        .await
        .body;
    owned_configmap(&h, "dep", &owner, false).await;
    h.delete(WEB, Some(&json!({"propagationPolicy": "Background"})))
        .await;
    assert!(
        !exists(&h, WEB).await,
        "background deletion removes the owner at once"
    );
    h.wait_for("dependent collected", async || {
        !exists(&h, "/api/v1/namespaces/default/configmaps/dep").await
    })
    .await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let h = Harness::new().await;
    let owner = h
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &deployment("web", 1),
        )
        .await
        .body;
    owned_configmap(&h, "dep", &owner, true).await;
    let reply = h
        .delete(WEB, Some(&json!({"propagationPolicy": "Foreground"})))
        .await;
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    h.wait_for("owner and dependent gone", async || {
        !exists(&h, WEB).await && !exists(&h, "/api/v1/namespaces/default/configmaps/dep").await
    })
    .await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let h = Harness::new().await;
    let owner = h
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &deployment("web", 1),
        )
        .await
        .body;
    owned_configmap(&h, "dep", &owner, false).await;
    let reply = h
        .delete(&format!("{WEB}?propagationPolicy=Orphan"), None)
        .await;
    assert_eq!(reply.body["metadata"]["finalizers"], json!(["orphan"]));
    h.wait_for("owner gone", async || !exists(&h, WEB).await)
        .await;
    let dependent = h.get("/api/v1/namespaces/default/configmaps/dep").await;
    assert_eq!(dependent.status, StatusCode::OK);
    assert!(
        dependent.body["metadata"].get("ownerReferences").is_none(),
        "{:?}",
        dependent.body
    );
}

#[tokio::test]
async fn controllers_pick_up_unfinished_work_after_a_restart() {
    use std::sync::Arc;
    use store::Store;

    let store = Arc::new(store::memory::MemoryStore::new());
    // Work left behind by a server that stopped: a dependent whose owner is gone, and a
    // namespace marked for deletion that still has contents.
    let orphaned = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "leftover", "namespace": "default", "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone", "uid": "u-owner"}]}
    });
    store
        .create(
            "/registry/core/configmaps/default/leftover",
            orphaned.to_string().into(),
        )
        .await
        .unwrap();
    let namespace = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "dying", "uid": "u-2", "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": "2026-01-01T00:00:01Z"},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}
    });
    store
        .create(
            "/registry/core/namespaces/dying",
            namespace.to_string().into(),
        )
        .await
        .unwrap();
    let content = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "dying", "uid": "u-3"}});
    store
        .create(
            "/registry/core/configmaps/dying/c",
            content.to_string().into(),
        )
        .await
        .unwrap();

    let h = Harness::with_store(
        Arc::clone(&store),
        karmada_apiserver::ApiServerOptions::default(),
    )
    .await;
    h.wait_for("leftover collected and namespace finalized", async || {
        !exists(&h, "/api/v1/namespaces/default/configmaps/leftover").await
            && !exists(&h, "/api/v1/namespaces/dying").await
    })
    .await;
    assert!(!exists(&h, "/api/v1/namespaces/dying/configmaps/c").await);

    // Shutdown stops the controllers promptly.
    tokio::time::timeout(std::time::Duration::from_secs(5), h.server.shutdown())
        .await
        .expect("controllers stop");
}

#[tokio::test]
async fn stored_crds_are_served_again_after_a_restart() {
    use std::sync::Arc;

    let store = Arc::new(store::memory::MemoryStore::new());
    {
        let first = Harness::with_store(
            Arc::clone(&store),
            karmada_apiserver::ApiServerOptions::default(),
        )
        .await;
        install_widgets(&first).await;
        let widget = json!({"apiVersion": "demo.example.com/v1", "kind": "Widget", "metadata": {"name": "kept"}});
        let created = first
            .post(
                "/apis/demo.example.com/v1/namespaces/default/widgets",
                &widget,
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED);
        first.server.shutdown().await;
    }
    let second = Harness::with_store(store, karmada_apiserver::ApiServerOptions::default()).await;
    let got = second
        .get("/apis/demo.example.com/v1/namespaces/default/widgets/kept")
        .await;
    assert_eq!(got.status, StatusCode::OK, "{:?}", got.body);
    assert_eq!(got.body["kind"], "Widget");
}
