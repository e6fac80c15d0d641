//! The estimator's `MaxAvailableReplicas` equals what a cluster would actually place: for uneven nodes (some
//! full, cordoned, tainted, labelled differently) with pods already bound, a replica template (requests, node
//! selector, tolerations, required node affinity) goes through the real chain — the interpreter's replica
//! requirements, the wire encoding, the estimator's member cache and answer — and the answer must equal the number
//! of copies member-sim's kube-scheduler places one after another before one stays Pending.
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use karmada_scheduler_estimator::metrics::EstimatorMetrics;
use karmada_scheduler_estimator::pb::messages::MaxAvailableReplicasRequest;
use karmada_scheduler_estimator::pb::requirements_to_pb;
use karmada_scheduler_estimator::{EstimatorService, MemberState};
use member_sim::objects::Objects;
use member_sim::resources::pod_requests;
use member_sim::scheduler::{Placement, node_usage, place};
use proptest::prelude::*;
use serde_json::{Value, json};

const TAINTS: [(&str, &str, &str); 3] = [
    ("dedicated", "gpu", "NoSchedule"),
    ("spot", "", "NoExecute"),
    ("soft", "", "PreferNoSchedule"),
];

#[derive(Debug, Clone)]
struct NodeSpec {
    cpu: i64,
    memory_mi: i64,
    pods: i64,
    ssd: bool,
    zone_a: bool,
    taints: Vec<usize>,
    cordoned: bool,
    /// Requests (cpu m, memory Mi) of pods already bound here.
    bound: Vec<(i64, i64)>,
}

#[derive(Debug, Clone)]
struct Template {
    cpu: i64,
    memory_mi: i64,
    want_ssd: bool,
    want_zone_a: bool,
    tolerations: Vec<usize>,
    tolerate_cordon: bool,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        prop_oneof![Just(0i64), 250i64..8000],
        prop_oneof![Just(0i64), 128i64..16384],
        0i64..8,
        any::<bool>(),
        any::<bool>(),
        proptest::sample::subsequence(vec![0usize, 1, 2], 0..=3),
        proptest::bool::weighted(0.15),
        proptest::collection::vec((0i64..3000, 0i64..4096), 0..4),
    )
        .prop_map(
            |(cpu, memory_mi, pods, ssd, zone_a, taints, cordoned, bound)| NodeSpec {
                cpu,
                memory_mi,
                pods,
                ssd,
                zone_a,
                taints,
                cordoned,
                bound,
            },
        )
}

fn template() -> impl Strategy<Value = Template> {
    (
        prop_oneof![Just(0i64), 50i64..2500],
        prop_oneof![Just(0i64), 16i64..3000],
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.3),
        proptest::sample::subsequence(vec![0usize, 1, 2], 0..=3),
        proptest::bool::weighted(0.2),
    )
        .prop_map(
            |(cpu, memory_mi, want_ssd, want_zone_a, tolerations, tolerate_cordon)| Template {
                cpu,
                memory_mi,
                want_ssd,
                want_zone_a,
                tolerations,
                tolerate_cordon,
            },
        )
}

fn requests(cpu: i64, memory_mi: i64) -> Value {
    let mut requests = serde_json::Map::new();
    if cpu > 0 {
        requests.insert("cpu".into(), json!(format!("{cpu}m")));
    }
    if memory_mi > 0 {
        requests.insert("memory".into(), json!(format!("{memory_mi}Mi")));
    }
    Value::Object(requests)
}

fn node_json(index: usize, spec: &NodeSpec) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert("disk".into(), json!(if spec.ssd { "ssd" } else { "hdd" }));
    labels.insert("zone".into(), json!(if spec.zone_a { "a" } else { "b" }));
    let taints: Vec<Value> = spec
        .taints
        .iter()
        .map(|i| {
            let (key, value, effect) = TAINTS[*i];
            json!({"key": key, "value": value, "effect": effect})
        })
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("node-{index}"), "labels": labels},
        "spec": {"taints": taints, "unschedulable": spec.cordoned},
        "status": {"allocatable": {"cpu": format!("{}m", spec.cpu), "memory": format!("{}Mi", spec.memory_mi),
                                    "pods": spec.pods.to_string()}}
    })
}

