//! The scheduler with the members' scheduler estimators (Karmada's accurate estimator) over gRPC: a member whose
//! summary shows room its nodes do not have (one node nearly full, the other tainted) gets replicas from the
//! general estimator alone — more than its nodes can run — and none once its estimator is asked.

use std::collections::HashMap;
use std::sync::Arc;

use karmada_controllers::detector::controller::DetectorConfig;
use karmada_controllers::runtime::resources;
use karmada_controllers::scheduler::{SchedulerConfig, SchedulerMetrics, run};
use karmada_scheduler_estimator::metrics::EstimatorMetrics;
use karmada_scheduler_estimator::state::run_watches;
use karmada_scheduler_estimator::{
    EstimatorClientConfig, EstimatorClients, EstimatorService, MemberState,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use member_sim::config::SimConfig;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::detector::{fixture, get_binding, namespace, start_detector};
use crate::scheduler::{clusters, scheduled_condition};
use crate::support::{self, ControlPlane, Member};

async fn member(name: &str) -> Member {
    Member::start_with(SimConfig {
        name: name.to_string(),
        nodes: 2,
        node_cpu: "4".into(),
        node_memory: "16Gi".into(),
        ..SimConfig::default()
    })
    .await
}

/// Starts `member`'s estimator on loopback; its address once it has listed the member.
async fn start_estimator(member: &Member, cancel: &CancellationToken) -> String {
    start_estimator_with(member, EstimatorMetrics::unregistered(), cancel).await
}

async fn start_estimator_with(
    member: &Member,
    metrics: EstimatorMetrics,
    cancel: &CancellationToken,
) -> String {
    let state = Arc::new(MemberState::new());
    tokio::spawn(run_watches(
        member.client.clone(),
        Arc::clone(&state),
        cancel.child_token(),
    ));
    support::eventually("the estimator listed its member", || async {
        state.synced().then_some(())
    })
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let service = EstimatorService::new(
        &member.name,
        state,
        Some(member.client.clone()),
        false,
        metrics,
    );
    tokio::spawn(karmada_scheduler_estimator::serve(
        listener,
        service,
        cancel.child_token(),
    ));
    address
}

/// The cluster's summary as the cluster status controller would post it.
async fn summary(cp: &ControlPlane, cluster: &str, allocated_cpu: &str) {
    let api: Api<DynamicObject> = resources::all(&cp.client, &resources::cluster());
    api.patch_status(
        cluster,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"resourceSummary": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "220"},
            "allocated": {"cpu": allocated_cpu, "pods": "1"}}}})),
    )
    .await
    .expect("summary");
}

/// A Deployment `name` in `apps` of `replicas` replicas of 2 cpu, and a policy placing it by `placement`.
async fn workload_placed(cp: &ControlPlane, name: &str, replicas: i64, placement: Value) {
    workload_requesting(cp, name, replicas, placement, "2").await;
}

/// [`workload_placed`] with replicas requesting `cpu`.
async fn workload_requesting(
    cp: &ControlPlane,
    name: &str,
    replicas: i64,
    placement: Value,
    cpu: &str,
) {
    let mut deploy = fixture("seed-001/nginx-deploy.yaml");
    deploy["metadata"]["name"] = json!(name);
    deploy["metadata"]["namespace"] = json!("apps");
    deploy["spec"]["replicas"] = json!(replicas);
    deploy["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] =
        json!({"cpu": cpu});
    cp.create("deployments", deploy).await;
    cp.create(
        "propagationpolicies",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
               "metadata": {"name": name, "namespace": "apps"},
               "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                        "placement": placement}}),
    )
    .await;
}

/// 4 replicas divided by the members' available replicas.
async fn workload(cp: &ControlPlane, name: &str) {
    let placement = json!({"replicaScheduling": {"replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"}}});
    workload_placed(cp, name, 4, placement).await;
}

fn start(cp: &ControlPlane, config: SchedulerConfig, cancel: CancellationToken) {
    let client = cp.client.clone();
    let metrics = SchedulerMetrics::register(&mut Registry::default());
    tokio::spawn(async move {
        if let Err(err) = run(client, config, metrics, cancel).await {
            panic!("scheduler: {err}");
        }
    });
}

async fn scheduled(cp: &ControlPlane, binding: &str) -> Value {
    support::eventually(&format!("{binding} scheduled"), || async {
        let b = get_binding(cp, "apps", binding).await?;
        scheduled_condition(&b)
            .is_some_and(|c| c["status"] == "True")
            .then_some(b)
    })
    .await
}

