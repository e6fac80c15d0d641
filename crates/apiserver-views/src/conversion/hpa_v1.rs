//! `autoscaling/v1` HorizontalPodAutoscaler as a view of the stored `autoscaling/v2` object,
//! converted as kube-apiserver converts it. v1 has fields for the CPU utilization target and its
//! current value only; everything else v2 holds (the other metrics, every current metric, the
//! conditions, the scaling behavior) travels in four annotations, so a v1 client that reads an
//! object and writes it back loses nothing.

use apimachinery::FieldError;
use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// The annotations only a v1 view may carry; a stored (v2) object never keeps them.
pub const ROUND_TRIP_ANNOTATIONS: [&str; 4] = [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR];

/// What v1 implies when an object names no metric at all (kube-apiserver's conversion applies it).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The stored v2 object as an `autoscaling/v1` client sees it.
pub fn from_v2(v2: &Value) -> Value {
    let empty = Map::new();
    let spec = v2.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let status = v2.get("status").and_then(Value::as_object);
    let mut metadata = v2.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut carried = Vec::new();
    let other_metrics: Vec<Value> = list(spec.get("metrics"))
        .iter()
        .filter(|metric| cpu_utilization_target(metric).is_none())
        .map(|metric| metric_to_v1(metric, Side::Target))
        .collect();
    if !other_metrics.is_empty() {
        carried.push((METRICS, Value::Array(other_metrics)));
    }
    let current: Vec<Value> = list(status.and_then(|s| s.get("currentMetrics")))
        .iter()
        .map(|metric| metric_to_v1(metric, Side::Current))
        .collect();
    if !current.is_empty() {
        carried.push((CURRENT_METRICS, Value::Array(current)));
    }
    let conditions = list(status.and_then(|s| s.get("conditions")));
    if !conditions.is_empty() {
        carried.push((CONDITIONS, Value::Array(conditions.to_vec())));
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        carried.push((BEHAVIOR, behavior.clone()));
    }
    set_annotations(&mut metadata, &carried);

    let mut v1_spec = copy_fields(spec, &["scaleTargetRef", "minReplicas", "maxReplicas"]);
    // Upstream stops at the first CPU metric even when it has no utilization target, and so loses a
    // utilization target after a CPU average-value one; taking the first utilization target loses nothing.
    if let Some(target) = list(spec.get("metrics"))
        .iter()
        .find_map(cpu_utilization_target)
    {
        v1_spec.insert("targetCPUUtilizationPercentage".into(), target);
    }
    let mut object = head("autoscaling/v1", v2, metadata);
    object.insert("spec".into(), Value::Object(v1_spec));
    if let Some(status) = status {
        let mut v1_status = copy_fields(
            status,
            &[
                "observedGeneration",
                "lastScaleTime",
                "currentReplicas",
                "desiredReplicas",
            ],
        );
        let current_cpu = list(status.get("currentMetrics"))
            .iter()
            .filter(|metric| is_cpu_resource(metric))
            .filter_map(|metric| metric.pointer("/resource/current/averageUtilization"))
            .next_back()
            .cloned();
        if let Some(current_cpu) = current_cpu {
            v1_status.insert("currentCPUUtilizationPercentage".into(), current_cpu);
        }
        object.insert("status".into(), Value::Object(v1_status));
    }
    Value::Object(object)
}