fn bound_pod(node: usize, index: usize, (cpu, memory_mi): (i64, i64)) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("bound-{node}-{index}"), "namespace": "default"},
        "spec": {"nodeName": format!("node-{node}"), "containers": [{"name": "c", "resources": {"requests": requests(cpu, memory_mi)}}]},
        "status": {"phase": "Running"}
    })
}

fn pod_spec(template: &Template) -> Value {
    let mut tolerations: Vec<Value> = template
        .tolerations
        .iter()
        .map(|i| {
            let (key, value, effect) = TAINTS[*i];
            if value.is_empty() {
                json!({"key": key, "operator": "Exists", "effect": effect})
            } else {
                json!({"key": key, "operator": "Equal", "value": value, "effect": effect})
            }
        })
        .collect();
    if template.tolerate_cordon {
        tolerations.push(json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}));
    }
    let mut spec = json!({
        "containers": [{"name": "app", "resources": {"requests": requests(template.cpu, template.memory_mi)}}],
        "tolerations": tolerations,
    });
    if template.want_ssd {
        spec["nodeSelector"] = json!({"disk": "ssd"});
    }
    if template.want_zone_a {
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
    }
    spec
}

/// Copies of the template member-sim's scheduler places one after another.
fn brute_force(nodes: &[Value], bound: &[Value], template: &Template) -> i64 {
    let mut objects = Objects::from_values(nodes.iter().chain(bound).cloned());
    let node_refs: Vec<Value> = objects.list("Node").cloned().collect();
    let node_refs: Vec<&Value> = node_refs.iter().collect();
    let mut placed = 0;
    loop {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("copy-{placed}"), "namespace": "default"},
            "spec": pod_spec(template),
            "status": {"phase": "Pending"}
        });
        let usage = node_usage(&objects);
        match place(&pod, &node_refs, &usage) {
            Placement::Node(node) => {
                let mut bound = pod.clone();
                bound["spec"]["nodeName"] = json!(node);
                bound["status"]["phase"] = json!("Running");
                assert!(pod_requests(&bound).pods == 1);
                objects.insert(bound);
                placed += 1;
            }
            Placement::Unschedulable(_) => return placed,
        }
    }
}

fn estimate(nodes: &[Value], bound: &[Value], template: &Template) -> i32 {
    let state = Arc::new(MemberState::new());
    state.replace_nodes(
        nodes
            .iter()
            .map(|n| serde_json::from_value::<Node>(n.clone()).expect("node")),
    );
    state.replace_pods(
        bound
            .iter()
            .map(|p| serde_json::from_value::<Pod>(p.clone()).expect("pod")),
    );
    state.replace_quotas([]);
    let workload =
        json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}});
    let requirements =
        karmada_interpreter::native::replica_requirements(&workload, &pod_spec(template))
            .expect("requirements");
    let service = EstimatorService::new(
        "member1",
        state,
        None,
        false,
        EstimatorMetrics::unregistered(),
    );
    let request = MaxAvailableReplicasRequest {
        cluster: "member1".into(),
        replica_requirements: requirements.as_ref().map(requirements_to_pb),
        assumed_workloads: Vec::new(),
    };
    service.max_available_replicas(&request).expect("answer")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_estimate_is_what_the_cluster_places(nodes in proptest::collection::vec(node_spec(), 1..6), template in template()) {
        let node_values: Vec<Value> = nodes.iter().enumerate().map(|(i, n)| node_json(i, n)).collect();
        let bound: Vec<Value> = nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.bound.iter().enumerate().map(move |(j, r)| bound_pod(i, j, *r)))
            .collect();
        let expected = brute_force(&node_values, &bound, &template);
        let answer = estimate(&node_values, &bound, &template);
        prop_assert_eq!(i64::from(answer), expected, "nodes {:?} template {:?}", nodes, template);
    }
}

#[test]
fn no_nodes_means_no_replicas() {
    assert_eq!(
        estimate(
            &[],
            &[],
            &Template {
                cpu: 100,
                memory_mi: 0,
                want_ssd: false,
                want_zone_a: false,
                tolerations: vec![],
                tolerate_cordon: false
            }
        ),
        0
    );
}