#[tokio::test]
async fn the_estimator_keeps_replicas_off_a_member_whose_nodes_cannot_run_them() {
    let cp = ControlPlane::start().await;
    let crowded = member("crowded").await;
    let roomy = member("roomy").await;
    cp.join(&crowded).await;
    cp.join(&roomy).await;
    // crowded: node-0 runs a 3-cpu pod (1 cpu left), node-1 is tainted. Its summary shows 5 free cpus.
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(crowded.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "filler"},
            "spec": {"nodeName": "crowded-node-0", "containers": [{"name": "c", "image": "busybox",
                     "resources": {"requests": {"cpu": "3"}}}]}}))
        .expect("pod"),
    )
    .await
    .expect("filler pod");
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(crowded.client.clone());
    nodes
        .patch(
            "crowded-node-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}})),
        )
        .await
        .expect("taint");
    summary(&cp, "crowded", "3").await;
    summary(&cp, "roomy", "0").await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;

    // The general estimator alone: crowded counts for floor(5 / 2) = 2 replicas and gets some.
    let general = CancellationToken::new();
    start(&cp, SchedulerConfig::default(), general.clone());
    workload(&cp, "general").await;
    let binding = scheduled(&cp, "general-deployment").await;
    let on_crowded = clusters(&binding)
        .into_iter()
        .find(|(name, _)| name == "crowded")
        .map_or(0, |(_, replicas)| replicas);
    assert!(
        on_crowded > 0,
        "the general estimator overcommits crowded: {:?}",
        clusters(&binding)
    );
    general.cancel();

    // With the estimators: crowded's nodes take no 2-cpu replica, so every replica goes to roomy.
    let estimators = CancellationToken::new();
    let addresses: HashMap<String, String> = HashMap::from([
        (
            "crowded".to_string(),
            start_estimator(&crowded, &estimators).await,
        ),
        (
            "roomy".to_string(),
            start_estimator(&roomy, &estimators).await,
        ),
    ]);
    let clients = EstimatorClients::fixed(addresses, EstimatorClientConfig::default());
    assert_eq!(
        clients
            .max_available_replicas(
                "crowded",
                Some(
                    &serde_json::from_value(json!({"resourceRequest": {"cpu": "2"}}))
                        .expect("requirements")
                ),
            )
            .await
            .expect("crowded answers"),
        0
    );
    start(
        &cp,
        SchedulerConfig {
            estimators: Some(clients),
            ..SchedulerConfig::default()
        },
        cp.cancel.child_token(),
    );
    workload(&cp, "accurate").await;
    let binding = scheduled(&cp, "accurate-deployment").await;
    assert_eq!(clusters(&binding), vec![("roomy".to_string(), 4)]);
    let explained: Value = serde_json::from_str(
        binding["metadata"]["annotations"]["scheduling.karmada.io/explanation"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("explanation");
    let crowded_decision = explained["clusters"]
        .as_array()
        .and_then(|c| c.iter().find(|d| d["name"] == "crowded"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(crowded_decision["accurateEstimate"], 0, "{explained}");
    assert_eq!(crowded_decision["estimate"]["replicas"], 2, "{explained}");
    estimators.cancel();
}

#[tokio::test]
async fn the_descheduler_takes_the_replicas_the_estimator_counts_unschedulable() {
    use karmada_controllers::descheduler::{self, DeschedulerConfig, DeschedulerMetrics};
    let cp = ControlPlane::start().await;
    let small = Member::start_with(SimConfig {
        name: "small".to_string(),
        nodes: 1,
        node_cpu: "4".into(),
        pod_startup_delay: jiff::SignedDuration::from_millis(50),
        ..SimConfig::default()
    })
    .await;
    cp.join(&small).await;
    // The member runs 3 replicas of 2 cpu on one 4-cpu node: 2 run, 1 stays Pending (Unschedulable).
    let mut deploy = fixture("seed-001/nginx-deploy.yaml");
    deploy["metadata"]["namespace"] = json!("default");
    deploy["spec"]["replicas"] = json!(3);
    deploy["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] =
        json!({"cpu": "2"});
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        small.client.clone(),
        "default",
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "apps",
            "v1",
            "Deployment",
        )),
    );
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(deploy).expect("deployment"),
        )
        .await
        .expect("member deployment");
    let estimators = CancellationToken::new();
    let address = start_estimator(&small, &estimators).await;
    let clients = EstimatorClients::fixed(
        HashMap::from([("small".to_string(), address)]),
        EstimatorClientConfig::default(),
    );
    let reference: karmada_api::work::ObjectReference = serde_json::from_value(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx-ha"}),
    )
    .expect("reference");
    support::eventually("one replica unschedulable", || async {
        let count = clients
            .unschedulable_replicas("small", &reference, std::time::Duration::from_millis(1))
            .await
            .ok()?;
        (count == 1).then_some(())
    })
    .await;

    // The binding assigns 3 to small, whose status (stale) reports 1 ready: judged by status alone it would drop
    // to 1; the estimator counts 1 unschedulable, so it drops to 2.
    let binding = json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "nginx-ha-deployment", "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx-ha"},
                 "replicas": 3, "clusters": [{"name": "small", "replicas": 3}],
                 "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}}
    });
    cp.create("resourcebindings", binding).await;
    let bindings: Api<DynamicObject> =
        Api::namespaced_with(cp.client.clone(), "default", &resources::resource_binding());
    bindings
        .patch_status(
            "nginx-ha-deployment",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"aggregatedStatus": [{"clusterName": "small", "applied": true,
                "health": "Unhealthy", "status": {"replicas": 3, "readyReplicas": 1}}]}}),
            ),
        )
        .await
        .expect("binding status");
    tokio::spawn(descheduler::run(
        cp.client.clone(),
        DeschedulerConfig {
            interval: std::time::Duration::from_millis(200),
            unschedulable_threshold: std::time::Duration::from_millis(1),
            estimators: Some(clients),
        },
        DeschedulerMetrics::unregistered(),
        cp.cancel.child_token(),
    ));
    support::eventually("small descheduled to what its nodes run", || async {
        let b = get_binding(&cp, "default", "nginx-ha-deployment").await?;
        (clusters(&b) == vec![("small".to_string(), 2)]).then_some(())
    })
    .await;
    estimators.cancel();
}

