//! The WorkloadRebalancer controller with the detector and the scheduler against the in-process control plane:
//! a dynamic-weight Deployment scheduled while only one member existed is spread over both after a rebalance;
//! a workload without a binding is reported as such; a spec edit drops failed workloads from the status; the TTL
//! deletes the rebalancer; admission rejects malformed rebalancers.

use std::time::Duration;

use karmada_controllers::detector::controller::DetectorConfig;
use karmada_controllers::scheduler::{SchedulerConfig, SchedulerMetrics};
use karmada_controllers::workload_rebalancer::{RebalancerConfig, run};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::detector::{get_binding, namespace, start_detector};
use crate::support::{self, ControlPlane, Member};

fn start_scheduler(cp: &ControlPlane) {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = SchedulerMetrics::register(&mut registry);
    let config = SchedulerConfig {
        backoff_base: Duration::from_millis(50),
        backoff_max: Duration::from_millis(400),
        ..SchedulerConfig::default()
    };
    let client = cp.client.clone();
    let cancel = cp.cancel.child_token();
    tokio::spawn(async move {
        if let Err(err) = karmada_controllers::scheduler::run(client, config, metrics, cancel).await
        {
            panic!("scheduler: {err}");
        }
    });
}

fn start_rebalancer(cp: &ControlPlane) {
    tokio::spawn(run(
        cp.client.clone(),
        RebalancerConfig::default(),
        cp.cancel.child_token(),
    ));
}

fn rebalancers(cp: &ControlPlane) -> Api<DynamicObject> {
    Api::all_with(
        cp.client.clone(),
        &karmada_controllers::workload_rebalancer::controller::workload_rebalancer_resource(),
    )
}

async fn get_rebalancer(cp: &ControlPlane, name: &str) -> Option<Value> {
    support::get(
        &cp.client,
        "apps.karmada.io/v1alpha1",
        "WorkloadRebalancer",
        "workloadrebalancers",
        None,
        name,
    )
    .await
}

fn clusters(binding: &Value) -> Vec<(String, i64)> {
    let mut placed: Vec<(String, i64)> = binding["spec"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_string(),
                t["replicas"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    placed.sort();
    placed
}

fn timestamp(value: &Value) -> Option<jiff::Timestamp> {
    value.as_str()?.parse().ok()
}

/// `(kind, name, result, reason)` per observed workload.
fn observed(rebalancer: &Value) -> Vec<(String, String, String, String)> {
    rebalancer["status"]["observedWorkloads"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                text(&o["workload"]["kind"]),
                text(&o["workload"]["name"]),
                text(&o["result"]),
                text(&o["reason"]),
            )
        })
        .collect()
}

fn row(kind: &str, name: &str, result: &str, reason: &str) -> (String, String, String, String) {
    (kind.into(), name.into(), result.into(), reason.into())
}

fn web_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx",
                                                  "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]}}
        }
    })
}

fn dynamic_weight_policy() -> Value {
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided",
                                      "replicaDivisionPreference": "Weighted",
                                      "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
            }
        }
    })
}

