//! The dependencies distributor against the in-process control plane: a Deployment's binding with
//! `propagateDeps: true` gets attached bindings for the ConfigMap and Secret it refers to. The binding is written
//! by hand (as detector and scheduler would); the binding controller's finalizer removal is played by the test.

use karmada_controllers::dependencies_distributor::{self, DistributorConfig};
use karmada_controllers::names::depended_by_label_key;
use karmada_controllers::runtime::resources;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::{self, ControlPlane};

async fn rb(control_plane: &ControlPlane, name: &str) -> Option<Value> {
    support::get(
        &control_plane.client,
        "work.karmada.io/v1alpha2",
        "ResourceBinding",
        "resourcebindings",
        Some("default"),
        name,
    )
    .await
}

fn bindings(control_plane: &ControlPlane) -> Api<DynamicObject> {
    resources::namespaced(
        &control_plane.client,
        &resources::resource_binding(),
        "default",
    )
}

async fn merge_patch(control_plane: &ControlPlane, name: &str, patch: Value) {
    bindings(control_plane)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("patch {name}: {e}"));
}

#[tokio::test]
async fn dependencies_follow_the_workload() {
    let control_plane = ControlPlane::start().await;
    let config_map = control_plane
        .create(
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "app-config", "namespace": "default"}, "data": {"mode": "prod"}}),
        )
        .await;
    let deployment = control_plane
        .create(
            "deployments",
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "web", "image": "nginx:1.25",
                                                "envFrom": [{"secretRef": {"name": "late-secret"}}]}],
                                               "volumes": [{"name": "config", "configMap": {"name": "app-config"}}]}}},
            }),
        )
        .await;
    let parent = control_plane
        .create(
            "resourcebindings",
            json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": "web-deployment", "namespace": "default"},
                "spec": {
                    "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                                 "name": "web", "uid": deployment["metadata"]["uid"]},
                    "propagateDeps": true,
                    "replicas": 3,
                    "clusters": [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}],
                },
            }),
        )
        .await;
    let parent_id = parent["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"].clone();
    assert!(parent_id.is_string(), "admission assigns an id: {parent}");

    let task = tokio::spawn(dependencies_distributor::run(
        control_plane.client.clone(),
        DistributorConfig::default(),
        control_plane.cancel.child_token(),
    ));

    let label = depended_by_label_key("default", "web-deployment");
    let attached = support::eventually("attached binding of the ConfigMap", || {
        rb(&control_plane, "app-config-configmap")
    })
    .await;
    assert_eq!(attached["metadata"]["labels"][label.as_str()], parent_id);
    assert_eq!(
        attached["spec"]["requiredBy"],
        json!([{"namespace": "default", "name": "web-deployment",
                "clusters": [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}]}])
    );
    assert_eq!(
        attached["spec"]["resource"]["uid"],
        config_map["metadata"]["uid"]
    );
    let owner = &attached["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].clone(), owner["name"].clone()),
        (json!("ConfigMap"), json!("app-config"))
    );
    assert!(attached["spec"].get("placement").is_none());

    // The parent carries the finalizer and the list of its dependencies.
    let parent = support::eventually("dependencies annotation", || async {
        let parent = rb(&control_plane, "web-deployment").await?;
        parent["metadata"]["annotations"]["resourcebinding.karmada.io/dependencies"]
            .is_string()
            .then_some(parent)
    })
    .await;
    assert!(
        parent["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("karmada.io/binding-dependencies-distributor")))
    );
    let recorded: Value = serde_json::from_str(
        parent["metadata"]["annotations"]["resourcebinding.karmada.io/dependencies"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("json list");
    assert_eq!(recorded.as_array().map(Vec::len), Some(2), "{recorded}");
    // The Secret does not exist yet: no binding for it.
    assert_eq!(rb(&control_plane, "late-secret-secret").await, None);

    // The Secret appears: its attached binding follows.
    control_plane
        .create(
            "secrets",
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "late-secret", "namespace": "default"}, "stringData": {"k": "v"}}),
        )
        .await;
    support::eventually("attached binding of the late Secret", || {
        rb(&control_plane, "late-secret-secret")
    })
    .await;

    // The workload is rescheduled: the snapshots follow.
    merge_patch(
        &control_plane,
        "web-deployment",
        json!({"spec": {"clusters": [{"name": "member3", "replicas": 3}]}}),
    )
    .await;
    for name in ["app-config-configmap", "late-secret-secret"] {
        support::eventually(&format!("{name} follows the new clusters"), || async {
            let attached = rb(&control_plane, name).await?;
            (attached["spec"]["requiredBy"][0]["clusters"]
                == json!([{"name": "member3", "replicas": 3}]))
            .then_some(())
        })
        .await;
    }

    // propagateDeps turned off: attached bindings are released (deleted, nobody else needs them) and the
    // finalizer leaves the parent.
    merge_patch(
        &control_plane,
        "web-deployment",
        json!({"spec": {"propagateDeps": false}}),
    )
    .await;
    support::eventually("attached bindings deleted", || async {
        let mut left = 0;
        for name in ["app-config-configmap", "late-secret-secret"] {
            if let Some(attached) = rb(&control_plane, name).await {
                left += 1;
                if attached["metadata"]["deletionTimestamp"].is_string() {
                    // The binding controller's part: its Works are gone, so it lets the binding go.
                    merge_patch(
                        &control_plane,
                        name,
                        json!({"metadata": {"finalizers": null}}),
                    )
                    .await;
                }
            }
        }
        (left == 0).then_some(())
    })
    .await;
    support::eventually("finalizer removed from the parent", || async {
        let parent = rb(&control_plane, "web-deployment").await?;
        let finalizers = parent["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (!finalizers.contains(&json!("karmada.io/binding-dependencies-distributor"))).then_some(())
    })
    .await;

    control_plane.cancel.cancel();
    task.await.expect("distributor stops on cancel");
}
