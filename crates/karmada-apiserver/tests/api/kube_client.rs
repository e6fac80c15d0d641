//! The `kube` crate against the server, in-process: typed CRUD, a watcher and a Controller.

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::json;

use super::crud::install_widgets;
use super::harness::{Harness, deployment};

fn client(h: &Harness) -> kube::Client {
    kube::Client::new(h.router(), "default")
}

#[tokio::test]
async fn watcher_sees_create_update_delete_of_a_deployment() {
    let h = Harness::new().await;
    let api: Api<Deployment> = Api::namespaced(client(&h), "default");
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    // The initial list completes before anything exists.
    loop {
        if matches!(next_event(&mut events).await, watcher::Event::InitDone) {
            break;
        }
    }
    let web: Deployment = serde_json::from_value(deployment("web", 1)).unwrap();
    api.create(&PostParams::default(), &web)
        .await
        .expect("create");
    let seen = loop {
        if let watcher::Event::Apply(d) = next_event(&mut events).await {
            break d;
        }
    };
    assert_eq!(seen.metadata.name.as_deref(), Some("web"));
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 4}})),
    )
    .await
    .expect("patch");
    let updated = loop {
        if let watcher::Event::Apply(d) = next_event(&mut events).await {
            break d;
        }
    };
    assert_eq!(updated.spec.and_then(|s| s.replicas), Some(4));
    api.delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    let deleted = loop {
        if let watcher::Event::Delete(d) = next_event(&mut events).await {
            break d;
        }
    };
    assert_eq!(deleted.metadata.name.as_deref(), Some("web"));
}

#[tokio::test]
async fn server_side_apply_and_typed_errors() {
    let h = Harness::new().await;
    let api: Api<Deployment> = Api::namespaced(client(&h), "default");
    let web: Deployment = serde_json::from_value(deployment("ssa", 2)).unwrap();
    let applied = api
        .patch(
            "ssa",
            &PatchParams::apply("test").force(),
            &Patch::Apply(&web),
        )
        .await
        .expect("apply creates");
    assert_eq!(applied.spec.and_then(|s| s.replicas), Some(2));
    match api.get("missing").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 404);
            assert_eq!(status.reason, "NotFound");
        }
        other => panic!("expected a 404 Status, got {other:?}"),
    }
}

type Events =
    futures::stream::BoxStream<'static, Result<watcher::Event<Deployment>, watcher::Error>>;

async fn next_event(events: &mut Events) -> watcher::Event<Deployment> {
    tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("event in time")
        .expect("no error")
        .expect("stream open")
}

struct Ctx {
    api: Api<DynamicObject>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ReconcileError(String);

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let size = obj.data["spec"]["size"].clone();
    if obj.data["status"]["observedSize"] != size {
        let name = obj.metadata.name.clone().unwrap_or_default();
        ctx.api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"observedSize": size}})),
            )
            .await
            .map_err(|e| ReconcileError(e.to_string()))?;
    }
    Ok(Action::await_change())
}

fn error_policy(_obj: Arc<DynamicObject>, _err: &ReconcileError, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn controller_reconciles_a_custom_object_to_convergence() {
    let h = Harness::new().await;
    install_widgets(&h).await;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("demo.example.com", "v1", "Widget"),
        "widgets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client(&h), "default", &resource);
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "demo.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}
    }))
    .unwrap();
    api.create(&PostParams::default(), &widget)
        .await
        .expect("create widget");

    let controller =
        Controller::new_with(api.clone(), watcher::Config::default(), resource.clone())
            .run(reconcile, error_policy, Arc::new(Ctx { api: api.clone() }))
            .for_each(|_| async {});
    let task = tokio::spawn(controller);

    let converged = async |want: i64| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let current = api.get("w").await.expect("get widget");
            if current.data["status"]["observedSize"] == want {
                return current;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "status never converged to {want}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let first = converged(3).await;
    assert_eq!(
        first.metadata.generation,
        Some(1),
        "status writes do not bump generation"
    );
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 5}})),
    )
    .await
    .expect("patch spec");
    let second = converged(5).await;
    assert_eq!(second.metadata.generation, Some(2));
    task.abort();
}
