//! The scheduler runner with the resource detector against the in-process control plane and member-sims: the
//! seed's 2:1 static weights, rescheduling on scale, and a policy naming a cluster that does not exist.

use std::time::Duration;

use karmada_controllers::detector::controller::DetectorConfig;
use karmada_controllers::scheduler::{SchedulerConfig, SchedulerMetrics, run};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

use crate::detector::{fixture, get_binding, namespace, start_detector};
use crate::support::{self, ControlPlane, Member};

pub fn start_scheduler(cp: &ControlPlane, config: SchedulerConfig) -> (SchedulerMetrics, Registry) {
    let mut registry = Registry::default();
    let metrics = SchedulerMetrics::register(&mut registry);
    let client = cp.client.clone();
    let cancel = cp.cancel.child_token();
    let running = metrics.clone();
    tokio::spawn(async move {
        if let Err(err) = run(client, config, running, cancel).await {
            panic!("scheduler: {err}");
        }
    });
    (metrics, registry)
}

fn fast_retries() -> SchedulerConfig {
    SchedulerConfig {
        backoff_base: Duration::from_millis(50),
        backoff_max: Duration::from_millis(400),
        ..SchedulerConfig::default()
    }
}

pub fn scheduled_condition(binding: &Value) -> Option<&Value> {
    binding["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Scheduled")
}

pub fn clusters(binding: &Value) -> Vec<(String, i64)> {
    let mut placed: Vec<(String, i64)> = binding["spec"]["clusters"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap_or_default().to_string(),
                        t["replicas"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    placed.sort();
    placed
}

async fn events_with_reason(
    cp: &ControlPlane,
    namespace: &str,
    name: &str,
    reason: &str,
) -> Vec<String> {
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(cp.client.clone(), namespace);
    api.list(&Default::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason)
        })
        .map(|e| e.message.unwrap_or_default())
        .collect()
}

/// [`events_with_reason`] once there is at least one (the recorders write in the background).
async fn eventually_events_with_reason(
    cp: &ControlPlane,
    namespace: &str,
    name: &str,
    reason: &str,
) -> Vec<String> {
    support::eventually(&format!("{reason} on {name}"), || async {
        let events = events_with_reason(cp, namespace, name, reason).await;
        (!events.is_empty()).then_some(events)
    })
    .await
}

#[tokio::test]
async fn seed_001_static_weights_then_scale() {
    let cp = ControlPlane::start().await;
    let aws = Member::start("cluster-aws").await;
    let gcp = Member::start("cluster-gcp").await;
    cp.join(&aws).await;
    cp.join(&gcp).await;
    start_detector(&cp, DetectorConfig::default());
    let (metrics, registry) = start_scheduler(&cp, fast_retries());
    namespace(&cp, "production").await;
    cp.create("deployments", fixture("seed-001/nginx-deploy.yaml"))
        .await;
    cp.create(
        "propagationpolicies",
        fixture("seed-001/propagation-policy.yaml"),
    )
    .await;

    let binding = support::eventually("4/2 over cluster-aws and cluster-gcp", || async {
        let b = get_binding(&cp, "production", "nginx-ha-deployment").await?;
        let done = clusters(&b)
            == vec![
                ("cluster-aws".to_string(), 4),
                ("cluster-gcp".to_string(), 2),
            ]
            && b["status"]["schedulerObservedGeneration"] == b["metadata"]["generation"];
        done.then_some(b)
    })
    .await;
    let condition = scheduled_condition(&binding).expect("Scheduled condition");
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "Success");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cluster-aws: 4, cluster-gcp: 2"),
        "{message}"
    );
    assert!(binding["status"]["lastScheduledTime"].is_string());
    let explanation: Value = serde_json::from_str(
        binding["metadata"]["annotations"]["scheduling.karmada.io/explanation"]
            .as_str()
            .expect("explanation annotation"),
    )
    .expect("explanation JSON");
    assert_eq!(explanation["scheduled"], true);
    assert!(binding["metadata"]["annotations"]["policy.karmada.io/applied-placement"].is_string());

    let events =
        eventually_events_with_reason(&cp, "production", "nginx-ha", "ScheduleBindingSucceed")
            .await;
    assert!(
        events.iter().any(|m| m.contains("cluster-aws: 4")),
        "{events:?}"
    );
    eventually_events_with_reason(
        &cp,
        "production",
        "nginx-ha-deployment",
        "ScheduleBindingSucceed",
    )
    .await;
    assert!(metrics.attempts("scheduled", "ReconcileSchedule") >= 1);

    // Replicas change → ScaleSchedule → 6/3.
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    );
    let deployments: Api<DynamicObject> =
        Api::namespaced_with(cp.client.clone(), "production", &resource);
    deployments
        .patch(
            "nginx-ha",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 9}})),
        )
        .await
        .expect("scale");
    support::eventually("6/3 after scaling to 9", || async {
        let b = get_binding(&cp, "production", "nginx-ha-deployment").await?;
        (clusters(&b)
            == vec![
                ("cluster-aws".to_string(), 6),
                ("cluster-gcp".to_string(), 3),
            ])
        .then_some(())
    })
    .await;
    assert!(metrics.attempts("scheduled", "ScaleSchedule") >= 1);

    // An explicit reschedule request: lastScheduledTime moves to (or past) rescheduleTriggeredAt.
    let before = get_binding(&cp, "production", "nginx-ha-deployment")
        .await
        .expect("binding");
    let previous: jiff::Timestamp = before["status"]["lastScheduledTime"]
        .as_str()
        .expect("lastScheduledTime")
        .parse()
        .expect("time");
    // Times have second precision: request the reschedule in a later second than the last schedule, so only a
    // new decision can satisfy the check below.
    let triggered = support::eventually("the clock past the last schedule", || async {
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        (now.parse::<jiff::Timestamp>().ok()? > previous).then_some(now)
    })
    .await;
    let bindings_resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding"),
        "resourcebindings",
    );
    let bindings: Api<DynamicObject> =
        Api::namespaced_with(cp.client.clone(), "production", &bindings_resource);
    bindings
        .patch(
            "nginx-ha-deployment",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"rescheduleTriggeredAt": triggered}})),
        )
        .await
        .expect("request a reschedule");
    support::eventually("lastScheduledTime at or after the request", || async {
        let b = get_binding(&cp, "production", "nginx-ha-deployment").await?;
        let last = b["status"]["lastScheduledTime"]
            .as_str()?
            .parse::<jiff::Timestamp>()
            .ok()?;
        let wanted = triggered.parse::<jiff::Timestamp>().ok()?;
        (last >= wanted && clusters(&b).len() == 2).then_some(())
    })
    .await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    assert!(text.contains("karmada_scheduler_schedule_attempts_total{result=\"scheduled\",schedule_type=\"ScaleSchedule\"}"), "{text}");
    assert!(
        text.contains("karmada_scheduler_e2e_scheduling_duration_seconds_count"),
        "{text}"
    );
    assert!(
        text.contains("karmada_scheduler_scheduling_algorithm_duration_seconds_count"),
        "{text}"
    );
    aws.stop().await;
    gcp.stop().await;
}

