//! The execution and work status controllers against member-sims: Works → member objects, conflict
//! resolution, drift, deletion, unreachable members and kinds a member lacks.

use k8s_openapi::api::apps::v1::Deployment;
use karmada_controllers::execution::{self, ExecutionConfig, ExecutionMetrics, ServedClusters};
use karmada_controllers::runtime::{Informers, resources};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::support::{self, ControlPlane, Member, eventually};

/// Starts the execution and work status controllers for every Push cluster; stopped when the token drops.
pub struct Running {
    pub cancel: CancellationToken,
    pub registry: std::sync::Arc<std::sync::Mutex<prometheus_client::registry::Registry>>,
    /// The shared-watch registry both controllers were given.
    pub informers: Informers,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

pub fn start_execution(control_plane: &ControlPlane) -> Running {
    start_execution_for(control_plane, ServedClusters::Push)
}

/// [`start_execution`] for the given clusters (`Only(name)` is what a Pull-mode agent runs).
pub fn start_execution_for(control_plane: &ControlPlane, served: ServedClusters) -> Running {
    let cancel = CancellationToken::new();
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ExecutionMetrics::register(&mut registry);
    let config = ExecutionConfig::new(served, control_plane.members.clone());
    let informers = config.informers.clone();
    tokio::spawn(execution::run_with_status(
        control_plane.client.clone(),
        config,
        metrics,
        cancel.clone(),
    ));
    Running {
        cancel,
        registry: std::sync::Arc::new(std::sync::Mutex::new(registry)),
        informers,
    }
}

pub fn deployment(name: &str, replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "main", "image": image,
                                   "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}},
        },
    })
}

/// A Work as the binding controller writes it: the manifest carries the managed label and work annotations.
pub fn work_for(cluster: &str, name: &str, mut manifest: Value, conflict: &str) -> Value {
    let namespace = format!("karmada-es-{cluster}");
    manifest["metadata"]["labels"]["karmada.io/managed"] = json!("true");
    manifest["metadata"]["annotations"] = json!({
        "work.karmada.io/namespace": namespace,
        "work.karmada.io/name": name,
        "work.karmada.io/conflict-resolution": conflict,
    });
    json!({
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": namespace,
                     "finalizers": ["karmada.io/execution-controller"]},
        "spec": {"workload": {"manifests": [manifest]}},
    })
}

pub async fn get_work(control_plane: &ControlPlane, cluster: &str, name: &str) -> Option<Value> {
    support::get(
        &control_plane.client,
        "work.karmada.io/v1alpha1",
        "Work",
        "works",
        Some(&format!("karmada-es-{cluster}")),
        name,
    )
    .await
}

pub fn applied(work: &Value) -> Option<(String, String)> {
    work["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Applied")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

pub async fn member_deployment(member: &Member, name: &str) -> Option<Deployment> {
    let api: Api<Deployment> = Api::namespaced(member.client.clone(), "default");
    api.get_opt(name).await.ok().flatten()
}

/// Waits until the member's Deployment `name` matches `check`.
pub async fn member_deployment_where(
    member: &Member,
    name: &str,
    what: &str,
    check: impl Fn(&Deployment) -> bool,
) -> Deployment {
    eventually(what, || async {
        member_deployment(member, name).await.filter(|d| check(d))
    })
    .await
}

fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(-1)
}

fn image(d: &Deployment) -> String {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn managed(d: &Deployment) -> bool {
    d.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("karmada.io/managed"))
        .map(String::as_str)
        == Some("true")
}

