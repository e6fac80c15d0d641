//! The binding controller (with execution and work status behind it): a scheduled ResourceBinding → one Work
//! per cluster with revised replicas and per-cluster overrides → member Deployments; shrinking placement,
//! invalid overrides and binding deletion.

use karmada_controllers::binding::controller::{self, BindingConfig};
use karmada_controllers::names::work_name;
use karmada_controllers::runtime::{Informers, resources};
use karmada_controllers::status::binding_status::{self, BindingMetrics, BindingStatusConfig};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::execution::{
    deployment, get_work, member_deployment, member_deployment_where, start_execution,
};
use super::support::{self, ControlPlane, Member, eventually};

struct BindingController(CancellationToken);

impl Drop for BindingController {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

fn start_binding(control_plane: &ControlPlane) -> BindingController {
    let cancel = CancellationToken::new();
    tokio::spawn(controller::run(
        control_plane.client.clone(),
        BindingConfig::default(),
        cancel.clone(),
    ));
    BindingController(cancel)
}

/// A ResourceBinding as the detector and scheduler would leave it.
fn binding(template: &Value, replicas: i64, clusters: Value) -> Value {
    let name = template["metadata"]["name"].as_str().unwrap_or_default();
    json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": format!("{name}-deployment"), "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name,
                         "uid": template["metadata"]["uid"]},
            "replicas": replicas,
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                "replicaDivisionPreference": "Weighted"}},
            "clusters": clusters,
        },
    })
}

fn image_override(name: &str, cluster: &str, registry: &str) -> Value {
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"overrideRules": [{
            "targetCluster": {"clusterNames": [cluster]},
            "overriders": {"imageOverrider": [{"component": "Registry", "operator": "replace", "value": registry}]},
        }]},
    })
}

fn manifest(work: &Value) -> &Value {
    &work["spec"]["workload"]["manifests"][0]
}

async fn three_members(control_plane: &ControlPlane) -> Vec<Member> {
    let mut members = Vec::new();
    for name in ["member1", "member2", "member3"] {
        let member = Member::start(name).await;
        control_plane.join(&member).await;
        members.push(member);
    }
    members
}

#[tokio::test]
async fn scheduled_binding_becomes_works_with_revised_replicas_and_per_cluster_overrides() {
    let control_plane = ControlPlane::start().await;
    let members = three_members(&control_plane).await;
    let _execution = start_execution(&control_plane);
    let _binding = start_binding(&control_plane);

    let template = control_plane
        .create("deployments", deployment("web", 6, "nginx:1.27"))
        .await;
    control_plane
        .create(
            "overridepolicies",
            image_override("gcr", "member2", "gcr.io/my-project"),
        )
        .await;
    control_plane
        .create(
            "resourcebindings",
            binding(
                &template,
                6,
                json!([{"name": "member1", "replicas": 4}, {"name": "member2", "replicas": 2}]),
            ),
        )
        .await;

    let name = work_name("Deployment", "web", "default");
    let work1 = eventually("Work in karmada-es-member1", || {
        get_work(&control_plane, "member1", &name)
    })
    .await;
    let work2 = eventually("Work in karmada-es-member2", || {
        get_work(&control_plane, "member2", &name)
    })
    .await;
    assert_eq!(manifest(&work1)["spec"]["replicas"], 4);
    assert_eq!(manifest(&work2)["spec"]["replicas"], 2);
    assert_eq!(
        manifest(&work1)["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    assert_eq!(
        manifest(&work2)["spec"]["template"]["spec"]["containers"][0]["image"],
        "gcr.io/my-project/nginx:1.27"
    );
    assert!(work2["metadata"]["annotations"]["policy.karmada.io/applied-overrides"].is_string());
    assert!(work1["metadata"]["annotations"]["policy.karmada.io/applied-overrides"].is_null());
    assert_eq!(
        work1["metadata"]["annotations"]["resourcebinding.karmada.io/name"],
        "web-deployment"
    );
    assert!(work1["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"].is_string());
    assert_eq!(
        work1["metadata"]["finalizers"][0],
        "karmada.io/execution-controller"
    );
    assert!(manifest(&work1)["status"].is_null(), "manifest pruned");
    assert!(get_work(&control_plane, "member3", &name).await.is_none());

    // Behind it: the member objects and their status.
    member_deployment_where(&members[0], "web", "4 replicas in member1", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(4)
    })
    .await;
    let in_member2 = member_deployment_where(&members[1], "web", "2 replicas in member2", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(2)
    })
    .await;
    let image = in_member2
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.containers[0].image.clone());
    assert_eq!(
        image.flatten().as_deref(),
        Some("gcr.io/my-project/nginx:1.27")
    );
    eventually(
        "member1's Work reports 4 ready replicas, Healthy",
        || async {
            let work = get_work(&control_plane, "member1", &name).await?;
            let status = &work["status"]["manifestStatuses"][0];
            (status["health"] == "Healthy" && status["status"]["readyReplicas"] == 4).then_some(())
        },
    )
    .await;

    // The binding's events say the Works were synced.
    let events: kube::Api<k8s_openapi::api::core::v1::Event> =
        kube::Api::namespaced(control_plane.client.clone(), "default");
    eventually("SyncWorkSucceed event", || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("SyncWorkSucceed"))
            .then_some(())
    })
    .await;

    // Scaling the template (the detector would bump the binding): the Works follow.
    let bindings = resources::namespaced(
        &control_plane.client,
        &resources::resource_binding(),
        "default",
    );
    let deployments = kube::Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(
        control_plane.client.clone(),
        "default",
    );
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 9}})),
        )
        .await
        .expect("scale template");
    bindings
        .patch(
            "web-deployment",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 9, "clusters": [{"name": "member1", "replicas": 6}, {"name": "member2", "replicas": 3}]}})),
        )
        .await
        .expect("reschedule");
    member_deployment_where(&members[0], "web", "6 replicas in member1", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(6)
    })
    .await;
    for member in members {
        member.stop().await;
    }
}

