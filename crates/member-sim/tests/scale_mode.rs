//! Scale mode: status from capacity without pods.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use common::{Sim, condition, deployment, t0};
use jiff::SignedDuration;
use member_sim::faults::Faults;
use member_sim::resources::Resources;
use member_sim::scale_mode::{self, CapacityModel};
use serde_json::json;

fn node(cpu_millis: i64, memory_gi: i64, pods: i64) -> Resources {
    Resources {
        cpu_millis,
        memory_bytes: memory_gi << 30,
        pods,
    }
}

#[test]
fn fit_is_the_minimum_over_resources_per_node() {
    let cases = [
        // (nodes, request, fit)
        (vec![node(8000, 32, 110); 3], node(1000, 1, 1), 24),
        (vec![node(8000, 32, 110); 3], node(500, 4, 1), 24),
        (vec![node(8000, 32, 10); 3], node(100, 0, 1), 30),
        (
            vec![node(8000, 32, 110), node(1000, 1, 110)],
            node(1500, 1, 1),
            5,
        ),
        (vec![], node(100, 1, 1), 0),
        (vec![node(0, 0, 110)], node(0, 0, 1), 110),
    ];
    for (nodes, request, expected) in cases {
        assert_eq!(
            CapacityModel {
                free: nodes.clone()
            }
            .fit(&request),
            expected,
            "{nodes:?} {request:?}"
        );
    }
}

#[test]
fn placing_consumes_capacity_for_later_workloads() {
    let mut model = CapacityModel::uniform(2, node(4000, 16, 110));
    let request = node(1000, 1, 1);
    assert_eq!(model.place(&request, 5), 5);
    assert_eq!(model.fit(&request), 3);
    assert_eq!(model.place(&request, 10), 3);
    assert_eq!(model.fit(&request), 0);
}

#[test]
fn capacity_model_matches_the_materialised_scheduler() {
    let mut sim = Sim::with_nodes(3, "4", "8Gi");
    sim.create(deployment("web", 20, "900m"));
    sim.advance(5);
    let scheduled = sim
        .pods()
        .iter()
        .filter(|p| !p["spec"]["nodeName"].is_null())
        .count() as i64;
    let nodes: Vec<serde_json::Value> = sim.objects.list("Node").cloned().collect();
    let model = CapacityModel::from_nodes(&nodes, &[]);
    let request = scale_mode::replica_request(&deployment("web", 20, "900m"));
    assert_eq!(model.fit(&request), scheduled);
    let status =
        scale_mode::deployment_status(&deployment("web", 20, "900m"), model.fit(&request), t0())
            .expect("valid");
    let real = &sim.get("Deployment", "default", "web")["status"];
    for field in [
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    ] {
        assert_eq!(status[field], real[field], "{field}");
    }
}

#[test]
fn deployment_status_from_capacity() {
    let mut web = deployment("web", 10, "1");
    web["metadata"]["generation"] = json!(3);
    let full = scale_mode::deployment_status(&web, 12, t0()).expect("valid");
    assert_eq!(full["availableReplicas"], 10);
    assert_eq!(full["observedGeneration"], 3);
    web["status"] = full;
    assert_eq!(
        condition(&web, "Available")["reason"],
        "MinimumReplicasAvailable"
    );
    assert_eq!(
        condition(&web, "Progressing")["reason"],
        "NewReplicaSetAvailable"
    );

    let mut short = deployment("web", 10, "1");
    let first = scale_mode::deployment_status(&short, 4, t0()).expect("valid");
    assert_eq!(first["unavailableReplicas"], 6);
    short["status"] = first;
    assert_eq!(
        condition(&short, "Available")["reason"],
        "MinimumReplicasUnavailable"
    );
    assert_eq!(
        condition(&short, "Progressing")["reason"],
        "ReplicaSetUpdated"
    );
    // Unchanged until the progress deadline passes.
    let later = scale_mode::deployment_status(&short, 4, t0() + SignedDuration::from_secs(300))
        .expect("valid");
    assert_eq!(later, short["status"]);
    let stuck = scale_mode::deployment_status(&short, 4, t0() + SignedDuration::from_secs(601))
        .expect("valid");
    short["status"] = stuck;
    assert_eq!(
        condition(&short, "Progressing")["reason"],
        "ProgressDeadlineExceeded"
    );
}

