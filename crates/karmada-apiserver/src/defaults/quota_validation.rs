//! kube-apiserver v1.32's ResourceQuota rules (resource names, quantities, scopes, scope
//! selectors) with its field paths and messages, and the resource-name and quantity helpers
//! LimitRange and PersistentVolume share. Quantities shown as a bad value are quoted here;
//! upstream prints some of them bare.

use serde_json::{Map, Value};

use apimachinery::names::qualified_name_problems;
use apimachinery::{FieldError, Quantity};

use super::rules::{IMMUTABLE, NON_NEGATIVE};

const QUOTA_SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];
const CONFLICTING_SCOPES: [[&str; 2]; 2] = [
    ["BestEffort", "NotBestEffort"],
    ["Terminating", "NotTerminating"],
];
/// Resources the pod-lifecycle scopes can restrict.
const POD_COMPUTE_RESOURCES: [&str; 6] = [
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];
/// Counted, not measured: their quota must be whole.
const INTEGER_RESOURCES: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];
const QUOTA_RESOURCES: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// The quantity in a resource map, or `None` after reporting why it cannot be read.
pub(super) fn quantity(
    value: &Value,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<Quantity> {
    let parsed = match value {
        Value::String(text) => Quantity::parse(text),
        Value::Number(number) => Quantity::parse(&number.to_string()),
        other => {
            errors.push(FieldError::invalid(
                field,
                other.clone(),
                "must be a quantity such as 500m or 2Gi",
            ));
            return None;
        }
    };
    match parsed {
        Ok(quantity) => Some(quantity),
        Err(_) => {
            errors.push(FieldError::invalid(
                field,
                value.clone(),
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            ));
            None
        }
    }
}

/// Every quota resource is a standard resource; so is `storage`.
fn is_standard_resource(name: &str) -> bool {
    QUOTA_RESOURCES.contains(&name) || name == "storage" || is_quota_huge_pages(name)
}

fn is_quota_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// Unprefixed names and `*kubernetes.io/` ones belong to Kubernetes itself.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && qualified_name_problems(&format!("requests.{name}")).is_empty()
}

/// Hugepages and extended resources cannot be overcommitted.
pub(super) fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !name.starts_with("hugepages-")
}

/// A qualified name; an unprefixed one must be a resource Kubernetes knows.
pub(super) fn resource_name_problems(name: &str) -> Vec<String> {
    let problems = qualified_name_problems(name);
    if problems.is_empty() && !name.contains('/') && !is_standard_resource(name) {
        return vec!["must be a standard resource type or fully qualified".to_string()];
    }
    problems
}

fn quota_resource_name_problems(name: &str) -> Vec<String> {
    let mut problems = resource_name_problems(name);
    if !name.contains('/') && !QUOTA_RESOURCES.contains(&name) && !is_quota_huge_pages(name) {
        problems.push("must be a standard resource for quota".to_string());
    }
    problems
}

pub(super) fn container_resource_name_problems(name: &str) -> Vec<String> {
    let mut problems = resource_name_problems(name);
    if !name.contains('/') {
        let standard = ["cpu", "memory", "ephemeral-storage"].contains(&name)
            || name.starts_with("hugepages-");
        if !standard {
            problems.push("must be a standard resource for containers".to_string());
        }
    } else if !is_native(name) && !is_extended(name) {
        problems.push("doesn't follow extended resource name standard".to_string());
    }
    problems
}

pub fn validate_resource_quota(
    spec: &Map<String, Value>,
    old_spec: Option<&Map<String, Value>>,
    errors: &mut Vec<FieldError>,
) {
    let hard = spec.get("hard").and_then(Value::as_object);
    for (name, value) in hard.into_iter().flatten() {
        let field = format!("spec.hard[{name}]");
        for problem in quota_resource_name_problems(name) {
            errors.push(FieldError::invalid(
                field.clone(),
                Value::from(name.as_str()),
                problem,
            ));
        }
        let Some(amount) = quantity(value, &field, errors) else {
            continue;
        };
        if amount < Quantity::zero() {
            errors.push(FieldError::invalid(
                field.clone(),
                Value::from(amount.to_string()),
                NON_NEGATIVE,
            ));
        }
        let integer = INTEGER_RESOURCES.contains(&name.as_str()) || is_extended(name);
        if integer && amount.milli_value() % 1000 != 0 {
            errors.push(FieldError::invalid(
                field,
                Value::from(amount.to_string()),
                "must be an integer",
            ));
        }
    }
    let mut resources: Vec<&str> = hard
        .into_iter()
        .flatten()
        .map(|(name, _)| name.as_str())
        .collect();
    resources.sort_unstable();
    validate_scopes(spec, &resources, errors);
    validate_scope_selector(spec, &resources, errors);
    if let Some(old_spec) = old_spec {
        let scopes = |spec: &Map<String, Value>| {
            let mut scopes: Vec<String> = crate::objects::string_list(spec.get("scopes"));
            scopes.sort_unstable();
            scopes.dedup();
            scopes
        };
        if scopes(spec) != scopes(old_spec) {
            errors.push(FieldError::invalid(
                "spec.scopes",
                spec.get("scopes").cloned().unwrap_or(Value::Null),
                IMMUTABLE,
            ));
        }
    }
}