#[tokio::test]
async fn rebalancing_spreads_a_workload_over_a_cluster_that_joined_later() {
    let cp = ControlPlane::start().await;
    let member1 = Member::start("member1").await;
    cp.join(&member1).await;
    start_detector(&cp, DetectorConfig::default());
    start_scheduler(&cp);
    start_rebalancer(&cp);
    namespace(&cp, "apps").await;
    cp.create("deployments", web_deployment()).await;
    cp.create("propagationpolicies", dynamic_weight_policy())
        .await;
    let first = support::eventually("all 6 replicas on member1", || async {
        let b = get_binding(&cp, "apps", "web-deployment").await?;
        (clusters(&b) == vec![("member1".to_string(), 6)]
            && b["status"]["schedulerObservedGeneration"] == b["metadata"]["generation"])
            .then_some(b)
    })
    .await;
    assert!(first["spec"]["rescheduleTriggeredAt"].is_null());
    let last_scheduled = timestamp(&first["status"]["lastScheduledTime"]).expect("scheduled");

    // member2 joins: an existing assignment is kept (no rescheduling trigger); a rebalance is what moves it.
    let member2 = Member::start("member2").await;
    cp.join(&member2).await;
    // Times have second precision: create the rebalancer in a later second than the last schedule, so that
    // only a schedule made for it can satisfy the checks below.
    support::eventually("the clock a second past the last schedule", || async {
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        (now.parse::<jiff::Timestamp>().ok()? > last_scheduled).then_some(())
    })
    .await;
    let created = cp
        .create(
            "workloadrebalancers",
            json!({
                "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
                "metadata": {"name": "rebalance-web"},
                "spec": {"workloads": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "apps", "name": "web"},
                    {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "apps", "name": "ghost"},
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "ghost"},
                ]},
            }),
        )
        .await;
    let created_at = created["metadata"]["creationTimestamp"].clone();
    let created_time = timestamp(&created_at).expect("creationTimestamp");

    let binding = support::eventually("a fresh schedule over both members", || async {
        let b = get_binding(&cp, "apps", "web-deployment").await?;
        let last = timestamp(&b["status"]["lastScheduledTime"])?;
        (b["spec"]["rescheduleTriggeredAt"] == created_at
            && last >= created_time
            && clusters(&b) == vec![("member1".to_string(), 3), ("member2".to_string(), 3)])
        .then_some(b)
    })
    .await;
    assert!(timestamp(&binding["status"]["lastScheduledTime"]).expect("time") > last_scheduled);

    let status = support::eventually("the rebalancer's results", || async {
        let r = get_rebalancer(&cp, "rebalance-web").await?;
        r["status"]["finishTime"].is_string().then_some(r)
    })
    .await;
    assert_eq!(
        observed(&status),
        vec![
            row("Deployment", "ghost", "Failed", "ReferencedBindingNotFound"),
            row("Deployment", "web", "Successful", ""),
            row(
                "ClusterRole",
                "ghost",
                "Failed",
                "ReferencedBindingNotFound"
            ),
        ]
    );
    assert_eq!(
        status["status"]["observedGeneration"],
        status["metadata"]["generation"]
    );
    let finished = timestamp(&status["status"]["finishTime"]).expect("finishTime");
    assert!(finished >= created_time);

    // Dropping the (Failed) missing workloads from the spec drops them from the status; web is not re-marked.
    let binding_version = binding["metadata"]["resourceVersion"].clone();
    rebalancers(&cp)
        .patch(
            "rebalance-web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workloads": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "apps", "name": "web"},
            ]}})),
        )
        .await
        .expect("edit the rebalancer");
    let edited = support::eventually("only web in the status", || async {
        let r = get_rebalancer(&cp, "rebalance-web").await?;
        (r["status"]["observedGeneration"] == r["metadata"]["generation"]).then_some(r)
    })
    .await;
    assert_eq!(
        observed(&edited),
        vec![row("Deployment", "web", "Successful", "")]
    );
    let unchanged = get_binding(&cp, "apps", "web-deployment")
        .await
        .expect("binding");
    assert_eq!(unchanged["spec"]["rescheduleTriggeredAt"], created_at);
    assert_eq!(
        unchanged["metadata"]["resourceVersion"], binding_version,
        "a recorded result is final: the binding is not written again"
    );

    // A TTL on a finished rebalancer deletes it once it runs out.
    rebalancers(&cp)
        .patch(
            "rebalance-web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"ttlSecondsAfterFinished": 1}})),
        )
        .await
        .expect("set the TTL");
    support::eventually("the rebalancer deleted after its TTL", || async {
        get_rebalancer(&cp, "rebalance-web")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    member1.stop().await;
    member2.stop().await;
}

#[tokio::test]
async fn a_workload_added_later_is_rebalanced_and_ttl_zero_deletes_at_once() {
    let cp = ControlPlane::start().await;
    let member1 = Member::start("member1").await;
    cp.join(&member1).await;
    start_detector(&cp, DetectorConfig::default());
    start_scheduler(&cp);
    start_rebalancer(&cp);
    namespace(&cp, "apps").await;
    cp.create(
        "workloadrebalancers",
        json!({
            "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": "later"},
            "spec": {"workloads": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "apps", "name": "missing"},
            ]},
        }),
    )
    .await;
    let first = support::eventually("missing reported", || async {
        let r = get_rebalancer(&cp, "later").await?;
        r["status"]["finishTime"].is_string().then_some(r)
    })
    .await;
    assert_eq!(
        observed(&first),
        vec![row(
            "Deployment",
            "missing",
            "Failed",
            "ReferencedBindingNotFound"
        )]
    );

    cp.create("deployments", web_deployment()).await;
    cp.create("propagationpolicies", dynamic_weight_policy())
        .await;
    support::eventually("web scheduled", || async {
        let b = get_binding(&cp, "apps", "web-deployment").await?;
        (!clusters(&b).is_empty()).then_some(())
    })
    .await;
    // Adding web (and a TTL of 0) processes web, then deletes the finished rebalancer straight away.
    rebalancers(&cp)
        .patch(
            "later",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"ttlSecondsAfterFinished": 0, "workloads": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "apps", "name": "missing"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "apps", "name": "web"},
            ]}})),
        )
        .await
        .expect("add a workload");
    let created_at = first["metadata"]["creationTimestamp"].clone();
    support::eventually("web's binding marked", || async {
        let b = get_binding(&cp, "apps", "web-deployment").await?;
        (b["spec"]["rescheduleTriggeredAt"] == created_at).then_some(())
    })
    .await;
    support::eventually("the rebalancer deleted (TTL 0)", || async {
        get_rebalancer(&cp, "later").await.is_none().then_some(())
    })
    .await;
    member1.stop().await;
}

#[tokio::test]
async fn admission_rejects_malformed_rebalancers() {
    let cp = ControlPlane::start().await;
    let api = rebalancers(&cp);
    let cases = [
        (json!({"workloads": []}), "spec.workloads"),
        (
            json!({"workloads": [{"apiVersion": "apps/v1", "kind": "", "namespace": "apps", "name": "web"}]}),
            "spec.workloads[0].kind",
        ),
    ];
    for (spec, field) in cases {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": "bad"}, "spec": spec,
        }))
        .expect("object");
        match api.create(&PostParams::default(), &object).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{status:?}");
                assert!(
                    status.message.contains(field),
                    "{field}: {}",
                    status.message
                );
            }
            other => panic!("{field}: expected a 422, got {other:?}"),
        }
    }
    assert!(get_rebalancer(&cp, "bad").await.is_none());
}
