//! Cluster admission: zone migration, default and normalised resource models, NoExecute taint timestamps, and
//! validation of sync mode, name, endpoint, taints and models.

use std::collections::BTreeSet;

use apimachinery::FieldError;
use serde_json::{Map, Value, json};

use super::common::{check_dns_label, check_enum, decode, field, index, object_at};
use super::placement::TAINT_EFFECTS;
use super::{Operation, Request};
use crate::cluster::{Cluster, RESOURCE_MODEL_NAMES};

/// Longest cluster name: the execution namespace `karmada-es-<name>` must stay a valid namespace name.
const MAX_CLUSTER_NAME: usize = 48;
/// Upper bound of the last grade: the largest quantity.
const MAX_QUANTITY: &str = "9223372036854775807";
const SYNC_MODES: &[&str] = &["Push", "Pull"];

/// Default grades: (cpu cores, memory GiB) lower bounds; each grade ends where the next begins.
const DEFAULT_GRADE_BOUNDS: &[(u64, u64)] = &[
    (0, 0),
    (1, 4),
    (2, 16),
    (4, 32),
    (8, 64),
    (16, 128),
    (32, 256),
    (64, 512),
    (128, 1024),
];

pub(crate) fn admit(req: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match obj.pointer("/spec/syncMode") {
        None | Some(Value::Null) => errors.push(FieldError::required(
            "spec.syncMode",
            "supported values: \"Push\", \"Pull\"",
        )),
        Some(Value::String(mode)) => check_enum(&mut errors, "spec.syncMode", mode, SYNC_MODES),
        Some(other) => errors.push(FieldError::not_supported(
            "spec.syncMode",
            other.clone(),
            SYNC_MODES,
        )),
    }
    if !errors.is_empty() {
        return errors;
    }
    default(req, obj);
    match decode::<Cluster>(obj) {
        Ok(cluster) => validate(&cluster, &mut errors),
        Err(e) => errors.push(*e),
    }
    errors
}

/// The resource models used when a cluster declares none.
pub fn default_resource_models() -> Value {
    let grades = DEFAULT_GRADE_BOUNDS.len();
    let models: Vec<Value> = (0..grades)
        .map(|g| {
            let (cpu_min, mem_min) = DEFAULT_GRADE_BOUNDS[g];
            let upper = DEFAULT_GRADE_BOUNDS.get(g + 1);
            let cpu_max = upper.map_or(MAX_QUANTITY.to_string(), |(c, _)| c.to_string());
            let mem_max = upper.map_or(MAX_QUANTITY.to_string(), |(_, m)| format!("{m}Gi"));
            let mem_min = if mem_min == 0 {
                "0".to_string()
            } else {
                format!("{mem_min}Gi")
            };
            json!({
                "grade": g,
                "ranges": [
                    {"name": "cpu", "min": cpu_min.to_string(), "max": cpu_max},
                    {"name": "memory", "min": mem_min, "max": mem_max},
                ],
            })
        })
        .collect();
    Value::Array(models)
}

fn default(req: &mut Request<'_>, obj: &mut Value) {
    let now = req.ctx.now.clone();
    let create = req.op == Operation::Create;
    let Some(spec) = object_at(obj, &["spec"]) else {
        return;
    };
    move_zone(spec);
    if let Some(Value::Array(taints)) = spec.get_mut("taints") {
        for taint in taints.iter_mut().filter_map(Value::as_object_mut) {
            if taint.get("effect").and_then(Value::as_str) == Some("NoExecute")
                && taint.get("timeAdded").is_none_or(Value::is_null)
            {
                taint.insert("timeAdded".into(), json!(now));
            }
        }
    }
    let empty_models = spec
        .get("resourceModels")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty_models {
        if create {
            spec.insert("resourceModels".into(), default_resource_models());
        }
    } else if let Some(Value::Array(models)) = spec.get_mut("resourceModels") {
        normalise_models(models);
    }
}

fn move_zone(spec: &mut Map<String, Value>) {
    let zone = spec
        .get("zone")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let zones_empty = spec
        .get("zones")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if !zone.is_empty() && zones_empty {
        spec.insert("zones".into(), json!([zone]));
        spec.remove("zone");
    }
}

