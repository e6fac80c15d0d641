//! The binding status controller against the in-process control plane. Works and their status are written by
//! hand (as the binding, execution and work status controllers would), so only aggregation is under test.

use karmada_controllers::runtime::resources;
use karmada_controllers::status::binding_status::{self, BindingMetrics, BindingStatusConfig};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

use crate::support::{self, ControlPlane};

const RB_ID_LABEL: &str = "resourcebinding.karmada.io/permanent-id";

async fn create_namespace(control_plane: &ControlPlane, name: &str) {
    control_plane
        .create(
            "namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await;
}

fn works_in(control_plane: &ControlPlane, cluster: &str) -> Api<DynamicObject> {
    resources::namespaced(
        &control_plane.client,
        &resources::work(),
        &format!("karmada-es-{cluster}"),
    )
}

/// Creates the Work of `binding` in `cluster`, as the binding controller would.
async fn create_work(
    control_plane: &ControlPlane,
    cluster: &str,
    binding: &Value,
    template: &Value,
) {
    let id = binding["metadata"]["labels"][RB_ID_LABEL].clone();
    control_plane
        .create(
            "works",
            json!({
                "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                "metadata": {
                    "name": "nginx-687f7fb96f", "namespace": format!("karmada-es-{cluster}"),
                    "labels": {RB_ID_LABEL: id},
                    "annotations": {"resourcebinding.karmada.io/namespace": "default",
                                    "resourcebinding.karmada.io/name": "nginx-deployment"},
                },
                "spec": {"workload": {"manifests": [template]}},
            }),
        )
        .await;
}

/// Writes the Work's status through the status subresource, as execution and work status would.
async fn set_work_status(
    control_plane: &ControlPlane,
    cluster: &str,
    applied: Option<&str>,
    ready: i64,
) {
    let api = works_in(control_plane, cluster);
    let mut work =
        serde_json::to_value(api.get("nginx-687f7fb96f").await.expect("work")).expect("json");
    let condition = match applied {
        None => json!({"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
                       "message": "Manifest has been successfully applied",
                       "lastTransitionTime": "2026-11-29T00:00:00Z"}),
        Some(message) => json!({"type": "Applied", "status": "False", "reason": "AppliedFailed",
                                "message": message, "lastTransitionTime": "2026-11-29T00:00:00Z"}),
    };
    work["status"] = json!({
        "conditions": [condition],
        "manifestStatuses": [{
            "identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                           "resource": "deployments", "namespace": "default", "name": "nginx"},
            "status": {"replicas": ready, "readyReplicas": ready, "updatedReplicas": ready,
                       "availableReplicas": ready, "observedGeneration": 1, "generation": 1,
                       "resourceTemplateGeneration": 1},
            "health": "Healthy",
        }],
    });
    api.replace_status(
        "nginx-687f7fb96f",
        &PostParams::default(),
        &serde_json::from_value(work).expect("object"),
    )
    .await
    .expect("work status");
}

async fn binding(control_plane: &ControlPlane) -> Value {
    support::get(
        &control_plane.client,
        "work.karmada.io/v1alpha2",
        "ResourceBinding",
        "resourcebindings",
        Some("default"),
        "nginx-deployment",
    )
    .await
    .expect("binding")
}