#[tokio::test]
async fn a_policy_naming_a_missing_cluster_is_unschedulable_without_a_write_loop() {
    let cp = ControlPlane::start().await;
    let member = Member::start("member1").await;
    cp.join(&member).await;
    start_detector(&cp, DetectorConfig::default());
    let (metrics, _registry) = start_scheduler(&cp, fast_retries());
    namespace(&cp, "apps").await;
    let mut deploy = fixture("seed-001/nginx-deploy.yaml");
    deploy["metadata"]["namespace"] = json!("apps");
    cp.create("deployments", deploy).await;
    cp.create(
        "propagationpolicies",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
               "metadata": {"name": "nowhere", "namespace": "apps"},
               "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx-ha"}],
                        "placement": {"clusterAffinity": {"clusterNames": ["cluster-late"]}}}}),
    )
    .await;
    let binding = support::eventually("Scheduled=False", || async {
        let b = get_binding(&cp, "apps", "nginx-ha-deployment").await?;
        let c = scheduled_condition(&b)?;
        (c["status"] == "False").then(|| b.clone())
    })
    .await;
    let condition = scheduled_condition(&binding).expect("condition");
    assert_eq!(condition["reason"], "NoClusterFit");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(message.contains("0/1 clusters are available"), "{message}");
    assert!(clusters(&binding).is_empty());
    assert!(
        binding["metadata"]["annotations"]["policy.karmada.io/applied-placement"].is_null(),
        "a failed placement is not recorded as applied"
    );
    // As in Karmada, no cluster fitting parks the binding as unschedulable until a cluster changes: no retry
    // loop, no write loop.
    let version = binding["metadata"]["resourceVersion"].clone();
    support::eventually("parked as unschedulable", || async {
        (metrics.pending_bindings("unschedulable") == 1).then_some(())
    })
    .await;
    assert_eq!(metrics.pending_bindings("active"), 0);
    assert_eq!(metrics.pending_bindings("backoff"), 0);
    let again = get_binding(&cp, "apps", "nginx-ha-deployment")
        .await
        .expect("binding");
    assert_eq!(again["metadata"]["resourceVersion"], version);
    let failed =
        eventually_events_with_reason(&cp, "apps", "nginx-ha", "ScheduleBindingFailed").await;
    assert!(
        failed
            .iter()
            .any(|m| m.contains("0/1 clusters are available")),
        "{failed:?}"
    );

    // The named cluster joins: the cluster event requeues the binding, which schedules there.
    let late = Member::start("cluster-late").await;
    cp.join(&late).await;
    support::eventually("scheduled to the cluster that joined", || async {
        let b = get_binding(&cp, "apps", "nginx-ha-deployment").await?;
        let ok = clusters(&b) == vec![("cluster-late".to_string(), 6)]
            && scheduled_condition(&b).is_some_and(|c| c["status"] == "True");
        ok.then_some(())
    })
    .await;
    late.stop().await;
    member.stop().await;
}

#[tokio::test]
async fn a_cluster_scoped_template_gets_a_scheduled_cluster_resource_binding() {
    let cp = ControlPlane::start().await;
    let member = Member::start("member1").await;
    cp.join(&member).await;
    start_detector(&cp, DetectorConfig::default());
    let (_metrics, _registry) = start_scheduler(&cp, fast_retries());
    let role = cp
        .create(
            "clusterroles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "system:reader"},
                   "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        )
        .await;
    cp.create(
        "clusterpropagationpolicies",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
               "metadata": {"name": "roles"},
               "spec": {"resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                               "name": "system:reader"}]}}),
    )
    .await;
    let binding = support::eventually("a scheduled ClusterResourceBinding", || async {
        let b = support::get(
            &cp.client,
            "work.karmada.io/v1alpha2",
            "ClusterResourceBinding",
            "clusterresourcebindings",
            None,
            "system.reader-clusterrole",
        )
        .await?;
        let ok = clusters(&b) == vec![("member1".to_string(), 0)]
            && scheduled_condition(&b).is_some_and(|c| c["status"] == "True");
        ok.then_some(b)
    })
    .await;
    assert_eq!(binding["spec"]["resource"]["uid"], role["metadata"]["uid"]);
    assert!(
        binding["metadata"]["labels"]["clusterpropagationpolicy.karmada.io/permanent-id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{binding}"
    );
    member.stop().await;
}