/// Sorts by grade, opens the first grade at 0 and the last at the largest quantity.
fn normalise_models(models: &mut [Value]) {
    models.sort_by_key(|m| m.get("grade").and_then(Value::as_u64).unwrap_or(u64::MAX));
    let last = models.len().saturating_sub(1);
    for (i, model) in models.iter_mut().enumerate() {
        let Some(Value::Array(ranges)) = model.get_mut("ranges") else {
            continue;
        };
        for range in ranges.iter_mut().filter_map(Value::as_object_mut) {
            if i == 0 {
                range.insert("min".into(), json!("0"));
            }
            if i == last {
                range.insert("max".into(), json!(MAX_QUANTITY));
            }
        }
    }
}

fn validate(cluster: &Cluster, errors: &mut Vec<FieldError>) {
    if let Some(name) = &cluster.metadata.name {
        check_dns_label(errors, "metadata.name", name, MAX_CLUSTER_NAME);
    }
    let spec = &cluster.spec;
    let endpoint = &spec.api_endpoint;
    if !(endpoint.is_empty() || endpoint.starts_with("https://") || endpoint.starts_with("http://"))
    {
        errors.push(FieldError::invalid(
            "spec.apiEndpoint",
            json!(spec.api_endpoint),
            "must be an http(s) URL, e.g. https://10.0.0.1:6443",
        ));
    }
    if !spec.proxy_url.is_empty() && !spec.proxy_url.contains("://") {
        errors.push(FieldError::invalid(
            "spec.proxyURL",
            json!(spec.proxy_url),
            "must be a URL, e.g. socks5://proxy:1080",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, taint) in spec.taints.iter().enumerate() {
        let p = index("spec.taints", i);
        if taint.key.is_empty() {
            errors.push(FieldError::required(field(&p, "key"), ""));
        }
        check_enum(errors, &field(&p, "effect"), &taint.effect, TAINT_EFFECTS);
        if !seen.insert((taint.key.clone(), taint.effect.clone())) {
            errors.push(FieldError::duplicate(
                p,
                json!({"key": taint.key, "effect": taint.effect}),
            ));
        }
    }
    let mut grades = BTreeSet::new();
    for (i, model) in spec.resource_models.iter().enumerate() {
        let p = index("spec.resourceModels", i);
        if !grades.insert(model.grade) {
            errors.push(FieldError::duplicate(
                field(&p, "grade"),
                json!(model.grade),
            ));
        }
        if model.ranges.is_empty() {
            errors.push(FieldError::required(
                field(&p, "ranges"),
                "at least one {name, min, max} range",
            ));
        }
        let mut names = BTreeSet::new();
        for (j, range) in model.ranges.iter().enumerate() {
            let rp = field(&index(&field(&p, "ranges"), j), "name");
            check_enum(errors, &rp, &range.name, RESOURCE_MODEL_NAMES);
            if !names.insert(range.name.as_str()) {
                errors.push(FieldError::duplicate(rp.clone(), json!(range.name)));
            }
            let range_path = index(&field(&p, "ranges"), j);
            let min = parse_quantity(errors, &field(&range_path, "min"), &range.min.0);
            let max = parse_quantity(errors, &field(&range_path, "max"), &range.max.0);
            if let (Some(min), Some(max)) = (min, max)
                && min >= max
            {
                errors.push(FieldError::invalid(
                    field(&range_path, "max"),
                    json!(range.max.0),
                    format!(
                        "must be greater than min ({}); a range is [min, max)",
                        range.min.0
                    ),
                ));
            }
        }
    }
}

/// Parses a quantity, recording an error that shows the accepted form when it is malformed.
pub(crate) fn parse_quantity(
    errors: &mut Vec<FieldError>,
    path: &str,
    text: &str,
) -> Option<apimachinery::Quantity> {
    match apimachinery::Quantity::parse(text) {
        Ok(q) => Some(q),
        Err(_) => {
            errors.push(FieldError::invalid(
                path,
                json!(text),
                "must be a quantity: a number with an optional suffix, such as 500m, 2, 4Gi or 1e3",
            ));
            None
        }
    }
}