/// The Work's `work.karmada.io/permanent-id` label and its resourceVersion.
fn work_identity(work: &Value) -> (String, String) {
    let id = work["metadata"]["labels"]["work.karmada.io/permanent-id"]
        .as_str()
        .expect("the Work has its permanent id")
        .to_string();
    assert_eq!(
        manifest(work)["metadata"]["labels"]["work.karmada.io/permanent-id"],
        json!(id),
        "the manifest carries the Work's id from the first write"
    );
    let version = work["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    (id, version)
}

#[tokio::test]
async fn a_render_that_changes_nothing_writes_nothing() {
    let control_plane = ControlPlane::start().await;
    let members = three_members(&control_plane).await;
    let _binding = start_binding(&control_plane);
    let template = control_plane
        .create("deployments", deployment("web", 3, "nginx:1.27"))
        .await;
    control_plane
        .create(
            "resourcebindings",
            binding(
                &template,
                3,
                json!([{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 2}]),
            ),
        )
        .await;
    let name = work_name("Deployment", "web", "default");
    let first = eventually("member1's Work", || async {
        get_work(&control_plane, "member1", &name).await
    })
    .await;
    let (id, version) = work_identity(&first);

    // Re-rendered for member2's change; member1's Work (rendered first, in placement order) stays as it was.
    resources::namespaced(
        &control_plane.client,
        &resources::resource_binding(),
        "default",
    )
    .patch(
        "web-deployment",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 4, "clusters": [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 3}]}})),
    )
    .await
    .expect("grow member2");
    eventually("member2's Work grows to 3", || async {
        let work = get_work(&control_plane, "member2", &name).await?;
        (manifest(&work)["spec"]["replicas"] == json!(3)).then_some(())
    })
    .await;
    let after = get_work(&control_plane, "member1", &name)
        .await
        .expect("member1's Work");
    assert_eq!(
        work_identity(&after),
        (id, version),
        "member1's Work was not rewritten"
    );
    for member in members {
        member.stop().await;
    }
}