/// 2 replicas of 2 cpu, all of them on `cluster`.
async fn pinned_workload(cp: &ControlPlane, name: &str, cluster: &str) {
    let placement = json!({"clusterAffinity": {"clusterNames": [cluster]},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}});
    workload_placed(cp, name, 2, placement).await;
}

/// Waits until every binding in `names` has a Scheduled condition; the replicas placed on `cluster` and how many
/// bindings were scheduled.
async fn decided(cp: &ControlPlane, names: &[String], cluster: &str) -> (i64, usize) {
    let mut placed = 0;
    let mut scheduled = 0;
    for name in names {
        let binding = support::eventually(&format!("{name} decided"), || async {
            let b = get_binding(cp, "apps", &format!("{name}-deployment")).await?;
            scheduled_condition(&b).is_some().then_some(b)
        })
        .await;
        if scheduled_condition(&binding).is_some_and(|c| c["status"] == "True") {
            scheduled += 1;
        }
        placed += clusters(&binding)
            .into_iter()
            .filter(|(name, _)| name == cluster)
            .map(|(_, replicas)| replicas)
            .sum::<i64>();
    }
    (placed, scheduled)
}

#[tokio::test]
async fn a_burst_never_gets_more_replicas_than_the_estimator_counts_room_for() {
    let cp = ControlPlane::start().await;
    // Two 4-cpu nodes and no pods: room for four 2-cpu replicas, which the summary shows too.
    let small = member("small").await;
    cp.join(&small).await;
    summary(&cp, "small", "0").await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;

    // Nothing runs the placed replicas on the member, as in a burst decided before any pod exists. The general
    // estimator sees the same summary for each binding and places all three (6 replicas on room for 4).
    let general = CancellationToken::new();
    start(&cp, SchedulerConfig::default(), general.clone());
    let names: Vec<String> = (0..3).map(|i| format!("general-{i}")).collect();
    for name in &names {
        pinned_workload(&cp, name, "small").await;
    }
    assert_eq!(
        decided(&cp, &names, "small").await,
        (6, 3),
        "general estimator"
    );
    general.cancel();

    // With the estimator (answers kept for the whole test): each decision takes what it placed off the kept
    // answer, so two bindings fit and the third is refused.
    let estimators = CancellationToken::new();
    let address = start_estimator(&small, &estimators).await;
    let clients = EstimatorClients::fixed(
        HashMap::from([("small".to_string(), address)]),
        EstimatorClientConfig {
            cache_ttl: std::time::Duration::from_secs(600),
            ..EstimatorClientConfig::default()
        },
    );
    start(
        &cp,
        SchedulerConfig {
            estimators: Some(clients),
            ..SchedulerConfig::default()
        },
        cp.cancel.child_token(),
    );
    let names: Vec<String> = (0..3).map(|i| format!("accurate-{i}")).collect();
    for name in &names {
        pinned_workload(&cp, name, "small").await;
    }
    assert_eq!(
        decided(&cp, &names, "small").await,
        (4, 2),
        "with the estimator"
    );
    estimators.cancel();
}

