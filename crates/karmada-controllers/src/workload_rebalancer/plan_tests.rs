use serde_json::{Value, json};

use super::*;

const CREATED: &str = "2026-11-29T10:00:00Z";
const NOW: &str = "2026-11-29T10:00:05Z";

fn ts(text: &str) -> Timestamp {
    text.parse().expect("timestamp")
}

fn time(text: &str) -> Time {
    Time(ts(text))
}

fn rebalancer(workloads: Value, ttl: Option<i32>, status: Value) -> WorkloadRebalancer {
    let mut object = json!({
        "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo", "generation": 2, "creationTimestamp": CREATED},
        "spec": {"workloads": workloads},
    });
    if let Some(ttl) = ttl {
        object["spec"]["ttlSecondsAfterFinished"] = json!(ttl);
    }
    if !status.is_null() {
        object["status"] = status;
    }
    serde_json::from_value(object).expect("rebalancer")
}

fn deploy(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "apps", "name": name})
}

fn role(name: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": name})
}

fn key(namespace: &str, name: &str) -> BindingKey {
    BindingKey {
        namespace: namespace.into(),
        name: name.into(),
    }
}

fn present(triggered: Option<&str>) -> FoundBinding {
    FoundBinding::Present {
        triggered_at: triggered.map(time),
    }
}

/// `(workload name, result, reason)` of each observed workload.
fn summary(status: &WorkloadRebalancerStatus) -> Vec<(String, Option<RebalanceResult>, String)> {
    status
        .observed_workloads
        .iter()
        .map(|o| (o.workload.name.clone(), o.result, o.reason.clone()))
        .collect()
}

fn ok(name: &str) -> (String, Option<RebalanceResult>, String) {
    (
        name.into(),
        Some(RebalanceResult::Successful),
        String::new(),
    )
}

fn not_found(name: &str) -> (String, Option<RebalanceResult>, String) {
    (
        name.into(),
        Some(RebalanceResult::Failed),
        REASON_REFERENCED_BINDING_NOT_FOUND.into(),
    )
}

#[test]
fn binding_keys_follow_karmada_names_and_scope() {
    let r = rebalancer(
        json!([deploy("nginx"), role("system:reader"), deploy("nginx")]),
        None,
        Value::Null,
    );
    assert_eq!(
        bindings_to_look_up(&r),
        vec![
            key("", "system.reader-clusterrole"),
            key("apps", "nginx-deployment"),
        ]
    );
    assert!(key("", "x").is_cluster_scoped());
    assert!(!key("apps", "x").is_cluster_scoped());
}

#[test]
fn needs_trigger_table() {
    let created = time(CREATED);
    let cases = [
        (None, true),
        (Some("2026-11-29T09:59:59Z"), true),
        (Some(CREATED), false),
        (Some("2026-11-29T10:00:01Z"), false),
    ];
    for (current, expected) in cases {
        let current = current.map(time);
        assert_eq!(
            needs_trigger(current.as_ref(), &created),
            expected,
            "{current:?}"
        );
    }
}

