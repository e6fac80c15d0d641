//! The simulated kubelet of every node: turns bound pods into Running, Ready pods.
//!
//! A pod bound to a Ready node gets an IP from its node's pod CIDR at once (lowest free address
//! from `.2`, kept for the pod's life), shows `ContainerCreating` until `pod_startup_delay` has
//! passed since it was scheduled (the `PodScheduled` transition time), then turns Running with
//! PodReadyToStartContainers, Initialized, ContainersReady, Ready and PodScheduled all True.
//! Pods of a Job succeed `job_run_time` after starting. Pods of a crashed workload
//! ([`Faults::crashed_workloads`], matched on the pod's top-level owner) stay Running but report
//! `waiting: CrashLoopBackOff`, ContainersReady=False and Ready=False. On a NotReady node the
//! kubelet starts nothing and running pods' Ready turns False, as the node lifecycle controller
//! marks them. Terminating pods are removed at once (no grace period is simulated).
//!
//! Init containers report `PodInitializing` while the pod is created and `Completed` once it
//! runs. Not modeled: probes, restarts over time, init containers running one by one, sidecar
//! (restartable) init containers, eviction.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::config::SimConfig;
use crate::faults::Faults;
use crate::meta::{self, Condition};
use crate::naming::{self, Cidr};
use crate::objects::{ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::resources;

const CONDITION_ORDER: [&str; 5] = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
];

/// Lifecycle stage of a pod on a healthy node, derived from time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Creating,
    Running {
        since: Timestamp,
    },
    Succeeded {
        started: Timestamp,
        finished: Timestamp,
    },
}

/// The name of the workload a pod belongs to: the Deployment behind its ReplicaSet, else its
/// controller, else the pod itself.
pub fn top_owner(objects: &Objects, pod: &Value) -> String {
    let Some(owner) = meta::controller_ref(pod) else {
        return meta::name(pod).to_string();
    };
    let owner_name = meta::str_at(owner, "/name");
    if meta::str_at(owner, "/kind") == "ReplicaSet"
        && let Some(rs) = objects.get_named("ReplicaSet", meta::namespace(pod), owner_name)
        && let Some(deployment) = meta::controller_ref(rs)
    {
        return meta::str_at(deployment, "/name").to_string();
    }
    owner_name.to_string()
}

fn is_job_pod(pod: &Value) -> bool {
    meta::controller_ref(pod).is_some_and(|o| meta::str_at(o, "/kind") == "Job")
}

/// A hex digest-looking string, stable for its input (simulated image and container IDs).
fn digest(seed: &str) -> String {
    (0u32..8)
        .map(|i| format!("{:08x}", naming::fnv32a(format!("{i}:{seed}").as_bytes())))
        .collect()
}

/// Pod IPs already held on each node.
fn pod_ips_by_node(objects: &Objects) -> BTreeMap<String, BTreeSet<Ipv4Addr>> {
    let mut taken: BTreeMap<String, BTreeSet<Ipv4Addr>> = BTreeMap::new();
    for pod in objects.list("Pod") {
        if let Ok(ip) = meta::str_at(pod, "/status/podIP").parse::<Ipv4Addr>() {
            taken
                .entry(meta::str_at(pod, "/spec/nodeName").to_string())
                .or_default()
                .insert(ip);
        }
    }
    taken
}

fn allocate_pod_ip(node: &Value, taken: &mut BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    let cidr = Cidr::parse(meta::str_at(node, "/spec/podCIDR")).ok()?;
    let ip = (2..cidr.size().saturating_sub(1))
        .filter_map(|o| cidr.nth(o))
        .find(|ip| !taken.contains(ip))?;
    taken.insert(ip);
    Some(ip)
}

fn node_internal_ip(node: &Value) -> String {
    node.pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|addresses| {
            addresses
                .iter()
                .find(|a| meta::str_at(a, "/type") == "InternalIP")
        })
        .map(|a| meta::str_at(a, "/address").to_string())
        .unwrap_or_default()
}

pub fn node_is_ready(node: &Value) -> bool {
    meta::condition_status(node, "Ready") == Some("True")
}