#[tokio::test]
async fn bindings_decided_together_ask_an_estimator_once() {
    let small = member("small").await;
    let mut registry = Registry::default();
    let metrics = EstimatorMetrics::register(&mut registry);
    let estimators = CancellationToken::new();
    let address = start_estimator_with(&small, metrics, &estimators).await;
    let requests = || max_available_requests(&registry);
    let requirements: karmada_api::ReplicaRequirements =
        serde_json::from_value(json!({"resourceRequest": {"cpu": "2"}})).expect("requirements");
    let clusters: [Arc<str>; 1] = [Arc::from("small")];

    let cached = EstimatorClients::fixed(
        HashMap::from([("small".to_string(), address.clone())]),
        EstimatorClientConfig {
            cache_ttl: std::time::Duration::from_secs(600),
            ..EstimatorClientConfig::default()
        },
    );
    let answers = futures::future::join_all(
        (0..10).map(|_| cached.estimates(&clusters, Some(&requirements))),
    )
    .await;
    for answer in &answers {
        assert_eq!(answer.get("small"), Some(&4), "{answers:?}");
    }
    assert_eq!(requests(), 1, "ten bindings at once, one call");
    cached.assume("small", Some(&requirements), 3);
    let answer = cached.estimates(&clusters, Some(&requirements)).await;
    assert_eq!(answer.get("small"), Some(&1), "three placed since");
    assert_eq!(requests(), 1, "answered from what was kept");

    // Other requirements are asked once, then follow what the first shape places, bounded: a 2-cpu replica
    // takes at most two 1-cpu replicas' room.
    let one_cpu: karmada_api::ReplicaRequirements =
        serde_json::from_value(json!({"resourceRequest": {"cpu": "1"}})).expect("requirements");
    let answer = cached.estimates(&clusters, Some(&one_cpu)).await;
    assert_eq!(answer.get("small"), Some(&8), "two empty 4-cpu nodes");
    assert_eq!(requests(), 2, "a new shape is asked");
    cached.assume("small", Some(&requirements), 1);
    let answer = cached.estimates(&clusters, Some(&one_cpu)).await;
    assert_eq!(
        answer.get("small"),
        Some(&6),
        "one 2-cpu replica placed since"
    );
    assert_eq!(
        requests(),
        2,
        "not asked again for another shape's placement"
    );
    // Replicas taken away free room: the kept answer is served (still a lower bound) and refreshed behind it.
    cached.assume("small", Some(&requirements), -1);
    let answer = cached.estimates(&clusters, Some(&one_cpu)).await;
    assert_eq!(answer.get("small"), Some(&6), "served while refreshed");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while requests() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the freed room's refresh was never asked for"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let uncached = EstimatorClients::fixed(
        HashMap::from([("small".to_string(), address)]),
        EstimatorClientConfig {
            cache_ttl: std::time::Duration::ZERO,
            ..EstimatorClientConfig::default()
        },
    );
    futures::future::join_all((0..10).map(|_| uncached.estimates(&clusters, Some(&requirements))))
        .await;
    assert_eq!(requests(), 13, "a zero ttl asks for every binding");
    estimators.cancel();
}

#[tokio::test]
async fn estimators_are_dialled_when_their_clusters_appear() {
    // A listener that only accepts: the dial itself is what is awaited, before any binding asks.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let clients = EstimatorClients::fixed(
        HashMap::from([(
            "early".to_string(),
            listener.local_addr().expect("address").to_string(),
        )]),
        EstimatorClientConfig::default(),
    );
    clients.connect_ahead(["early", "without-estimator"]);
    let accepted =
        tokio::time::timeout(std::time::Duration::from_secs(10), listener.accept()).await;
    assert!(
        matches!(accepted, Ok(Ok(_))),
        "the estimator was not dialled ahead: {accepted:?}"
    );
}

