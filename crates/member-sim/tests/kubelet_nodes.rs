//! Simulated nodes and kubelet: registration, heartbeats, pod lifecycle, faults.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use common::{Sim, condition, pod, t0};
use member_sim::config::SimConfig;
use member_sim::meta;
use member_sim::nodes::{self, NodeConfigError};
use serde_json::{Value, json};

#[test]
fn nodes_look_like_kubelet_registered_nodes() {
    let config = SimConfig {
        name: "edge".into(),
        nodes: 2,
        node_cpu: "4".into(),
        node_memory: "16Gi".into(),
        node_pods: "50".into(),
        kubernetes_version: "v1.31.0".into(),
        region: "eu-west-1".into(),
        zone: "eu-west-1b".into(),
        provider: "aws".into(),
        ..SimConfig::default()
    };
    let objects = nodes::initial_objects(&config, t0()).expect("valid");
    let node: &Value = objects
        .iter()
        .find(|o| o["kind"] == "Node" && o["metadata"]["name"] == "edge-node-1")
        .expect("node");
    let labels = &node["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], "edge-node-1");
    assert_eq!(labels["topology.kubernetes.io/region"], "eu-west-1");
    assert_eq!(labels["topology.kubernetes.io/zone"], "eu-west-1b");
    assert_eq!(labels["node.kubernetes.io/instance-type"], "sim.large");
    assert_eq!(labels[nodes::PROVIDER_LABEL], "aws");
    assert_eq!(node["status"]["capacity"]["cpu"], "4");
    assert_eq!(node["status"]["allocatable"]["memory"], "16Gi");
    assert_eq!(node["status"]["allocatable"]["pods"], "50");
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.31.0");
    assert_eq!(
        node["status"]["addresses"][0],
        json!({"type": "InternalIP", "address": "172.18.0.3"})
    );
    assert_eq!(node["spec"]["podCIDR"], "10.244.1.0/24");
    let ready = condition(node, "Ready");
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("True"), Some("KubeletReady"))
    );
    for (type_, reason) in [
        ("MemoryPressure", "KubeletHasSufficientMemory"),
        ("DiskPressure", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "KubeletHasSufficientPID"),
    ] {
        assert_eq!(condition(node, type_)["status"], "False", "{type_}");
        assert_eq!(condition(node, type_)["reason"], reason, "{type_}");
    }
    let lease = objects
        .iter()
        .find(|o| o["kind"] == "Lease" && o["metadata"]["name"] == "edge-node-1")
        .expect("lease");
    assert_eq!(lease["metadata"]["namespace"], "kube-node-lease");
    assert_eq!(lease["spec"]["holderIdentity"], "edge-node-1");
    assert_eq!(lease["spec"]["renewTime"], "2026-11-29T12:00:00.000000Z");
}

#[test]
fn bad_node_config_is_reported() {
    let cases = [
        (
            SimConfig {
                node_memory: "lots".into(),
                ..SimConfig::default()
            },
            "--node-memory",
        ),
        (
            SimConfig {
                node_cidr: "10.0.0.0/40".into(),
                ..SimConfig::default()
            },
            "invalid CIDR",
        ),
        (
            SimConfig {
                nodes: 300,
                pod_cidr: "10.244.0.0/16".into(),
                ..SimConfig::default()
            },
            "no room for 300 nodes",
        ),
    ];
    for (config, expected) in cases {
        let error: NodeConfigError = nodes::initial_objects(&config, t0()).expect_err("invalid");
        assert!(error.to_string().contains(expected), "{error}");
    }
}

#[test]
fn heartbeats_follow_the_kubelet_cadence() {
    let mut sim = Sim::with_nodes(1, "8", "32Gi");
    sim.settle();
    let lease_time = |sim: &Sim| {
        meta::str_at(
            sim.get("Lease", "kube-node-lease", "member-node-0"),
            "/spec/renewTime",
        )
        .to_string()
    };
    let heartbeat = |sim: &Sim| {
        condition(sim.get("Node", "", "member-node-0"), "Ready")["lastHeartbeatTime"].clone()
    };
    assert_eq!(lease_time(&sim), "2026-11-29T12:00:00.000000Z");
    sim.advance(9);
    assert_eq!(lease_time(&sim), "2026-11-29T12:00:00.000000Z");
    sim.advance(1);
    assert_eq!(lease_time(&sim), "2026-11-29T12:00:10.000000Z");
    sim.advance(35);
    assert_eq!(lease_time(&sim), "2026-11-29T12:00:40.000000Z");
    assert_eq!(heartbeat(&sim), "2026-11-29T12:00:00Z");
    sim.advance(300);
    assert_eq!(heartbeat(&sim), "2026-11-29T12:05:00Z");
}