#[test]
fn first_pass_table() {
    struct Case {
        what: &'static str,
        found: Vec<(BindingKey, FoundBinding)>,
        writes: Vec<BindingKey>,
        results: Vec<(String, Option<RebalanceResult>, String)>,
        finished: bool,
        next: Next,
    }
    let nginx = key("apps", "nginx-deployment");
    let web = key("apps", "web-deployment");
    let cases = [
        Case {
            what: "both found, neither triggered: both written",
            found: vec![(nginx.clone(), present(None)), (web.clone(), present(None))],
            writes: vec![nginx.clone(), web.clone()],
            results: vec![ok("nginx"), ok("web")],
            finished: true,
            next: Next::Wait,
        },
        Case {
            what: "one already carries this rebalancer's time, one an older one",
            found: vec![
                (nginx.clone(), present(Some(CREATED))),
                (web.clone(), present(Some("2026-11-28T00:00:00Z"))),
            ],
            writes: vec![web.clone()],
            results: vec![ok("nginx"), ok("web")],
            finished: true,
            next: Next::Wait,
        },
        Case {
            what: "a newer request on the binding is left alone",
            found: vec![
                (nginx.clone(), present(Some("2026-11-30T00:00:00Z"))),
                (web.clone(), FoundBinding::Missing),
            ],
            writes: vec![],
            results: vec![ok("nginx"), not_found("web")],
            finished: true,
            next: Next::Wait,
        },
        Case {
            what: "a binding not looked up stays pending",
            found: vec![(nginx.clone(), present(None))],
            writes: vec![nginx.clone()],
            results: vec![ok("nginx"), ("web".into(), None, String::new())],
            finished: false,
            next: Next::Retry,
        },
    ];
    for case in cases {
        let r = rebalancer(json!([deploy("web"), deploy("nginx")]), None, Value::Null);
        let found: BTreeMap<_, _> = case.found.into_iter().collect();
        let plan = plan(&r, &found, ts(NOW)).expect("plan");
        let written: Vec<BindingKey> = plan.writes.iter().map(|w| w.binding.clone()).collect();
        assert_eq!(written, case.writes, "{}", case.what);
        assert!(
            plan.writes.iter().all(|w| w.triggered_at == time(CREATED)),
            "{}",
            case.what
        );
        assert_eq!(summary(&plan.status), case.results, "{}", case.what);
        assert_eq!(
            plan.status.finish_time,
            case.finished.then(|| time(NOW)),
            "{}",
            case.what
        );
        assert_eq!(plan.status.observed_generation, Some(2), "{}", case.what);
        assert!(plan.status_changed, "{}", case.what);
        assert_eq!(plan.next, case.next, "{}", case.what);
    }
}

#[test]
fn recorded_results_are_final_and_a_second_pass_changes_nothing() {
    let r = rebalancer(json!([deploy("nginx"), deploy("web")]), None, Value::Null);
    let found = BTreeMap::from([
        (key("apps", "nginx-deployment"), present(None)),
        (key("apps", "web-deployment"), FoundBinding::Missing),
    ]);
    let first = plan(&r, &found, ts(NOW)).expect("plan");
    let mut after = r.clone();
    after.status = Some(first.status.clone());
    assert!(bindings_to_look_up(&after).is_empty());
    let again = plan(&after, &BTreeMap::new(), ts("2026-11-29T11:00:00Z")).expect("plan");
    assert!(again.writes.is_empty());
    assert!(!again.status_changed);
    assert_eq!(again.status, first.status);
    assert_eq!(again.next, Next::Wait);
}

#[test]
fn spec_edits_add_and_drop_workloads() {
    let status = json!({
        "observedWorkloads": [
            {"workload": deploy("dropped"), "result": "Failed", "reason": "ReferencedBindingNotFound"},
            {"workload": deploy("gone"), "result": "Successful"},
            {"workload": deploy("nginx"), "result": "Failed", "reason": "ReferencedBindingNotFound"},
        ],
        "observedGeneration": 1,
        "finishTime": "2026-11-29T10:00:01Z",
    });
    let r = rebalancer(json!([deploy("nginx"), deploy("added")]), None, status);
    // Only the added workload is looked up: a Failed result is not retried.
    assert_eq!(
        bindings_to_look_up(&r),
        vec![key("apps", "added-deployment")]
    );
    let found = BTreeMap::from([(key("apps", "added-deployment"), present(None))]);
    let plan = plan(&r, &found, ts(NOW)).expect("plan");
    assert_eq!(
        plan.writes,
        vec![BindingWrite {
            binding: key("apps", "added-deployment"),
            triggered_at: time(CREATED),
        }]
    );
    // Removed from the spec: a Successful result stays on record, a Failed one goes.
    assert_eq!(
        summary(&plan.status),
        vec![ok("added"), ok("gone"), not_found("nginx")]
    );
    assert_eq!(plan.status.observed_generation, Some(2));
    // The results changed, so the rebalancer finished again now.
    assert_eq!(plan.status.finish_time, Some(time(NOW)));
}