/// MaxAvailableReplicas requests an estimator registered in `registry` has answered.
fn max_available_requests(registry: &Registry) -> u64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).expect("encode");
    text.lines()
        .find(|l| {
            l.starts_with("karmada_scheduler_estimator_estimating_request_total")
                && l.contains("type=\"MaxAvailableReplicas\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0)
}

/// A Deployment of 2 replicas requesting `cpu`, divided over every member by available replicas.
async fn sized_workload(cp: &ControlPlane, name: &str, cpu: &str) {
    let placement = json!({"replicaScheduling": {"replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"}}});
    workload_requesting(cp, name, 2, placement, cpu).await;
}

#[tokio::test]
async fn bindings_waiting_at_the_start_are_asked_ahead_not_by_their_decisions() {
    let cp = ControlPlane::start().await;
    let (one, two) = (member("one").await, member("two").await);
    cp.join(&one).await;
    cp.join(&two).await;
    summary(&cp, "one", "0").await;
    summary(&cp, "two", "0").await;
    let estimators = CancellationToken::new();
    let (mut first, mut second) = (Registry::default(), Registry::default());
    let addresses = HashMap::from([
        (
            "one".to_string(),
            start_estimator_with(&one, EstimatorMetrics::register(&mut first), &estimators).await,
        ),
        (
            "two".to_string(),
            start_estimator_with(&two, EstimatorMetrics::register(&mut second), &estimators).await,
        ),
    ]);
    let requests = || max_available_requests(&first) + max_available_requests(&second);
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;
    // Four bindings of two requirement shapes wait before the scheduler starts.
    let names: Vec<String> = (0..4).map(|i| format!("waiting-{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        sized_workload(&cp, name, if i % 2 == 0 { "500m" } else { "1" }).await;
    }
    for name in &names {
        support::eventually(
            &format!("{name}'s binding has its requirements"),
            || async {
                let b = get_binding(&cp, "apps", &format!("{name}-deployment")).await?;
                let cpu = if name.ends_with(['0', '2']) {
                    "500m"
                } else {
                    "1"
                };
                (b["spec"]["replicaRequirements"]["resourceRequest"]["cpu"] == cpu).then_some(())
            },
        )
        .await;
    }
    let clients = EstimatorClients::fixed(
        addresses,
        EstimatorClientConfig {
            cache_ttl: std::time::Duration::from_secs(600),
            ..EstimatorClientConfig::default()
        },
    );
    start(
        &cp,
        SchedulerConfig {
            estimators: Some(std::sync::Arc::clone(&clients)),
            ..SchedulerConfig::default()
        },
        cp.cancel.child_token(),
    );
    for name in &names {
        scheduled(&cp, &format!("{name}-deployment")).await;
    }
    assert_eq!(
        clients.asked_by_decisions(),
        0,
        "every decision found its answers asked ahead"
    );
    assert_eq!(requests(), 4, "each member asked once per shape");

    // A shape first seen after the start: asked ahead when its binding is queued, and its decision waits for
    // that round rather than starting another.
    sized_workload(&cp, "later", "2").await;
    let binding = scheduled(&cp, "later-deployment").await;
    assert_eq!(
        binding["spec"]["replicaRequirements"]["resourceRequest"]["cpu"], "2",
        "{binding}"
    );
    assert_eq!(requests(), 6, "one more call per member for the new shape");
    estimators.cancel();
}

#[tokio::test]
async fn a_refresh_that_fails_leaves_the_general_estimate_alone() {
    let small = member("small").await;
    let estimator = CancellationToken::new();
    let address = start_estimator(&small, &estimator).await;
    let clients = EstimatorClients::fixed(
        HashMap::from([("small".to_string(), address)]),
        EstimatorClientConfig {
            cache_ttl: std::time::Duration::from_secs(600),
            timeout: std::time::Duration::from_secs(1),
            ..EstimatorClientConfig::default()
        },
    );
    let requirements: karmada_api::ReplicaRequirements =
        serde_json::from_value(json!({"resourceRequest": {"cpu": "2"}})).expect("requirements");
    let clusters: [Arc<str>; 1] = [Arc::from("small")];
    let answer = clients.estimates(&clusters, Some(&requirements)).await;
    assert_eq!(answer.get("small"), Some(&4));
    estimator.cancel();
    support::eventually("the estimator stopped answering", || async {
        clients
            .max_available_replicas("small", Some(&requirements))
            .await
            .is_err()
            .then_some(())
    })
    .await;
    // Room freed: the kept answer is served while its refresh is asked for, and the refresh fails. The answer
    // kept (for 600 s otherwise) goes, and the member is left to the general estimate, as Karmada does for an
    // estimator that does not answer.
    clients.assume("small", Some(&requirements), -1);
    let served = clients.estimates(&clusters, Some(&requirements)).await;
    assert_eq!(served.get("small"), Some(&4), "served while refreshed");
    support::eventually("the failed refresh dropped the kept answer", || async {
        clients
            .estimates(&clusters, Some(&requirements))
            .await
            .is_empty()
            .then_some(())
    })
    .await;
}
