//! The namespace sync controller against the in-process control plane. Clusters are plain Cluster objects with
//! their execution namespaces (nothing reaches a member here); the execution controller's part in deleting a
//! Work (removing its finalizer) is played by the test.

use karmada_controllers::names::work_name;
use karmada_controllers::namespace::controller::{self as namespace_sync, NamespaceSyncConfig};
use karmada_controllers::runtime::resources;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::{self, ControlPlane};

/// A Cluster object and its execution namespace, as join and the cluster controller would leave them.
async fn add_cluster(control_plane: &ControlPlane, name: &str) {
    control_plane
        .create(
            "clusters",
            json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                   "metadata": {"name": name},
                   "spec": {"apiEndpoint": "https://127.0.0.1:1", "syncMode": "Push"}}),
        )
        .await;
    create_namespace(control_plane, &format!("karmada-es-{name}"), json!({})).await;
}

async fn create_namespace(control_plane: &ControlPlane, name: &str, labels: Value) {
    control_plane
        .create(
            "namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}),
        )
        .await;
}

async fn namespace_work(
    control_plane: &ControlPlane,
    cluster: &str,
    namespace: &str,
) -> Option<Value> {
    support::get(
        &control_plane.client,
        "work.karmada.io/v1alpha1",
        "Work",
        "works",
        Some(&format!("karmada-es-{cluster}")),
        &work_name("Namespace", namespace, ""),
    )
    .await
}

/// The Work of `namespace` in `cluster`, once it exists; checks it carries the Namespace.
async fn wait_for_work(control_plane: &ControlPlane, cluster: &str, namespace: &str) -> Value {
    let work = support::eventually(&format!("Work of {namespace} in {cluster}"), || {
        namespace_work(control_plane, cluster, namespace)
    })
    .await;
    let manifest = &work["spec"]["workload"]["manifests"][0];
    assert_eq!(manifest["kind"], "Namespace");
    assert_eq!(manifest["metadata"]["name"], namespace);
    assert_eq!(manifest["metadata"]["labels"]["karmada.io/managed"], "true");
    assert_eq!(work["metadata"]["ownerReferences"][0]["kind"], "Namespace");
    work
}

/// Lets Works being deleted go, as the execution controller does once the member object is removed.
async fn release_deleted_works(control_plane: &ControlPlane, cluster: &str) {
    let api: Api<DynamicObject> = resources::namespaced(
        &control_plane.client,
        &resources::work(),
        &format!("karmada-es-{cluster}"),
    );
    let Ok(list) = api.list(&Default::default()).await else {
        return;
    };
    for work in list.items {
        if work.metadata.deletion_timestamp.is_some() {
            let name = work.metadata.name.clone().unwrap_or_default();
            let _ = api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                )
                .await;
        }
    }
}

#[tokio::test]
async fn namespaces_follow_every_cluster() {
    let control_plane = ControlPlane::start().await;
    add_cluster(&control_plane, "member1").await;
    add_cluster(&control_plane, "member2").await;
    let task = tokio::spawn(namespace_sync::run(
        control_plane.client.clone(),
        NamespaceSyncConfig::default(),
        control_plane.cancel.child_token(),
    ));

    create_namespace(
        &control_plane,
        "quiet",
        json!({"namespace.karmada.io/skip-auto-propagation": "true"}),
    )
    .await;
    create_namespace(&control_plane, "microservices", json!({})).await;
    for cluster in ["member1", "member2"] {
        wait_for_work(&control_plane, cluster, "microservices").await;
    }
    // Reserved, default, kube-* and skip-labelled namespaces never get Works; `quiet` was created before
    // `microservices`, whose Works exist, so it has been seen.
    for cluster in ["member1", "member2"] {
        for skipped in ["quiet", "default", "karmada-es-member1", "kube-system"] {
            assert_eq!(
                namespace_work(&control_plane, cluster, skipped).await,
                None,
                "{skipped} in {cluster}"
            );
        }
    }

    // A cluster joining later gets every propagated namespace.
    add_cluster(&control_plane, "member3").await;
    wait_for_work(&control_plane, "member3", "microservices").await;
    assert_eq!(
        namespace_work(&control_plane, "member3", "quiet").await,
        None
    );

    let member1 = resources::namespaced(
        &control_plane.client,
        &resources::work(),
        "karmada-es-member1",
    );
    // A Work edited by hand is put back (the controller had recorded it as holding what it wants).
    let edited = json!({"spec": {"workload": {"manifests": [{
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "microservices", "labels": {"edited": "by-hand"}},
    }]}}});
    member1
        .patch(
            &work_name("Namespace", "microservices", ""),
            &PatchParams::default(),
            &Patch::Merge(&edited),
        )
        .await
        .expect("edit work");
    support::eventually("edited Work put back", || async {
        let work = namespace_work(&control_plane, "member1", "microservices").await?;
        work["spec"]["workload"]["manifests"][0]["metadata"]["labels"]["edited"]
            .is_null()
            .then_some(())
    })
    .await;

    // A Work removed by hand comes back.
    member1
        .delete(
            &work_name("Namespace", "microservices", ""),
            &DeleteParams::default(),
        )
        .await
        .expect("delete work");
    release_deleted_works(&control_plane, "member1").await;
    support::eventually("Work restored", || async {
        let work = namespace_work(&control_plane, "member1", "microservices").await?;
        work["metadata"]["deletionTimestamp"]
            .is_null()
            .then_some(())
    })
    .await;

    // Deleting the namespace removes its Works everywhere.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(control_plane.client.clone());
    namespaces
        .delete("microservices", &DeleteParams::default())
        .await
        .expect("delete namespace");
    support::eventually("Works of a deleted namespace gone", || async {
        let mut left = 0;
        for cluster in ["member1", "member2", "member3"] {
            release_deleted_works(&control_plane, cluster).await;
            if namespace_work(&control_plane, cluster, "microservices")
                .await
                .is_some()
            {
                left += 1;
            }
        }
        (left == 0).then_some(())
    })
    .await;

    control_plane.cancel.cancel();
    task.await.expect("controller stops on cancel");
}
