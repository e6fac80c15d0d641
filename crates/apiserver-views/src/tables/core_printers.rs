//! Printers for the core (`v1`) kinds: columns and cells as `kubectl get` shows them.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::{self, age_of};
use super::cells::{self, NONE, at, int, list, map_len, name, or_none, text, text_or_none};
use super::{BuiltinPrinter, Column, age_column, column, name_column, wide};

pub fn printer(kind: &str) -> Option<BuiltinPrinter> {
    let printer = match kind {
        "Namespace" => BuiltinPrinter {
            columns: NAMESPACE,
            cells: namespace,
        },
        "ConfigMap" => BuiltinPrinter {
            columns: CONFIG_MAP,
            cells: config_map,
        },
        "Secret" => BuiltinPrinter {
            columns: SECRET,
            cells: secret,
        },
        "Service" => BuiltinPrinter {
            columns: SERVICE,
            cells: service,
        },
        "ServiceAccount" => BuiltinPrinter {
            columns: SERVICE_ACCOUNT,
            cells: service_account,
        },
        "Event" => BuiltinPrinter {
            columns: EVENT,
            cells: event,
        },
        "Endpoints" => BuiltinPrinter {
            columns: ENDPOINTS,
            cells: endpoints,
        },
        "Pod" => BuiltinPrinter {
            columns: POD,
            cells: pod,
        },
        "PersistentVolumeClaim" => BuiltinPrinter {
            columns: PVC,
            cells: pvc,
        },
        "Node" => BuiltinPrinter {
            columns: NODE,
            cells: node,
        },
        _ => return None,
    };
    Some(printer)
}

const NAMESPACE: &[Column] = &[
    name_column(),
    column("Status", "Lifecycle phase of the namespace."),
    age_column(),
];

fn namespace(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(object)),
        json!(text(object, &["status", "phase"])),
        age_of(object, now),
    ]
}

const CONFIG_MAP: &[Column] = &[
    name_column(),
    column("Data", "Number of data entries."),
    age_column(),
];

fn config_map(object: &Value, now: Timestamp) -> Vec<Value> {
    let entries = map_len(object, &["data"]) + map_len(object, &["binaryData"]);
    vec![json!(name(object)), json!(entries), age_of(object, now)]
}

const SECRET: &[Column] = &[
    name_column(),
    column("Type", "Type of the secret."),
    column("Data", "Number of data entries."),
    age_column(),
];

fn secret(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(object)),
        json!(text(object, &["type"])),
        json!(map_len(object, &["data"])),
        age_of(object, now),
    ]
}

const SERVICE: &[Column] = &[
    name_column(),
    column("Type", "How the service is exposed."),
    column("Cluster-IP", "Virtual IP inside the cluster."),
    column(
        "External-IP",
        "Addresses reachable from outside the cluster.",
    ),
    column("Port(s)", "Exposed ports."),
    age_column(),
    wide("Selector", "Label selector of the backing pods."),
];

