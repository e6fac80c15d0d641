//! Printers for the kinds that set or bound a workload's replicas: HorizontalPodAutoscaler,
//! PodDisruptionBudget, ReplicationController, and the PodTemplate.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::age_of;
use super::cells::{self, NONE, at, int, list, name, text};
use super::{BuiltinPrinter, Column, age_column, column, name_column, wide};

pub fn printer(group: &str, kind: &str) -> Option<BuiltinPrinter> {
    let printer = match (group, kind) {
        ("autoscaling", "HorizontalPodAutoscaler") => BuiltinPrinter {
            columns: HPA,
            cells: hpa,
        },
        ("policy", "PodDisruptionBudget") => BuiltinPrinter {
            columns: PDB,
            cells: pdb,
        },
        ("", "ReplicationController") => BuiltinPrinter {
            columns: REPLICATION_CONTROLLER,
            cells: replication_controller,
        },
        ("", "PodTemplate") => BuiltinPrinter {
            columns: POD_TEMPLATE,
            cells: pod_template,
        },
        _ => return None,
    };
    Some(printer)
}

const HPA: &[Column] = &[
    name_column(),
    column("Reference", "The scaled object, as Kind/name."),
    column("Targets", "Current and target value of each metric."),
    column("MinPods", "Lower limit of the replica count."),
    column("MaxPods", "Upper limit of the replica count."),
    column("Replicas", "Current replica count."),
    age_column(),
];

fn hpa(object: &Value, now: Timestamp) -> Vec<Value> {
    // Tables of `autoscaling/v1` objects show what v2 shows.
    let object = &*crate::conversion::hpa_as_v2(object);
    let min_pods = at(object, &["spec", "minReplicas"])
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_string(), |n| n.to_string());
    vec![
        json!(name(object)),
        json!(format!(
            "{}/{}",
            text(object, &["spec", "scaleTargetRef", "kind"]),
            text(object, &["spec", "scaleTargetRef", "name"])
        )),
        json!(hpa_targets(
            list(object, &["spec", "metrics"]),
            list(object, &["status", "currentMetrics"])
        )),
        json!(min_pods),
        json!(int(object, &["spec", "maxReplicas"])),
        json!(int(object, &["status", "currentReplicas"])),
        age_of(object, now),
    ]
}

/// How many metrics the TARGETS cell shows before `+ N more...`.
const SHOWN_METRICS: usize = 2;

/// The TARGETS cell: `current/target` per metric (`<unknown>` before the first measurement),
/// `name: ` before resource metrics, ` (avg)` after average-value targets of object and external
/// metrics; the status list is matched to the spec list by position, as kubectl does.
fn hpa_targets(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return NONE.into();
    }
    let shown: Vec<String> = specs
        .iter()
        .take(SHOWN_METRICS)
        .enumerate()
        .map(|(index, spec)| metric_target(spec, statuses.get(index)))
        .collect();
    let joined = shown.join(", ");
    if specs.len() > SHOWN_METRICS {
        format!("{joined} + {} more...", specs.len() - SHOWN_METRICS)
    } else {
        joined
    }
}

const UNKNOWN: &str = "<unknown>";

/// A quantity as Go prints a `*Quantity` (`<nil>` when unset).
fn quantity_at(object: &Value, path: &[&str]) -> String {
    cells::quantity(at(object, path), "<nil>")
}

