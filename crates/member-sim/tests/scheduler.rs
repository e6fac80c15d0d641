//! Scheduler behaviour on a simulated cluster.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use common::{Sim, condition, pod};
use member_sim::meta;
use member_sim::objects::Objects;
use member_sim::scheduler::{self, Placement};
use serde_json::{Value, json};

#[test]
fn unschedulable_messages_match_kube_scheduler() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "too much cpu",
            json!({"containers": [common::container("9", "1Gi")]}),
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
        ),
        (
            "too much of both",
            json!({"containers": [common::container("9", "64Gi")]}),
            "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
        ),
        (
            "selector matches nothing",
            json!({"containers": [common::container("1", "1Gi")], "nodeSelector": {"disk": "ssd"}}),
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        ),
        (
            "affinity Gt fails",
            json!({"containers": [common::container("1", "1Gi")], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "DoesNotExist"}]}]}}}}),
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        ),
    ];
    for (what, spec, expected) in cases {
        let mut sim = Sim::with_nodes(3, "8", "32Gi");
        let mut p = pod("p", "1");
        p["spec"] = spec;
        sim.create(p);
        sim.settle();
        let p = sim.get("Pod", "default", "p");
        assert_eq!(meta::str_at(p, "/spec/nodeName"), "", "{what}");
        let scheduled = condition(p, "PodScheduled");
        assert_eq!(scheduled["status"], "False", "{what}");
        assert_eq!(scheduled["reason"], "Unschedulable", "{what}");
        assert_eq!(scheduled["message"], expected, "{what}");
        assert_eq!(p["status"]["phase"], "Pending", "{what}");
    }
}

#[test]
fn mixed_reasons_are_counted_per_node_and_sorted() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.faults
        .apply("node-notready member-node-0".parse().expect("fault"));
    sim.settle();
    sim.update_spec("Node", "", "member-node-1", |n| {
        n["spec"]["unschedulable"] = json!(true)
    });
    sim.create(pod("big", "9"));
    sim.settle();
    let message = condition(sim.get("Pod", "default", "big"), "PodScheduled")["message"].clone();
    assert_eq!(
        message,
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable. \
         preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
    );
}

#[test]
fn least_allocated_node_wins_then_name() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    for name in ["a", "b", "c", "d"] {
        sim.create(pod(name, "2"));
    }
    sim.settle();
    let node_of = |sim: &Sim, name: &str| {
        meta::str_at(sim.get("Pod", "default", name), "/spec/nodeName").to_string()
    };
    // Equal scores go to the first name; each placement makes that node fuller.
    assert_eq!(node_of(&sim, "a"), "member-node-0");
    assert_eq!(node_of(&sim, "b"), "member-node-1");
    assert_eq!(node_of(&sim, "c"), "member-node-2");
    assert_eq!(node_of(&sim, "d"), "member-node-0");
}

#[test]
fn tolerations_and_selectors_steer_pods() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.update_spec("Node", "", "member-node-2", |n| {
        n["spec"]["taints"] = json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
        n["metadata"]["labels"]["gpu"] = json!("true");
    });
    let mut tolerant = pod("gpu-job", "1");
    tolerant["spec"]["tolerations"] =
        json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]);
    tolerant["spec"]["nodeSelector"] = json!({"gpu": "true"});
    sim.create(tolerant);
    let mut intolerant = pod("plain", "1");
    intolerant["spec"]["nodeSelector"] = json!({"gpu": "true"});
    sim.create(intolerant);
    sim.settle();
    assert_eq!(
        meta::str_at(sim.get("Pod", "default", "gpu-job"), "/spec/nodeName"),
        "member-node-2"
    );
    let plain = sim.get("Pod", "default", "plain");
    assert_eq!(meta::str_at(plain, "/spec/nodeName"), "");
    assert_eq!(
        condition(plain, "PodScheduled")["message"],
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector. \
         preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
}

#[test]
fn pod_limit_and_no_nodes() {
    let mut sim = Sim::new(member_sim::config::SimConfig {
        nodes: 1,
        node_pods: "2".into(),
        ..Default::default()
    });
    for name in ["a", "b", "c"] {
        sim.create(pod(name, "100m"));
    }
    sim.settle();
    let c = sim.get("Pod", "default", "c");
    assert_eq!(
        condition(c, "PodScheduled")["message"],
        "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
    let empty = Objects::new();
    assert_eq!(
        scheduler::place(&pod("x", "1"), &[], &scheduler::node_usage(&empty)),
        Placement::Unschedulable("no nodes available to schedule pods".into())
    );
}

#[test]
fn a_pod_becomes_schedulable_when_capacity_frees() {
    let mut sim = Sim::with_nodes(1, "2", "4Gi");
    sim.create(pod("first", "1500m"));
    sim.settle();
    sim.create(pod("second", "1"));
    sim.settle();
    assert_eq!(
        condition(sim.get("Pod", "default", "second"), "PodScheduled")["reason"],
        "Unschedulable"
    );
    sim.objects.remove(&member_sim::objects::ObjectKey::new(
        "Pod", "default", "first",
    ));
    sim.settle();
    let second = sim.get("Pod", "default", "second");
    assert_eq!(meta::str_at(second, "/spec/nodeName"), "member-node-0");
    assert_eq!(condition(second, "PodScheduled")["status"], "True");
}
