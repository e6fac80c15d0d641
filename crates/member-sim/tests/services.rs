//! ClusterIP allocation and EndpointSlices.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use common::{Sim, deployment};
use member_sim::meta;
use member_sim::services::{self, AllocationError, slice_name};
use serde_json::{Value, json};

fn service(name: &str, cluster_ip: Option<&str>, selector: Option<Value>) -> Value {
    let mut svc = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "web"}]},
    });
    if let Some(ip) = cluster_ip {
        svc["spec"]["clusterIP"] = json!(ip);
    }
    if let Some(selector) = selector {
        svc["spec"]["selector"] = selector;
    }
    svc
}

#[test]
fn allocation_table() {
    let taken: BTreeSet<Ipv4Addr> = ["10.96.0.1", "10.96.0.2"]
        .iter()
        .map(|s| s.parse().expect("ip"))
        .collect();
    let cases: Vec<(&str, &str, Result<&str, &str>)> = vec![
        ("10.96.0.0/12", "", Ok("10.96.0.3")),
        ("10.96.0.0/12", "10.96.5.5", Ok("10.96.5.5")),
        (
            "10.96.0.0/12",
            "10.96.0.2",
            Err("provided IP is already allocated"),
        ),
        (
            "10.96.0.0/12",
            "10.200.0.1",
            Err("not in the valid range. The range of valid IPs is 10.96.0.0/12"),
        ),
        ("10.96.0.0/12", "10.96.0.0", Err("not in the valid range")),
        ("10.96.0.0/12", "banana", Err("must be a valid IP address")),
        ("10.96.0.0/30", "", Err("range is full")),
        ("nonsense", "", Err("invalid CIDR")),
    ];
    for (cidr, requested, expected) in cases {
        let result =
            services::allocate_cluster_ip(cidr, requested, &taken).map(|ip| ip.to_string());
        match expected {
            Ok(ip) => assert_eq!(result.as_deref(), Ok(ip), "{cidr} {requested}"),
            Err(problem) => {
                let error: AllocationError =
                    services::allocate_cluster_ip(cidr, requested, &taken).expect_err("fails");
                assert!(
                    error.to_string().contains(problem),
                    "{cidr} {requested}: {error}"
                );
            }
        }
    }
}

#[test]
fn services_get_distinct_cluster_ips_and_headless_get_none() {
    let mut sim = Sim::with_nodes(1, "8", "32Gi");
    sim.create(service("kubernetes", None, None));
    sim.create(service("pinned", Some("10.96.0.2"), None));
    sim.create(service("web", None, None));
    sim.create(service("headless", Some("None"), None));
    sim.settle();
    let ip = |name: &str| {
        meta::str_at(sim.get("Service", "default", name), "/spec/clusterIP").to_string()
    };
    assert_eq!(ip("kubernetes"), "10.96.0.1");
    assert_eq!(ip("pinned"), "10.96.0.2");
    assert_eq!(ip("web"), "10.96.0.3");
    assert_eq!(ip("headless"), "None");
    assert_eq!(
        sim.get("Service", "default", "web")["spec"]["clusterIPs"],
        json!(["10.96.0.3"])
    );
}

#[test]
fn endpoint_slices_follow_pods() {
    let mut sim = Sim::with_nodes(2, "8", "32Gi");
    let mut web = deployment("web", 2, "100m");
    web["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"name": "web", "containerPort": 8080}]);
    sim.create(web);
    let svc = service("web", None, Some(json!({"app": "web"})));
    sim.create(svc);
    sim.settle();
    // The name comes from the stored Service (its uid is part of the seed).
    let name = slice_name(sim.get("Service", "default", "web"));
    let slice = sim.get("EndpointSlice", "default", &name);
    assert!(
        name.starts_with("web-") && name.len() == "web-".len() + 5,
        "{name}"
    );
    assert_eq!(
        slice["metadata"]["labels"]["kubernetes.io/service-name"],
        "web"
    );
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );
    let endpoints = slice["endpoints"].as_array().expect("endpoints");
    assert_eq!(endpoints.len(), 2);
    assert!(endpoints.iter().all(|e| e["conditions"]["ready"] == false));

    sim.advance(2);
    let slice = sim.get("EndpointSlice", "default", &name);
    let endpoints = slice["endpoints"].as_array().expect("endpoints");
    assert!(
        endpoints
            .iter()
            .all(|e| e["conditions"]["ready"] == true && e["conditions"]["serving"] == true)
    );
    let pod_ips: BTreeSet<String> = sim
        .pods_with_label("app", "web")
        .iter()
        .map(|p| meta::str_at(p, "/status/podIP").to_string())
        .collect();
    let slice_ips: BTreeSet<String> = endpoints
        .iter()
        .map(|e| meta::str_at(e, "/addresses/0").to_string())
        .collect();
    assert_eq!(pod_ips, slice_ips);
    assert!(
        endpoints
            .iter()
            .all(|e| e["targetRef"]["kind"] == "Pod" && e["zone"] == "zone-a")
    );

    sim.update_spec("Deployment", "default", "web", |d| {
        d["spec"]["replicas"] = json!(1)
    });
    sim.settle();
    assert_eq!(
        sim.get("EndpointSlice", "default", &name)["endpoints"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    sim.objects.remove(&member_sim::objects::ObjectKey::new(
        "Service", "default", "web",
    ));
    sim.settle();
    assert_eq!(sim.objects.list("EndpointSlice").count(), 0);
}