/// One kubelet pass over every bound pod.
pub fn reconcile(
    objects: &Objects,
    config: &SimConfig,
    faults: &Faults,
    now: Timestamp,
) -> Outcome {
    let mut outcome = Outcome::default();
    let mut ips = pod_ips_by_node(objects);
    for pod in objects.list("Pod") {
        let node_name = meta::str_at(pod, "/spec/nodeName");
        if node_name.is_empty() {
            continue;
        }
        if meta::is_terminating(pod) {
            outcome.write(Write::Delete(ObjectKey::of(pod)));
            continue;
        }
        let Some(node) = objects.get_named("Node", "", node_name) else {
            continue;
        };
        let phase = meta::str_at(pod, "/status/phase");
        if matches!(phase, "Succeeded" | "Failed") {
            continue;
        }
        let status = if node_is_ready(node) {
            let owner = top_owner(objects, pod);
            let crashed = faults.is_crashed(meta::namespace(pod), &owner);
            let taken = ips.entry(node_name.to_string()).or_default();
            healthy_node_status(pod, node, config, crashed, taken, now, &mut outcome)
        } else {
            not_ready_node_status(pod, now)
        };
        if pod.get("status") != Some(&status) {
            outcome.write(Write::UpdateStatus(meta::with_status(pod, status)));
        }
    }
    outcome
}

/// On a NotReady node nothing starts, and Ready turns False.
fn not_ready_node_status(pod: &Value, now: Timestamp) -> Value {
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut conditions = meta::conditions(pod);
    if meta::find_condition(&conditions, "Ready").is_some() {
        let existing = meta::find_condition(&conditions, "Ready")
            .cloned()
            .unwrap_or_default();
        let condition = Condition::new(
            "Ready",
            "False",
            meta::str_at(&existing, "/reason"),
            meta::str_at(&existing, "/message"),
        );
        meta::set_condition(&mut conditions, condition, now);
        meta::set_path(&mut status, &["conditions"], Value::Array(conditions));
    }
    status
}

