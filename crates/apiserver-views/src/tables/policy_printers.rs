//! Printers for the namespace and cluster policy kinds: ResourceQuota, LimitRange (core),
//! NetworkPolicy and IngressClass (`networking.k8s.io`), PriorityClass (`scheduling.k8s.io`),
//! APIService (`apiregistration.k8s.io`).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::age_of;
use super::cells::{self, NONE, at, int, name, text};
use super::other_printers::{CREATED_AT, created_at};
use super::{BuiltinPrinter, Column, age_column, column, name_column};

pub fn printer(group: &str, kind: &str) -> Option<BuiltinPrinter> {
    let printer = match (group, kind) {
        ("", "ResourceQuota") => BuiltinPrinter {
            columns: RESOURCE_QUOTA,
            cells: resource_quota,
        },
        ("", "LimitRange") => BuiltinPrinter {
            columns: CREATED_AT,
            cells: created_at,
        },
        ("networking.k8s.io", "NetworkPolicy") => BuiltinPrinter {
            columns: NETWORK_POLICY,
            cells: network_policy,
        },
        ("networking.k8s.io", "IngressClass") => BuiltinPrinter {
            columns: INGRESS_CLASS,
            cells: ingress_class,
        },
        ("scheduling.k8s.io", "PriorityClass") => BuiltinPrinter {
            columns: PRIORITY_CLASS,
            cells: priority_class,
        },
        ("apiregistration.k8s.io", "APIService") => BuiltinPrinter {
            columns: API_SERVICE,
            cells: api_service,
        },
        _ => return None,
    };
    Some(printer)
}

/// Kubernetes v1.32 order: AGE before the usage columns (later releases moved it last).
const RESOURCE_QUOTA: &[Column] = &[
    name_column(),
    age_column(),
    column("Request", "Used and hard amounts of requested resources."),
    column("Limit", "Used and hard amounts of resource limits."),
];

/// REQUEST and LIMIT list `resource: used/hard` for every hard limit the quota controller
/// recorded in `status.hard`, sorted by resource; `limits.*` go to LIMIT, everything else to
/// REQUEST.
fn resource_quota(object: &Value, now: Timestamp) -> Vec<Value> {
    let mut resources: Vec<(&String, &Value)> = at(object, &["status", "hard"])
        .and_then(Value::as_object)
        .map(|hard| hard.iter().collect())
        .unwrap_or_default();
    resources.sort_by(|a, b| a.0.cmp(b.0));
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    for (resource, hard) in resources {
        let used = cells::quantity(at(object, &["status", "used", resource]), "0");
        let entry = format!("{resource}: {used}/{}", cells::quantity(Some(hard), "0"));
        let is_limit = resource
            .split_once('.')
            .is_some_and(|(prefix, _)| prefix == "limits");
        if is_limit {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    vec![
        json!(name(object)),
        age_of(object, now),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
    ]
}

const NETWORK_POLICY: &[Column] = &[
    name_column(),
    column("Pod-Selector", "Pods the policy applies to."),
    age_column(),
];

fn network_policy(object: &Value, now: Timestamp) -> Vec<Value> {
    let selector = cells::selector_string(at(object, &["spec", "podSelector"]));
    vec![
        json!(name(object)),
        json!(cells::or_none(&selector)),
        age_of(object, now),
    ]
}

const INGRESS_CLASS: &[Column] = &[
    name_column(),
    column("Controller", "Controller that implements the class."),
    column("Parameters", "Resource with the class's parameters."),
    age_column(),
];

fn ingress_class(object: &Value, now: Timestamp) -> Vec<Value> {
    let parameters = at(object, &["spec", "parameters"])
        .filter(|p| p.is_object())
        .map_or_else(
            || NONE.to_string(),
            |p| {
                let mut kind = text(p, &["kind"]).to_string();
                if let Some(group) = at(p, &["apiGroup"]).and_then(Value::as_str) {
                    kind = format!("{kind}.{group}");
                }
                format!("{kind}/{}", text(p, &["name"]))
            },
        );
    vec![
        json!(name(object)),
        json!(text(object, &["spec", "controller"])),
        json!(parameters),
        age_of(object, now),
    ]
}

const PRIORITY_CLASS: &[Column] = &[
    name_column(),
    Column {
        name: "Value",
        type_: "integer",
        format: "",
        description: "Priority of the pods that name the class.",
        priority: 0,
    },
    Column {
        name: "Global-Default",
        type_: "boolean",
        format: "",
        description: "Whether pods without a class get this one.",
        priority: 0,
    },
    age_column(),
    column("PreemptionPolicy", "Whether the pods may preempt others."),
];

fn priority_class(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(object)),
        json!(int(object, &["value"])),
        json!(
            at(object, &["globalDefault"])
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age_of(object, now),
        json!(text(object, &["preemptionPolicy"])),
    ]
}

const API_SERVICE: &[Column] = &[
    name_column(),
    column(
        "Service",
        "The reference to the service that hosts this API endpoint.",
    ),
    column("Available", "Whether this service is available."),
    age_column(),
];

/// SERVICE is `namespace/name` or `Local`; AVAILABLE the Available condition's status, with its
/// reason in parentheses when it is not True (`False (FailedDiscoveryCheck)`).
fn api_service(object: &Value, now: Timestamp) -> Vec<Value> {
    let service = match at(object, &["spec", "service"]) {
        Some(service) if service.is_object() => format!(
            "{}/{}",
            text(service, &["namespace"]),
            text(service, &["name"])
        ),
        _ => "Local".to_string(),
    };
    let available = at(object, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|all| {
            all.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
        })
        .map(|c| match (text(c, &["status"]), text(c, &["reason"])) {
            (status @ "True", _) | (status, "") => status.to_string(),
            (status, reason) => format!("{status} ({reason})"),
        })
        .unwrap_or_else(|| "Unknown".to_string());
    vec![
        json!(name(object)),
        json!(service),
        json!(available),
        age_of(object, now),
    ]
}
