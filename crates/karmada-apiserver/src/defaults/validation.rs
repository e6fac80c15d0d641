//! The built-in kinds' validations that users hit most, with kube-apiserver's field paths and
//! messages. Runs on defaulted objects (so `restartPolicy` etc. are set); `old` is the stored
//! object on updates, for immutability rules.
//!
//! Deliberate gaps: no volume-mount/volume cross checks, no Pod update restrictions, no Service
//! IP/nodePort range checks — those need either the server's configuration or far more of the
//! upstream rules than clients depend on. PodTemplate, PersistentVolume, ResourceQuota,
//! LimitRange, StorageClass, PriorityClass, NetworkPolicy and IngressClass get their spec and
//! update rules (see their modules), but not: the fields inside each PersistentVolume source,
//! PV node-affinity terms, StorageClass `allowedTopologies`, ResourceQuota `status`, or the Go
//! struct diff upstream appends to the PV source-immutability message. Values kube-apiserver
//! would refuse while decoding (a non-base64 Secret value, a non-string ConfigMap value, an
//! unparsable quantity) are reported here as 422 field errors instead of its 400.

use serde_json::{Map, Value};

use apimachinery::names::{validate_dns1123_label, validate_label_value, validate_qualified_name};
use apimachinery::{FieldError, GroupVersionKind, LabelSelector};

use super::pod_validation::validate_pod_spec;
use super::rules::{
    IMMUTABLE, IMMUTABLE_WHEN_SET, config_key_problems, cron_schedule_problem,
    iana_service_name_problems, int_or_percent, non_negative, port_number,
};
use super::{
    infrastructure_validation as infra, limit_range_validation, network_policy_validation,
    persistent_volume_validation, quota_validation, scaling,
};

/// ConfigMaps and Secrets hold at most 1 MiB of data.
const MAX_DATA_BYTES: usize = 1024 * 1024;

/// Every validation problem of `obj` (and of the change from `old`, on updates). Empty when
/// valid or when the kind has no built-in rules here.
pub fn validate_builtin(
    gvk: &GroupVersionKind,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let empty = Map::new();
    let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let old_spec = old.and_then(|o| o.get("spec")).and_then(Value::as_object);
    match (gvk.group.as_str(), gvk.kind.as_str()) {
        ("", "ConfigMap") => validate_config_map(obj, old, &mut errors),
        ("", "Secret") => validate_secret(obj, old, &mut errors),
        ("", "Service") => validate_service(spec, &mut errors),
        ("", "Pod") => {
            validate_pod_spec(spec, "spec", &["Always", "OnFailure", "Never"], &mut errors)
        }
        ("apps", "Deployment") => {
            validate_workload(spec, "deployment", true, &mut errors);
            validate_deployment_strategy(spec, &mut errors);
            non_negative(spec, "spec", "revisionHistoryLimit", &mut errors);
            validate_progress_deadline(spec, &mut errors);
            immutable_selector(spec, old_spec, &mut errors);
        }
        ("apps", "ReplicaSet") => {
            validate_workload(spec, "replicaset", true, &mut errors);
            immutable_selector(spec, old_spec, &mut errors);
        }
        ("apps", "DaemonSet") => {
            validate_workload(spec, "daemonset", false, &mut errors);
            non_negative(spec, "spec", "revisionHistoryLimit", &mut errors);
            immutable_selector(spec, old_spec, &mut errors);
        }
        ("apps", "StatefulSet") => {
            validate_workload(spec, "statefulset", true, &mut errors);
            validate_stateful_set_update(spec, old_spec, &mut errors);
        }
        ("batch", "Job") => validate_job(spec, old_spec, &mut errors),
        ("batch", "CronJob") => validate_cron_job(spec, &mut errors),
        ("policy", "PodDisruptionBudget") => scaling::validate_pdb(spec, &mut errors),
        ("autoscaling", "HorizontalPodAutoscaler") => scaling::validate_hpa(spec, &mut errors),
        ("", "ReplicationController") => {
            scaling::validate_replication_controller(spec, &mut errors)
        }
        ("", "PodTemplate") => infra::validate_pod_template(obj, &mut errors),
        ("", "PersistentVolume") => {
            persistent_volume_validation::validate_persistent_volume(spec, old_spec, &mut errors)
        }
        ("", "ResourceQuota") => {
            quota_validation::validate_resource_quota(spec, old_spec, &mut errors)
        }
        ("", "LimitRange") => limit_range_validation::validate_limit_range(spec, &mut errors),
        ("storage.k8s.io", "StorageClass") => infra::validate_storage_class(obj, old, &mut errors),
        ("scheduling.k8s.io", "PriorityClass") => {
            infra::validate_priority_class(obj, old, &mut errors)
        }
        ("networking.k8s.io", "NetworkPolicy") => {
            network_policy_validation::validate_network_policy(spec, &mut errors)
        }
        ("networking.k8s.io", "IngressClass") => {
            infra::validate_ingress_class(spec, old_spec, &mut errors)
        }
        _ => {}
    }
    errors
}