#[test]
fn observed_workloads_follow_karmadas_string_order() {
    // Sorted as the strings "apiVersion kind namespace name": apiVersion first, then kind, then namespace
    // ("a " before "a-b"), whatever the spec's order.
    let r = rebalancer(
        json!([
            {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "a-b", "name": "x"},
            {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "a", "name": "y"},
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "namespace": "z", "name": "x"},
            role("r"),
        ]),
        None,
        Value::Null,
    );
    let found = bindings_to_look_up(&r)
        .into_iter()
        .map(|k| (k, FoundBinding::Missing))
        .collect();
    let plan = plan(&r, &found, ts(NOW)).expect("plan");
    let order: Vec<(String, String)> = plan
        .status
        .observed_workloads
        .iter()
        .map(|o| (o.workload.kind.clone(), o.workload.namespace.clone()))
        .collect();
    assert_eq!(
        order,
        vec![
            ("DaemonSet".to_string(), "z".to_string()),
            ("Deployment".to_string(), "a".to_string()),
            ("Deployment".to_string(), "a-b".to_string()),
            ("ClusterRole".to_string(), String::new()),
        ]
    );
}

#[test]
fn a_spec_edit_alone_restarts_the_ttl() {
    let status = json!({
        "observedWorkloads": [{"workload": deploy("nginx"), "result": "Successful"}],
        "observedGeneration": 1,
        "finishTime": "2026-11-29T10:00:01Z",
    });
    // Generation 2 (say ttlSecondsAfterFinished was edited): same results, new observedGeneration.
    let r = rebalancer(json!([deploy("nginx")]), Some(60), status);
    let plan = plan(&r, &BTreeMap::new(), ts(NOW)).expect("plan");
    assert!(plan.writes.is_empty());
    assert!(plan.status_changed);
    assert_eq!(plan.status.observed_generation, Some(2));
    assert_eq!(plan.status.finish_time, Some(time(NOW)));
    assert_eq!(plan.next, Next::DeleteAfter(Duration::from_millis(60_001)));
}

#[test]
fn ttl_table() {
    let finished = "2026-11-29T10:00:00Z";
    let cases = [
        (None, "2026-11-29T12:00:00Z", Next::Wait),
        (Some(0), finished, Next::DeleteNow),
        (Some(30), "2026-11-29T10:00:30Z", Next::DeleteNow),
        (
            Some(30),
            "2026-11-29T10:00:10Z",
            Next::DeleteAfter(Duration::from_millis(20_001)),
        ),
        (Some(-5), finished, Next::DeleteNow),
    ];
    for (ttl, now, expected) in cases {
        let status = json!({
            "observedWorkloads": [{"workload": deploy("nginx"), "result": "Successful"}],
            "observedGeneration": 2,
            "finishTime": finished,
        });
        let r = rebalancer(json!([deploy("nginx")]), ttl, status);
        let plan = plan(&r, &BTreeMap::new(), ts(now)).expect("plan");
        assert!(!plan.status_changed, "{ttl:?} {now}");
        assert_eq!(plan.next, expected, "{ttl:?} {now}");
    }
    // Not finished: the TTL does not run.
    let r = rebalancer(json!([deploy("nginx")]), Some(0), Value::Null);
    let plan = plan(&r, &BTreeMap::new(), ts(NOW)).expect("plan");
    assert_eq!(plan.next, Next::Retry);
    assert_eq!(plan.status.finish_time, None);
}

#[test]
fn missing_creation_timestamp_is_an_error() {
    let mut r = rebalancer(json!([deploy("nginx")]), None, Value::Null);
    r.metadata.creation_timestamp = None;
    assert_eq!(
        plan(&r, &BTreeMap::new(), ts(NOW)),
        Err(PlanError::NoCreationTimestamp)
    );
}
