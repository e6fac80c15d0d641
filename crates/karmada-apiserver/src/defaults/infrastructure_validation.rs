//! kube-apiserver v1.32's field rules for PriorityClass (`scheduling.k8s.io`), StorageClass
//! (`storage.k8s.io`), IngressClass (`networking.k8s.io`) and PodTemplate (core), with its
//! field paths and messages. Not checked: StorageClass `allowedTopologies`.

use serde_json::{Map, Value};

use apimachinery::FieldError;
use apimachinery::names::{
    dns1123_label_problems, dns1123_subdomain_problems, qualified_name_problems,
    validate_label_value, validate_qualified_name,
};

use super::pod_validation::validate_pod_spec;
use super::rules::IMMUTABLE;

/// Highest `value` a PriorityClass not named `system-*` may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;
/// The predefined `system-*` classes and their values (neither is the global default).
const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];
const PREEMPTION_POLICIES: [&str; 2] = ["PreemptLowerPriority", "Never"];
const RECLAIM_POLICIES: [&str; 2] = ["Delete", "Retain"];
const BINDING_MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];
const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETERS_BYTES: usize = 256 * 1024;
const MAX_CONTROLLER_LEN: usize = 250;
const PARAMETER_SCOPES: [&str; 2] = ["Cluster", "Namespace"];

fn str_field<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