fn validate_config_map(obj: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    let data = obj.get("data").and_then(Value::as_object);
    let binary = obj.get("binaryData").and_then(Value::as_object);
    let mut total = 0;
    for (key, value) in data.into_iter().flatten() {
        validate_data_key("data", key, errors);
        if binary.is_some_and(|b| b.contains_key(key)) {
            errors.push(FieldError::invalid(
                format!("data[{key}]"),
                Value::String(key.clone()),
                "duplicate of key present in binaryData",
            ));
        }
        match value.as_str() {
            Some(text) => total += key.len() + text.len(),
            None => errors.push(FieldError::invalid(
                format!("data[{key}]"),
                value.clone(),
                "must be a string",
            )),
        }
    }
    for (key, value) in binary.into_iter().flatten() {
        validate_data_key("binaryData", key, errors);
        total += key.len() + decoded_len(value);
    }
    if total > MAX_DATA_BYTES {
        errors.push(FieldError::too_long("data", Value::Null, MAX_DATA_BYTES));
    }
    validate_immutable_data(obj, old, &["data", "binaryData"], errors);
}

fn validate_secret(obj: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    let data = obj.get("data").and_then(Value::as_object);
    let mut total = 0;
    for (key, value) in data.into_iter().flatten() {
        validate_data_key("data", key, errors);
        match value.as_str() {
            Some(encoded) if is_base64(encoded) => total += key.len() + decoded_len(value),
            _ => errors.push(FieldError::invalid(
                format!("data[{key}]"),
                value.clone(),
                "must be a base64-encoded string (standard alphabet, padded)",
            )),
        }
    }
    if total > MAX_DATA_BYTES {
        errors.push(FieldError::too_long("data", Value::Null, MAX_DATA_BYTES));
    }
    let secret_type = obj.get("type").and_then(Value::as_str).unwrap_or("Opaque");
    let has_key = |key: &str| {
        data.is_some_and(|d| {
            d.get(key)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty())
        })
    };
    let required_keys: &[&str] = match secret_type {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        _ => &[],
    };
    for key in required_keys {
        if !has_key(key) {
            errors.push(FieldError::required(format!("data[{key}]"), ""));
        }
    }
    if secret_type == "kubernetes.io/basic-auth" && !has_key("username") && !has_key("password") {
        errors.push(FieldError::required("data[username]", ""));
        errors.push(FieldError::required("data[password]", ""));
    }
    if secret_type == "kubernetes.io/service-account-token"
        && obj
            .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
            .and_then(Value::as_str)
            .is_none()
    {
        errors.push(FieldError::required(
            "metadata.annotations[kubernetes.io/service-account.name]",
            "",
        ));
    }
    if let Some(old) = old {
        let old_type = old.get("type").and_then(Value::as_str).unwrap_or("Opaque");
        if old_type != secret_type {
            errors.push(FieldError::invalid(
                "type",
                Value::String(secret_type.to_string()),
                IMMUTABLE,
            ));
        }
    }
    validate_immutable_data(obj, old, &["data"], errors);
}