fn healthy_node_status(
    pod: &Value,
    node: &Value,
    config: &SimConfig,
    crashed: bool,
    taken_ips: &mut BTreeSet<Ipv4Addr>,
    now: Timestamp,
    outcome: &mut Outcome,
) -> Value {
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut conditions = meta::conditions(pod);
    let scheduled_at = meta::find_condition(&conditions, "PodScheduled")
        .filter(|c| meta::str_at(c, "/status") == "True")
        .and_then(meta::transition_time)
        .unwrap_or(now);
    let start_at = scheduled_at + config.pod_startup_delay;
    let stage = if now < start_at {
        outcome.requeue(start_at);
        Stage::Creating
    } else if is_job_pod(pod) && !crashed {
        let finish_at = start_at + config.job_run_time;
        if now < finish_at {
            outcome.requeue(finish_at);
            Stage::Running { since: start_at }
        } else {
            Stage::Succeeded {
                started: start_at,
                finished: finish_at,
            }
        }
    } else {
        Stage::Running { since: start_at }
    };

    let host_ip = node_internal_ip(node);
    let host_network = pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true);
    let existing_ip = meta::str_at(pod, "/status/podIP").to_string();
    let pod_ip = if host_network {
        host_ip.clone()
    } else if !existing_ip.is_empty() {
        existing_ip
    } else {
        allocate_pod_ip(node, taken_ips)
            .map(|ip| ip.to_string())
            .unwrap_or_default()
    };

    let containers: Vec<Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = containers
        .iter()
        .map(|c| meta::str_at(c, "/name"))
        .collect();
    let unready = format!("containers with unready status: [{}]", names.join(" "));
    let init_containers: Vec<Value> = pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let init_names: Vec<&str> = init_containers
        .iter()
        .map(|c| meta::str_at(c, "/name"))
        .collect();
    let creating_initialized = if init_names.is_empty() {
        Condition::new("Initialized", "True", "", "")
    } else {
        let message = format!(
            "containers with incomplete status: [{}]",
            init_names.join(" ")
        );
        Condition::new("Initialized", "False", "ContainersNotInitialized", &message)
    };
    let scheduled = Condition::new("PodScheduled", "True", "", "");
    let (sandbox, initialized, containers_ready, ready, phase) = match stage {
        Stage::Creating => (
            Condition::new("PodReadyToStartContainers", "True", "", ""),
            creating_initialized,
            Condition::new("ContainersReady", "False", "ContainersNotReady", &unready),
            Condition::new("Ready", "False", "ContainersNotReady", &unready),
            "Pending",
        ),
        Stage::Running { .. } if crashed => (
            Condition::new("PodReadyToStartContainers", "True", "", ""),
            Condition::new("Initialized", "True", "", ""),
            Condition::new("ContainersReady", "False", "ContainersNotReady", &unready),
            Condition::new("Ready", "False", "ContainersNotReady", &unready),
            "Running",
        ),
        Stage::Running { .. } => (
            Condition::new("PodReadyToStartContainers", "True", "", ""),
            Condition::new("Initialized", "True", "", ""),
            Condition::new("ContainersReady", "True", "", ""),
            Condition::new("Ready", "True", "", ""),
            "Running",
        ),
        Stage::Succeeded { .. } => (
            Condition::new("PodReadyToStartContainers", "False", "", ""),
            Condition::new("Initialized", "True", "PodCompleted", ""),
            Condition::new("ContainersReady", "False", "PodCompleted", ""),
            Condition::new("Ready", "False", "PodCompleted", ""),
            "Succeeded",
        ),
    };
    for condition in [sandbox, initialized, containers_ready, ready, scheduled] {
        // A transition is stamped when the kubelet observes it.
        let at = if condition.type_ == "PodScheduled" {
            scheduled_at
        } else {
            now
        };
        let index = meta::set_condition(&mut conditions, condition, at);
        meta::set_path(&mut conditions[index], &["lastProbeTime"], Value::Null);
    }

    let waiting_reason = if init_names.is_empty() {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let statuses: Vec<Value> = containers
        .iter()
        .map(|container| container_status(pod, container, stage, crashed, waiting_reason))
        .collect();
    if !init_containers.is_empty() {
        let init_statuses: Vec<Value> = init_containers
            .iter()
            .map(|container| init_container_status(pod, container, stage))
            .collect();
        meta::set_path(
            &mut status,
            &["initContainerStatuses"],
            Value::Array(init_statuses),
        );
    }
    meta::set_path(&mut status, &["phase"], json!(phase));
    // The order the kubelet reports them in (and `kubectl describe` shows).
    conditions.sort_by_key(|c| {
        CONDITION_ORDER
            .iter()
            .position(|t| *t == meta::str_at(c, "/type"))
    });
    meta::set_path(&mut status, &["conditions"], Value::Array(conditions));
    meta::set_path(&mut status, &["hostIP"], json!(host_ip));
    meta::set_path(&mut status, &["hostIPs"], json!([{"ip": host_ip}]));
    if !pod_ip.is_empty() {
        meta::set_path(&mut status, &["podIP"], json!(pod_ip));
        meta::set_path(&mut status, &["podIPs"], json!([{"ip": pod_ip}]));
    }
    meta::set_path(
        &mut status,
        &["startTime"],
        json!(meta::format_time(scheduled_at)),
    );
    meta::set_path(&mut status, &["containerStatuses"], Value::Array(statuses));
    meta::set_path(&mut status, &["qosClass"], json!(resources::qos_class(pod)));
    status
}

/// An image reference as the container runtime reports it (`nginx:1.27` →
/// `docker.io/library/nginx:1.27`), and its repository without tag or digest.
pub fn normalize_image(image: &str) -> (String, String) {
    let (first, rest) = image.split_once('/').unwrap_or(("", image));
    let has_domain = first.contains('.') || first.contains(':') || first == "localhost";
    let full = match (image.contains('/'), has_domain) {
        (false, _) => format!("docker.io/library/{image}"),
        (true, false) => format!("docker.io/{first}/{rest}"),
        (true, true) => image.to_string(),
    };
    let (name_part, digest) = match full.split_once('@') {
        Some((name, digest)) => (name.to_string(), Some(digest.to_string())),
        None => (full.clone(), None),
    };
    let last_slash = name_part.rfind('/').map_or(0, |i| i + 1);
    let (repository, tagged) = match name_part[last_slash..].rfind(':') {
        Some(colon) => (
            name_part[..last_slash + colon].to_string(),
            name_part.clone(),
        ),
        None if digest.is_some() => (name_part.clone(), full.clone()),
        None => (name_part.clone(), format!("{name_part}:latest")),
    };
    (tagged, repository)
}

