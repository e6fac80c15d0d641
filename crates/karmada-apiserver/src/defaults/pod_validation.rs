//! Validation of a PodSpec (a Pod's or a template's): containers, their names, images, ports
//! and env, volumes, and the restart policy the owning kind allows.

use serde_json::{Map, Value};

use apimachinery::names::validate_dns1123_label;
use apimachinery::{FieldError, Quantity};

use super::rules::{iana_service_name_problems, port_number};

const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const PULL_POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];
const DNS_POLICIES: [&str; 4] = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];

/// Appends the problems of the PodSpec at `path`. `restart_policies` is what the owner accepts
/// (`Always` for Deployments, `OnFailure`/`Never` for Jobs, all three for Pods).
pub fn validate_pod_spec(
    spec: &Map<String, Value>,
    path: &str,
    restart_policies: &[&str],
    errors: &mut Vec<FieldError>,
) {
    validate_volumes(spec, path, errors);
    let containers = spec
        .get("containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if containers.is_empty() {
        errors.push(FieldError::required(format!("{path}.containers"), ""));
    }
    // Container names are unique across init and regular containers.
    let mut names: Vec<&str> = Vec::new();
    for key in ["initContainers", "containers"] {
        let list = spec
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (index, container) in list.iter().enumerate() {
            validate_container(
                container,
                &format!("{path}.{key}[{index}]"),
                &mut names,
                errors,
            );
        }
    }
    match spec.get("restartPolicy").and_then(Value::as_str) {
        Some(policy) if restart_policies.contains(&policy) => {}
        Some(policy) => errors.push(FieldError::not_supported(
            format!("{path}.restartPolicy"),
            Value::String(policy.to_string()),
            restart_policies,
        )),
        None => errors.push(FieldError::required(format!("{path}.restartPolicy"), "")),
    }
    if let Some(policy) = spec.get("dnsPolicy").and_then(Value::as_str)
        && !DNS_POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            format!("{path}.dnsPolicy"),
            Value::String(policy.to_string()),
            &DNS_POLICIES,
        ));
    }
}

fn validate_volumes(spec: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    let volumes = spec
        .get("volumes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut names: Vec<&str> = Vec::new();
    for (index, volume) in volumes.iter().enumerate() {
        let field = format!("{path}.volumes[{index}].name");
        match volume
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "" => errors.push(FieldError::required(field, "")),
            name if names.contains(&name) => errors.push(FieldError::duplicate(
                field,
                Value::String(name.to_string()),
            )),
            name => {
                errors.extend(validate_dns1123_label(&field, name));
                names.push(name);
            }
        }
    }
}

fn validate_container<'a>(
    container: &'a Value,
    path: &str,
    names: &mut Vec<&'a str>,
    errors: &mut Vec<FieldError>,
) {
    let name_field = format!("{path}.name");
    match container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "" => errors.push(FieldError::required(name_field, "")),
        name if names.contains(&name) => errors.push(FieldError::duplicate(
            name_field,
            Value::String(name.to_string()),
        )),
        name => {
            errors.extend(validate_dns1123_label(&name_field, name));
            names.push(name);
        }
    }
    if container
        .get("image")
        .and_then(Value::as_str)
        .is_none_or(|image| image.trim().is_empty())
    {
        errors.push(FieldError::required(format!("{path}.image"), ""));
    }
    if let Some(policy) = container.get("imagePullPolicy").and_then(Value::as_str)
        && !PULL_POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            format!("{path}.imagePullPolicy"),
            Value::String(policy.to_string()),
            &PULL_POLICIES,
        ));
    }
    validate_container_ports(container, path, errors);
    validate_resources(container, path, errors);
    let env = container
        .get("env")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (index, variable) in env.iter().enumerate() {
        if variable
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            errors.push(FieldError::required(
                format!("{path}.env[{index}].name"),
                "",
            ));
        }
    }
}

fn validate_container_ports(container: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let ports = container
        .get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut port_names: Vec<&str> = Vec::new();
    for (index, port) in ports.iter().enumerate() {
        let port_path = format!("{path}.ports[{index}]");
        if let Some(name) = port
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            let field = format!("{port_path}.name");
            if port_names.contains(&name) {
                errors.push(FieldError::duplicate(
                    field,
                    Value::String(name.to_string()),
                ));
            } else {
                for problem in iana_service_name_problems(name) {
                    errors.push(FieldError::invalid(
                        field.clone(),
                        Value::String(name.to_string()),
                        problem,
                    ));
                }
                port_names.push(name);
            }
        }
        port_number(
            port.get("containerPort"),
            &format!("{port_path}.containerPort"),
            true,
            errors,
        );
        port_number(
            port.get("hostPort"),
            &format!("{port_path}.hostPort"),
            false,
            errors,
        );
        if let Some(protocol) = port.get("protocol").and_then(Value::as_str)
            && !PROTOCOLS.contains(&protocol)
        {
            errors.push(FieldError::not_supported(
                format!("{port_path}.protocol"),
                Value::String(protocol.to_string()),
                &PROTOCOLS,
            ));
        }
    }
}

/// `resources.requests`/`limits`: valid non-negative quantities, and no request above its limit.
fn validate_resources(container: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let quantities = |kind: &str, errors: &mut Vec<FieldError>| -> Vec<(String, Quantity)> {
        let map = container
            .get("resources")
            .and_then(|r| r.get(kind))
            .and_then(Value::as_object);
        let mut parsed = Vec::new();
        for (resource, value) in map.into_iter().flatten() {
            let field = format!("{path}.resources.{kind}[{resource}]");
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                other => {
                    errors.push(FieldError::invalid(
                        field,
                        other.clone(),
                        "must be a quantity such as 500m or 2Gi",
                    ));
                    continue;
                }
            };
            match Quantity::parse(&text) {
                Ok(quantity) if quantity < Quantity::zero() => {
                    errors.push(FieldError::invalid(field, value.clone(), "must be greater than or equal to 0"));
                }
                Ok(quantity) => parsed.push((resource.clone(), quantity)),
                Err(_) => errors.push(FieldError::invalid(
                    field,
                    value.clone(),
                    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )),
            }
        }
        parsed
    };
    let limits = quantities("limits", errors);
    let requests = quantities("requests", errors);
    for (resource, request) in &requests {
        if let Some((_, limit)) = limits.iter().find(|(name, _)| name == resource)
            && request > limit
        {
            errors.push(FieldError::invalid(
                format!("{path}.resources.requests[{resource}]"),
                Value::String(request.to_string()),
                format!("must be less than or equal to {resource} limit of {limit}"),
            ));
        }
    }
}