/// `immutable: true` on the stored object freezes the data fields and the flag itself.
fn validate_immutable_data(
    obj: &Value,
    old: Option<&Value>,
    fields: &[&str],
    errors: &mut Vec<FieldError>,
) {
    let Some(old) = old else {
        return;
    };
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
        errors.push(FieldError::forbidden("immutable", IMMUTABLE_WHEN_SET));
    }
    for field in fields {
        if !same_or_both_empty(obj.get(*field), old.get(*field)) {
            errors.push(FieldError::forbidden(*field, IMMUTABLE_WHEN_SET));
        }
    }
}

fn same_or_both_empty(a: Option<&Value>, b: Option<&Value>) -> bool {
    let is_empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.is_empty(),
        Some(_) => false,
    };
    a == b || (is_empty(a) && is_empty(b))
}

fn validate_data_key(parent: &str, key: &str, errors: &mut Vec<FieldError>) {
    for problem in config_key_problems(key) {
        errors.push(FieldError::invalid(
            format!("{parent}[{key}]"),
            Value::String(key.to_string()),
            problem,
        ));
    }
}

fn is_base64(text: &str) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .is_ok()
}

/// Decoded size of a base64 string value (approximate for invalid input, which is reported
/// separately).
fn decoded_len(value: &Value) -> usize {
    let encoded = value.as_str().unwrap_or_default().trim_end_matches('=');
    encoded.len() * 3 / 4
}

fn validate_service(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if !TYPES.contains(&service_type) {
        errors.push(FieldError::not_supported(
            "spec.type",
            Value::String(service_type.to_string()),
            &TYPES,
        ));
    }
    if let Some(affinity) = spec.get("sessionAffinity").and_then(Value::as_str)
        && !["ClientIP", "None"].contains(&affinity)
    {
        errors.push(FieldError::not_supported(
            "spec.sessionAffinity",
            Value::String(affinity.to_string()),
            &["ClientIP", "None"],
        ));
    }
    let ports = spec
        .get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if service_type == "ExternalName" {
        match spec.get("externalName").and_then(Value::as_str) {
            None | Some("") => errors.push(FieldError::required("spec.externalName", "")),
            Some(_) => {}
        }
    } else if ports.is_empty() {
        errors.push(FieldError::required("spec.ports", ""));
    }
    let mut names = Vec::new();
    for (index, port) in ports.iter().enumerate() {
        let path = format!("spec.ports[{index}]");
        let name = port.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            if ports.len() > 1 {
                errors.push(FieldError::required(format!("{path}.name"), ""));
            }
        } else if names.contains(&name) {
            errors.push(FieldError::duplicate(
                format!("{path}.name"),
                Value::String(name.to_string()),
            ));
        } else {
            errors.extend(validate_dns1123_label(&format!("{path}.name"), name));
            names.push(name);
        }
        port_number(port.get("port"), &format!("{path}.port"), true, errors);
        validate_protocol(port, &path, errors);
        match port.get("targetPort") {
            Some(Value::String(target)) => {
                for problem in iana_service_name_problems(target) {
                    errors.push(FieldError::invalid(
                        format!("{path}.targetPort"),
                        Value::String(target.clone()),
                        problem,
                    ));
                }
            }
            other => port_number(other, &format!("{path}.targetPort"), false, errors),
        }
        let node_port = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if node_port != 0 && service_type == "ClusterIP" {
            errors.push(FieldError::forbidden(
                format!("{path}.nodePort"),
                "may not be used when `type` is 'ClusterIP'",
            ));
        }
    }
}

fn validate_protocol(port: &Value, path: &str, errors: &mut Vec<FieldError>) {
    const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
    if let Some(protocol) = port.get("protocol").and_then(Value::as_str)
        && !PROTOCOLS.contains(&protocol)
    {
        errors.push(FieldError::not_supported(
            format!("{path}.protocol"),
            Value::String(protocol.to_string()),
            &PROTOCOLS,
        ));
    }
}

/// Replicas, selector, selector-matches-template and the pod template of a workload whose pods
/// must restart `Always`.
fn validate_workload(
    spec: &Map<String, Value>,
    kind: &str,
    has_replicas: bool,
    errors: &mut Vec<FieldError>,
) {
    if has_replicas {
        non_negative(spec, "spec", "replicas", errors);
    }
    non_negative(spec, "spec", "minReadySeconds", errors);
    validate_selector_matches_template(spec, "spec", kind, errors);
    validate_template(spec, "spec", &["Always"], errors);
}

