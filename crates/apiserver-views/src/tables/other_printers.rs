//! Printers for networking, discovery, coordination, RBAC and apiextensions kinds.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::age_of;
use super::cells::{self, NONE, int, list, name, text};
use super::{BuiltinPrinter, Column, age_column, column, name_column, wide};

pub fn printer(group: &str, kind: &str) -> Option<BuiltinPrinter> {
    let printer = match (group, kind) {
        ("networking.k8s.io", "Ingress") => BuiltinPrinter {
            columns: INGRESS,
            cells: ingress,
        },
        ("discovery.k8s.io", "EndpointSlice") => BuiltinPrinter {
            columns: ENDPOINT_SLICE,
            cells: endpoint_slice,
        },
        ("coordination.k8s.io", "Lease") => BuiltinPrinter {
            columns: LEASE,
            cells: lease,
        },
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => BuiltinPrinter {
            columns: CREATED_AT,
            cells: created_at,
        },
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => BuiltinPrinter {
            columns: BINDING,
            cells: binding,
        },
        ("apiextensions.k8s.io", "CustomResourceDefinition") => BuiltinPrinter {
            columns: CREATED_AT,
            cells: created_at,
        },
        _ => return None,
    };
    Some(printer)
}

const INGRESS: &[Column] = &[
    name_column(),
    column("Class", "Ingress class."),
    column("Hosts", "Hosts the rules match."),
    column("Address", "Load balancer addresses."),
    column("Ports", "Ports served."),
    age_column(),
];

fn ingress(object: &Value, now: Timestamp) -> Vec<Value> {
    let hosts: Vec<String> = list(object, &["spec", "rules"])
        .iter()
        .map(|rule| text(rule, &["host"]))
        .filter(|host| !host.is_empty())
        .map(str::to_string)
        .collect();
    let hosts = if hosts.is_empty() {
        "*".to_string()
    } else {
        cells::shorten(&hosts, 3)
    };
    let addresses: Vec<&str> = list(object, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|lb| {
            if text(lb, &["ip"]).is_empty() {
                text(lb, &["hostname"])
            } else {
                text(lb, &["ip"])
            }
        })
        .filter(|address| !address.is_empty())
        .collect();
    let ports = if list(object, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(name(object)),
        json!(cells::or_none(text(object, &["spec", "ingressClassName"]))),
        json!(hosts),
        json!(addresses.join(",")),
        json!(ports),
        age_of(object, now),
    ]
}

const ENDPOINT_SLICE: &[Column] = &[
    name_column(),
    column("AddressType", "Type of the addresses."),
    column("Ports", "Ports of the endpoints."),
    column("Endpoints", "Endpoint addresses."),
    age_column(),
];

fn endpoint_slice(object: &Value, now: Timestamp) -> Vec<Value> {
    let ports: Vec<String> = list(object, &["ports"])
        .iter()
        .map(|port| int(port, &["port"]).to_string())
        .collect();
    let addresses: Vec<String> = list(object, &["endpoints"])
        .iter()
        .flat_map(|endpoint| list(endpoint, &["addresses"]))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let unset = |items: &[String], rendered: String| {
        if items.is_empty() {
            "<unset>".to_string()
        } else {
            rendered
        }
    };
    vec![
        json!(name(object)),
        json!(text(object, &["addressType"])),
        json!(unset(&ports, ports.join(","))),
        json!(unset(&addresses, cells::shorten(&addresses, 3))),
        age_of(object, now),
    ]
}

const LEASE: &[Column] = &[
    name_column(),
    column("Holder", "Current holder of the lease."),
    age_column(),
];

fn lease(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(object)),
        json!(text(object, &["spec", "holderIdentity"])),
        age_of(object, now),
    ]
}

pub(super) const CREATED_AT: &[Column] = &[
    name_column(),
    Column {
        name: "Created At",
        type_: "date",
        format: "",
        description: "Creation time of the object.",
        priority: 0,
    },
];

/// Kinds without a printer upstream (Roles, CRDs, LimitRanges) get the default NAME / CREATED AT:
/// the creation time itself, not an age.
pub(super) fn created_at(object: &Value, _now: Timestamp) -> Vec<Value> {
    let created = super::age::parse_time(&object["metadata"]["creationTimestamp"]).map_or_else(
        || NONE.to_string(),
        |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    );
    vec![json!(name(object)), json!(created)]
}

const BINDING: &[Column] = &[
    name_column(),
    column("Role", "The bound role, as Kind/name."),
    age_column(),
    wide("Users", "Bound users."),
    wide("Groups", "Bound groups."),
    wide(
        "ServiceAccounts",
        "Bound service accounts, as namespace:name.",
    ),
];

fn binding(object: &Value, now: Timestamp) -> Vec<Value> {
    let subjects = list(object, &["subjects"]);
    let of_kind = |kind: &str| -> String {
        subjects
            .iter()
            .filter(|s| text(s, &["kind"]) == kind)
            .map(|s| {
                if kind == "ServiceAccount" {
                    format!("{}:{}", text(s, &["namespace"]), text(s, &["name"]))
                } else {
                    text(s, &["name"]).to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        json!(name(object)),
        json!(format!(
            "{}/{}",
            text(object, &["roleRef", "kind"]),
            text(object, &["roleRef", "name"])
        )),
        age_of(object, now),
        json!(of_kind("User")),
        json!(of_kind("Group")),
        json!(of_kind("ServiceAccount")),
    ]
}