#[test]
fn statefulset_status_from_capacity() {
    let sts = |policy: &str| {
        json!({"kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default", "generation": 1},
               "spec": {"replicas": 5, "podManagementPolicy": policy, "template": {"spec": {}}}})
    };
    let ordered = scale_mode::statefulset_status(&sts("OrderedReady"), 3);
    assert_eq!(
        (
            ordered["replicas"].as_i64(),
            ordered["readyReplicas"].as_i64()
        ),
        (Some(4), Some(3))
    );
    let parallel = scale_mode::statefulset_status(&sts("Parallel"), 3);
    assert_eq!(
        (
            parallel["replicas"].as_i64(),
            parallel["readyReplicas"].as_i64()
        ),
        (Some(5), Some(3))
    );
    let all = scale_mode::statefulset_status(&sts("OrderedReady"), 9);
    assert_eq!(
        (all["replicas"].as_i64(), all["availableReplicas"].as_i64()),
        (Some(5), Some(5))
    );
    assert_eq!(all["currentRevision"], all["updateRevision"]);
}

#[test]
fn the_scale_mode_controller_serves_workloads_first_come_first_served() {
    use member_sim::sim;
    let mut cluster = Sim::with_nodes(2, "4", "16Gi");
    let mut first = deployment("first", 6, "1");
    first["metadata"]["creationTimestamp"] = json!("2026-11-29T11:00:00Z");
    let second = deployment("second", 6, "1");
    cluster.create(second);
    cluster.objects.insert({
        let mut first = first.clone();
        first["metadata"]["uid"] = json!("first-uid");
        first["metadata"]["generation"] = json!(1);
        first
    });
    cluster.create(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [common::container("100m", "64Mi")]}}}}));
    let now = cluster.now;
    let faults = cluster.faults.clone();
    let settled = sim::settle_with(&mut cluster.objects, now, 5, |objects| {
        scale_mode::reconcile(objects, &faults, now)
    })
    .expect("settles");
    assert!(
        cluster.objects.list("Pod").next().is_none(),
        "no pods are materialised"
    );
    let available = |sim: &Sim, name: &str| {
        sim.get("Deployment", "default", name)["status"]["availableReplicas"].clone()
    };
    // 8 CPUs: the older Deployment takes 6, the younger gets 2, the StatefulSet none.
    assert_eq!(available(&cluster, "first"), 6);
    assert_eq!(available(&cluster, "second"), 2);
    assert_eq!(
        cluster.get("StatefulSet", "default", "db")["status"]["readyReplicas"],
        0
    );
    assert_eq!(
        condition(cluster.get("Deployment", "default", "second"), "Available")["status"],
        "False"
    );
    // It asks to be woken when the stalled rollout's deadline passes.
    assert_eq!(
        settled.requeue_at,
        Some(now + SignedDuration::from_secs(601))
    );

    // Losing a node shrinks what fits; a crash makes a workload report nothing ready.
    let mut faults = Faults::default();
    faults.apply("node-notready member-node-1".parse().expect("fault"));
    faults.apply("crash second".parse().expect("fault"));
    member_sim::sim::settle_with(&mut cluster.objects, now, 5, |objects| {
        let mut outcome = member_sim::nodes::reconcile(objects, &cluster.config, &faults, now);
        outcome.merge(scale_mode::reconcile(objects, &faults, now));
        outcome
    })
    .expect("settles");
    assert_eq!(available(&cluster, "first"), 4);
    assert_eq!(available(&cluster, "second"), 0);
}