fn validate_selector_matches_template(
    spec: &Map<String, Value>,
    path: &str,
    kind: &str,
    errors: &mut Vec<FieldError>,
) {
    let selector_path = format!("{path}.selector");
    let selector = match spec.get("selector") {
        None | Some(Value::Null) => {
            errors.push(FieldError::required(selector_path, ""));
            return;
        }
        Some(selector) => selector,
    };
    let parsed = match LabelSelector::from_label_selector(selector) {
        Ok(parsed) => parsed,
        Err(error) => {
            errors.push(FieldError::invalid(
                selector_path,
                selector.clone(),
                error.message,
            ));
            return;
        }
    };
    if parsed.is_empty() {
        errors.push(FieldError::invalid(
            selector_path,
            selector.clone(),
            format!("empty selector is invalid for {kind}"),
        ));
        return;
    }
    let template = spec.get("template").cloned().unwrap_or(Value::Null);
    if !parsed.matches_object(&template) {
        let labels = template
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null);
        errors.push(FieldError::invalid(
            format!("{path}.template.metadata.labels"),
            labels,
            "`selector` does not match template `labels`",
        ));
    }
}

/// Validates `<path>.template.spec`, whose `restartPolicy` must be one of `restart_policies`.
pub(super) fn validate_template(
    spec: &Map<String, Value>,
    path: &str,
    restart_policies: &[&str],
    errors: &mut Vec<FieldError>,
) {
    let labels = spec
        .get("template")
        .and_then(|t| t.pointer("/metadata/labels"))
        .and_then(Value::as_object);
    let labels_field = format!("{path}.template.metadata.labels");
    for (key, value) in labels.into_iter().flatten() {
        errors.extend(validate_qualified_name(&labels_field, key));
        match value.as_str() {
            Some(text) => errors.extend(validate_label_value(&labels_field, text)),
            None => errors.push(FieldError::invalid(
                labels_field.clone(),
                value.clone(),
                "label values must be strings",
            )),
        }
    }
    let empty = Map::new();
    let pod_spec = spec
        .get("template")
        .and_then(|t| t.get("spec"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    validate_pod_spec(
        pod_spec,
        &format!("{path}.template.spec"),
        restart_policies,
        errors,
    );
}

fn immutable_selector(
    spec: &Map<String, Value>,
    old_spec: Option<&Map<String, Value>>,
    errors: &mut Vec<FieldError>,
) {
    let Some(old_spec) = old_spec else {
        return;
    };
    if spec.get("selector") != old_spec.get("selector") {
        errors.push(FieldError::invalid(
            "spec.selector",
            spec.get("selector").cloned().unwrap_or(Value::Null),
            IMMUTABLE,
        ));
    }
}

fn validate_deployment_strategy(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    const TYPES: [&str; 2] = ["Recreate", "RollingUpdate"];
    let Some(strategy) = spec.get("strategy").and_then(Value::as_object) else {
        return;
    };
    let strategy_type = strategy
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate");
    if !TYPES.contains(&strategy_type) {
        errors.push(FieldError::not_supported(
            "spec.strategy.type",
            Value::String(strategy_type.to_string()),
            &TYPES,
        ));
        return;
    }
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    if strategy_type == "Recreate" {
        if rolling.is_some() {
            errors.push(FieldError::forbidden(
                "spec.strategy.rollingUpdate",
                "may not be specified when strategy `type` is 'Recreate'",
            ));
        }
        return;
    }
    let Some(rolling) = rolling else {
        return;
    };
    let path = "spec.strategy.rollingUpdate";
    let unavailable = int_or_percent(
        rolling.get("maxUnavailable"),
        &format!("{path}.maxUnavailable"),
        errors,
    );
    let surge = int_or_percent(rolling.get("maxSurge"), &format!("{path}.maxSurge"), errors);
    if let Some((value, true)) = unavailable
        && value > 100
    {
        errors.push(FieldError::invalid(
            format!("{path}.maxUnavailable"),
            rolling
                .get("maxUnavailable")
                .cloned()
                .unwrap_or(Value::Null),
            "must not be greater than 100%",
        ));
    }
    if unavailable.map(|(v, _)| v) == Some(0) && surge.map(|(v, _)| v) == Some(0) {
        errors.push(FieldError::invalid(
            format!("{path}.maxUnavailable"),
            rolling
                .get("maxUnavailable")
                .cloned()
                .unwrap_or(Value::Null),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
}

fn validate_progress_deadline(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    non_negative(spec, "spec", "progressDeadlineSeconds", errors);
    let deadline = spec.get("progressDeadlineSeconds").and_then(Value::as_i64);
    let min_ready = spec
        .get("minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(deadline) = deadline
        && deadline >= 0
        && deadline <= min_ready
    {
        errors.push(FieldError::invalid(
            "spec.progressDeadlineSeconds",
            Value::from(deadline),
            "must be greater than minReadySeconds",
        ));
    }
}

/// Fields of a StatefulSet spec that may change after creation.
const STATEFUL_SET_MUTABLE: [&str; 7] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

fn validate_stateful_set_update(
    spec: &Map<String, Value>,
    old_spec: Option<&Map<String, Value>>,
    errors: &mut Vec<FieldError>,
) {
    let Some(old_spec) = old_spec else {
        return;
    };
    let frozen = |spec: &Map<String, Value>| -> Map<String, Value> {
        spec.iter()
            .filter(|(key, value)| {
                !STATEFUL_SET_MUTABLE.contains(&key.as_str()) && !value.is_null()
            })
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    };
    if frozen(spec) != frozen(old_spec) {
        errors.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}

fn validate_job(
    spec: &Map<String, Value>,
    old_spec: Option<&Map<String, Value>>,
    errors: &mut Vec<FieldError>,
) {
    for field in [
        "parallelism",
        "completions",
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
    ] {
        non_negative(spec, "spec", field, errors);
    }
    if let Some(mode) = spec.get("completionMode").and_then(Value::as_str)
        && !["NonIndexed", "Indexed"].contains(&mode)
    {
        errors.push(FieldError::not_supported(
            "spec.completionMode",
            Value::String(mode.to_string()),
            &["NonIndexed", "Indexed"],
        ));
    }
    validate_template(spec, "spec", &["OnFailure", "Never"], errors);
    if let Some(old_spec) = old_spec {
        // The controller-generated selector only appears after creation, so compare it only
        // when the update carries one.
        if spec.get("selector").is_some() && spec.get("selector") != old_spec.get("selector") {
            errors.push(FieldError::invalid(
                "spec.selector",
                spec.get("selector").cloned().unwrap_or(Value::Null),
                IMMUTABLE,
            ));
        }
        if spec.get("template") != old_spec.get("template") {
            errors.push(FieldError::invalid(
                "spec.template",
                spec.get("template").cloned().unwrap_or(Value::Null),
                IMMUTABLE,
            ));
        }
    }
}

fn validate_cron_job(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    const POLICIES: [&str; 3] = ["Allow", "Forbid", "Replace"];
    match spec.get("schedule").and_then(Value::as_str) {
        None | Some("") => errors.push(FieldError::required("spec.schedule", "")),
        Some(schedule) => {
            if let Some(problem) = cron_schedule_problem(schedule) {
                errors.push(FieldError::invalid(
                    "spec.schedule",
                    Value::String(schedule.to_string()),
                    problem,
                ));
            }
        }
    }
    if let Some(policy) = spec.get("concurrencyPolicy").and_then(Value::as_str)
        && !POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            Value::String(policy.to_string()),
            &POLICIES,
        ));
    }
    for field in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        non_negative(spec, "spec", field, errors);
    }
    let empty = Map::new();
    let job_spec = spec
        .get("jobTemplate")
        .and_then(|t| t.get("spec"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    validate_template(
        job_spec,
        "spec.jobTemplate.spec",
        &["OnFailure", "Never"],
        errors,
    );
}

#[cfg(test)]
#[path = "validation_tests.rs"]
pub(super) mod tests;
