//! The failover controllers against the in-process control plane, with Clusters, bindings and their
//! `aggregatedStatus` written by hand (the test plays the scheduler and the status controller): taint eviction
//! after `tolerationSeconds`, each purge mode's task lifecycle, the eviction budget over many bindings, deferral
//! while a member is unreachable, a recovered cluster's task cleaned up, application failover, and
//! ClusterTaintPolicy.

use std::time::{Duration, Instant};

use karmada_controllers::failover::{self, FailoverConfig, FailoverMetrics};
use kube::api::{Api, DynamicObject, PostParams};
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::support::{self, ControlPlane};

const NS: &str = "apps";
const NOT_READY: &str = "cluster.karmada.io/not-ready";

struct Bed {
    cp: ControlPlane,
    metrics: FailoverMetrics,
    registry: std::sync::Arc<Mutex<Registry>>,
}

/// Quick resyncs; no default ClusterTaintPolicy (the tests set taints by hand, and that policy would remove
/// them from Ready clusters).
fn fast(config: FailoverConfig) -> FailoverConfig {
    FailoverConfig {
        resync: Duration::from_millis(300),
        default_taint_policy: false,
        ..config
    }
}

async fn start(config: FailoverConfig) -> Bed {
    let bed = start_paused().await;
    // Runs until the control plane stops.
    drop(run_failover(&bed, config, bed.cp.cancel.child_token()));
    bed
}

/// The failover controllers on `bed`'s control plane until `cancel` fires.
fn run_failover(
    bed: &Bed,
    config: FailoverConfig,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(failover::run(
        bed.cp.client.clone(),
        config,
        bed.metrics.clone(),
        cancel,
    ))
}

/// A control plane with the test namespace, no failover controllers yet.
async fn start_paused() -> Bed {
    let cp = ControlPlane::start().await;
    let mut registry = Registry::default();
    let metrics = FailoverMetrics::register(&mut registry);
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cp.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).expect("ns"),
        )
        .await
        .expect("namespace");
    Bed {
        cp,
        metrics,
        registry: std::sync::Arc::new(Mutex::new(registry)),
    }
}

fn ready_condition(ready: &str) -> Value {
    json!({"conditions": [{"type": "Ready", "status": ready,
        "reason": if ready == "True" { "ClusterReady" } else { "ClusterNotReady" },
        "message": "set by the test", "lastTransitionTime": "2026-11-29T00:00:00Z"}]})
}

fn no_execute(key: &str) -> Value {
    json!({"key": key, "effect": "NoExecute",
           "timeAdded": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()})
}

fn clusters_api(bed: &Bed) -> Api<DynamicObject> {
    karmada_controllers::runtime::resources::all(
        &bed.cp.client,
        &karmada_controllers::runtime::resources::cluster(),
    )
}

fn bindings_api(bed: &Bed) -> Api<DynamicObject> {
    karmada_controllers::runtime::resources::namespaced(
        &bed.cp.client,
        &karmada_controllers::runtime::resources::resource_binding(),
        NS,
    )
}

async fn add_cluster(bed: &Bed, name: &str) {
    let api = clusters_api(bed);
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": name},
                "spec": {"apiEndpoint": "https://127.0.0.1:1", "syncMode": "Push"},
            }))
            .expect("cluster"),
        )
        .await
        .expect("create cluster");
    let mut with_status = serde_json::to_value(&created).expect("json");
    with_status["status"] = ready_condition("True");
    api.replace_status(
        name,
        &PostParams::default(),
        &serde_json::from_value(with_status).expect("cluster"),
    )
    .await
    .expect("cluster status");
}

/// Read-modify-write of an object with the read resourceVersion, retried on conflict.
async fn update(api: &Api<DynamicObject>, name: &str, status: bool, change: impl Fn(&mut Value)) {
    for _ in 0..50 {
        let current = api.get(name).await.expect("get");
        let mut value = serde_json::to_value(&current).expect("json");
        change(&mut value);
        let body: DynamicObject = serde_json::from_value(value).expect("object");
        let result = if status {
            api.replace_status(name, &PostParams::default(), &body)
                .await
        } else {
            api.replace(name, &PostParams::default(), &body).await
        };
        match result {
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(err) => panic!("update {name}: {err}"),
        }
    }
    panic!("update {name}: too many conflicts");
}

async fn set_taints(bed: &Bed, cluster: &str, taints: Value) {
    update(&clusters_api(bed), cluster, false, |c| {
        c["spec"]["taints"] = taints.clone()
    })
    .await;
}

async fn set_ready(bed: &Bed, cluster: &str, ready: &str) {
    update(&clusters_api(bed), cluster, true, |c| {
        c["status"] = ready_condition(ready)
    })
    .await;
}