/// Init containers run (instantly) at the start and have completed once the pod runs.
fn init_container_status(pod: &Value, container: &Value, stage: Stage) -> Value {
    let name = meta::str_at(container, "/name");
    let (image, repository) = normalize_image(meta::str_at(container, "/image"));
    let mut status = json!({
        "name": name,
        "image": image,
        "imageID": "",
        "restartCount": 0,
        "ready": false,
        "started": false,
        "state": {"waiting": {"reason": "PodInitializing"}},
    });
    let started = match stage {
        Stage::Creating => return status,
        Stage::Running { since } => since,
        Stage::Succeeded { started, .. } => started,
    };
    let container_id = format!(
        "containerd://{}",
        digest(&format!("{}/init/{name}", meta::uid(pod)))
    );
    meta::set_path(
        &mut status,
        &["imageID"],
        json!(format!("{repository}@sha256:{}", digest(&image))),
    );
    meta::set_path(&mut status, &["containerID"], json!(container_id));
    meta::set_path(&mut status, &["ready"], json!(true));
    meta::set_path(
        &mut status,
        &["state"],
        json!({"terminated": {
            "exitCode": 0, "reason": "Completed", "containerID": container_id,
            "startedAt": meta::format_time(started), "finishedAt": meta::format_time(started),
        }}),
    );
    status
}

fn container_status(
    pod: &Value,
    container: &Value,
    stage: Stage,
    crashed: bool,
    waiting_reason: &str,
) -> Value {
    let name = meta::str_at(container, "/name");
    let (image, repository) = normalize_image(meta::str_at(container, "/image"));
    let container_id = format!(
        "containerd://{}",
        digest(&format!("{}/{name}", meta::uid(pod)))
    );
    let mut status = json!({
        "name": name,
        "image": image,
        "imageID": format!("{repository}@sha256:{}", digest(&image)),
        "restartCount": 0,
        "ready": false,
        "started": false,
    });
    let set = |status: &mut Value, key: &str, value: Value| meta::set_path(status, &[key], value);
    match stage {
        Stage::Creating => {
            set(
                &mut status,
                "state",
                json!({"waiting": {"reason": waiting_reason}}),
            );
            if let Some(fields) = status.as_object_mut() {
                fields.remove("imageID");
            }
        }
        Stage::Running { since } if crashed => {
            let message = format!(
                "back-off 5m0s restarting failed container={name} pod={}_{}({})",
                meta::name(pod),
                meta::namespace(pod),
                meta::uid(pod)
            );
            set(&mut status, "containerID", json!(container_id));
            set(&mut status, "restartCount", json!(1));
            set(
                &mut status,
                "state",
                json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}}),
            );
            set(
                &mut status,
                "lastState",
                json!({"terminated": {
                    "exitCode": 1, "reason": "Error", "containerID": container_id,
                    "startedAt": meta::format_time(since), "finishedAt": meta::format_time(since),
                }}),
            );
        }
        Stage::Running { since } => {
            set(&mut status, "containerID", json!(container_id));
            set(&mut status, "ready", json!(true));
            set(&mut status, "started", json!(true));
            set(
                &mut status,
                "state",
                json!({"running": {"startedAt": meta::format_time(since)}}),
            );
        }
        Stage::Succeeded { started, finished } => {
            set(&mut status, "containerID", json!(container_id));
            set(
                &mut status,
                "state",
                json!({"terminated": {
                    "exitCode": 0, "reason": "Completed", "containerID": container_id,
                    "startedAt": meta::format_time(started), "finishedAt": meta::format_time(finished),
                }}),
            );
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_normalized_like_the_runtime_reports_them() {
        let cases = [
            (
                "nginx",
                "docker.io/library/nginx:latest",
                "docker.io/library/nginx",
            ),
            (
                "nginx:1.27",
                "docker.io/library/nginx:1.27",
                "docker.io/library/nginx",
            ),
            (
                "bitnami/redis:7",
                "docker.io/bitnami/redis:7",
                "docker.io/bitnami/redis",
            ),
            (
                "registry.k8s.io/pause:3.9",
                "registry.k8s.io/pause:3.9",
                "registry.k8s.io/pause",
            ),
            (
                "localhost:5000/app",
                "localhost:5000/app:latest",
                "localhost:5000/app",
            ),
            (
                "ghcr.io/o/app@sha256:abc",
                "ghcr.io/o/app@sha256:abc",
                "ghcr.io/o/app",
            ),
        ];
        for (image, full, repository) in cases {
            assert_eq!(
                normalize_image(image),
                (full.to_string(), repository.to_string()),
                "{image}"
            );
        }
    }
}
