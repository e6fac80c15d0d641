//! kube-apiserver v1.32's LimitRange rules: limit types, resource names per type, and the
//! orderings between min, max, default, defaultRequest and maxLimitRequestRatio, with its field
//! paths and messages. Upstream checks resources in Go map order; here they come sorted. It does
//! not require the quantities to be non-negative, so neither does this.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use apimachinery::names::qualified_name_problems;
use apimachinery::{FieldError, Quantity};

use super::quota_validation::{
    container_resource_name_problems, overcommit_allowed, quantity, resource_name_problems,
};

const LIMIT_TYPES: [&str; 3] = ["Pod", "Container", "PersistentVolumeClaim"];
/// Go's `resource.MaxMilliValue`: beyond it ratios are compared in whole units.
const MAX_MILLI_VALUE: i128 = i64::MAX as i128 / 1000;

fn limit_type_problems(limit_type: &str) -> Vec<String> {
    let problems = qualified_name_problems(limit_type);
    if problems.is_empty() && !limit_type.contains('/') && !LIMIT_TYPES.contains(&limit_type) {
        return vec!["must be a standard limit type or fully qualified".to_string()];
    }
    problems
}

pub fn validate_limit_range(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let limits = spec
        .get("limits")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    for (index, limit) in limits.iter().enumerate() {
        let path = format!("spec.limits[{index}]");
        let limit_type = limit
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        for problem in limit_type_problems(limit_type) {
            errors.push(FieldError::invalid(
                format!("{path}.type"),
                Value::from(limit_type),
                problem,
            ));
        }
        if seen.contains(&limit_type) {
            errors.push(FieldError::duplicate(
                format!("{path}.type"),
                Value::from(limit_type),
            ));
        }
        seen.push(limit_type);
        validate_limit(limit, limit_type, &path, errors);
    }
}

/// One `limits` entry: resource names, then the orderings between its quantities.
fn validate_limit(limit: &Value, limit_type: &str, path: &str, errors: &mut Vec<FieldError>) {
    let container_like = limit_type == "Pod" || limit_type == "Container";
    let read = |key: &str, errors: &mut Vec<FieldError>| -> BTreeMap<String, Quantity> {
        let mut parsed = BTreeMap::new();
        let entries = limit.get(key).and_then(Value::as_object);
        for (name, value) in entries.into_iter().flatten() {
            let field = format!("{path}.{key}[{name}]");
            let problems = if container_like {
                container_resource_name_problems(name)
            } else {
                resource_name_problems(name)
            };
            for problem in problems {
                errors.push(FieldError::invalid(
                    field.clone(),
                    Value::from(name.as_str()),
                    problem,
                ));
            }
            if let Some(amount) = quantity(value, &field, errors) {
                parsed.insert(name.clone(), amount);
            }
        }
        parsed
    };
    let max = read("max", errors);
    let min = read("min", errors);
    let (defaults, default_requests) = if limit_type == "Pod" {
        for key in ["default", "defaultRequest"] {
            if limit
                .get(key)
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
            {
                errors.push(FieldError::forbidden(
                    format!("{path}.{key}"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        }
        (BTreeMap::new(), BTreeMap::new())
    } else {
        (read("default", errors), read("defaultRequest", errors))
    };
    if limit_type == "PersistentVolumeClaim" {
        let has_storage = |key: &str| limit.get(key).and_then(|m| m.get("storage")).is_some();
        if !has_storage("min") && !has_storage("max") {
            errors.push(FieldError::required(
                format!("{path}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
    }
    let ratios = read("maxLimitRequestRatio", errors);
    let mut names: Vec<&String> = max
        .keys()
        .chain(min.keys())
        .chain(defaults.keys())
        .chain(default_requests.keys())
        .chain(ratios.keys())
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let bounds = Bounds {
            min: min.get(name),
            max: max.get(name),
            default: defaults.get(name),
            request: default_requests.get(name),
            ratio: ratios.get(name),
        };
        bounds.check(name, path, errors);
    }
}

/// The quantities one resource has in a `limits` entry.
struct Bounds<'a> {
    min: Option<&'a Quantity>,
    max: Option<&'a Quantity>,
    default: Option<&'a Quantity>,
    request: Option<&'a Quantity>,
    ratio: Option<&'a Quantity>,
}

impl Bounds<'_> {
    fn check(&self, name: &str, path: &str, errors: &mut Vec<FieldError>) {
        let field = |key: &str| format!("{path}.{key}[{name}]");
        let shown = |q: &Quantity| Value::from(q.to_string());
        let mut invalid = |key: &str, value: &Quantity, detail: String| {
            errors.push(FieldError::invalid(field(key), shown(value), detail));
        };
        // The bad value shown is upstream's choice, not always the field's own.
        if let (Some(min), Some(max)) = (self.min, self.max)
            && min > max
        {
            invalid(
                "min",
                min,
                format!("min value {min} is greater than max value {max}"),
            );
        }
        if let (Some(request), Some(min)) = (self.request, self.min)
            && min > request
        {
            invalid(
                "defaultRequest",
                request,
                format!("min value {min} is greater than default request value {request}"),
            );
        }
        if let (Some(request), Some(max)) = (self.request, self.max)
            && request > max
        {
            invalid(
                "defaultRequest",
                request,
                format!("default request value {request} is greater than max value {max}"),
            );
        }
        if let (Some(request), Some(default)) = (self.request, self.default)
            && request > default
        {
            invalid(
                "defaultRequest",
                request,
                format!(
                    "default request value {request} is greater than default limit value {default}"
                ),
            );
        }
        if let (Some(default), Some(min)) = (self.default, self.min)
            && min > default
        {
            invalid(
                "default",
                min,
                format!("min value {min} is greater than default value {default}"),
            );
        }
        if let (Some(default), Some(max)) = (self.default, self.max)
            && default > max
        {
            invalid(
                "default",
                max,
                format!("default value {default} is greater than max value {max}"),
            );
        }
        if let Some(ratio) = self.ratio {
            if *ratio < Quantity::from_milli(1000, ratio.format()) {
                invalid(
                    "maxLimitRequestRatio",
                    ratio,
                    format!("ratio {ratio} is less than 1"),
                );
            }
            if let (Some(min), Some(max)) = (self.min, self.max) {
                let limit = ratio_limit(ratio, min, max);
                if limit.0 > limit.1 {
                    invalid(
                        "maxLimitRequestRatio",
                        ratio,
                        format!("ratio {ratio} is greater than max/min = {:.6}", limit.1),
                    );
                }
            }
        }
        if let (Some(default), Some(request)) = (self.default, self.request)
            && !overcommit_allowed(name)
            && default != request
        {
            invalid(
                "defaultRequest",
                request,
                format!(
                    "default value {default} must equal to defaultRequest value {request} in {name}"
                ),
            );
        }
    }
}

/// The ratio and max/min as upstream compares them: in milli-units unless that would overflow.
fn ratio_limit(ratio: &Quantity, min: &Quantity, max: &Quantity) -> (f64, f64) {
    let small = [ratio, min, max]
        .iter()
        .all(|q| q.value() < MAX_MILLI_VALUE);
    if small {
        (
            ratio.milli_value() as f64 / 1000.0,
            max.milli_value() as f64 / min.milli_value() as f64,
        )
    } else {
        (
            ratio.value() as f64,
            max.value() as f64 / min.value() as f64,
        )
    }
}