fn divided_placement(tolerations: Value) -> Value {
    json!({"clusterTolerations": tolerations,
           "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}})
}

async fn add_binding(bed: &Bed, name: &str, clusters: Value, spec_extra: Value) {
    let mut spec = json!({
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS, "name": name},
        "replicas": 4,
        "placement": divided_placement(json!([])),
        "clusters": clusters,
    });
    for (k, v) in spec_extra.as_object().expect("object") {
        spec[k] = v.clone();
    }
    support::create(
        &bed.cp.client,
        "resourcebindings",
        json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
               "metadata": {"name": name, "namespace": NS}, "spec": spec}),
    )
    .await;
}

async fn binding(bed: &Bed, name: &str) -> Value {
    serde_json::to_value(bindings_api(bed).get(name).await.expect("binding")).expect("json")
}

/// Plays the scheduler: writes `spec.clusters`.
async fn schedule(bed: &Bed, name: &str, clusters: Value) {
    update(&bindings_api(bed), name, false, |b| {
        b["spec"]["clusters"] = clusters.clone()
    })
    .await;
}

/// Plays the scheduler's observed generation and the status controller's aggregatedStatus.
async fn report(bed: &Bed, name: &str, health: &[(&str, &str)]) {
    let items: Vec<Value> = health
        .iter()
        .map(|(c, h)| json!({"clusterName": c, "applied": true, "health": h,
                              "status": {"replicas": 2, "readyReplicas": if *h == "Healthy" { 2 } else { 0 }}}))
        .collect();
    update(&bindings_api(bed), name, true, |b| {
        b["status"] = json!({"schedulerObservedGeneration": b["metadata"]["generation"].clone(),
                             "aggregatedStatus": items.clone()});
    })
    .await;
}

