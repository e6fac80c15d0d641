//! Live SchedulerProfiles in the running scheduler: a policy naming a profile is scheduled with its plugins
//! (the seed's profile plus ClusterLatency, reading the clusters' measured API latency), the decision records
//! the profile's name and generation, an edit applies to the next decision without a restart, and a profile the
//! scheduler cannot run leaves its binding where it is with a condition saying why.

use karmada_controllers::detector::controller::DetectorConfig;
use karmada_controllers::scheduler::SchedulerConfig;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::detector::{fixture, get_binding, namespace, start_detector};
use crate::scheduler::{clusters, scheduled_condition, start_scheduler};
use crate::support::{self, ControlPlane, Member};

async fn set_latency(cp: &ControlPlane, cluster: &str, latency: &str) {
    let api: Api<DynamicObject> = karmada_controllers::runtime::resources::all(
        &cp.client,
        &karmada_controllers::runtime::resources::cluster(),
    );
    api.patch(
        cluster,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"cluster.karmada.io/api-latency": latency}}}),
        ),
    )
    .await
    .expect("latency annotation");
}

fn profiles(cp: &ControlPlane) -> Api<DynamicObject> {
    karmada_controllers::runtime::resources::all(
        &cp.client,
        &karmada_controllers::runtime::resources::scheduler_profile(),
    )
}

/// The seed's latency-sensitive profile with the seed's custom ClusterLatency plugin enabled.
fn latency_profile() -> Value {
    let mut profile = fixture("seed-000/07-scheduler-profile.yaml");
    profile["spec"]["plugins"]["schedule"]["enabled"]
        .as_array_mut()
        .expect("enabled")
        .push(json!({"name": "ClusterLatency", "weight": 10}));
    profile["spec"]["pluginConfig"]
        .as_array_mut()
        .expect("pluginConfig")
        .push(json!({"name": "ClusterLatency", "args": {"thresholdMilliseconds": 100}}));
    profile
}

async fn duplicated(cp: &ControlPlane, name: &str, scheduler: Option<&str>) {
    let mut deploy = fixture("seed-001/nginx-deploy.yaml");
    deploy["metadata"]["name"] = json!(name);
    deploy["metadata"]["namespace"] = json!("apps");
    cp.create("deployments", deploy).await;
    let mut spec = json!({
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
        "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
    });
    if let Some(scheduler) = scheduler {
        spec["schedulerName"] = json!(scheduler);
    }
    cp.create(
        "propagationpolicies",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
               "metadata": {"name": name, "namespace": "apps"}, "spec": spec}),
    )
    .await;
}

fn explanation(binding: &Value) -> Value {
    binding["metadata"]["annotations"]["scheduling.karmada.io/explanation"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null)
}

async fn placed(cp: &ControlPlane, binding: &str, want: &[&str], generation: Option<i64>) -> Value {
    support::eventually(&format!("{binding} on {want:?}"), || async {
        let b = get_binding(cp, "apps", binding).await?;
        let names: Vec<String> = clusters(&b).into_iter().map(|(n, _)| n).collect();
        let explained = explanation(&b);
        let ok = names == want
            && scheduled_condition(&b).is_some_and(|c| c["status"] == "True")
            && explained["profileGeneration"].as_i64() == generation;
        ok.then_some(b)
    })
    .await
}