/// An `autoscaling/v1` object as the v2 object to store. Fails only on a round-trip annotation
/// that does not hold what v1 puts there.
pub fn to_v2(v1: &Value) -> Result<Value, Box<FieldError>> {
    let empty = Map::new();
    let spec = v1.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let status = v1.get("status").and_then(Value::as_object);
    let mut metadata = v1.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let carried = take_annotations(&mut metadata);

    let mut v2_spec = copy_fields(spec, &["scaleTargetRef", "minReplicas", "maxReplicas"]);
    let mut metrics: Vec<Value> = match carried_list(&carried, METRICS)? {
        Some(others) => others
            .iter()
            .map(|metric| metric_to_v2(metric, Side::Target))
            .collect(),
        None => Vec::new(),
    };
    if let Some(target) = spec.get("targetCPUUtilizationPercentage") {
        metrics.push(cpu_metric("target", "Utilization", target.clone()));
    }
    if metrics.is_empty() {
        metrics.push(cpu_metric(
            "target",
            "Utilization",
            json!(DEFAULT_CPU_UTILIZATION),
        ));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(behavior) = carried_value(&carried, BEHAVIOR)? {
        if !behavior.is_object() {
            return Err(annotation_error(&carried, BEHAVIOR));
        }
        v2_spec.insert("behavior".into(), behavior);
    }

    let mut object = head("autoscaling/v2", v1, metadata);
    object.insert("spec".into(), Value::Object(v2_spec));
    let current = carried_list(&carried, CURRENT_METRICS)?;
    let conditions = carried_list(&carried, CONDITIONS)?;
    if status.is_some() || current.is_some() || conditions.is_some() {
        let mut v2_status = status.map_or_else(Map::new, |status| {
            copy_fields(
                status,
                &[
                    "observedGeneration",
                    "lastScaleTime",
                    "currentReplicas",
                    "desiredReplicas",
                ],
            )
        });
        // The annotation has every current metric, raw values included: it wins over the CPU field.
        let current_metrics: Vec<Value> = match current {
            Some(current) => current
                .iter()
                .map(|metric| metric_to_v2(metric, Side::Current))
                .collect(),
            None => status
                .and_then(|s| s.get("currentCPUUtilizationPercentage"))
                .map(|cpu| vec![cpu_metric("current", "", cpu.clone())])
                .unwrap_or_default(),
        };
        if !current_metrics.is_empty() {
            v2_status.insert("currentMetrics".into(), Value::Array(current_metrics));
        }
        if let Some(conditions) = conditions {
            v2_status.insert("conditions".into(), Value::Array(conditions));
        }
        object.insert("status".into(), Value::Object(v2_status));
    }
    Ok(Value::Object(object))
}

/// Removes the round-trip annotations from a v2 object written as v2 (upstream drops them too).
pub fn drop_round_trip_annotations(v2: &mut Value) {
    if let Some(metadata) = v2.get_mut("metadata") {
        take_annotations(metadata);
    }
}

const METRICS_EXAMPLE: &str =
    r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]"#;
const CURRENT_METRICS_EXAMPLE: &str = r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":50,"currentAverageValue":"100m"}}]"#;
const CONDITIONS_EXAMPLE: &str =
    r#"[{"type":"AbleToScale","status":"True","reason":"SucceededGetScale"}]"#;
const BEHAVIOR_EXAMPLE: &str = r#"{"scaleDown":{"stabilizationWindowSeconds":300,"policies":[{"type":"Percent","value":10,"periodSeconds":60}]}}"#;

fn annotation_error(carried: &Map<String, Value>, key: &str) -> Box<FieldError> {
    let example = match key {
        METRICS => METRICS_EXAMPLE,
        CURRENT_METRICS => CURRENT_METRICS_EXAMPLE,
        CONDITIONS => CONDITIONS_EXAMPLE,
        _ => BEHAVIOR_EXAMPLE,
    };
    Box::new(FieldError::invalid(
        format!("metadata.annotations[{key}]"),
        carried.get(key).cloned().unwrap_or(Value::Null),
        format!("must hold JSON as autoscaling/v1 writes it, e.g. {example}"),
    ))
}

/// The value of a carried annotation, parsed; `None` when absent.
fn carried_value(
    carried: &Map<String, Value>,
    key: &str,
) -> Result<Option<Value>, Box<FieldError>> {
    let Some(text) = carried.get(key) else {
        return Ok(None);
    };
    text.as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .map(Some)
        .ok_or_else(|| annotation_error(carried, key))
}