#[tokio::test]
async fn shrinking_placement_removes_the_orphan_work_and_its_member_object() {
    let control_plane = ControlPlane::start().await;
    let members = three_members(&control_plane).await;
    let _execution = start_execution(&control_plane);
    let _binding = start_binding(&control_plane);
    let template = control_plane
        .create("deployments", deployment("web", 3, "nginx:1.27"))
        .await;
    control_plane
        .create(
            "resourcebindings",
            binding(&template, 3, json!([{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}, {"name": "member3", "replicas": 1}])),
        )
        .await;
    member_deployment_where(&members[2], "web", "Deployment in member3", |_| true).await;

    let bindings = resources::namespaced(
        &control_plane.client,
        &resources::resource_binding(),
        "default",
    );
    bindings
        .patch(
            "web-deployment",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusters": [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}]}})),
        )
        .await
        .expect("shrink");
    let name = work_name("Deployment", "web", "default");
    eventually("member3's Work gone", || async {
        get_work(&control_plane, "member3", &name)
            .await
            .is_none()
            .then_some(())
    })
    .await;
    eventually("member3's Deployment gone", || async {
        member_deployment(&members[2], "web")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    member_deployment_where(&members[0], "web", "member1 grows to 2", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(2)
    })
    .await;

    // Deleting the binding deletes every Work, and with them the member objects; then the binding goes.
    bindings
        .delete("web-deployment", &DeleteParams::default())
        .await
        .expect("delete binding");
    for member in &members[..2] {
        eventually("member Deployment gone after binding deletion", || async {
            member_deployment(member, "web")
                .await
                .is_none()
                .then_some(())
        })
        .await;
    }
    eventually("binding gone", || async {
        support::get(
            &control_plane.client,
            "work.karmada.io/v1alpha2",
            "ResourceBinding",
            "resourcebindings",
            Some("default"),
            "web-deployment",
        )
        .await
        .is_none()
        .then_some(())
    })
    .await;
    for member in members {
        member.stop().await;
    }
}

#[tokio::test]
async fn an_invalid_override_is_reported_on_the_binding_and_other_clusters_still_sync() {
    let control_plane = ControlPlane::start().await;
    let members = three_members(&control_plane).await;
    let _binding = start_binding(&control_plane);
    let template = control_plane
        .create("deployments", deployment("web", 2, "nginx:1.27"))
        .await;
    control_plane
        .create(
            "overridepolicies",
            json!({
                "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
                "metadata": {"name": "broken", "namespace": "default"},
                "spec": {"overrideRules": [{
                    "targetCluster": {"clusterNames": ["member2"]},
                    "overriders": {"plaintext": [{"path": "/spec/no/such/field", "operator": "replace", "value": 1}]},
                }]},
            }),
        )
        .await;
    control_plane
        .create(
            "resourcebindings",
            binding(
                &template,
                2,
                json!([{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}]),
            ),
        )
        .await;
    let name = work_name("Deployment", "web", "default");
    eventually("member1's Work", || {
        get_work(&control_plane, "member1", &name)
    })
    .await;
    let condition = eventually("WorkSynced=False on the binding", || async {
        let rb = support::get(
            &control_plane.client,
            "work.karmada.io/v1alpha2",
            "ResourceBinding",
            "resourcebindings",
            Some("default"),
            "web-deployment",
        )
        .await?;
        rb["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "WorkSynced" && c["status"] == "False")
            .cloned()
    })
    .await;
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("member2") && message.contains("broken"),
        "{message}"
    );
    assert!(get_work(&control_plane, "member2", &name).await.is_none());

    // Fixing the policy heals the binding.
    let policies = resources::namespaced(
        &control_plane.client,
        &resources::override_policy(),
        "default",
    );
    policies
        .delete("broken", &DeleteParams::default())
        .await
        .expect("delete policy");
    eventually("member2's Work after the fix", || {
        get_work(&control_plane, "member2", &name)
    })
    .await;
    eventually("WorkSynced=True", || async {
        let rb = support::get(
            &control_plane.client,
            "work.karmada.io/v1alpha2",
            "ResourceBinding",
            "resourcebindings",
            Some("default"),
            "web-deployment",
        )
        .await?;
        rb["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "WorkSynced" && c["status"] == "True")
            .then_some(())
    })
    .await;
    for member in members {
        member.stop().await;
    }
}

#[tokio::test]
async fn cluster_resource_bindings_propagate_cluster_scoped_templates() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _execution = start_execution(&control_plane);
    let _binding = start_binding(&control_plane);
    control_plane
        .create(
            "namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
        )
        .await;
    control_plane
        .create(
            "clusterresourcebindings",
            json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
                "metadata": {"name": "team-a-namespace"},
                "spec": {"resource": {"apiVersion": "v1", "kind": "Namespace", "name": "team-a"},
                         "clusters": [{"name": "member1"}]},
            }),
        )
        .await;
    let name = work_name("Namespace", "team-a", "");
    let work = eventually("the Namespace Work", || {
        get_work(&control_plane, "member1", &name)
    })
    .await;
    assert!(
        work["metadata"]["labels"]["clusterresourcebinding.karmada.io/permanent-id"].is_string()
    );
    assert_eq!(
        work["metadata"]["annotations"]["clusterresourcebinding.karmada.io/name"],
        "team-a-namespace"
    );
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(member.client.clone());
    let created = eventually("team-a in the member", || async {
        namespaces.get_opt("team-a").await.ok().flatten()
    })
    .await;
    assert_eq!(
        created
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("karmada.io/managed"))
            .map(String::as_str),
        Some("true")
    );
    let crb = eventually("the CRB finalizer", || async {
        let crb = support::get(
            &control_plane.client,
            "work.karmada.io/v1alpha2",
            "ClusterResourceBinding",
            "clusterresourcebindings",
            None,
            "team-a-namespace",
        )
        .await?;
        crb["metadata"]["finalizers"]
            .as_array()?
            .iter()
            .any(|f| f == "karmada.io/cluster-resource-binding-controller")
            .then_some(crb)
    })
    .await;
    assert_eq!(crb["metadata"]["name"], "team-a-namespace");

    resources::all(
        &control_plane.client,
        &resources::cluster_resource_binding(),
    )
    .delete("team-a-namespace", &DeleteParams::default())
    .await
    .expect("delete CRB");
    eventually("the Work gone", || async {
        get_work(&control_plane, "member1", &name)
            .await
            .is_none()
            .then_some(())
    })
    .await;
    eventually("team-a leaving the member", || async {
        match namespaces.get_opt("team-a").await.ok()? {
            None => Some(()),
            Some(ns) => ns.metadata.deletion_timestamp.map(|_| ()),
        }
    })
    .await;
    member.stop().await;
}