#[tokio::test]
async fn work_becomes_a_managed_deployment_whose_status_and_health_come_back() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let running = start_execution(&control_plane);

    control_plane
        .create(
            "works",
            work_for(
                "member1",
                "web-1",
                deployment("web", 2, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    let created =
        member_deployment_where(&member, "web", "the Deployment in member1", |_| true).await;
    assert!(
        managed(&created),
        "managed label set: {:?}",
        created.metadata.labels
    );
    assert_eq!(replicas(&created), 2);

    let work = eventually("Applied=True and a Healthy manifest status", || async {
        let work = get_work(&control_plane, "member1", "web-1").await?;
        let status = work["status"]["manifestStatuses"].get(0)?.clone();
        (applied(&work)?.0 == "True"
            && status["health"] == "Healthy"
            && status["status"]["readyReplicas"] == 2)
            .then_some(work)
    })
    .await;
    let identifier = &work["status"]["manifestStatuses"][0]["identifier"];
    assert_eq!(identifier["group"], "apps");
    assert_eq!(identifier["kind"], "Deployment");
    assert_eq!(identifier["resource"], "deployments");
    assert_eq!(identifier["namespace"], "default");
    assert_eq!(identifier["name"], "web");
    assert_eq!(
        applied(&work).map(|a| a.1).as_deref(),
        Some("Manifest has been successfully applied")
    );

    // The apply latency was measured.
    let mut text = String::new();
    {
        let registry = running.registry.lock().expect("registry");
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    }
    assert!(
        text.contains("karmada_execution_apply_duration_seconds_count{member_cluster=\"member1\",result=\"success\"}"),
        "{text}"
    );
    // Every reconcile since creation found the member object up to date: its spec was never rewritten.
    let settled = member_deployment(&member, "web").await.expect("deployment");
    assert_eq!(settled.metadata.generation, Some(1));
    member.stop().await;
}

#[tokio::test]
async fn abort_leaves_a_foreign_deployment_alone_and_overwrite_takes_it_over() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _running = start_execution(&control_plane);
    // A Deployment the member already had, not created by Karmada.
    support::create(
        &member.client,
        "deployments",
        deployment("web", 1, "httpd:2"),
    )
    .await;

    control_plane
        .create(
            "works",
            work_for(
                "member1",
                "web-1",
                deployment("web", 3, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    let (_, message) = eventually("Applied=False under Abort", || async {
        applied(&get_work(&control_plane, "member1", "web-1").await?).filter(|a| a.0 == "False")
    })
    .await;
    assert!(message.contains("not managed by Karmada"), "{message}");
    assert!(message.contains("Deployment default/web"), "{message}");
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(control_plane.client.clone(), "karmada-es-member1");
    eventually("a SyncFailed event on the Work", || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("SyncFailed")
                    && e.involved_object.name.as_deref() == Some("web-1")
                    && e.message
                        .as_deref()
                        .is_some_and(|m| m.contains("not managed by Karmada"))
            })
            .then_some(())
    })
    .await;
    let untouched = member_deployment(&member, "web")
        .await
        .expect("still there");
    assert_eq!(image(&untouched), "httpd:2");
    assert!(!managed(&untouched));

    // The same Work, now asking to overwrite.
    let works = resources::namespaced(
        &control_plane.client,
        &resources::work(),
        "karmada-es-member1",
    );
    let patch = json!({"spec": {"workload": {"manifests": [
        work_for("member1", "web-1", deployment("web", 3, "nginx:1.27"), "overwrite")["spec"]["workload"]["manifests"][0]
    ]}}});
    works
        .patch("web-1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch work");
    let taken = member_deployment_where(&member, "web", "the Deployment taken over", |d| {
        image(d) == "nginx:1.27" && managed(d)
    })
    .await;
    assert_eq!(replicas(&taken), 3);
    eventually("Applied=True after overwrite", || async {
        applied(&get_work(&control_plane, "member1", "web-1").await?).filter(|a| a.0 == "True")
    })
    .await;
    member.stop().await;
}

#[tokio::test]
async fn drift_is_corrected_and_deleting_the_work_removes_the_member_object() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _running = start_execution(&control_plane);
    control_plane
        .create(
            "works",
            work_for(
                "member1",
                "web-1",
                deployment("web", 2, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    member_deployment_where(&member, "web", "the Deployment", |d| replicas(d) == 2).await;
    // Wait for the status watch to be up, so the edit below is seen as drift.
    eventually("manifest status", || async {
        let work = get_work(&control_plane, "member1", "web-1").await?;
        work["status"]["manifestStatuses"].get(0).map(|_| ())
    })
    .await;

    // Someone scales the member object by hand: Karmada puts it back.
    let api: Api<Deployment> = Api::namespaced(member.client.clone(), "default");
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .expect("scale by hand");
    member_deployment_where(&member, "web", "replicas corrected back to 2", |d| {
        replicas(d) == 2
    })
    .await;

    // Someone deletes it: Karmada creates it again.
    let uid = member_deployment(&member, "web")
        .await
        .and_then(|d| d.metadata.uid);
    api.delete("web", &DeleteParams::default())
        .await
        .expect("delete by hand");
    member_deployment_where(&member, "web", "the Deployment re-created", |d| {
        d.metadata.uid != uid
    })
    .await;

    // The Work goes: so does the member object, then the Work itself (finalizer dropped).
    let works = resources::namespaced(
        &control_plane.client,
        &resources::work(),
        "karmada-es-member1",
    );
    works
        .delete("web-1", &DeleteParams::default())
        .await
        .expect("delete work");
    deployment_then_work_gone(&control_plane, &member, "web", "web-1").await;
    member.stop().await;
}

#[tokio::test]
async fn preserved_resources_stay_in_the_member_without_karmada_labels() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _running = start_execution(&control_plane);
    let mut work = work_for(
        "member1",
        "web-1",
        deployment("web", 1, "nginx:1.27"),
        "abort",
    );
    work["spec"]["preserveResourcesOnDeletion"] = json!(true);
    control_plane.create("works", work).await;
    member_deployment_where(&member, "web", "the Deployment", managed).await;
    resources::namespaced(
        &control_plane.client,
        &resources::work(),
        "karmada-es-member1",
    )
    .delete("web-1", &DeleteParams::default())
    .await
    .expect("delete work");
    eventually("Work gone", || async {
        get_work(&control_plane, "member1", "web-1")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    let kept = member_deployment(&member, "web")
        .await
        .expect("kept in the member");
    assert!(
        !managed(&kept),
        "ownership label removed: {:?}",
        kept.metadata.labels
    );
    member.stop().await;
}

#[tokio::test]
async fn unreachable_members_and_missing_kinds_give_applied_false_with_the_reason() {
    let control_plane = ControlPlane::start().await;
    let member1 = Member::start("member1").await;
    let member2 = Member::start("member2").await;
    control_plane.join(&member1).await;
    control_plane.join(&member2).await;
    member2.stop().await;
    let _running = start_execution(&control_plane);

    control_plane
        .create(
            "works",
            work_for(
                "member2",
                "web-1",
                deployment("web", 1, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    let widget = json!({"apiVersion": "example.io/v1", "kind": "Widget",
                        "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1}});
    control_plane
        .create("works", work_for("member1", "widget-1", widget, "abort"))
        .await;
    let (_, unreachable) = eventually("Applied=False for the stopped member", || async {
        applied(&get_work(&control_plane, "member2", "web-1").await?).filter(|a| a.0 == "False")
    })
    .await;
    assert!(unreachable.contains("member2"), "{unreachable}");
    let (_, missing) = eventually("Applied=False for the unknown kind", || async {
        applied(&get_work(&control_plane, "member1", "widget-1").await?).filter(|a| a.0 == "False")
    })
    .await;
    assert!(
        missing.contains("does not serve example.io/v1, Kind=Widget"),
        "{missing}"
    );

    // The controller still serves the healthy member.
    control_plane
        .create(
            "works",
            work_for(
                "member1",
                "web-1",
                deployment("web", 1, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    member_deployment_where(
        &member1,
        "web",
        "the Deployment in the healthy member",
        managed,
    )
    .await;
    member1.stop().await;
}

#[tokio::test]
async fn suspended_works_are_not_dispatched() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _running = start_execution(&control_plane);
    let mut work = work_for(
        "member1",
        "web-1",
        deployment("web", 1, "nginx:1.27"),
        "abort",
    );
    work["spec"]["suspendDispatching"] = json!(true);
    control_plane.create("works", work).await;
    let work = eventually("Dispatching=False", || async {
        let work = get_work(&control_plane, "member1", "web-1").await?;
        work["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| {
                c["type"] == "Dispatching"
                    && c["status"] == "False"
                    && c["reason"] == "SuspendDispatching"
            })
            .then_some(work)
    })
    .await;
    assert!(applied(&work).is_none());
    assert!(member_deployment(&member, "web").await.is_none());
    member.stop().await;
}

fn metrics_text(running: &Running) -> String {
    let mut text = String::new();
    let registry = running.registry.lock().expect("registry");
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    text
}

#[tokio::test]
async fn an_agent_serves_only_its_pull_cluster_and_the_manager_only_push_clusters() {
    let control_plane = ControlPlane::start().await;
    let member1 = Member::start("member1").await;
    let member3 = Member::start("member3").await;
    control_plane.join(&member1).await;
    control_plane
        .join_with(&member3, json!({"syncMode": "Pull"}))
        .await;
    let manager = start_execution(&control_plane);
    let agent = start_execution_for(&control_plane, ServedClusters::Only("member3".into()));
    for cluster in ["member1", "member3"] {
        control_plane
            .create(
                "works",
                work_for(
                    cluster,
                    "web-1",
                    deployment("web", 1, "nginx:1.27"),
                    "abort",
                ),
            )
            .await;
    }
    member_deployment_where(&member1, "web", "Deployment in the Push member", managed).await;
    member_deployment_where(&member3, "web", "Deployment in the Pull member", managed).await;
    eventually("member3's Work healthy (status from the agent)", || async {
        let work = get_work(&control_plane, "member3", "web-1").await?;
        (work["status"]["manifestStatuses"][0]["health"] == "Healthy").then_some(())
    })
    .await;
    let manager_text = metrics_text(&manager);
    let agent_text = metrics_text(&agent);
    assert!(
        manager_text.contains("member_cluster=\"member1\""),
        "{manager_text}"
    );
    assert!(
        !manager_text.contains("member_cluster=\"member3\""),
        "{manager_text}"
    );
    assert!(
        agent_text.contains("member_cluster=\"member3\""),
        "{agent_text}"
    );
    assert!(
        !agent_text.contains("member_cluster=\"member1\""),
        "{agent_text}"
    );
    member1.stop().await;
    member3.stop().await;
}

#[tokio::test]
async fn updates_keep_member_side_fields_such_as_the_cluster_ip() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _running = start_execution(&control_plane);
    let service = |tier: &str| {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "web", "namespace": "default", "labels": {"tier": tier}},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    };
    control_plane
        .create("works", work_for("member1", "svc-1", service("a"), "abort"))
        .await;
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(member.client.clone(), "default");
    let cluster_ip = |s: &k8s_openapi::api::core::v1::Service| {
        s.spec
            .as_ref()
            .and_then(|s| s.cluster_ip.clone())
            .unwrap_or_default()
    };
    let first = eventually("the Service with a clusterIP", || async {
        services
            .get_opt("web")
            .await
            .ok()
            .flatten()
            .filter(|s| !cluster_ip(s).is_empty())
    })
    .await;
    let patch = json!({"spec": {"workload": {"manifests": [
        work_for("member1", "svc-1", service("b"), "abort")["spec"]["workload"]["manifests"][0]
    ]}}});
    resources::namespaced(
        &control_plane.client,
        &resources::work(),
        "karmada-es-member1",
    )
    .patch("svc-1", &PatchParams::default(), &Patch::Merge(&patch))
    .await
    .expect("patch work");
    let updated = eventually("the Service relabelled", || async {
        services.get_opt("web").await.ok().flatten().filter(|s| {
            s.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("tier"))
                .map(String::as_str)
                == Some("b")
        })
    })
    .await;
    assert_eq!(cluster_ip(&updated), cluster_ip(&first));
    eventually("Applied=True", || async {
        applied(&get_work(&control_plane, "member1", "svc-1").await?).filter(|a| a.0 == "True")
    })
    .await;
    member.stop().await;
}

#[tokio::test]
async fn a_member_that_comes_back_converges() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member2").await;
    control_plane.join(&member).await;
    member.stop().await;
    let _running = start_execution(&control_plane);
    control_plane
        .create(
            "works",
            work_for(
                "member2",
                "web-1",
                deployment("web", 1, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    eventually("Applied=False while the member is down", || async {
        applied(&get_work(&control_plane, "member2", "web-1").await?).filter(|a| a.0 == "False")
    })
    .await;

    // The member is back (on a new address): the Cluster is re-pointed.
    let back = Member::start("member2").await;
    control_plane
        .members
        .pin("member2", back.client.clone())
        .await;
    resources::all(&control_plane.client, &resources::cluster())
        .patch(
            "member2",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"apiEndpoint": support::endpoint_of(&back)}})),
        )
        .await
        .expect("re-point cluster");
    member_deployment_where(
        &back,
        "web",
        "the Deployment once the member is back",
        managed,
    )
    .await;
    eventually("Applied=True and Healthy", || async {
        let work = get_work(&control_plane, "member2", "web-1").await?;
        (applied(&work)?.0 == "True"
            && work["status"]["manifestStatuses"][0]["health"] == "Healthy")
            .then_some(())
    })
    .await;
    back.stop().await;
}

/// Waits for the member's Deployment `name`, then member1's Work `work`, to be gone.
async fn deployment_then_work_gone(
    control_plane: &ControlPlane,
    member: &Member,
    name: &str,
    work: &str,
) {
    eventually("member Deployment deleted", || async {
        member_deployment(member, name)
            .await
            .is_none()
            .then_some(())
    })
    .await;
    eventually("Work gone", || async {
        get_work(control_plane, "member1", work)
            .await
            .is_none()
            .then_some(())
    })
    .await;
}

/// Flips the Ready condition the test bed wrote for `cluster`, keeping the rest of its status.
async fn set_cluster_ready(control_plane: &ControlPlane, cluster: &str, ready: &str) {
    let api = resources::all(&control_plane.client, &resources::cluster());
    let current = api.get(cluster).await.expect("cluster");
    let mut value = serde_json::to_value(&current).expect("json");
    for condition in value["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
    {
        if condition["type"] == "Ready" {
            condition["status"] = json!(ready);
        }
    }
    api.replace_status(
        cluster,
        &kube::api::PostParams::default(),
        &serde_json::from_value(value).expect("cluster"),
    )
    .await
    .expect("cluster status");
}

#[tokio::test]
async fn a_deleted_work_keeps_its_member_object_until_the_cluster_is_ready_again() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let _running = start_execution(&control_plane);
    control_plane
        .create(
            "works",
            work_for(
                "member1",
                "web-1",
                deployment("web", 1, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    member_deployment_where(&member, "web", "the Deployment", managed).await;

    set_cluster_ready(&control_plane, "member1", "False").await;
    // A probe Work proves the controller's Cluster cache has caught up before the deletion arrives.
    control_plane
        .create(
            "works",
            work_for(
                "member1",
                "probe-1",
                deployment("probe", 1, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    eventually(
        "Applied=False on the probe: the cluster is seen not Ready",
        || async {
            applied(&get_work(&control_plane, "member1", "probe-1").await?)
                .filter(|(status, message)| status == "False" && message.contains("not ready"))
        },
    )
    .await;
    resources::namespaced(
        &control_plane.client,
        &resources::work(),
        "karmada-es-member1",
    )
    .delete("web-1", &DeleteParams::default())
    .await
    .expect("delete work");
    // The controller has seen the deletion and held it back: the member object and the Work both stay.
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(control_plane.client.clone(), "karmada-es-member1");
    eventually("a DeletionDeferred event on the Work", || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("DeletionDeferred")
                    && e.involved_object.name.as_deref() == Some("web-1")
                    && e.message.as_deref().is_some_and(|m| m.contains("member1"))
            })
            .then_some(())
    })
    .await;
    assert!(
        member_deployment(&member, "web").await.is_some(),
        "nothing is deleted from a member whose cluster is not Ready"
    );
    let work = get_work(&control_plane, "member1", "web-1")
        .await
        .expect("the Work waits with its finalizer");
    assert!(work["metadata"]["deletionTimestamp"].is_string());

    // Ready again: the deferred deletion goes through, then the Work itself goes.
    set_cluster_ready(&control_plane, "member1", "True").await;
    deployment_then_work_gone(&control_plane, &member, "web", "web-1").await;
    member.stop().await;
}

#[tokio::test]
async fn execution_and_work_status_share_one_work_watch() {
    let control_plane = ControlPlane::start().await;
    let member = Member::start("member1").await;
    control_plane.join(&member).await;
    let running = start_execution(&control_plane);
    control_plane
        .create(
            "works",
            work_for(
                "member1",
                "web-1",
                deployment("web", 1, "nginx:1.27"),
                "abort",
            ),
        )
        .await;
    // Applied comes from execution (handed over, written with the statuses) and manifestStatuses from work
    // status: each reconciles only Works of its subscription, so both controllers are subscribed by now.
    eventually("Applied=True and a manifest status", || async {
        let work = get_work(&control_plane, "member1", "web-1").await?;
        (applied(&work)?.0 == "True" && work["status"]["manifestStatuses"].get(0).is_some())
            .then_some(())
    })
    .await;
    // The registry holds only control-plane watches of Works (Clusters and member objects are watched outside
    // it), so exactly one means the two controllers' Work subscriptions landed on the same watch; two would
    // mean they built different Apis or watch configurations.
    assert_eq!(running.informers.watching(), 1);
    drop(running);
    member.stop().await;
}
