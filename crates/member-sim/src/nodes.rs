//! Simulated nodes: the Node objects and kube-node-lease Leases a kubelet would register, and
//! the node controller that keeps their conditions, taints and heartbeats current.
//!
//! A node named in [`Faults::not_ready_nodes`] reports `Ready=False` (reason `KubeletNotReady`)
//! and carries the `node.kubernetes.io/not-ready` taints the node lifecycle controller adds;
//! clearing the fault removes both. Heartbeats follow the kubelet's cadence: the lease is
//! renewed every `lease_renew_interval`, an unchanged status re-posted every
//! `node_status_report_frequency`, so a pass at an unchanged `now` writes nothing.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::config::SimConfig;
use crate::faults::Faults;
use crate::meta::{self, Condition};
use crate::naming::{Cidr, CidrError};
use crate::objects::{Objects, Write};
use crate::outcome::Outcome;
use crate::quantity::{self, QuantityError};

pub const LEASE_NAMESPACE: &str = "kube-node-lease";
pub const LEASE_DURATION_SECONDS: i64 = 40;
pub const PROVIDER_LABEL: &str = "member-sim.karmada.io/provider";
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// A configuration the nodes cannot be built from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NodeConfigError {
    #[error("--node-{resource}: {source}")]
    Quantity {
        resource: &'static str,
        source: QuantityError,
    },
    #[error(transparent)]
    Cidr(#[from] CidrError),
    #[error("{what} {cidr} has no room for {nodes} nodes")]
    TooManyNodes {
        what: &'static str,
        cidr: String,
        nodes: u32,
    },
}

/// `<cluster>-node-<index>`.
pub fn node_name(config: &SimConfig, index: u32) -> String {
    format!("{}-node-{index}", config.name)
}

/// The Node objects and their Leases for a fresh cluster.
pub fn initial_objects(config: &SimConfig, now: Timestamp) -> Result<Vec<Value>, NodeConfigError> {
    let mut objects = Vec::new();
    for index in 0..config.nodes {
        let node = build_node(config, index, now)?;
        objects.push(build_lease(&node, now));
        objects.push(node);
    }
    Ok(objects)
}

/// One Ready node as a kubelet would register it.
pub fn build_node(
    config: &SimConfig,
    index: u32,
    now: Timestamp,
) -> Result<Value, NodeConfigError> {
    for (resource, text) in [
        ("cpu", &config.node_cpu),
        ("memory", &config.node_memory),
        ("pods", &config.node_pods),
        ("ephemeral-storage", &config.node_ephemeral_storage),
    ] {
        quantity::parse_milli(text)
            .map_err(|source| NodeConfigError::Quantity { resource, source })?;
    }
    let node_cidr = Cidr::parse(&config.node_cidr)?;
    let internal_ip = node_cidr
        .nth(index + 2)
        .filter(|_| index + 3 < node_cidr.size())
        .ok_or(NodeConfigError::TooManyNodes {
            what: "node CIDR",
            cidr: config.node_cidr.clone(),
            nodes: config.nodes,
        })?;
    let pod_cidr = node_pod_cidr(config, index)?;
    let name = node_name(config, index);
    let resources = json!({
        "cpu": config.node_cpu,
        "memory": config.node_memory,
        "pods": config.node_pods,
        "ephemeral-storage": config.node_ephemeral_storage,
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    });
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": config.instance_type,
                "topology.kubernetes.io/region": config.region,
                "topology.kubernetes.io/zone": config.zone,
                PROVIDER_LABEL: config.provider,
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": pod_cidr,
            "podCIDRs": [pod_cidr],
            "providerID": format!("member-sim://{}/{name}", config.name),
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": internal_ip.to_string()},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.18",
                "kernelVersion": "6.1.0-member-sim",
                "kubeProxyVersion": config.kubernetes_version,
                "kubeletVersion": config.kubernetes_version,
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "member-sim",
                "systemUUID": "",
            },
        },
    });
    let status = desired_status(&node, false, now);
    meta::set_path(&mut node, &["status"], status);
    Ok(node)
}

/// The `/24` for pods on node `index`: the index-th /24 inside the pod CIDR.
fn node_pod_cidr(config: &SimConfig, index: u32) -> Result<String, NodeConfigError> {
    let cidr = Cidr::parse(&config.pod_cidr)?;
    let too_many = || NodeConfigError::TooManyNodes {
        what: "pod CIDR",
        cidr: config.pod_cidr.clone(),
        nodes: config.nodes,
    };
    if cidr.prefix > 24 {
        return Err(too_many());
    }
    let base = cidr
        .nth(index.checked_mul(256).ok_or_else(too_many)?)
        .ok_or_else(too_many)?;
    Ok(format!("{base}/24"))
}