#[test]
fn an_uneven_cluster_holds_less_than_its_summary_says() {
    // Two nodes with 3 cores each: the cluster has 6 free cores, but a 2-core replica fits once per node.
    let spec = |cpu| NodeSpec {
        cpu,
        memory_mi: 8192,
        pods: 110,
        ssd: true,
        zone_a: true,
        taints: vec![],
        cordoned: false,
        bound: vec![],
    };
    let nodes = vec![node_json(0, &spec(3000)), node_json(1, &spec(3000))];
    let template = Template {
        cpu: 2000,
        memory_mi: 0,
        want_ssd: false,
        want_zone_a: false,
        tolerations: vec![],
        tolerate_cordon: false,
    };
    assert_eq!(estimate(&nodes, &[], &template), 2);
    assert_eq!(brute_force(&nodes, &[], &template), 2);
}

/// The property above is not vacuous: most generated clusters place some copies, and some place none.
#[test]
fn the_generated_cases_cover_placements_and_refusals() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut some, mut none) = (0, 0);
    for _ in 0..300 {
        let nodes = proptest::collection::vec(node_spec(), 1..6)
            .new_tree(&mut runner)
            .expect("nodes")
            .current();
        let template = template()
            .new_tree(&mut runner)
            .expect("template")
            .current();
        let node_values: Vec<Value> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| node_json(i, n))
            .collect();
        if brute_force(&node_values, &[], &template) > 0 {
            some += 1;
        } else {
            none += 1;
        }
    }
    assert!(
        some > 100 && none > 10,
        "{some} cases placed copies, {none} placed none"
    );
}

#[test]
fn a_resource_quota_bounds_the_answer_with_the_resource_quota_estimate_gate() {
    let spec = NodeSpec {
        cpu: 8000,
        memory_mi: 16384,
        pods: 110,
        ssd: true,
        zone_a: true,
        taints: vec![],
        cordoned: false,
        bound: vec![],
    };
    let nodes = [node_json(0, &spec)];
    let quota: k8s_openapi::api::core::v1::ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "team", "namespace": "default"},
        "spec": {"hard": {"requests.cpu": "3"}},
        "status": {"hard": {"requests.cpu": "3"}, "used": {"requests.cpu": "1"}}
    }))
    .expect("quota");
    let answer = |gate: bool| {
        let state = Arc::new(MemberState::new());
        state.replace_nodes(
            nodes
                .iter()
                .map(|n| serde_json::from_value::<Node>(n.clone()).expect("node")),
        );
        state.replace_pods([]);
        state.replace_quotas([quota.clone()]);
        let service = EstimatorService::new(
            "member1",
            state,
            None,
            gate,
            EstimatorMetrics::unregistered(),
        );
        let template = Template {
            cpu: 1000,
            memory_mi: 0,
            want_ssd: false,
            want_zone_a: false,
            tolerations: vec![],
            tolerate_cordon: false,
        };
        let workload =
            json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}});
        let requirements =
            karmada_interpreter::native::replica_requirements(&workload, &pod_spec(&template))
                .expect("requirements")
                .map(|mut r| {
                    r.namespace = "default".into();
                    r
                });
        service
            .max_available_replicas(&MaxAvailableReplicasRequest {
                cluster: "member1".into(),
                replica_requirements: requirements.as_ref().map(requirements_to_pb),
                assumed_workloads: Vec::new(),
            })
            .expect("answer")
    };
    assert_eq!(answer(false), 8, "nodes alone: 8 cores");
    assert_eq!(answer(true), 2, "the quota leaves 2 cores");
}

#[test]
fn a_request_for_another_cluster_is_refused() {
    let state = Arc::new(MemberState::new());
    state.replace_nodes([]);
    state.replace_pods([]);
    state.replace_quotas([]);
    let service = EstimatorService::new(
        "member1",
        state,
        None,
        false,
        EstimatorMetrics::unregistered(),
    );
    let err = service
        .max_available_replicas(&MaxAvailableReplicasRequest {
            cluster: "member2".into(),
            ..Default::default()
        })
        .expect_err("wrong cluster");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message()
            .contains("cluster name does not match, got: member2, desire: member1")
    );
    let unsynced = EstimatorService::new(
        "member1",
        Arc::new(MemberState::new()),
        None,
        false,
        EstimatorMetrics::unregistered(),
    );
    let err = unsynced
        .max_available_replicas(&MaxAvailableReplicasRequest {
            cluster: "member1".into(),
            ..Default::default()
        })
        .expect_err("not listed yet");
    assert_eq!(err.code(), tonic::Code::Unavailable);
}