/// Whether a standard quota resource can be limited within `scope`.
fn scope_allows(scope: &str, resource: &str) -> bool {
    let standard = QUOTA_RESOURCES.contains(&resource) || is_quota_huge_pages(resource);
    let allowed = match scope {
        "BestEffort" => resource == "pods",
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => {
            resource == "pods" || POD_COMPUTE_RESOURCES.contains(&resource)
        }
        _ => true,
    };
    !standard || allowed
}

fn validate_scopes(spec: &Map<String, Value>, resources: &[&str], errors: &mut Vec<FieldError>) {
    let scopes = crate::objects::string_list(spec.get("scopes"));
    let shown = || spec.get("scopes").cloned().unwrap_or(Value::Null);
    for scope in &scopes {
        if !QUOTA_SCOPES.contains(&scope.as_str()) {
            errors.push(FieldError::invalid(
                "spec.scopes",
                shown(),
                "unsupported scope",
            ));
        }
        for resource in resources {
            if !scope_allows(scope, resource) {
                errors.push(FieldError::invalid(
                    "spec.scopes",
                    shown(),
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    for pair in CONFLICTING_SCOPES {
        if pair.iter().all(|s| scopes.iter().any(|scope| scope == s)) {
            errors.push(FieldError::invalid(
                "spec.scopes",
                shown(),
                "conflicting scopes",
            ));
        }
    }
}

/// Paths have no index: upstream reports `matchExpressions.<field>` for every expression.
fn validate_scope_selector(
    spec: &Map<String, Value>,
    resources: &[&str],
    errors: &mut Vec<FieldError>,
) {
    const PATH: &str = "spec.scopeSelector.matchExpressions";
    let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) else {
        return;
    };
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut scopes = Vec::new();
    for expression in expressions {
        let scope = expression
            .get("scopeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let operator = expression
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let values = expression
            .get("values")
            .and_then(Value::as_array)
            .filter(|v| !v.is_empty());
        if !QUOTA_SCOPES.contains(&scope) {
            errors.push(FieldError::invalid(
                format!("{PATH}.scopeName"),
                Value::from(scope),
                "unsupported scope",
            ));
        }
        for resource in resources {
            if !scope_allows(scope, resource) {
                errors.push(FieldError::invalid(
                    PATH,
                    selector.clone(),
                    "unsupported scope applied to resource",
                ));
            }
        }
        if QUOTA_SCOPES.contains(&scope) && scope != "PriorityClass" && operator != "Exists" {
            errors.push(FieldError::invalid(
                format!("{PATH}.operator"),
                Value::from(operator),
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        match (operator, values) {
            ("In" | "NotIn", None) => errors.push(FieldError::required(
                format!("{PATH}.values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            ("Exists" | "DoesNotExist", Some(values)) => errors.push(FieldError::invalid(
                format!("{PATH}.values"),
                Value::Array(values.clone()),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            ("In" | "NotIn" | "Exists" | "DoesNotExist", _) => {}
            _ => errors.push(FieldError::invalid(
                format!("{PATH}.operator"),
                Value::from(operator),
                "not a valid selector operator",
            )),
        }
        scopes.push(scope);
    }
    for pair in CONFLICTING_SCOPES {
        if pair.iter().all(|s| scopes.contains(s)) {
            // Upstream shows `spec.scopes` as the bad value here.
            errors.push(FieldError::invalid(
                PATH,
                spec.get("scopes").cloned().unwrap_or(Value::Null),
                "conflicting scopes",
            ));
        }
    }
}

#[cfg(test)]
#[path = "quota_validation_tests.rs"]
mod tests;