#[test]
fn node_notready_fault_flips_ready_and_taints_and_clears() {
    let mut sim = Sim::with_nodes(2, "8", "32Gi");
    sim.create(pod("web", "1"));
    sim.advance(5);
    let node_name = meta::str_at(sim.get("Pod", "default", "web"), "/spec/nodeName").to_string();
    assert_eq!(
        condition(sim.get("Pod", "default", "web"), "Ready")["status"],
        "True"
    );

    sim.faults
        .apply(format!("node-notready {node_name}").parse().expect("fault"));
    sim.advance(1);
    let node = sim.get("Node", "", &node_name);
    let ready = condition(node, "Ready");
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("KubeletNotReady"))
    );
    let taints: Vec<(String, String)> = node["spec"]["taints"]
        .as_array()
        .expect("taints")
        .iter()
        .map(|t| {
            (
                meta::str_at(t, "/key").to_string(),
                meta::str_at(t, "/effect").to_string(),
            )
        })
        .collect();
    assert_eq!(
        taints,
        vec![
            (
                "node.kubernetes.io/not-ready".to_string(),
                "NoSchedule".to_string()
            ),
            (
                "node.kubernetes.io/not-ready".to_string(),
                "NoExecute".to_string()
            )
        ]
    );
    let web = sim.get("Pod", "default", "web");
    assert_eq!(condition(web, "Ready")["status"], "False");
    assert_eq!(web["status"]["phase"], "Running");

    sim.faults.apply("clear".parse().expect("fault"));
    sim.advance(1);
    let node = sim.get("Node", "", &node_name);
    assert_eq!(condition(node, "Ready")["status"], "True");
    assert!(node["spec"].get("taints").is_none(), "{node}");
    assert_eq!(
        condition(sim.get("Pod", "default", "web"), "Ready")["status"],
        "True"
    );
}