fn carried_list(
    carried: &Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<Value>>, Box<FieldError>> {
    match carried_value(carried, key)? {
        None => Ok(None),
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => Ok(Some(items)),
        Some(_) => Err(annotation_error(carried, key)),
    }
}

/// Removes and returns the round-trip annotations; drops an annotations map left empty.
fn take_annotations(metadata: &mut Value) -> Map<String, Value> {
    let mut carried = Map::new();
    let Some(meta) = metadata.as_object_mut() else {
        return carried;
    };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return carried;
    };
    for key in ROUND_TRIP_ANNOTATIONS {
        if let Some(value) = annotations.remove(key) {
            carried.insert(key.into(), value);
        }
    }
    if annotations.is_empty() && !carried.is_empty() {
        meta.remove("annotations");
    }
    carried
}

/// Replaces the round-trip annotations with `carried` (JSON text of each value).
fn set_annotations(metadata: &mut Value, carried: &[(&str, Value)]) {
    take_annotations(metadata);
    if carried.is_empty() {
        return;
    }
    let Some(meta) = metadata.as_object_mut() else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        for (key, value) in carried {
            annotations.insert((*key).into(), Value::String(value.to_string()));
        }
    }
}

/// `apiVersion`, `kind` and `metadata` of the converted object.
fn head(api_version: &str, object: &Value, metadata: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("apiVersion".into(), json!(api_version));
    map.insert(
        "kind".into(),
        object
            .get("kind")
            .cloned()
            .unwrap_or_else(|| json!("HorizontalPodAutoscaler")),
    );
    map.insert("metadata".into(), metadata);
    map
}

fn list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn copy_fields(from: &Map<String, Value>, fields: &[&str]) -> Map<String, Value> {
    fields
        .iter()
        .filter_map(|field| from.get(*field).map(|v| ((*field).to_string(), v.clone())))
        .collect()
}

fn is_cpu_resource(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
}

/// The utilization target of a CPU resource metric: what v1's `targetCPUUtilizationPercentage` holds.
fn cpu_utilization_target(metric: &Value) -> Option<Value> {
    is_cpu_resource(metric)
        .then(|| {
            metric
                .pointer("/resource/target/averageUtilization")
                .cloned()
        })
        .flatten()
}

/// A v2 CPU resource metric with `averageUtilization` under `side` (`target` or `current`).
fn cpu_metric(side: &str, target_type: &str, utilization: Value) -> Value {
    let mut value = Map::new();
    if !target_type.is_empty() {
        value.insert("type".into(), json!(target_type));
    }
    value.insert("averageUtilization".into(), utilization);
    json!({"type": "Resource", "resource": {"name": "cpu", side: value}})
}

/// Copies `pairs` of (from, to) field names that are present.
fn renamed(from: Option<&Value>, pairs: &[(&str, &str)]) -> Map<String, Value> {
    let mut out = Map::new();
    for (source, target) in pairs {
        if let Some(value) = from.and_then(|f| f.get(*source)) {
            out.insert((*target).into(), value.clone());
        }
    }
    out
}

/// A v2 `MetricTarget` whose type follows upstream's rule for the source kind.
fn target(values: Map<String, Value>, target_type: &str) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(target_type));
    out.extend(values);
    Value::Object(out)
}

/// One metric, each source kind under the field of its name, everything else left as it is.
fn per_source(
    metric: &Value,
    convert: impl Fn(&str, &Value) -> Option<Map<String, Value>>,
) -> Value {
    let Some(map) = metric.as_object() else {
        return metric.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let converted = match key.as_str() {
            "object" | "pods" | "resource" | "containerResource" | "external" => {
                convert(key, value).map(Value::Object)
            }
            _ => None,
        };
        out.insert(key.clone(), converted.unwrap_or_else(|| value.clone()));
    }
    Value::Object(out)
}

/// Which half of a metric is converted: a spec's `target` or a status's `current`. v1 names the
/// values after it (`targetAverageValue`, `currentValue`, ...).
#[derive(Clone, Copy)]
enum Side {
    Target,
    Current,
}