#[tokio::test]
async fn a_live_profile_decides_and_its_edits_apply_to_the_next_decision() {
    let cp = ControlPlane::start().await;
    let fast = Member::start("fast").await;
    let slow = Member::start("slow").await;
    cp.join(&fast).await;
    cp.join(&slow).await;
    set_latency(&cp, "fast", "4ms").await;
    set_latency(&cp, "slow", "300ms").await;
    start_detector(&cp, DetectorConfig::default());
    let (metrics, _registry) = start_scheduler(&cp, SchedulerConfig::default());
    namespace(&cp, "apps").await;
    profiles(&cp)
        .create(
            &Default::default(),
            &serde_json::from_value(latency_profile()).expect("profile"),
        )
        .await
        .expect("create profile");

    duplicated(&cp, "latency", Some("latency-sensitive")).await;
    duplicated(&cp, "plain", None).await;
    let plain = placed(&cp, "plain-deployment", &["fast", "slow"], None).await;
    assert_eq!(explanation(&plain)["profile"], "default");
    let latency = placed(&cp, "latency-deployment", &["fast"], Some(1)).await;
    let explained = explanation(&latency);
    assert_eq!(explained["profile"], "latency-sensitive");
    assert_eq!(explained["schedulerName"], "latency-sensitive");
    let slow_decision = explained["clusters"]
        .as_array()
        .and_then(|c| c.iter().find(|d| d["name"] == "slow"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        slow_decision["filteredBy"]["plugin"], "ClusterLatency",
        "{explained}"
    );
    assert_eq!(
        slow_decision["filteredBy"]["detail"],
        "latency 300ms > threshold 100ms"
    );

    // An edit (a looser threshold) applies to the next decision, no restart.
    let mut edited = latency_profile();
    edited["spec"]["pluginConfig"][1]["args"]["thresholdMilliseconds"] = json!(1000);
    profiles(&cp)
        .patch(
            "latency-sensitive",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": edited["spec"]})),
        )
        .await
        .expect("edit profile");
    placed(&cp, "latency-deployment", &["fast", "slow"], Some(2)).await;
    assert!(
        metrics.attempts("scheduled", "ReconcileSchedule") > 0,
        "decisions were counted"
    );

    // The measured latency moving is news to the profile that reads it.
    profiles(&cp)
        .patch(
            "latency-sensitive",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": latency_profile()["spec"]})),
        )
        .await
        .expect("restore profile");
    placed(&cp, "latency-deployment", &["fast"], Some(3)).await;
    set_latency(&cp, "fast", "500ms").await;
    set_latency(&cp, "slow", "2ms").await;
    placed(&cp, "latency-deployment", &["slow"], Some(3)).await;
    placed(&cp, "plain-deployment", &["fast", "slow"], None).await;
}

#[tokio::test]
async fn a_profile_this_scheduler_cannot_run_leaves_bindings_where_they_are() {
    let cp = ControlPlane::start().await;
    let member = Member::start("member1").await;
    cp.join(&member).await;
    set_latency(&cp, "member1", "4ms").await;
    start_detector(&cp, DetectorConfig::default());
    // This scheduler is built without ClusterLatency (as if a build dropped it).
    let (metrics, _registry) = start_scheduler(
        &cp,
        SchedulerConfig {
            plugins: vec!["*".into(), "-ClusterLatency".into()],
            ..SchedulerConfig::default()
        },
    );
    namespace(&cp, "apps").await;
    let mut profile = latency_profile();
    profile["spec"] = json!({});
    profiles(&cp)
        .create(
            &Default::default(),
            &serde_json::from_value(profile).expect("profile"),
        )
        .await
        .expect("create profile");
    duplicated(&cp, "latency", Some("latency-sensitive")).await;
    placed(&cp, "latency-deployment", &["member1"], Some(1)).await;

    // The profile now needs the plugin this scheduler lacks: the binding keeps its placement, with why.
    profiles(&cp)
        .patch(
            "latency-sensitive",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": latency_profile()["spec"]})),
        )
        .await
        .expect("edit profile");
    let binding = support::eventually("Scheduled=False naming the profile", || async {
        let b = get_binding(&cp, "apps", "latency-deployment").await?;
        let c = scheduled_condition(&b)?;
        (c["status"] == "False").then(|| b.clone())
    })
    .await;
    let condition = scheduled_condition(&binding).expect("condition");
    assert_eq!(condition["reason"], "SchedulerError");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("SchedulerProfile latency-sensitive cannot be used by this scheduler")
            && message.contains("plugin \"ClusterLatency\" is turned off in this scheduler"),
        "{message}"
    );
    assert_eq!(
        clusters(&binding),
        vec![("member1".to_string(), 6)],
        "not moved, not emptied"
    );
    assert!(metrics.attempts("error", "ReconcileSchedule") > 0);
}