#[test]
fn pods_start_after_the_startup_delay_with_full_status() {
    let mut sim = Sim::new(SimConfig {
        pod_startup_delay: jiff::SignedDuration::from_secs(10),
        ..SimConfig::default()
    });
    let mut guaranteed = pod("web", "1");
    guaranteed["spec"]["containers"][0]["resources"]["limits"] =
        json!({"cpu": "1", "memory": "64Mi"});
    sim.create(guaranteed);
    sim.settle();
    let web = sim.get("Pod", "default", "web");
    assert_eq!(web["status"]["phase"], "Pending");
    assert_eq!(condition(web, "PodScheduled")["status"], "True");
    assert_eq!(condition(web, "Ready")["reason"], "ContainersNotReady");
    assert_eq!(
        condition(web, "Ready")["message"],
        "containers with unready status: [app]"
    );
    assert_eq!(
        web["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "ContainerCreating"
    );
    assert_eq!(web["status"]["podIP"], "10.244.0.2");

    sim.advance(9);
    assert_eq!(
        sim.get("Pod", "default", "web")["status"]["phase"],
        "Pending"
    );
    sim.advance(1);
    let web = sim.get("Pod", "default", "web");
    let status = &web["status"];
    assert_eq!(status["phase"], "Running");
    let order: Vec<&str> = status["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| meta::str_at(c, "/type"))
        .collect();
    assert_eq!(
        order,
        [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled"
        ]
    );
    for type_ in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodScheduled",
    ] {
        assert_eq!(condition(web, type_)["status"], "True", "{type_}");
    }
    assert_eq!(
        condition(web, "Ready")["lastTransitionTime"],
        "2026-11-29T12:00:10Z"
    );
    assert_eq!(
        condition(web, "PodScheduled")["lastTransitionTime"],
        "2026-11-29T12:00:00Z"
    );
    let container = &status["containerStatuses"][0];
    assert_eq!(container["ready"], true);
    assert_eq!(container["started"], true);
    assert_eq!(container["restartCount"], 0);
    assert_eq!(container["image"], "docker.io/library/nginx:1.27");
    assert_eq!(
        container["state"]["running"]["startedAt"],
        "2026-11-29T12:00:10Z"
    );
    assert!(meta::str_at(container, "/containerID").starts_with("containerd://"));
    assert!(meta::str_at(container, "/imageID").starts_with("docker.io/library/nginx@sha256:"));
    assert_eq!(status["hostIP"], "172.18.0.2");
    assert_eq!(status["podIP"], "10.244.0.2");
    assert_eq!(status["qosClass"], "Guaranteed");
    assert_eq!(status["startTime"], "2026-11-29T12:00:00Z");
}

#[test]
fn pod_ips_are_unique_per_node_and_stable() {
    let mut sim = Sim::with_nodes(2, "8", "32Gi");
    for i in 0..6 {
        sim.create(pod(&format!("p{i}"), "100m"));
    }
    sim.advance(5);
    let ips: Vec<String> = sim
        .pods()
        .iter()
        .map(|p| meta::str_at(p, "/status/podIP").to_string())
        .collect();
    let unique: std::collections::BTreeSet<&String> = ips.iter().collect();
    assert_eq!(unique.len(), 6, "{ips:?}");
    for p in sim.pods() {
        let node = meta::str_at(p, "/spec/nodeName");
        let prefix = if node == "member-node-0" {
            "10.244.0."
        } else {
            "10.244.1."
        };
        assert!(meta::str_at(p, "/status/podIP").starts_with(prefix), "{p}");
    }
    sim.advance(60);
    let again: Vec<String> = sim
        .pods()
        .iter()
        .map(|p| meta::str_at(p, "/status/podIP").to_string())
        .collect();
    assert_eq!(again, ips);
}

#[test]
fn crash_fault_makes_pods_crash_loop_until_cleared() {
    let mut sim = Sim::with_nodes(1, "8", "32Gi");
    sim.create(common::deployment("web", 2, "100m"));
    sim.create(common::deployment("api", 1, "100m"));
    sim.advance(10);
    sim.faults
        .apply("crash default/web".parse().expect("fault"));
    sim.advance(1);
    for p in sim.pods_with_label("app", "web") {
        assert_eq!(p["status"]["phase"], "Running");
        assert_eq!(condition(p, "Ready")["status"], "False");
        assert_eq!(condition(p, "ContainersReady")["status"], "False");
        let container = &p["status"]["containerStatuses"][0];
        assert_eq!(container["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(container["ready"], false);
    }
    for p in sim.pods_with_label("app", "api") {
        assert_eq!(condition(p, "Ready")["status"], "True");
    }
    let web = sim.get("Deployment", "default", "web");
    assert_eq!(web["status"]["availableReplicas"], 0);
    assert_eq!(condition(web, "Available")["status"], "False");

    sim.faults.apply("clear".parse().expect("fault"));
    sim.advance(1);
    let web = sim.get("Deployment", "default", "web");
    assert_eq!(web["status"]["availableReplicas"], 2);
    assert_eq!(condition(web, "Available")["status"], "True");
}

#[test]
fn init_containers_hold_the_pod_until_it_starts() {
    let mut sim = Sim::with_nodes(1, "8", "32Gi");
    let mut p = pod("web", "100m");
    p["spec"]["initContainers"] = json!([{"name": "migrate", "image": "busybox"}]);
    sim.create(p);
    sim.settle();
    let web = sim.get("Pod", "default", "web");
    let initialized = condition(web, "Initialized");
    assert_eq!(initialized["status"], "False");
    assert_eq!(initialized["reason"], "ContainersNotInitialized");
    assert_eq!(
        initialized["message"],
        "containers with incomplete status: [migrate]"
    );
    assert_eq!(
        web["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "PodInitializing"
    );
    assert_eq!(
        web["status"]["initContainerStatuses"][0]["state"]["waiting"]["reason"],
        "PodInitializing"
    );

    sim.advance(2);
    let web = sim.get("Pod", "default", "web");
    assert_eq!(web["status"]["phase"], "Running");
    assert_eq!(condition(web, "Initialized")["status"], "True");
    let init = &web["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["reason"], "Completed");
    assert_eq!(init["state"]["terminated"]["exitCode"], 0);
    assert_eq!(init["ready"], true);
    assert_eq!(init["image"], "docker.io/library/busybox:latest");
}