fn target_names(b: &Value) -> Vec<String> {
    b["spec"]["clusters"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn tasks(b: &Value) -> Vec<Value> {
    b["spec"]["gracefulEvictionTasks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The value of one sample of the registry's text exposition (0 when absent).
async fn sample(bed: &Bed, prefix: &str) -> u64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &*bed.registry.lock().await)
        .expect("encode");
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// Reconciles the named failover controller has finished so far.
async fn processed(bed: &Bed, controller: &str) -> u64 {
    sample(
        bed,
        &format!("eviction_processing_total{{name=\"{controller}\""),
    )
    .await
}

/// Waits until the named controller has finished `target` reconciles.
async fn reached(bed: &Bed, controller: &str, target: u64) {
    support::eventually(&format!("{target} {controller} reconciles"), || async {
        (processed(bed, controller).await >= target).then_some(())
    })
    .await;
}

/// Waits until the named failover controller (one that requeues periodically while tasks are open) has
/// finished `n` more reconciles than now: whatever state was written before this call has then been seen.
async fn reconciled(bed: &Bed, controller: &str, n: u64) {
    let start = processed(bed, controller).await;
    reached(bed, controller, start + n).await;
}

async fn event_reasons(bed: &Bed, object: &str) -> Vec<String> {
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(bed.cp.client.clone(), NS);
    api.list(&Default::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(object))
        .filter_map(|e| e.reason)
        .collect()
}

/// The reasons of `object`'s Events once every one of `wanted` is among them (the recorders write in the
/// background, a moment after the reconcile that recorded them).
async fn reasons_including(bed: &Bed, object: &str, wanted: &[&str]) -> Vec<String> {
    support::eventually(&format!("events {wanted:?} on {object}"), || async {
        let reasons = event_reasons(bed, object).await;
        wanted
            .iter()
            .all(|w| reasons.iter().any(|r| r == w))
            .then_some(reasons)
    })
    .await
}

#[tokio::test]
async fn taint_eviction_waits_for_toleration_and_healthy_replacements() {
    let bed = start(fast(FailoverConfig::enabled())).await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    let toleration = json!([{"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}]);
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({"placement": divided_placement(toleration)}),
    )
    .await;
    let tainted = Instant::now();
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    let evicted = support::eventually("m1 evicted into a task", || async {
        let b = binding(&bed, "web").await;
        (!tasks(&b).is_empty()).then_some(b)
    })
    .await;
    // tolerationSeconds is 2 and timeAdded has whole-second precision.
    assert!(
        tainted.elapsed() >= Duration::from_secs(1),
        "evicted after {:?}",
        tainted.elapsed()
    );
    assert_eq!(target_names(&evicted), vec!["m2"]);
    let task = &tasks(&evicted)[0];
    assert_eq!(task["fromCluster"], "m1");
    assert_eq!(task["reason"], "TaintUntolerated");
    assert_eq!(task["producer"], "TaintManager");
    assert_eq!(task["purgeMode"], "Gracefully");
    assert_eq!(task["replicas"], 2);
    assert!(task["creationTimestamp"].is_string());

    // The scheduler moves the replicas; until m2 reports Healthy the old copy stays.
    schedule(&bed, "web", json!([{"name": "m2", "replicas": 4}])).await;
    report(&bed, "web", &[("m2", "Unknown"), ("m1", "Unknown")]).await;
    reconciled(&bed, "graceful-eviction", 3).await;
    assert_eq!(
        tasks(&binding(&bed, "web").await).len(),
        1,
        "kept while the replacement is not healthy"
    );

    report(&bed, "web", &[("m2", "Healthy"), ("m1", "Unknown")]).await;
    support::eventually("task removed once m2 is healthy", || async {
        tasks(&binding(&bed, "web").await).is_empty().then_some(())
    })
    .await;
    reasons_including(
        &bed,
        "web",
        &[
            "EvictWorkloadFromClusterSucceed",
            "GracefulEvictionTaskRemoved",
        ],
    )
    .await;
    assert!(
        sample(
            &bed,
            "eviction_kind_total{member_cluster=\"m1\",resource_kind=\"Deployment\"}"
        )
        .await
            >= 1
    );
}

#[tokio::test]
async fn directly_keeps_the_task_until_the_replacement_is_healthy() {
    let bed = start(fast(FailoverConfig::enabled())).await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({"failover": {"cluster": {"purgeMode": "Directly"}}}),
    )
    .await;
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    let evicted = support::eventually("m1 evicted with a Directly task", || async {
        let b = binding(&bed, "web").await;
        (target_names(&b) == vec!["m2"] && !tasks(&b).is_empty()).then_some(b)
    })
    .await;
    assert_eq!(tasks(&evicted)[0]["purgeMode"], "Directly");

    // Its Work is gone already, but the task keeps m1 out of scheduling while m2 holds 2 of 4 replicas.
    report(&bed, "web", &[("m2", "Healthy")]).await;
    reconciled(&bed, "graceful-eviction", 3).await;
    assert_eq!(
        tasks(&binding(&bed, "web").await).len(),
        1,
        "a Directly task waits for the replacement"
    );

    // Replacements scheduled for all 4 replicas and Healthy: the task goes, though m1 keeps its taint.
    schedule(&bed, "web", json!([{"name": "m2", "replicas": 4}])).await;
    report(&bed, "web", &[("m2", "Healthy")]).await;
    support::eventually(
        "the Directly task removed once the replacement is healthy",
        || async {
            let b = binding(&bed, "web").await;
            let reasons = event_reasons(&bed, "web").await;
            (tasks(&b).is_empty() && reasons.iter().any(|r| r == "GracefulEvictionTaskRemoved"))
                .then_some(())
        },
    )
    .await;
    assert!(
        sample(
            &bed,
            "eviction_task_removed_total{reason=\"ReplacementHealthy\"}"
        )
        .await
            >= 1
    );
}

#[tokio::test]
async fn never_outlives_the_grace_period_until_replacements_are_healthy() {
    let bed = start(fast(FailoverConfig {
        graceful_eviction_timeout: Duration::from_millis(1),
        ..FailoverConfig::enabled()
    }))
    .await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({"failover": {"application": {"decisionConditions": {"tolerationSeconds": 0}, "purgeMode": "Never"}},
               "propagateDeps": true}),
    )
    .await;
    report(&bed, "web", &[("m1", "Unhealthy"), ("m2", "Healthy")]).await;
    let evicted = support::eventually("m1 evicted for its application failure", || async {
        let b = binding(&bed, "web").await;
        (!tasks(&b).is_empty()).then_some(b)
    })
    .await;
    let task = &tasks(&evicted)[0];
    assert_eq!(task["reason"], "ApplicationFailure");
    assert_eq!(task["purgeMode"], "Never");
    assert_eq!(task["suppressDeletion"], true);
    assert_eq!(target_names(&evicted), vec!["m2"]);

    // The replacement is not scheduled yet (m2 still has 2 of 4): Never keeps the task, time does not end it.
    report(&bed, "web", &[("m1", "Unhealthy"), ("m2", "Healthy")]).await;
    reconciled(&bed, "graceful-eviction", 3).await;
    assert_eq!(
        tasks(&binding(&bed, "web").await).len(),
        1,
        "Never is not ended by time"
    );

    // A healthy replacement does not end Never either (docs/karmada.md, "Graceful eviction"): only the user
    // lifting it does.
    schedule(&bed, "web", json!([{"name": "m2", "replicas": 4}])).await;
    report(&bed, "web", &[("m1", "Unhealthy"), ("m2", "Healthy")]).await;
    reconciled(&bed, "graceful-eviction", 3).await;
    assert_eq!(
        tasks(&binding(&bed, "web").await).len(),
        1,
        "Never is not ended by a healthy replacement"
    );
    update(&bindings_api(&bed), "web", false, |b| {
        b["spec"]["gracefulEvictionTasks"][0]["suppressDeletion"] = json!(false);
    })
    .await;
    support::eventually("Never task removed once the user lifts it", || async {
        tasks(&binding(&bed, "web").await).is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_budget_holds_over_many_bindings() {
    let bed = start(fast(FailoverConfig {
        eviction_budget_clusters: 1,
        eviction_budget_interval: Duration::from_secs(3600),
        ..FailoverConfig::enabled()
    }))
    .await;
    for c in ["m1", "m2", "m3", "m4"] {
        add_cluster(&bed, c).await;
    }
    let all = json!([{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 1},
                     {"name": "m3", "replicas": 1}, {"name": "m4", "replicas": 1}]);
    let names: Vec<String> = (0..12).map(|i| format!("web-{i}")).collect();
    for name in &names {
        add_binding(&bed, name, all.clone(), json!({})).await;
    }
    for c in ["m1", "m2", "m3"] {
        set_taints(&bed, c, json!([no_execute(NOT_READY)])).await;
    }
    let evicted_from = support::eventually("every binding evicted from one cluster", || async {
        let mut from = std::collections::BTreeSet::new();
        for name in &names {
            let b = binding(&bed, name).await;
            let t = tasks(&b);
            if t.is_empty() {
                return None;
            }
            for task in t {
                from.insert(task["fromCluster"].as_str().unwrap_or_default().to_string());
            }
        }
        Some(from)
    })
    .await;
    // Wake every binding again (a cluster change) and let the taint manager look at all of them.
    let before = processed(&bed, "taint-manager").await;
    set_taints(&bed, "m4", json!([{"key": "poke", "effect": "NoSchedule"}])).await;
    reached(&bed, "taint-manager", before + 12).await;
    let mut from = std::collections::BTreeSet::new();
    for name in &names {
        for task in tasks(&binding(&bed, name).await) {
            from.insert(task["fromCluster"].as_str().unwrap_or_default().to_string());
        }
    }
    assert_eq!(evicted_from.len(), 1, "{evicted_from:?}");
    assert_eq!(
        from, evicted_from,
        "a second cluster was evicted from within the interval"
    );
    assert!(
        sample(
            &bed,
            "eviction_deferred_total{name=\"taint-manager\",reason=\"OverBudget\"}"
        )
        .await
            >= 1
    );
    assert!(sample(&bed, "eviction_queue_depth{name=\"taint-manager\"}").await >= 1);
}

#[tokio::test]
async fn a_restarted_failover_keeps_its_budget_window() {
    let config = fast(FailoverConfig {
        eviction_budget_clusters: 1,
        eviction_budget_interval: Duration::from_secs(3600),
        ..FailoverConfig::enabled()
    });
    let mut bed = start_paused().await;
    let first = CancellationToken::new();
    let running = run_failover(&bed, config.clone(), first.clone());
    for c in ["m1", "m2", "m3"] {
        add_cluster(&bed, c).await;
    }
    add_binding(
        &bed,
        "a",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({}),
    )
    .await;
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    support::eventually("a evicted from m1", || async {
        (!tasks(&binding(&bed, "a").await).is_empty()).then_some(())
    })
    .await;
    let m1 = clusters_api(&bed).get("m1").await.expect("m1");
    assert!(
        m1.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(failover::ANNOTATION_EVICTION_WINDOW)),
        "the window is on record before the eviction"
    );

    // The controller-manager stops; meanwhile the eviction completes (its task goes), so only the Cluster's record
    // remembers the window.
    first.cancel();
    running.await.expect("stopped");
    update(&bindings_api(&bed), "a", false, |b| {
        b["spec"]["gracefulEvictionTasks"] = json!([]);
    })
    .await;

    // A fresh one must not evict from a second cluster within the hour.
    let mut registry = Registry::default();
    bed.metrics = FailoverMetrics::register(&mut registry);
    bed.registry = std::sync::Arc::new(Mutex::new(registry));
    let _second = run_failover(&bed, config, bed.cp.cancel.child_token());
    add_binding(
        &bed,
        "b",
        json!([{"name": "m2", "replicas": 2}, {"name": "m3", "replicas": 2}]),
        json!({}),
    )
    .await;
    set_taints(&bed, "m2", json!([no_execute(NOT_READY)])).await;
    support::eventually("b held back by the budget", || async {
        let deferred = sample(
            &bed,
            "eviction_deferred_total{name=\"taint-manager\",reason=\"OverBudget\"}",
        )
        .await;
        (deferred >= 1).then_some(())
    })
    .await;
    assert!(
        tasks(&binding(&bed, "b").await).is_empty(),
        "no eviction from m2"
    );
}

#[tokio::test]
async fn nothing_is_removed_from_an_unreachable_member() {
    let bed = start(fast(FailoverConfig::enabled())).await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({}),
    )
    .await;
    set_ready(&bed, "m1", "False").await;
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    support::eventually("m1 evicted", || async {
        (!tasks(&binding(&bed, "web").await).is_empty()).then_some(())
    })
    .await;
    schedule(&bed, "web", json!([{"name": "m2", "replicas": 4}])).await;
    report(&bed, "web", &[("m2", "Healthy"), ("m1", "Unknown")]).await;
    reconciled(&bed, "graceful-eviction", 3).await;
    assert_eq!(
        tasks(&binding(&bed, "web").await).len(),
        1,
        "deferred while m1 is unreachable"
    );
    assert!(
        sample(
            &bed,
            "eviction_deferred_total{name=\"graceful-eviction\",reason=\"MemberUnreachable\"}"
        )
        .await
            >= 1
    );

    // m1 is reachable again but still tainted: the replacement is healthy, so the old copy may go now.
    set_ready(&bed, "m1", "True").await;
    support::eventually("task removed once m1 is reachable", || async {
        tasks(&binding(&bed, "web").await).is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_recovered_cluster_gets_its_replicas_back_and_stale_tasks_go() {
    let bed = start(fast(FailoverConfig::enabled())).await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({}),
    )
    .await;
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    support::eventually("m1 evicted", || async {
        (!tasks(&binding(&bed, "web").await).is_empty()).then_some(())
    })
    .await;
    // No replacement fits (the scheduler placed nothing more); the copy in m1 stays ...
    report(&bed, "web", &[("m2", "Healthy"), ("m1", "Healthy")]).await;
    reconciled(&bed, "graceful-eviction", 3).await;
    assert_eq!(tasks(&binding(&bed, "web").await).len(), 1);
    // ... and when m1 recovers it gets its replicas back instead of a task that never goes.
    set_taints(&bed, "m1", json!([])).await;
    let restored = support::eventually("m1 restored", || async {
        let b = binding(&bed, "web").await;
        tasks(&b).is_empty().then_some(b)
    })
    .await;
    let mut names = target_names(&restored);
    names.sort();
    assert_eq!(names, vec!["m1", "m2"]);
    reasons_including(&bed, "web", &["EvictionCancelled"]).await;

    // Stale tasks: one for a cluster that is a target again, one for a cluster that does not exist.
    update(&bindings_api(&bed), "web", false, |b| {
        b["spec"]["gracefulEvictionTasks"] = json!([
            {"fromCluster": "m2", "reason": "TaintUntolerated", "producer": "TaintManager", "purgeMode": "Never",
             "suppressDeletion": true, "creationTimestamp": "2026-11-29T00:00:00Z"},
            {"fromCluster": "gone", "reason": "TaintUntolerated", "producer": "TaintManager", "purgeMode": "Never",
             "suppressDeletion": true, "creationTimestamp": "2026-11-29T00:00:00Z"},
        ]);
    })
    .await;
    support::eventually("stale tasks removed", || async {
        tasks(&binding(&bed, "web").await).is_empty().then_some(())
    })
    .await;
    assert!(sample(&bed, "eviction_task_removed_total{reason=\"ClusterGone\"}").await >= 1);
    assert!(sample(&bed, "eviction_task_removed_total{reason=\"Rescheduled\"}").await >= 1);
}

#[tokio::test]
async fn taint_eviction_is_off_unless_switched_on() {
    let bed = start(fast(FailoverConfig::default())).await;
    add_cluster(&bed, "m1").await;
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 4}]),
        json!({}),
    )
    .await;
    let before = processed(&bed, "application-failover").await;
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    report(&bed, "web", &[("m1", "Healthy")]).await;
    // Application failover (running) has seen the tainted cluster; the taint manager is not running.
    reached(&bed, "application-failover", before + 1).await;
    let b = binding(&bed, "web").await;
    assert_eq!(target_names(&b), vec!["m1"]);
    assert!(tasks(&b).is_empty());
}

#[tokio::test]
async fn cluster_taint_policy_taints_on_conditions() {
    let bed = start(fast(FailoverConfig::enabled())).await;
    add_cluster(&bed, "m1").await;
    support::create(
        &bed.cp.client,
        "clustertaintpolicies",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
               "metadata": {"name": "not-ready"},
               "spec": {"addOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["False", "Unknown"]}],
                        "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
                        "taints": [{"key": NOT_READY, "effect": "NoExecute"}]}}),
    )
    .await;
    let taint_keys = |c: Value| -> Vec<String> {
        c["spec"]["taints"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|t| {
                        format!(
                            "{}:{}",
                            t["key"].as_str().unwrap_or_default(),
                            t["effect"].as_str().unwrap_or_default()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    set_ready(&bed, "m1", "False").await;
    support::eventually("NoExecute taint added", || async {
        let c = serde_json::to_value(clusters_api(&bed).get("m1").await.ok()?).ok()?;
        taint_keys(c)
            .contains(&format!("{NOT_READY}:NoExecute"))
            .then_some(())
    })
    .await;
    set_ready(&bed, "m1", "True").await;
    support::eventually("NoExecute taint removed", || async {
        let c = serde_json::to_value(clusters_api(&bed).get("m1").await.ok()?).ok()?;
        (!taint_keys(c).contains(&format!("{NOT_READY}:NoExecute"))).then_some(())
    })
    .await;
}

#[tokio::test]
async fn application_failover_times_unhealthy_copies_and_preserves_state() {
    let bed = start(fast(FailoverConfig::default())).await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({"propagateDeps": true,
               "failover": {"application": {"decisionConditions": {"tolerationSeconds": 2}, "purgeMode": "Gracefully",
                                            "gracePeriodSeconds": 120,
                                            "statePreservation": {"rules": [{"aliasLabelName": "example.io/ready",
                                                                             "jsonPath": "{.readyReplicas}"}]}}}}),
    )
    .await;
    let reported = Instant::now();
    report(&bed, "web", &[("m1", "Unhealthy"), ("m2", "Healthy")]).await;
    let since = support::eventually("first-unhealthy time recorded", || async {
        let b = binding(&bed, "web").await;
        b["metadata"]["annotations"]["failover.karmada.io/application-unhealthy-since"]
            .as_str()
            .map(str::to_string)
    })
    .await;
    let tracked: Value = serde_json::from_str(&since).expect("json map");
    assert!(tracked["m1"].is_string(), "{tracked}");
    assert!(tracked.get("m2").is_none(), "{tracked}");
    let evicted = support::eventually("m1 evicted after tolerationSeconds", || async {
        let b = binding(&bed, "web").await;
        (!tasks(&b).is_empty()).then_some(b)
    })
    .await;
    assert!(
        reported.elapsed() >= Duration::from_secs(1),
        "after {:?}",
        reported.elapsed()
    );
    let task = &tasks(&evicted)[0];
    assert_eq!(task["fromCluster"], "m1");
    assert_eq!(task["reason"], "ApplicationFailure");
    assert_eq!(
        task["producer"],
        "resource-binding-application-failover-controller"
    );
    assert_eq!(task["purgeMode"], "Gracefully");
    assert_eq!(task["gracePeriodSeconds"], 120);
    assert_eq!(task["preservedLabelState"]["example.io/ready"], "0");
    // The evicted cluster is no longer timed.
    assert!(
        evicted["metadata"]["annotations"]["failover.karmada.io/application-unhealthy-since"]
            .is_null(),
        "{}",
        evicted["metadata"]["annotations"]
    );
}

#[tokio::test]
async fn descheduler_moves_unschedulable_replicas_away() {
    use karmada_controllers::descheduler::{self, DeschedulerConfig, DeschedulerMetrics};
    let bed = start(fast(FailoverConfig::default())).await;
    let mut registry = Registry::default();
    let metrics = DeschedulerMetrics::register(&mut registry);
    tokio::spawn(descheduler::run(
        bed.cp.client.clone(),
        DeschedulerConfig {
            interval: Duration::from_millis(200),
            unschedulable_threshold: Duration::from_millis(600),
            estimators: None,
        },
        metrics,
        bed.cp.cancel.child_token(),
    ));
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 3}, {"name": "m2", "replicas": 1}]),
        json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                    "replicaDivisionPreference": "Aggregated"}}}),
    )
    .await;
    // m1 created its 3 pods but only 1 is Ready (the others stay Pending), as member-sim reports it.
    update(&bindings_api(&bed), "web", true, |b| {
        b["status"] = json!({"aggregatedStatus": [
            {"clusterName": "m1", "applied": true, "health": "Unhealthy",
             "status": {"replicas": 3, "readyReplicas": 1, "generation": 1, "observedGeneration": 1}},
            {"clusterName": "m2", "applied": true, "health": "Healthy",
             "status": {"replicas": 1, "readyReplicas": 1, "generation": 1, "observedGeneration": 1}},
        ]});
    })
    .await;
    let b = support::eventually("m1 descheduled down to its ready replicas", || async {
        let b = binding(&bed, "web").await;
        let clusters: Vec<(String, i64)> = b["spec"]["clusters"]
            .as_array()?
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap_or_default().to_string(),
                    t["replicas"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        (clusters == vec![("m1".to_string(), 1), ("m2".to_string(), 1)]).then_some(b)
    })
    .await;
    assert!(tasks(&b).is_empty());
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    assert!(
        text.contains("karmada_deschedule_evict_total{member_cluster=\"m1\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("karmada_deschedule_evicted_replicas_total{member_cluster=\"m1\"} 2"),
        "{text}"
    );
    reasons_including(&bed, "web", &["DescheduleBindingSucceed"]).await;
}

#[tokio::test]
async fn the_one_switch_chain_unreachable_to_taint_to_eviction_and_back() {
    let bed = start(FailoverConfig {
        resync: Duration::from_millis(300),
        ..FailoverConfig::enabled()
    })
    .await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    add_binding(
        &bed,
        "web",
        json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
        json!({}),
    )
    .await;
    // The cluster status controller publishes m1 as not ready (after its failure threshold).
    set_ready(&bed, "m1", "False").await;
    let evicted = support::eventually("m1 tainted by the default policy and evicted", || async {
        let b = binding(&bed, "web").await;
        (!tasks(&b).is_empty()).then_some(b)
    })
    .await;
    assert_eq!(target_names(&evicted), vec!["m2"]);
    let cluster =
        serde_json::to_value(clusters_api(&bed).get("m1").await.expect("m1")).expect("json");
    assert!(
        cluster["spec"]["taints"].as_array().is_some_and(|t| t
            .iter()
            .any(|t| t["key"] == NOT_READY && t["effect"] == "NoExecute")),
        "{}",
        cluster["spec"]
    );
    // Replicas move; the old copy is kept while m1 cannot be reached.
    schedule(&bed, "web", json!([{"name": "m2", "replicas": 4}])).await;
    report(&bed, "web", &[("m2", "Healthy"), ("m1", "Unknown")]).await;
    reconciled(&bed, "graceful-eviction", 3).await;
    assert_eq!(tasks(&binding(&bed, "web").await).len(), 1);
    // m1 returns: the policy removes the taint and the stale task goes, once, with the replicas staying on m2.
    set_ready(&bed, "m1", "True").await;
    let done = support::eventually("task removed after m1 returned", || async {
        let b = binding(&bed, "web").await;
        tasks(&b).is_empty().then_some(b)
    })
    .await;
    assert_eq!(target_names(&done), vec!["m2"]);
    assert_eq!(
        sample(
            &bed,
            "eviction_task_removed_total{reason=\"ReplacementHealthy\"}"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn cluster_resource_bindings_fail_over_too() {
    let bed = start(fast(FailoverConfig::enabled())).await;
    add_cluster(&bed, "m1").await;
    add_cluster(&bed, "m2").await;
    support::create(
        &bed.cp.client,
        "clusterresourcebindings",
        json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
               "metadata": {"name": "reader"},
               "spec": {"resource": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "reader"},
                        "clusters": [{"name": "m1"}, {"name": "m2"}]}}),
    )
    .await;
    let api = karmada_controllers::runtime::resources::all(
        &bed.cp.client,
        &karmada_controllers::runtime::resources::cluster_resource_binding(),
    );
    let get =
        || async { serde_json::to_value(api.get("reader").await.expect("crb")).expect("json") };
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    let evicted = support::eventually("m1 evicted from the ClusterResourceBinding", || async {
        let b = get().await;
        (!tasks(&b).is_empty()).then_some(b)
    })
    .await;
    assert_eq!(target_names(&evicted), vec!["m2"]);
    assert!(tasks(&evicted)[0].get("replicas").is_none());
    update(&api, "reader", true, |b| {
        b["status"] = json!({"schedulerObservedGeneration": b["metadata"]["generation"].clone(),
                             "aggregatedStatus": [{"clusterName": "m2", "applied": true, "health": "Healthy"}]});
    })
    .await;
    support::eventually("task removed once m2 is healthy", || async {
        tasks(&get().await).is_empty().then_some(())
    })
    .await;
}

/// Failover at scale (issue 7): every one of N workloads moves off a failed member, nothing is removed from it
/// while it cannot be reached, and once settled the failover controllers are quiet — status churn that changes
/// nothing they read (the status controller rewriting replica counts) neither wakes them nor makes them write.
/// Before this was fixed every such status write woke all three controllers for the binding (hundreds of
/// reconciles a second at 500 workloads).
#[tokio::test]
async fn many_workloads_move_off_a_failed_member_then_all_is_quiet() {
    const N: usize = 60;
    let bed = start(FailoverConfig {
        // Only events may wake a binding here: the safety-net resync must not hide a wake-up storm.
        resync: Duration::from_secs(3600),
        default_taint_policy: false,
        ..FailoverConfig::enabled()
    })
    .await;
    for c in ["m1", "m2", "m3"] {
        add_cluster(&bed, c).await;
    }
    let names: Vec<String> = (0..N).map(|i| format!("web-{i:03}")).collect();
    let spread = json!([{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 1},
                        {"name": "m3", "replicas": 2}]);
    for name in &names {
        add_binding(&bed, name, spread.clone(), json!({})).await;
    }

    // m1 fails: unreachable, and tainted with nothing tolerating it.
    set_ready(&bed, "m1", "False").await;
    set_taints(&bed, "m1", json!([no_execute(NOT_READY)])).await;
    support::eventually("every binding evicted from m1", || async {
        for name in &names {
            let b = binding(&bed, name).await;
            let evicted = !target_names(&b).contains(&"m1".to_string())
                && tasks(&b).iter().any(|t| t["fromCluster"] == "m1");
            if !evicted {
                return None;
            }
        }
        Some(())
    })
    .await;

    // The scheduler places the replicas on m2 and m3 and they turn Healthy; m1 is still unreachable, so every
    // task (and with it the old copy's Work) stays.
    for name in &names {
        schedule(
            &bed,
            name,
            json!([{"name": "m2", "replicas": 2}, {"name": "m3", "replicas": 2}]),
        )
        .await;
        report(
            &bed,
            name,
            &[("m2", "Healthy"), ("m3", "Healthy"), ("m1", "Unknown")],
        )
        .await;
    }
    let unreachable =
        "eviction_deferred_total{name=\"graceful-eviction\",reason=\"MemberUnreachable\"}";
    support::eventually("every task deferred while m1 is unreachable", || async {
        (sample(&bed, unreachable).await >= N as u64).then_some(())
    })
    .await;
    for name in &names {
        assert_eq!(
            tasks(&binding(&bed, name).await).len(),
            1,
            "{name}: a task was removed while m1 is unreachable"
        );
    }

    // Settled. Status churn the failover controllers do not read: replica counts change, health does not.
    let controllers = ["taint-manager", "graceful-eviction", "application-failover"];
    let mut before = 0;
    for c in controllers {
        before += processed(&bed, c).await;
    }
    let mut versions = std::collections::BTreeMap::new();
    for name in &names {
        update(&bindings_api(&bed), name, true, |b| {
            for item in b["status"]["aggregatedStatus"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                item["status"]["availableReplicas"] = json!(1);
            }
        })
        .await;
        let b = binding(&bed, name).await;
        versions.insert(name.clone(), b["metadata"]["resourceVersion"].clone());
    }
    // A bounded look at a quiet system: the reconcile counter must not move (before the fix it grew by three
    // per write at once).
    let window = Instant::now() + Duration::from_secs(2);
    while Instant::now() < window {
        let mut now = 0;
        for c in controllers {
            now += processed(&bed, c).await;
        }
        assert!(
            now - before <= 3,
            "failover controllers reconciled {} times on status churn they do not read",
            now - before
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for name in &names {
        assert_eq!(
            binding(&bed, name).await["metadata"]["resourceVersion"],
            versions[name],
            "{name} was written in steady state"
        );
    }

    // m1 is reachable again (still tainted): the replacements are healthy, so every old copy may go now.
    set_ready(&bed, "m1", "True").await;
    support::eventually("every task removed once m1 is reachable", || async {
        for name in &names {
            let b = binding(&bed, name).await;
            if !tasks(&b).is_empty() || target_names(&b).contains(&"m1".to_string()) {
                return None;
            }
        }
        Some(())
    })
    .await;
    assert!(
        sample(
            &bed,
            "eviction_task_removed_total{reason=\"ReplacementHealthy\"}"
        )
        .await
            >= N as u64
    );
}

/// The taint manager, application failover and graceful eviction each run over every ResourceBinding and
/// ClusterResourceBinding; through one registry they share one watch (and one cache) per binding kind instead
/// of six of each. The registry runs exactly two: the Cluster and ClusterTaintPolicy watches are the failover
/// controllers' own and not in it.
#[tokio::test]
async fn failover_controllers_share_one_binding_watch_per_kind() {
    use karmada_controllers::failover::{application, graceful_eviction, taint_manager};
    use karmada_controllers::runtime::Informers;

    let informers = Informers::default();
    let bed = start(fast(FailoverConfig {
        informers: informers.clone(),
        ..FailoverConfig::enabled()
    }))
    .await;
    add_cluster(&bed, "member1").await;
    add_binding(
        &bed,
        "shared",
        json!([{"name": "member1", "replicas": 4}]),
        json!({}),
    )
    .await;
    // A controller that reconciled the binding has subscribed (its subscription is the first thing it makes).
    for controller in [
        taint_manager::NAME,
        application::NAME,
        graceful_eviction::NAME,
    ] {
        reached(&bed, controller, 1).await;
    }
    // Unshared, the three ResourceBinding subscriptions alone would already be three watches, and watches only
    // stop when their subscribers go; so this settles at 2 only if they are shared. (The ClusterResourceBinding
    // controllers start alongside but may subscribe a moment later.)
    support::eventually("two shared binding watches", || {
        let informers = informers.clone();
        async move { (informers.watching() == 2).then_some(()) }
    })
    .await;
}