fn metric_target(spec: &Value, status: Option<&Value>) -> String {
    // The status entry of the same source type, if the controller has measured it.
    let measured = |source: &str| status.and_then(|s| s.get(source)).filter(|v| v.is_object());
    match text(spec, &["type"]) {
        source_type @ ("External" | "Object") => {
            let source = if source_type == "External" {
                "external"
            } else {
                "object"
            };
            let target = at(spec, &[source, "target"]).unwrap_or(&Value::Null);
            if at(target, &["averageValue"]).is_some_and(|v| !v.is_null()) {
                let current = measured(source)
                    .filter(|m| at(m, &["current", "averageValue"]).is_some_and(|v| !v.is_null()))
                    .map_or_else(
                        || UNKNOWN.to_string(),
                        |m| quantity_at(m, &["current", "averageValue"]),
                    );
                format!("{current}/{} (avg)", quantity_at(target, &["averageValue"]))
            } else {
                let current = measured(source).map_or_else(
                    || UNKNOWN.to_string(),
                    |m| quantity_at(m, &["current", "value"]),
                );
                format!("{current}/{}", quantity_at(target, &["value"]))
            }
        }
        "Pods" => {
            let current = measured("pods").map_or_else(
                || UNKNOWN.to_string(),
                |m| quantity_at(m, &["current", "averageValue"]),
            );
            format!(
                "{current}/{}",
                quantity_at(spec, &["pods", "target", "averageValue"])
            )
        }
        source_type @ ("Resource" | "ContainerResource") => {
            let source = if source_type == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let resource = text(spec, &[source, "name"]);
            let target = at(spec, &[source, "target"]).unwrap_or(&Value::Null);
            if at(target, &["averageValue"]).is_some_and(|v| !v.is_null()) {
                let current = measured(source).map_or_else(
                    || UNKNOWN.to_string(),
                    |m| quantity_at(m, &["current", "averageValue"]),
                );
                format!(
                    "{resource}: {current}/{}",
                    quantity_at(target, &["averageValue"])
                )
            } else {
                let percent =
                    |value: Option<&Value>| value.and_then(Value::as_i64).map(|n| format!("{n}%"));
                let current = measured(source)
                    .and_then(|m| percent(at(m, &["current", "averageUtilization"])))
                    .unwrap_or_else(|| UNKNOWN.to_string());
                let wanted = percent(at(target, &["averageUtilization"]))
                    .unwrap_or_else(|| "<auto>".to_string());
                format!("{resource}: {current}/{wanted}")
            }
        }
        _ => "<unknown type>".into(),
    }
}

const PDB: &[Column] = &[
    name_column(),
    column("Min Available", "Pods that must stay available."),
    column("Max Unavailable", "Pods that may be unavailable."),
    Column {
        name: "Allowed Disruptions",
        type_: "integer",
        format: "",
        description: "Pods that may be disrupted now.",
        priority: 0,
    },
    age_column(),
];

fn pdb(object: &Value, now: Timestamp) -> Vec<Value> {
    let bound = |field: &str| {
        cells::int_or_string(at(object, &["spec", field])).unwrap_or_else(|| "N/A".to_string())
    };
    vec![
        json!(name(object)),
        json!(bound("minAvailable")),
        json!(bound("maxUnavailable")),
        json!(int(object, &["status", "disruptionsAllowed"])),
        age_of(object, now),
    ]
}

const REPLICATION_CONTROLLER: &[Column] = &[
    name_column(),
    column("Desired", "Desired replicas."),
    column("Current", "Observed replicas."),
    column("Ready", "Ready replicas."),
    age_column(),
    wide("Containers", "Names of the containers in the pod template."),
    wide("Images", "Images of the containers in the pod template."),
    wide("Selector", "Label selector of the managed pods."),
];

fn replication_controller(object: &Value, now: Timestamp) -> Vec<Value> {
    let (containers, images) =
        cells::containers_and_images(at(object, &["spec", "template", "spec"]));
    let desired = at(object, &["spec", "replicas"])
        .and_then(Value::as_i64)
        .unwrap_or(1);
    vec![
        json!(name(object)),
        json!(desired),
        json!(int(object, &["status", "replicas"])),
        json!(int(object, &["status", "readyReplicas"])),
        age_of(object, now),
        json!(containers),
        json!(images),
        json!(cells::labels_string(at(object, &["spec", "selector"]))),
    ]
}

const POD_TEMPLATE: &[Column] = &[
    name_column(),
    column("Containers", "Names of the containers in the template."),
    column("Images", "Images of the containers in the template."),
    column("Pod Labels", "Labels of the template's pods."),
];

fn pod_template(object: &Value, _now: Timestamp) -> Vec<Value> {
    let (containers, images) = cells::containers_and_images(at(object, &["template", "spec"]));
    vec![
        json!(name(object)),
        json!(containers),
        json!(images),
        json!(cells::labels_string(at(
            object,
            &["template", "metadata", "labels"]
        ))),
    ]
}