fn fully_applied(binding: &Value) -> Option<Value> {
    binding["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "FullyApplied")
        .cloned()
}

#[tokio::test]
async fn works_aggregate_onto_the_binding_and_the_deployment() {
    let control_plane = ControlPlane::start().await;
    for cluster in ["aws", "gcp"] {
        create_namespace(&control_plane, &format!("karmada-es-{cluster}")).await;
    }
    let template = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}},
    });
    let deployment = control_plane.create("deployments", template.clone()).await;
    let created = control_plane
        .create(
            "resourcebindings",
            json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": "nginx-deployment", "namespace": "default"},
                "spec": {
                    "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                                 "name": "nginx", "uid": deployment["metadata"]["uid"]},
                    "replicas": 6,
                    "clusters": [{"name": "aws", "replicas": 4}, {"name": "gcp", "replicas": 2}],
                },
            }),
        )
        .await;
    assert!(
        created["metadata"]["labels"][RB_ID_LABEL].is_string(),
        "admission assigns the binding's permanent id: {created}"
    );
    for (cluster, ready) in [("aws", 4), ("gcp", 2)] {
        create_work(&control_plane, cluster, &created, &template).await;
        set_work_status(&control_plane, cluster, None, ready).await;
    }

    let mut registry = Registry::default();
    let metrics = BindingMetrics::register(&mut registry, &mut Registry::default());
    let task = tokio::spawn(binding_status::run(
        control_plane.client.clone(),
        BindingStatusConfig::default(),
        metrics,
        control_plane.cancel.child_token(),
    ));

    let applied = support::eventually("binding FullyApplied=True", || async {
        let binding = binding(&control_plane).await;
        let condition = fully_applied(&binding)?;
        (condition["status"] == "True").then_some(binding)
    })
    .await;
    let condition = fully_applied(&applied).expect("condition");
    assert_eq!(condition["reason"], "FullyAppliedSuccess");
    assert_eq!(
        condition["message"],
        "All works have been successfully applied"
    );
    let items = applied["status"]["aggregatedStatus"]
        .as_array()
        .expect("items");
    let summary: Vec<(Value, Value, Value, Value)> = items
        .iter()
        .map(|i| {
            (
                i["clusterName"].clone(),
                i["applied"].clone(),
                i["health"].clone(),
                i["status"]["readyReplicas"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (json!("aws"), json!(true), json!("Healthy"), json!(4)),
            (json!("gcp"), json!(true), json!("Healthy"), json!(2)),
        ]
    );

    let status = support::eventually("Deployment status aggregated", || async {
        let deployment = support::get(
            &control_plane.client,
            "apps/v1",
            "Deployment",
            "deployments",
            Some("default"),
            "nginx",
        )
        .await?;
        (deployment["status"]["readyReplicas"] == 6).then(|| deployment["status"].clone())
    })
    .await;
    assert_eq!(status["replicas"], 6);
    assert_eq!(status["availableReplicas"], 6);
    assert_eq!(status["updatedReplicas"], 6);

    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(control_plane.client.clone(), "default");
    support::eventually("AggregateStatusSucceed event on the Deployment", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("AggregateStatusSucceed")
                    && e.involved_object.kind.as_deref() == Some("Deployment")
                    && e.involved_object.name.as_deref() == Some("nginx")
            })
            .then_some(())
    })
    .await;

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    assert!(
        text.contains(
            r#"karmada_binding_replicas{namespace="default",name="nginx-deployment",state="ready"} 6"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"karmada_binding_replicas{namespace="default",name="nginx-deployment",state="desired"} 6"#
        ),
        "{text}"
    );

    // One member fails to apply: FullyApplied turns False and the item carries the member's message.
    set_work_status(
        &control_plane,
        "gcp",
        Some("deployments.apps \"nginx\" already exists"),
        0,
    )
    .await;
    let failed = support::eventually("binding FullyApplied=False", || async {
        let binding = binding(&control_plane).await;
        let condition = fully_applied(&binding)?;
        (condition["status"] == "False").then_some(binding)
    })
    .await;
    assert_eq!(
        fully_applied(&failed).expect("condition")["reason"],
        "FullyAppliedFailed"
    );
    let gcp = failed["status"]["aggregatedStatus"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["clusterName"] == "gcp").cloned())
        .expect("gcp item");
    assert_eq!(gcp["applied"], Value::Null);
    assert_eq!(
        gcp["appliedMessage"],
        "deployments.apps \"nginx\" already exists"
    );
    assert_eq!(gcp["health"], "Unknown");
    // The template now sums only what the applied member reports.
    support::eventually("Deployment status follows", || async {
        let deployment = support::get(
            &control_plane.client,
            "apps/v1",
            "Deployment",
            "deployments",
            Some("default"),
            "nginx",
        )
        .await?;
        (deployment["status"]["readyReplicas"] == 4).then_some(())
    })
    .await;

    control_plane.cancel.cancel();
    task.await.expect("controller stops on cancel");
}

/// ClusterResourceBindings aggregate the same way, their Works naming them by annotation.
#[tokio::test]
async fn cluster_resource_bindings_aggregate_too() {
    let control_plane = ControlPlane::start().await;
    create_namespace(&control_plane, "karmada-es-member1").await;
    let created = control_plane
        .create(
            "clusterresourcebindings",
            json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
                "metadata": {"name": "reader-clusterrole"},
                "spec": {
                    "resource": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                 "name": "reader"},
                    "clusters": [{"name": "member1"}],
                },
            }),
        )
        .await;
    let id_label = "clusterresourcebinding.karmada.io/permanent-id";
    let id = created["metadata"]["labels"][id_label].clone();
    assert!(id.is_string(), "admission assigns the id: {created}");
    let work = control_plane
        .create(
            "works",
            json!({
                "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "reader-1", "namespace": "karmada-es-member1",
                             "labels": {id_label: id},
                             "annotations": {"clusterresourcebinding.karmada.io/name": "reader-clusterrole"}},
                "spec": {"workload": {"manifests": [{"apiVersion": "rbac.authorization.k8s.io/v1",
                                                     "kind": "ClusterRole", "metadata": {"name": "reader"}}]}},
            }),
        )
        .await;
    let task = tokio::spawn(binding_status::run(
        control_plane.client.clone(),
        BindingStatusConfig::default(),
        BindingMetrics::default(),
        control_plane.cancel.child_token(),
    ));
    let get_crb = || async {
        support::get(
            &control_plane.client,
            "work.karmada.io/v1alpha2",
            "ClusterResourceBinding",
            "clusterresourcebindings",
            None,
            "reader-clusterrole",
        )
        .await
        .expect("crb")
    };
    // Not applied yet: the item is there, FullyApplied is False.
    support::eventually("FullyApplied=False before the Work is applied", || async {
        let crb = get_crb().await;
        (fully_applied(&crb)?["status"] == "False"
            && crb["status"]["aggregatedStatus"][0]["clusterName"] == "member1")
            .then_some(())
    })
    .await;
    // The Work gets applied: the status watch wakes the binding.
    let mut applied = work.clone();
    applied["status"] = json!({"conditions": [{"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
        "message": "Manifest has been successfully applied", "lastTransitionTime": "2026-11-29T00:00:00Z"}]});
    works_in(&control_plane, "member1")
        .replace_status(
            "reader-1",
            &PostParams::default(),
            &serde_json::from_value(applied).expect("object"),
        )
        .await
        .expect("work status");
    support::eventually("FullyApplied=True", || async {
        let crb = get_crb().await;
        (fully_applied(&crb)?["status"] == "True"
            && crb["status"]["aggregatedStatus"][0]["applied"] == true)
            .then_some(())
    })
    .await;
    control_plane.cancel.cancel();
    task.await.expect("controller stops on cancel");
}