fn service(object: &Value, now: Timestamp) -> Vec<Value> {
    let type_ = match text(object, &["spec", "type"]) {
        "" => "ClusterIP",
        other => other,
    };
    let external_ips: Vec<String> = list(object, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let external = match type_ {
        "LoadBalancer" => {
            let mut addresses: Vec<String> = list(object, &["status", "loadBalancer", "ingress"])
                .iter()
                .map(|ingress| {
                    if text(ingress, &["ip"]).is_empty() {
                        text(ingress, &["hostname"])
                    } else {
                        text(ingress, &["ip"])
                    }
                })
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect();
            addresses.extend(external_ips);
            if addresses.is_empty() {
                "<pending>".to_string()
            } else {
                addresses.join(",")
            }
        }
        "ExternalName" => text(object, &["spec", "externalName"]).to_string(),
        _ => {
            if external_ips.is_empty() {
                NONE.to_string()
            } else {
                external_ips.join(",")
            }
        }
    };
    let ports: Vec<String> = list(object, &["spec", "ports"])
        .iter()
        .map(|port| {
            let protocol = match text(port, &["protocol"]) {
                "" => "TCP",
                other => other,
            };
            match int(port, &["nodePort"]) {
                0 => format!("{}/{protocol}", int(port, &["port"])),
                node_port => format!("{}:{node_port}/{protocol}", int(port, &["port"])),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        NONE.to_string()
    } else {
        ports.join(",")
    };
    vec![
        json!(name(object)),
        json!(type_),
        json!(text_or_none(object, &["spec", "clusterIP"])),
        json!(external),
        json!(ports),
        age_of(object, now),
        json!(cells::labels_string(at(object, &["spec", "selector"]))),
    ]
}

const SERVICE_ACCOUNT: &[Column] = &[
    name_column(),
    column("Secrets", "Number of secrets referenced."),
    age_column(),
];

fn service_account(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(object)),
        json!(list(object, &["secrets"]).len()),
        age_of(object, now),
    ]
}

const EVENT: &[Column] = &[
    column("Last Seen", "Time since the event was last observed."),
    column("Type", "Normal or Warning."),
    column("Reason", "Short machine-readable reason."),
    column("Object", "The object the event is about."),
    wide("Subobject", "Field path within the object."),
    wide("Source", "Component that reported the event."),
    column("Message", "Human-readable description."),
    wide("First Seen", "Time since the event was first observed."),
    wide("Count", "How many times the event occurred."),
    wide("Name", "Name of the event object."),
];

fn event(object: &Value, now: Timestamp) -> Vec<Value> {
    let event_time = &object["eventTime"];
    let last_seen = [
        &object["series"]["lastObservedTime"],
        &object["lastTimestamp"],
        event_time,
    ]
    .into_iter()
    .find_map(age::parse_time)
    .map_or_else(
        || "<unknown>".to_string(),
        |then| age::human_duration(age::seconds_between(then, now)),
    );
    let first_seen = [&object["firstTimestamp"], event_time]
        .into_iter()
        .find_map(age::parse_time)
        .map_or_else(
            || "<unknown>".to_string(),
            |then| age::human_duration(age::seconds_between(then, now)),
        );
    let involved = format!(
        "{}/{}",
        text(object, &["involvedObject", "kind"]).to_ascii_lowercase(),
        text(object, &["involvedObject", "name"])
    );
    let component = match text(object, &["source", "component"]) {
        "" => text(object, &["reportingComponent"]),
        other => other,
    };
    let host = match text(object, &["source", "host"]) {
        "" => text(object, &["reportingInstance"]),
        other => other,
    };
    let source = [component, host]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    let count = match int(object, &["series", "count"]) {
        0 => int(object, &["count"]),
        series => series,
    };
    vec![
        json!(last_seen),
        json!(text(object, &["type"])),
        json!(text(object, &["reason"])),
        json!(involved),
        json!(text(object, &["involvedObject", "fieldPath"])),
        json!(source),
        json!(text(object, &["message"])),
        json!(first_seen),
        json!(count),
        json!(name(object)),
    ]
}

const ENDPOINTS: &[Column] = &[
    name_column(),
    column("Endpoints", "Ready addresses and ports."),
    age_column(),
];

fn endpoints(object: &Value, now: Timestamp) -> Vec<Value> {
    let mut entries = Vec::new();
    for subset in list(object, &["subsets"]) {
        let ports = list(subset, &["ports"]);
        for address in list(subset, &["addresses"]) {
            let ip = text(address, &["ip"]);
            if ports.is_empty() {
                entries.push(ip.to_string());
            }
            for port in ports {
                entries.push(format!("{ip}:{}", int(port, &["port"])));
            }
        }
    }
    let cell = if entries.is_empty() {
        NONE.to_string()
    } else {
        cells::shorten(&entries, 3)
    };
    vec![json!(name(object)), json!(cell), age_of(object, now)]
}

const POD: &[Column] = &[
    name_column(),
    column("Ready", "Ready containers out of all containers."),
    column("Status", "Aggregate status of the pod."),
    column(
        "Restarts",
        "Container restarts, and how long ago the last one was.",
    ),
    age_column(),
    wide("IP", "Pod IP address."),
    wide("Node", "Node the pod is bound to."),
    wide("Nominated Node", "Node nominated by preemption."),
    wide("Readiness Gates", "Readiness gates that are satisfied."),
];

fn pod(object: &Value, now: Timestamp) -> Vec<Value> {
    let statuses = list(object, &["status", "containerStatuses"]);
    let total = list(object, &["spec", "containers"]).len();
    let ready = statuses
        .iter()
        .filter(|s| s["ready"].as_bool() == Some(true))
        .count();
    let mut restarts = 0;
    let mut last_restart: Option<Timestamp> = None;
    for status in statuses {
        restarts += int(status, &["restartCount"]);
        if let Some(finished) = age::parse_time(&status["lastState"]["terminated"]["finishedAt"]) {
            last_restart = Some(last_restart.map_or(finished, |seen| seen.max(finished)));
        }
    }
    let restarts = match last_restart {
        Some(when) if restarts > 0 => {
            format!(
                "{restarts} ({} ago)",
                age::human_duration(age::seconds_between(when, now))
            )
        }
        _ => restarts.to_string(),
    };
    let gates = list(object, &["spec", "readinessGates"]);
    let gates_cell = if gates.is_empty() {
        NONE.to_string()
    } else {
        let satisfied = gates
            .iter()
            .filter(|gate| {
                cells::condition_status(
                    object,
                    &["status", "conditions"],
                    text(gate, &["conditionType"]),
                ) == Some("True")
            })
            .count();
        format!("{satisfied}/{}", gates.len())
    };
    vec![
        json!(name(object)),
        json!(format!("{ready}/{total}")),
        json!(pod_status(object)),
        json!(restarts),
        age_of(object, now),
        json!(text_or_none(object, &["status", "podIP"])),
        json!(text_or_none(object, &["spec", "nodeName"])),
        json!(text_or_none(object, &["status", "nominatedNodeName"])),
        json!(gates_cell),
    ]
}

/// The STATUS cell: the most telling reason among phase, init containers and containers.
fn pod_status(object: &Value) -> String {
    let mut reason = match text(object, &["status", "reason"]) {
        "" => text(object, &["status", "phase"]).to_string(),
        reason => reason.to_string(),
    };
    let init_statuses = list(object, &["status", "initContainerStatuses"]);
    let init_total = list(object, &["spec", "initContainers"]).len();
    let mut initializing = false;
    for (index, status) in init_statuses.iter().enumerate() {
        let terminated = &status["state"]["terminated"];
        if terminated.is_object() && int(terminated, &["exitCode"]) == 0 {
            continue;
        }
        if status["started"].as_bool() == Some(true) && status["ready"].as_bool() == Some(true) {
            continue; // a running sidecar (restartable init container)
        }
        initializing = true;
        reason = if terminated.is_object() {
            match text(terminated, &["reason"]) {
                "" => match int(terminated, &["signal"]) {
                    0 => format!("Init:ExitCode:{}", int(terminated, &["exitCode"])),
                    signal => format!("Init:Signal:{signal}"),
                },
                r => format!("Init:{r}"),
            }
        } else {
            match text(status, &["state", "waiting", "reason"]) {
                "" | "PodInitializing" => format!("Init:{index}/{init_total}"),
                r => format!("Init:{r}"),
            }
        };
        break;
    }
    if !initializing {
        let mut has_running = false;
        for status in list(object, &["status", "containerStatuses"]).iter().rev() {
            let state = &status["state"];
            let waiting = text(state, &["waiting", "reason"]);
            let terminated = &state["terminated"];
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if terminated.is_object() {
                reason = match text(terminated, &["reason"]) {
                    "" => match int(terminated, &["signal"]) {
                        0 => format!("ExitCode:{}", int(terminated, &["exitCode"])),
                        signal => format!("Signal:{signal}"),
                    },
                    r => r.to_string(),
                };
            } else if state["running"].is_object() && status["ready"].as_bool() == Some(true) {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            reason = if cells::condition_status(object, &["status", "conditions"], "Ready")
                == Some("True")
            {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }
    if at(object, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        reason = if text(object, &["status", "reason"]) == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    or_none(&reason)
}

const PVC: &[Column] = &[
    name_column(),
    column("Status", "Binding phase of the claim."),
    column("Volume", "Bound persistent volume."),
    column("Capacity", "Capacity of the bound volume."),
    column("Access Modes", "Access modes of the bound volume."),
    column("StorageClass", "Storage class requested."),
    column(
        "VolumeAttributesClass",
        "Volume attributes class in effect.",
    ),
    age_column(),
    wide("VolumeMode", "Filesystem or Block."),
];

fn pvc(object: &Value, now: Timestamp) -> Vec<Value> {
    let deleting = at(object, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    let phase = if deleting {
        "Terminating"
    } else {
        text(object, &["status", "phase"])
    };
    let volume = text(object, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            text(object, &["status", "capacity", "storage"]).to_string(),
            cells::access_modes(list(object, &["status", "accessModes"])),
        )
    };
    let class = match text(object, &["spec", "storageClassName"]) {
        "" => text(
            object,
            &[
                "metadata",
                "annotations",
                "volume.beta.kubernetes.io/storage-class",
            ],
        ),
        class => class,
    };
    let attributes_class = match text(object, &["status", "currentVolumeAttributesClassName"]) {
        "" => "<unset>",
        class => class,
    };
    let mode = match text(object, &["spec", "volumeMode"]) {
        "" => "<unset>",
        mode => mode,
    };
    vec![
        json!(name(object)),
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(attributes_class),
        age_of(object, now),
        json!(mode),
    ]
}

const NODE: &[Column] = &[
    name_column(),
    column("Status", "Readiness of the node."),
    column("Roles", "Roles from node-role labels."),
    age_column(),
    column("Version", "Kubelet version."),
    wide("Internal-IP", "Internal address."),
    wide("External-IP", "External address."),
    wide("OS-Image", "Operating system image."),
    wide("Kernel-Version", "Kernel version."),
    wide("Container-Runtime", "Container runtime and version."),
];

fn node(object: &Value, now: Timestamp) -> Vec<Value> {
    let mut status = match cells::condition_status(object, &["status", "conditions"], "Ready") {
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if object["spec"]["unschedulable"].as_bool() == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = Vec::new();
    if let Some(labels) = at(object, &["metadata", "labels"]).and_then(Value::as_object) {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role.to_string());
                }
            } else if key == "kubernetes.io/role" && value.as_str().is_some_and(|v| !v.is_empty()) {
                roles.push(value.as_str().unwrap_or_default().to_string());
            }
        }
    }
    roles.sort();
    roles.dedup();
    let address = |type_: &str| {
        list(object, &["status", "addresses"])
            .iter()
            .find(|a| text(a, &["type"]) == type_)
            .map_or_else(|| NONE.to_string(), |a| text(a, &["address"]).to_string())
    };
    let info = |field: &str| match text(object, &["status", "nodeInfo", field]) {
        "" => "<unknown>".to_string(),
        value => value.to_string(),
    };
    vec![
        json!(name(object)),
        json!(status),
        json!(if roles.is_empty() {
            NONE.to_string()
        } else {
            roles.join(",")
        }),
        age_of(object, now),
        json!(text(object, &["status", "nodeInfo", "kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}