impl Side {
    fn field(self) -> &'static str {
        match self {
            Side::Target => "target",
            Side::Current => "current",
        }
    }

    /// v1's names for `value`, `averageValue` and `averageUtilization`.
    fn v1_names(self) -> (String, String, String) {
        let side = self.field();
        (
            format!("{side}Value"),
            format!("{side}AverageValue"),
            format!("{side}AverageUtilization"),
        )
    }
}

fn metric_to_v1(metric: &Value, side: Side) -> Value {
    let (value_name, average_value, utilization) = side.v1_names();
    per_source(metric, |source, value| {
        let measured = value.get(side.field());
        let metric_id = value.get("metric");
        let mut out = Map::new();
        match source {
            "resource" | "containerResource" => {
                out.extend(renamed(
                    Some(value),
                    &[("name", "name"), ("container", "container")],
                ));
                out.extend(renamed(
                    measured,
                    &[
                        ("averageUtilization", &utilization),
                        ("averageValue", &average_value),
                    ],
                ));
            }
            "pods" => {
                out.extend(renamed(
                    metric_id,
                    &[("name", "metricName"), ("selector", "selector")],
                ));
                out.extend(renamed(measured, &[("averageValue", &average_value)]));
            }
            "object" => {
                out.extend(renamed(Some(value), &[("describedObject", "target")]));
                out.extend(renamed(
                    metric_id,
                    &[("name", "metricName"), ("selector", "selector")],
                ));
                out.extend(renamed(
                    measured,
                    &[("value", &value_name), ("averageValue", "averageValue")],
                ));
            }
            _ => {
                out.extend(renamed(
                    metric_id,
                    &[("name", "metricName"), ("selector", "metricSelector")],
                ));
                out.extend(renamed(
                    measured,
                    &[("value", &value_name), ("averageValue", &average_value)],
                ));
            }
        }
        Some(out)
    })
}

fn metric_to_v2(metric: &Value, side: Side) -> Value {
    let (value_name, average_value, utilization) = side.v1_names();
    per_source(metric, |source, value| {
        let has = |field: &str| value.get(field).is_some_and(|v| !v.is_null());
        let mut out = Map::new();
        // The measured values, and the target type upstream infers from which are set.
        let (values, target_type) = match source {
            "resource" | "containerResource" => {
                out.extend(renamed(Some(value), &[("name", "name")]));
                (
                    renamed(
                        Some(value),
                        &[
                            (&average_value, "averageValue"),
                            (&utilization, "averageUtilization"),
                        ],
                    ),
                    if has(&utilization) {
                        "Utilization"
                    } else {
                        "AverageValue"
                    },
                )
            }
            "pods" => {
                out.insert("metric".into(), metric_identifier(value, "selector"));
                (
                    renamed(Some(value), &[(&average_value, "averageValue")]),
                    "AverageValue",
                )
            }
            "object" => {
                out.extend(renamed(Some(value), &[("target", "describedObject")]));
                out.insert("metric".into(), metric_identifier(value, "selector"));
                (
                    renamed(
                        Some(value),
                        &[(&value_name, "value"), ("averageValue", "averageValue")],
                    ),
                    if has("averageValue") {
                        "AverageValue"
                    } else {
                        "Value"
                    },
                )
            }
            _ => {
                out.insert("metric".into(), metric_identifier(value, "metricSelector"));
                (
                    renamed(
                        Some(value),
                        &[(&value_name, "value"), (&average_value, "averageValue")],
                    ),
                    if has(&value_name) {
                        "Value"
                    } else {
                        "AverageValue"
                    },
                )
            }
        };
        let measured = match side {
            Side::Target => target(values, target_type),
            Side::Current => Value::Object(values),
        };
        out.insert(side.field().into(), measured);
        out.extend(renamed(Some(value), &[("container", "container")]));
        Some(out)
    })
}

/// v2's `metric: {name, selector}` from v1's `metricName` and a selector field.
fn metric_identifier(v1: &Value, selector_field: &str) -> Value {
    Value::Object(renamed(
        Some(v1),
        &[("metricName", "name"), (selector_field, "selector")],
    ))
}