#[tokio::test]
async fn a_binding_whose_template_is_missing_says_so() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _binding = start_binding(&control_plane);
    let ghost = json!({"metadata": {"name": "ghost", "uid": "0000"}});
    control_plane
        .create(
            "resourcebindings",
            binding(&ghost, 1, json!([{"name": "member1", "replicas": 1}])),
        )
        .await;
    let condition = eventually("WorkSynced=False for the missing template", || async {
        let rb = support::get(
            &control_plane.client,
            "work.karmada.io/v1alpha2",
            "ResourceBinding",
            "resourcebindings",
            Some("default"),
            "ghost-deployment",
        )
        .await?;
        rb["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "WorkSynced" && c["status"] == "False")
            .cloned()
    })
    .await;
    assert_eq!(
        condition["message"],
        "resource template apps/v1, Kind=Deployment default/ghost not found"
    );
    let events: kube::Api<k8s_openapi::api::core::v1::Event> =
        kube::Api::namespaced(control_plane.client.clone(), "default");
    eventually("a SyncWorkFailed event", || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("SyncWorkFailed"))
            .then_some(())
    })
    .await;

    // The template appears (the detector would touch the binding): the Work follows.
    control_plane
        .create(
            "deployments",
            super::execution::deployment("ghost", 1, "nginx:1.27"),
        )
        .await;
    resources::namespaced(
        &control_plane.client,
        &resources::resource_binding(),
        "default",
    )
    .patch(
        "ghost-deployment",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"touched": "1"}}})),
    )
    .await
    .expect("touch binding");
    let name = work_name("Deployment", "ghost", "default");
    eventually("the Work once the template exists", || {
        get_work(&control_plane, "member1", &name)
    })
    .await;
    member.stop().await;
}

