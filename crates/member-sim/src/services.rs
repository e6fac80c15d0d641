//! Services: clusterIP allocation from the service CIDR, and the EndpointSlice controller.
//!
//! Allocation is deterministic: the lowest free address of the block (from `.1`, which the
//! `kubernetes` Service conventionally holds), never the network or broadcast address, never one
//! already held. A requested `spec.clusterIP` is honoured when it is inside the block and free;
//! `None` (headless) and ExternalName Services get none.
//!
//! Each Service with a selector owns one EndpointSlice `<service>-<hash>` (label
//! `kubernetes.io/service-name`, managed by `endpointslice-controller.k8s.io`) listing the
//! matching pods that have an IP and are not terminating, each with `ready`/`serving`
//! conditions, node, zone and target reference; ports resolve named target ports against the
//! first endpoint's containers. As in Kubernetes, not-ready pods are listed with `ready: false`
//! unless `publishNotReadyAddresses`. Slices of Services that are gone or lost their selector are
//! deleted. Splitting into several slices (more than 100 endpoints) is not modeled.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use apimachinery::labels::LabelSelector;
use serde_json::{Value, json};

use crate::config::SimConfig;
use crate::meta;
use crate::naming::{self, Cidr};
use crate::objects::{ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::pods;

pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// A clusterIP that cannot be given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocationError {
    #[error(
        "spec.clusterIPs: Invalid value: [\"{0}\"]: failed to allocate IP {0}: provided IP is already allocated"
    )]
    Taken(String),
    #[error(
        "spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}"
    )]
    OutOfRange { ip: String, range: String },
    #[error(
        "spec.clusterIPs: Invalid value: [\"{0}\"]: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    )]
    Invalid(String),
    #[error("Internal error occurred: failed to allocate a serviceIP: range is full")]
    Full,
    #[error(transparent)]
    Cidr(#[from] naming::CidrError),
}

/// Whether the Service gets a clusterIP at all.
fn wants_cluster_ip(service: &Value) -> bool {
    meta::str_at(service, "/spec/type") != "ExternalName"
        && meta::str_at(service, "/spec/clusterIP") != "None"
}

/// The clusterIPs held by Services.
pub fn allocated_ips(objects: &Objects) -> BTreeSet<Ipv4Addr> {
    objects
        .list("Service")
        .filter_map(|s| meta::str_at(s, "/spec/clusterIP").parse().ok())
        .collect()
}

/// Chooses a clusterIP: `requested` if given and free, else the lowest free address.
pub fn allocate_cluster_ip(
    service_cidr: &str,
    requested: &str,
    taken: &BTreeSet<Ipv4Addr>,
) -> Result<Ipv4Addr, AllocationError> {
    let cidr = Cidr::parse(service_cidr)?;
    if !requested.is_empty() {
        let ip: Ipv4Addr = requested
            .parse()
            .map_err(|_| AllocationError::Invalid(requested.to_string()))?;
        let usable = cidr
            .offset_of(ip)
            .is_some_and(|o| o > 0 && o < cidr.size() - 1);
        if !usable {
            return Err(AllocationError::OutOfRange {
                ip: requested.to_string(),
                range: cidr.to_string(),
            });
        }
        if taken.contains(&ip) {
            return Err(AllocationError::Taken(requested.to_string()));
        }
        return Ok(ip);
    }
    (1..cidr.size() - 1)
        .filter_map(|o| cidr.nth(o))
        .find(|ip| !taken.contains(ip))
        .ok_or(AllocationError::Full)
}

/// `<service>-<5 safe characters>`, stable for the Service. The Service's uid is part of the seed: as with the
/// random suffix Kubernetes gives, the slices of same-named Services in different clusters are named apart
/// (multi-cluster Services carry them side by side).
pub fn slice_name(service: &Value) -> String {
    let seed = format!(
        "{}/{}/{}",
        meta::namespace(service),
        meta::name(service),
        meta::uid(service)
    );
    let hash = naming::safe_encode(&naming::fnv32a(seed.as_bytes()).to_string());
    format!("{}-{}", meta::name(service), &hash[..hash.len().min(5)])
}