pub fn validate_priority_class(obj: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    if name.starts_with("system-") {
        if let Some(problem) = system_priority_class_problem(obj, name, value) {
            errors.push(FieldError::forbidden(
                "metadata.name",
                format!("priority class names with 'system-' prefix are reserved for system use only. error: {problem}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        errors.push(FieldError::forbidden(
            "value",
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    match obj.get("preemptionPolicy") {
        None | Some(Value::Null) => {}
        Some(policy)
            if policy
                .as_str()
                .is_some_and(|p| PREEMPTION_POLICIES.contains(&p)) => {}
        Some(policy) => errors.push(FieldError::not_supported(
            "preemptionPolicy",
            policy.clone(),
            &PREEMPTION_POLICIES,
        )),
    }
    let Some(old) = old else {
        return;
    };
    if old.get("value").and_then(Value::as_i64).unwrap_or(0) != value {
        errors.push(FieldError::forbidden(
            "value",
            "may not be changed in an update.",
        ));
    }
    let policy = obj.get("preemptionPolicy").filter(|p| !p.is_null());
    if policy != old.get("preemptionPolicy").filter(|p| !p.is_null()) {
        errors.push(FieldError::invalid(
            "preemptionPolicy",
            policy.cloned().unwrap_or(Value::Null),
            IMMUTABLE,
        ));
    }
}

/// Why a `system-` name is refused: only the predefined classes, exactly as defined, may use it.
fn system_priority_class_problem(obj: &Value, name: &str, value: i64) -> Option<String> {
    let Some((_, expected)) = SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) else {
        return Some(format!("{name} is not a known system priority class"));
    };
    if value != *expected {
        return Some(format!("value of {name} PriorityClass must be {expected}"));
    }
    let global_default = obj
        .get("globalDefault")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    global_default.then(|| format!("globalDefault of {name} PriorityClass must be false"))
}

pub fn validate_storage_class(obj: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    match str_field(obj, "provisioner").unwrap_or_default() {
        "" => errors.push(FieldError::required("provisioner", "")),
        // Upstream checks the lower-cased name but reports the original.
        provisioner => {
            for problem in qualified_name_problems(&provisioner.to_lowercase()) {
                errors.push(FieldError::invalid(
                    "provisioner",
                    Value::from(provisioner),
                    problem,
                ));
            }
        }
    }
    validate_parameters(obj.get("parameters").and_then(Value::as_object), errors);
    if let Some(policy) = str_field(obj, "reclaimPolicy")
        && !policy.is_empty()
        && !RECLAIM_POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            "reclaimPolicy",
            Value::from(policy),
            &RECLAIM_POLICIES,
        ));
    }
    match obj.get("volumeBindingMode") {
        None | Some(Value::Null) => errors.push(FieldError::required("volumeBindingMode", "")),
        Some(mode) if mode.as_str().is_some_and(|m| BINDING_MODES.contains(&m)) => {}
        Some(mode) => errors.push(FieldError::not_supported(
            "volumeBindingMode",
            mode.clone(),
            &BINDING_MODES,
        )),
    }
    let Some(old) = old else {
        return;
    };
    let parameters = |o: &Value| {
        o.get("parameters")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    if parameters(obj) != parameters(old) {
        errors.push(FieldError::forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    for field in ["provisioner", "reclaimPolicy"] {
        if str_field(obj, field) != str_field(old, field) {
            errors.push(FieldError::forbidden(
                field,
                format!("updates to {field} are forbidden."),
            ));
        }
    }
    let mode = obj.get("volumeBindingMode").filter(|m| !m.is_null());
    if mode != old.get("volumeBindingMode").filter(|m| !m.is_null()) {
        errors.push(FieldError::invalid(
            "volumeBindingMode",
            mode.cloned().unwrap_or(Value::Null),
            IMMUTABLE,
        ));
    }
}

/// At most 512 provisioner parameters, 256 KiB in all, none with an empty key.
fn validate_parameters(parameters: Option<&Map<String, Value>>, errors: &mut Vec<FieldError>) {
    let Some(parameters) = parameters else {
        return;
    };
    if parameters.len() > MAX_PARAMETERS {
        errors.push(FieldError::too_long(
            "parameters",
            Value::from("Provisioner Parameters exceeded max allowed"),
            MAX_PARAMETERS,
        ));
        return;
    }
    let mut total = 0;
    for (key, value) in parameters {
        if key.is_empty() {
            errors.push(FieldError::invalid(
                "parameters",
                Value::from(key.as_str()),
                "field can not be empty.",
            ));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > MAX_PARAMETERS_BYTES {
        errors.push(FieldError::too_long(
            "parameters",
            Value::from(""),
            MAX_PARAMETERS_BYTES,
        ));
    }
}

/// `spec.controller` is required, immutable and a domain-prefixed path; `spec.parameters`, when
/// set, must name its target and say where it lives.
pub fn validate_ingress_class(
    spec: &Map<String, Value>,
    old_spec: Option<&Map<String, Value>>,
    errors: &mut Vec<FieldError>,
) {
    let controller = spec
        .get("controller")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(old_spec) = old_spec
        && old_spec
            .get("controller")
            .and_then(Value::as_str)
            .unwrap_or_default()
            != controller
    {
        errors.push(FieldError::invalid(
            "spec.controller",
            Value::from(controller),
            IMMUTABLE,
        ));
    }
    if controller.is_empty() {
        errors.push(FieldError::required("spec.controller", ""));
    } else {
        if controller.len() > MAX_CONTROLLER_LEN {
            errors.push(FieldError::too_long(
                "spec.controller",
                Value::from(""),
                MAX_CONTROLLER_LEN,
            ));
        }
        validate_domain_prefixed_path("spec.controller", controller, errors);
    }
    if let Some(parameters) = spec.get("parameters").filter(|p| !p.is_null()) {
        validate_ingress_class_parameters(parameters, errors);
    }
}

/// `example.com/path`: a DNS subdomain, a slash, then RFC 3986 path characters.
fn validate_domain_prefixed_path(field: &str, value: &str, errors: &mut Vec<FieldError>) {
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(host, path)| !host.is_empty() && !path.is_empty())
    else {
        errors.push(FieldError::invalid(
            field,
            Value::from(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for problem in dns1123_subdomain_problems(host) {
        errors.push(FieldError::invalid(field, Value::from(host), problem));
    }
    let path_char = |c: u8| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c);
    if !path.bytes().all(path_char) {
        errors.push(FieldError::invalid(
            field,
            Value::from(path),
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
}

fn validate_ingress_class_parameters(parameters: &Value, errors: &mut Vec<FieldError>) {
    const PATH: &str = "spec.parameters";
    if let Some(group) = str_field(parameters, "apiGroup") {
        for problem in dns1123_subdomain_problems(group) {
            errors.push(FieldError::invalid(
                format!("{PATH}.apiGroup"),
                Value::from(group),
                problem,
            ));
        }
    }
    for key in ["kind", "name"] {
        let field = format!("{PATH}.{key}");
        match str_field(parameters, key).unwrap_or_default() {
            "" => errors.push(FieldError::required(field, "")),
            value => {
                for problem in path_segment_problems(value) {
                    errors.push(FieldError::invalid(
                        field.clone(),
                        Value::from(value),
                        problem,
                    ));
                }
            }
        }
    }
    let Some(scope) = parameters.get("scope").filter(|s| !s.is_null()) else {
        errors.push(FieldError::required(format!("{PATH}.scope"), ""));
        return;
    };
    let namespace = parameters.get("namespace").filter(|n| !n.is_null());
    let field = format!("{PATH}.namespace");
    match (scope.as_str(), namespace) {
        (Some("Namespace"), None) => errors.push(FieldError::required(
            field,
            "`parameters.scope` is set to 'Namespace'",
        )),
        (Some("Namespace"), Some(namespace)) => {
            let name = namespace.as_str().unwrap_or_default();
            for problem in dns1123_label_problems(name) {
                errors.push(FieldError::invalid(
                    field.clone(),
                    Value::from(name),
                    problem,
                ));
            }
        }
        (Some("Cluster"), Some(_)) => errors.push(FieldError::forbidden(
            field,
            "`parameters.scope` is set to 'Cluster'",
        )),
        (Some("Cluster"), None) => {}
        _ => errors.push(FieldError::not_supported(
            format!("{PATH}.scope"),
            scope.clone(),
            &PARAMETER_SCOPES,
        )),
    }
}

/// A name usable as one URL path segment.
fn path_segment_problems(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// The template's labels and its pod spec, which may use any restart policy.
pub fn validate_pod_template(obj: &Value, errors: &mut Vec<FieldError>) {
    const LABELS: &str = "template.labels";
    let labels = obj
        .pointer("/template/metadata/labels")
        .and_then(Value::as_object);
    for (key, value) in labels.into_iter().flatten() {
        errors.extend(validate_qualified_name(LABELS, key));
        match value.as_str() {
            Some(label) => errors.extend(validate_label_value(LABELS, label)),
            None => errors.push(FieldError::invalid(
                LABELS,
                value.clone(),
                "label values must be strings",
            )),
        }
    }
    let empty = Map::new();
    let spec = obj
        .pointer("/template/spec")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    validate_pod_spec(
        spec,
        "template.spec",
        &["Always", "OnFailure", "Never"],
        errors,
    );
}

#[cfg(test)]
#[path = "infrastructure_validation_tests.rs"]
mod tests;