#[tokio::test]
async fn hand_edited_works_are_rewritten_and_new_override_policies_re_render() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _binding = start_binding(&control_plane);
    let template = control_plane
        .create("deployments", deployment("web", 2, "nginx:1.27"))
        .await;
    control_plane
        .create(
            "resourcebindings",
            binding(&template, 2, json!([{"name": "member1", "replicas": 2}])),
        )
        .await;
    let name = work_name("Deployment", "web", "default");
    let work = eventually("the Work", || get_work(&control_plane, "member1", &name)).await;

    // Someone edits the Work: the binding controller puts its rendering back.
    let mut edited = manifest(&work).clone();
    edited["spec"]["replicas"] = json!(7);
    let works = resources::namespaced(
        &control_plane.client,
        &resources::work(),
        "karmada-es-member1",
    );
    works
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": {"manifests": [edited]}}})),
        )
        .await
        .expect("edit work");
    eventually("the Work rendered again with 2 replicas", || async {
        let work = get_work(&control_plane, "member1", &name).await?;
        (manifest(&work)["spec"]["replicas"] == 2).then_some(())
    })
    .await;

    // An OverridePolicy created afterwards applies to the existing Work.
    control_plane
        .create(
            "overridepolicies",
            image_override("mirror", "member1", "mirror.local"),
        )
        .await;
    eventually("the Work re-rendered with the override", || async {
        let work = get_work(&control_plane, "member1", &name).await?;
        (manifest(&work)["spec"]["template"]["spec"]["containers"][0]["image"]
            == "mirror.local/nginx:1.27")
            .then_some(())
    })
    .await;
    member.stop().await;
}

#[tokio::test]
async fn binding_and_binding_status_controllers_share_their_watches() {
    // Each of the two controllers subscribes to Works, ResourceBindings and ClusterResourceBindings through
    // the registry, with the same Api (all namespaces) and selectors (none), so they share one watch of each:
    // 3, not 6. (Policies and Clusters are few; the binding controller watches them outside the registry.)
    const SHARED_WATCHES: usize = 3;
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let informers = Informers::default();

    let status_cancel = CancellationToken::new();
    let _stop_status = BindingController(status_cancel.clone());
    let status = tokio::spawn(binding_status::run(
        control_plane.client.clone(),
        BindingStatusConfig {
            informers: informers.clone(),
            ..BindingStatusConfig::default()
        },
        BindingMetrics::default(),
        status_cancel.clone(),
    ));
    eventually(
        "the binding status controller's watches in the registry",
        || {
            let watching = informers.watching();
            async move { (watching == SHARED_WATCHES).then_some(()) }
        },
    )
    .await;

    let binding_cancel = CancellationToken::new();
    let _stop_binding = BindingController(binding_cancel.clone());
    tokio::spawn(controller::run(
        control_plane.client.clone(),
        BindingConfig {
            informers: informers.clone(),
            ..BindingConfig::default()
        },
        binding_cancel.clone(),
    ));
    let template = control_plane
        .create("deployments", deployment("web", 1, "nginx:1.27"))
        .await;
    control_plane
        .create(
            "resourcebindings",
            binding(&template, 1, json!([{"name": "member1", "replicas": 1}])),
        )
        .await;
    // Both run on the shared caches: the Work the binding controller wrote is what the binding status
    // controller aggregated (nothing else runs to write either).
    let name = work_name("Deployment", "web", "default");
    eventually("the Work", || get_work(&control_plane, "member1", &name)).await;
    eventually("member1 in the binding's aggregated status", || async {
        let rb = support::get(
            &control_plane.client,
            "work.karmada.io/v1alpha2",
            "ResourceBinding",
            "resourcebindings",
            Some("default"),
            "web-deployment",
        )
        .await?;
        rb["status"]["aggregatedStatus"]
            .as_array()?
            .iter()
            .any(|item| item["clusterName"] == "member1")
            .then_some(())
    })
    .await;
    assert_eq!(informers.watching(), SHARED_WATCHES);

    // The binding status controller gone (its subscriptions dropped with it), the binding controller alone
    // keeps the same three watches running: it subscribed to them in this registry too.
    status_cancel.cancel();
    tokio::time::timeout(support::PATIENCE, status)
        .await
        .expect("the binding status controller stops")
        .expect("it ends without panicking");
    assert_eq!(informers.watching(), SHARED_WATCHES);
    binding_cancel.cancel();
    eventually("no watch left once both stopped", || {
        let watching = informers.watching();
        async move { (watching == 0).then_some(()) }
    })
    .await;
    member.stop().await;
}