/// One pass: allocate missing clusterIPs, then sync EndpointSlices.
pub fn reconcile(objects: &Objects, config: &SimConfig) -> Outcome {
    let mut outcome = Outcome::default();
    let mut taken = allocated_ips(objects);
    for service in objects.list("Service") {
        if !wants_cluster_ip(service) || !meta::str_at(service, "/spec/clusterIP").is_empty() {
            continue;
        }
        match allocate_cluster_ip(&config.service_cidr, "", &taken) {
            Ok(ip) => {
                taken.insert(ip);
                let mut updated = service.clone();
                meta::set_path(&mut updated, &["spec", "clusterIP"], json!(ip.to_string()));
                meta::set_path(
                    &mut updated,
                    &["spec", "clusterIPs"],
                    json!([ip.to_string()]),
                );
                meta::set_path(&mut updated, &["spec", "ipFamilies"], json!(["IPv4"]));
                meta::set_path(
                    &mut updated,
                    &["spec", "ipFamilyPolicy"],
                    json!("SingleStack"),
                );
                outcome.write(Write::Update(updated));
            }
            Err(error) => outcome.errors.push(format!(
                "Service {}/{}: {error}",
                meta::namespace(service),
                meta::name(service)
            )),
        }
    }

    let mut wanted: BTreeSet<ObjectKey> = BTreeSet::new();
    for service in objects.list("Service") {
        let Some(selector) = service.pointer("/spec/selector").and_then(Value::as_object) else {
            continue;
        };
        if selector.is_empty() || meta::str_at(service, "/spec/type") == "ExternalName" {
            continue;
        }
        let Ok(selector) = LabelSelector::from_label_selector(&json!({"matchLabels": selector}))
        else {
            outcome.errors.push(format!(
                "Service {}/{}: invalid spec.selector",
                meta::namespace(service),
                meta::name(service)
            ));
            continue;
        };
        let desired = desired_slice(objects, service, &selector);
        let key = ObjectKey::of(&desired);
        wanted.insert(key.clone());
        match objects.get(&key) {
            None => outcome.write(Write::Create(desired)),
            Some(existing) => {
                let mut updated = existing.clone();
                for field in ["addressType", "endpoints", "ports"] {
                    meta::set_path(
                        &mut updated,
                        &[field],
                        desired.get(field).cloned().unwrap_or(Value::Null),
                    );
                }
                for (key, value) in meta::labels(&desired) {
                    meta::set_path(&mut updated, &["metadata", "labels", &key], value);
                }
                if updated != *existing {
                    outcome.write(Write::Update(updated));
                }
            }
        }
    }
    for slice in objects.list("EndpointSlice") {
        let managed = meta::labels(slice)
            .get(MANAGED_BY_LABEL)
            .and_then(Value::as_str)
            == Some(MANAGED_BY);
        if managed && !wanted.contains(&ObjectKey::of(slice)) {
            outcome.write(Write::Delete(ObjectKey::of(slice)));
        }
    }
    outcome
}

fn desired_slice(objects: &Objects, service: &Value, selector: &LabelSelector) -> Value {
    let publish_not_ready = service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        == Some(true);
    let endpoint_pods: Vec<&Value> = objects
        .list_in("Pod", meta::namespace(service))
        .filter(|pod| selector.matches_object(pod) && pods::is_active(pod))
        .filter(|pod| !meta::str_at(pod, "/status/podIP").is_empty())
        .collect();
    let endpoints: Vec<Value> = endpoint_pods
        .iter()
        .map(|pod| {
            let ready = publish_not_ready || pods::is_ready(pod);
            let node = meta::str_at(pod, "/spec/nodeName");
            let mut endpoint = json!({
                "addresses": [meta::str_at(pod, "/status/podIP")],
                "conditions": {"ready": ready, "serving": ready, "terminating": false},
                "nodeName": node,
                "targetRef": {"kind": "Pod", "namespace": meta::namespace(pod), "name": meta::name(pod), "uid": meta::uid(pod)},
            });
            let zone = objects
                .get_named("Node", "", node)
                .and_then(|n| meta::labels(n).get("topology.kubernetes.io/zone").and_then(Value::as_str).map(str::to_string));
            if let Some(zone) = zone {
                meta::set_path(&mut endpoint, &["zone"], json!(zone));
            }
            endpoint
        })
        .collect();
    let ports: Vec<Value> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|port| {
            let target = resolve_target_port(port, endpoint_pods.first().copied())?;
            Some(json!({
                "name": meta::str_at(port, "/name"),
                "port": target,
                "protocol": match meta::str_at(port, "/protocol") { "" => "TCP", p => p },
            }))
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": slice_name(service),
            "namespace": meta::namespace(service),
            "labels": {SERVICE_NAME_LABEL: meta::name(service), MANAGED_BY_LABEL: MANAGED_BY},
            "ownerReferences": [meta::owner_reference(service)],
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    })
}

/// The numeric target port: the number, or the named container port of `pod`.
fn resolve_target_port(port: &Value, pod: Option<&Value>) -> Option<i64> {
    match port.get("targetPort") {
        None | Some(Value::Null) => port.get("port").and_then(Value::as_i64),
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => {
            if let Ok(n) = name.parse() {
                return Some(n);
            }
            pod?.pointer("/spec/containers")?
                .as_array()?
                .iter()
                .filter_map(|c| c.get("ports").and_then(Value::as_array))
                .flatten()
                .find(|p| meta::str_at(p, "/name") == name)
                .and_then(|p| p.get("containerPort").and_then(Value::as_i64))
        }
        Some(_) => None,
    }
}