/// The node's heartbeat Lease.
pub fn build_lease(node: &Value, now: Timestamp) -> Value {
    let name = meta::name(node);
    let mut lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": meta::format_micro_time(now),
        },
    });
    if !meta::uid(node).is_empty() {
        let owner =
            json!({"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta::uid(node)});
        meta::set_path(&mut lease, &["metadata", "ownerReferences"], json!([owner]));
    }
    lease
}

/// The node's status with its four kubelet conditions set for `not_ready`; other fields kept.
fn desired_status(node: &Value, not_ready: bool, now: Timestamp) -> Value {
    let mut status = node.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut conditions = meta::conditions(node);
    let ready = if not_ready {
        Condition::new(
            "Ready",
            "False",
            "KubeletNotReady",
            "container runtime is down",
        )
    } else {
        Condition::new(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        )
    };
    for condition in [
        Condition::new(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        Condition::new(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        Condition::new(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        ready,
    ] {
        let index = meta::set_condition(&mut conditions, condition, now);
        if conditions[index].get("lastHeartbeatTime").is_none() {
            meta::set_path(
                &mut conditions[index],
                &["lastHeartbeatTime"],
                json!(meta::format_time(now)),
            );
        }
    }
    meta::set_path(&mut status, &["conditions"], Value::Array(conditions));
    status
}

fn stamp_heartbeat(status: &mut Value, now: Timestamp) {
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for condition in conditions {
            meta::set_path(
                condition,
                &["lastHeartbeatTime"],
                json!(meta::format_time(now)),
            );
        }
    }
}

/// The taints the node should carry: others kept, the not-ready pair present iff `not_ready`.
fn desired_taints(node: &Value, not_ready: bool, now: Timestamp) -> Vec<Value> {
    let current: Vec<Value> = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut taints: Vec<Value> = current
        .iter()
        .filter(|t| meta::str_at(t, "/key") != NOT_READY_TAINT)
        .cloned()
        .collect();
    if not_ready {
        for effect in ["NoSchedule", "NoExecute"] {
            let existing = current.iter().find(|t| {
                meta::str_at(t, "/key") == NOT_READY_TAINT && meta::str_at(t, "/effect") == effect
            });
            let taint = match existing {
                Some(taint) => taint.clone(),
                None if effect == "NoExecute" => json!({
                    "key": NOT_READY_TAINT, "effect": effect, "timeAdded": meta::format_time(now)
                }),
                None => json!({"key": NOT_READY_TAINT, "effect": effect}),
            };
            taints.push(taint);
        }
    }
    taints
}

/// Keeps every Node's conditions, not-ready taints, heartbeat and Lease current.
pub fn reconcile(
    objects: &Objects,
    config: &SimConfig,
    faults: &Faults,
    now: Timestamp,
) -> Outcome {
    let mut outcome = Outcome::default();
    for node in objects.list("Node") {
        let name = meta::name(node);
        let not_ready = faults.not_ready_nodes.contains(name);

        let taints = desired_taints(node, not_ready, now);
        let current_taints = node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if taints != current_taints {
            let mut updated = node.clone();
            match taints.is_empty() {
                true => {
                    if let Some(spec) = updated.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("taints");
                    }
                }
                false => meta::set_path(&mut updated, &["spec", "taints"], Value::Array(taints)),
            }
            outcome.write(Write::Update(updated));
        }

        let mut status = desired_status(node, not_ready, now);
        let last_heartbeat = node
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| meta::find_condition(c, "Ready"))
            .and_then(|c| meta::parse_time(meta::str_at(c, "/lastHeartbeatTime")));
        let next_heartbeat = last_heartbeat.map(|t| t + config.node_status_report_frequency);
        let changed = node.get("status") != Some(&status);
        if changed || next_heartbeat.is_none_or(|due| due <= now) {
            stamp_heartbeat(&mut status, now);
            outcome.write(Write::UpdateStatus(meta::with_status(node, status)));
            outcome.requeue(now + config.node_status_report_frequency);
        } else if let Some(due) = next_heartbeat {
            outcome.requeue(due);
        }

        match objects.get_named("Lease", LEASE_NAMESPACE, name) {
            None => outcome.write(Write::Create(build_lease(node, now))),
            Some(lease) => {
                let renewed = meta::parse_time(meta::str_at(lease, "/spec/renewTime"));
                let due = renewed.map(|t| t + config.lease_renew_interval);
                if due.is_none_or(|due| due <= now) {
                    let mut updated = lease.clone();
                    meta::set_path(
                        &mut updated,
                        &["spec", "renewTime"],
                        json!(meta::format_micro_time(now)),
                    );
                    outcome.write(Write::Update(updated));
                    outcome.requeue(now + config.lease_renew_interval);
                } else if let Some(due) = due {
                    outcome.requeue(due);
                }
            }
        }
    }
    outcome
}
