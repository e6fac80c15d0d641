//! OverridePolicy and ClusterOverridePolicy admission.
//!
//! One deliberate extension: a policy that gives the deprecated top-level `targetCluster` beside `overrideRules`
//! (Karmada would ignore it and apply the rules everywhere) has that target copied into each rule without its
//! own, with a warning, because restricting to that cluster is what the author wrote.

use apimachinery::FieldError;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::common::{decode, field, index, object_at};
use super::{Request, placement};
use crate::policy::{FieldOverrider, OverrideSpec, OverriderOperator, Overriders};

/// Decoded view of either override policy kind.
pub(crate) trait OverrideKind: DeserializeOwned {
    fn spec(&self) -> &OverrideSpec;
    fn namespace(&self) -> Option<&str>;
}

impl OverrideKind for crate::policy::OverridePolicy {
    fn spec(&self) -> &OverrideSpec {
        &self.spec
    }
    fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
}

impl OverrideKind for crate::policy::ClusterOverridePolicy {
    fn spec(&self) -> &OverrideSpec {
        &self.spec
    }
    fn namespace(&self) -> Option<&str> {
        None
    }
}

pub(crate) fn admit<K: OverrideKind>(
    req: &mut Request<'_>,
    obj: &mut Value,
    namespaced: bool,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    lift_top_level_target(req, obj, &mut errors);
    if !errors.is_empty() {
        return errors;
    }
    if namespaced {
        fill_selector_namespaces(obj);
    }
    match decode::<K>(obj) {
        Ok(policy) => validate(policy.spec(), policy.namespace(), namespaced, &mut errors),
        Err(e) => errors.push(*e),
    }
    errors
}

/// Handles the deprecated `targetCluster`/`overriders` given together with `overrideRules`.
fn lift_top_level_target(req: &mut Request<'_>, obj: &mut Value, errors: &mut Vec<FieldError>) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let rules_given = spec
        .get("overrideRules")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    if !rules_given {
        return;
    }
    let top_overriders = spec
        .get("overriders")
        .is_some_and(|o| o.as_object().is_some_and(|m| !m.is_empty()));
    if top_overriders {
        errors.push(FieldError::forbidden(
            "spec.overriders",
            "is only used when spec.overrideRules is empty; move these overriders into an overrideRules entry: overrideRules: [{targetCluster: {clusterNames: [...]}, overriders: {...}}]",
        ));
        return;
    }
    let Some(target) = spec.get("targetCluster").filter(|t| !t.is_null()).cloned() else {
        return;
    };
    let Some(Value::Array(rules)) = spec.get_mut("overrideRules") else {
        return;
    };
    let mut filled = Vec::new();
    for (i, rule) in rules.iter_mut().enumerate() {
        if let Value::Object(rule) = rule
            && rule.get("targetCluster").is_none_or(Value::is_null)
        {
            rule.insert("targetCluster".into(), target.clone());
            filled.push(format!("spec.overrideRules[{i}].targetCluster"));
        }
    }
    if filled.is_empty() {
        errors.push(FieldError::forbidden(
            "spec.targetCluster",
            "is only used when spec.overrideRules is empty and every rule already names its targetCluster; remove it or put it inside overrideRules[*].targetCluster",
        ));
        return;
    }
    spec.remove("targetCluster");
    req.warnings.push(format!(
        "spec.targetCluster is deprecated and ignored beside spec.overrideRules; it was moved into {} so the rules apply only to those clusters",
        filled.join(", ")
    ));
}

fn fill_selector_namespaces(obj: &mut Value) {
    let Some(namespace) = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    let Some(spec) = object_at(obj, &["spec"]) else {
        return;
    };
    if let Some(Value::Array(selectors)) = spec.get_mut("resourceSelectors") {
        for selector in selectors.iter_mut().filter_map(Value::as_object_mut) {
            if selector
                .get("namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                selector.insert("namespace".into(), json!(namespace));
            }
        }
    }
}

fn validate(
    spec: &OverrideSpec,
    namespace: Option<&str>,
    namespaced: bool,
    errors: &mut Vec<FieldError>,
) {
    for (i, selector) in spec.resource_selectors.iter().enumerate() {
        let p = index("spec.resourceSelectors", i);
        if selector.api_version.is_empty() {
            errors.push(FieldError::required(
                field(&p, "apiVersion"),
                "e.g. apps/v1",
            ));
        }
        if selector.kind.is_empty() {
            errors.push(FieldError::required(field(&p, "kind"), "e.g. Deployment"));
        }
        if namespaced
            && let Some(ns) = namespace
            && !selector.namespace.is_empty()
            && selector.namespace != ns
        {
            errors.push(FieldError::invalid(
                field(&p, "namespace"),
                json!(selector.namespace),
                format!("must be the policy's own namespace \"{ns}\" (or empty)"),
            ));
        }
    }
    for (i, rule) in spec.override_rules.iter().enumerate() {
        let p = index("spec.overrideRules", i);
        if let Some(target) = &rule.target_cluster {
            placement::validate_affinity(target, &field(&p, "targetCluster"), errors);
        }
        validate_overriders(&rule.overriders, &field(&p, "overriders"), errors);
    }
    if let Some(target) = &spec.target_cluster {
        placement::validate_affinity(target, "spec.targetCluster", errors);
    }
    if let Some(overriders) = &spec.overriders {
        validate_overriders(overriders, "spec.overriders", errors);
    }
}

fn operator_name(op: OverriderOperator) -> &'static str {
    match op {
        OverriderOperator::Add => "add",
        OverriderOperator::Remove => "remove",
        OverriderOperator::Replace => "replace",
    }
}

fn check_pointer(path: &str, pointer: &str, errors: &mut Vec<FieldError>) {
    if pointer.is_empty() {
        errors.push(FieldError::required(
            path,
            "a JSON pointer such as /spec/replicas",
        ));
    } else if !pointer.starts_with('/') {
        errors.push(FieldError::invalid(
            path,
            json!(pointer),
            "must be a JSON pointer (RFC 6901) starting with '/', e.g. /spec/replicas",
        ));
    }
}

fn validate_overriders(overriders: &Overriders, path: &str, errors: &mut Vec<FieldError>) {
    for (i, o) in overriders.plaintext.iter().enumerate() {
        let p = index(&field(path, "plaintext"), i);
        check_pointer(&field(&p, "path"), &o.path, errors);
        match (o.operator, &o.value) {
            (OverriderOperator::Add | OverriderOperator::Replace, None) => {
                errors.push(FieldError::required(
                    field(&p, "value"),
                    format!("operator {} needs a value", operator_name(o.operator)),
                ))
            }
            (OverriderOperator::Remove, Some(_)) => errors.push(FieldError::forbidden(
                field(&p, "value"),
                "must be empty when operator is remove",
            )),
            _ => {}
        }
    }
    for (i, o) in overriders.image_overrider.iter().enumerate() {
        let p = index(&field(path, "imageOverrider"), i);
        if let Some(predicate) = &o.predicate {
            check_pointer(
                &field(&field(&p, "predicate"), "path"),
                &predicate.path,
                errors,
            );
        }
        if o.operator != OverriderOperator::Remove && o.value.is_empty() {
            errors.push(FieldError::required(
                field(&p, "value"),
                format!("operator {} needs a value", operator_name(o.operator)),
            ));
        }
    }
    for (name, list) in [
        ("commandOverrider", &overriders.command_overrider),
        ("argsOverrider", &overriders.args_overrider),
    ] {
        for (i, o) in list.iter().enumerate() {
            let p = index(&field(path, name), i);
            if o.container_name.is_empty() {
                errors.push(FieldError::required(
                    field(&p, "containerName"),
                    "the container to change",
                ));
            }
            if o.operator == OverriderOperator::Replace {
                errors.push(FieldError::not_supported(
                    field(&p, "operator"),
                    json!("replace"),
                    &["add", "remove"],
                ));
            }
        }
    }
    for (name, list) in [
        ("labelsOverrider", &overriders.labels_overrider),
        ("annotationsOverrider", &overriders.annotations_overrider),
    ] {
        for (i, o) in list.iter().enumerate() {
            let p = index(&field(path, name), i);
            if o.value.is_empty() {
                errors.push(FieldError::required(
                    field(&p, "value"),
                    "a map of keys to values",
                ));
            }
        }
    }
    for (i, o) in overriders.field_overrider.iter().enumerate() {
        validate_field_overrider(o, &index(&field(path, "fieldOverrider"), i), errors);
    }
}

fn validate_field_overrider(o: &FieldOverrider, path: &str, errors: &mut Vec<FieldError>) {
    check_pointer(&field(path, "fieldPath"), &o.field_path, errors);
    match (o.json.is_empty(), o.yaml.is_empty()) {
        (true, true) => errors.push(FieldError::required(path, "exactly one of json or yaml operations")),
        (false, false) => errors.push(FieldError::invalid(
            field(path, "yaml"),
            json!(o.yaml.len()),
            "json and yaml cannot be used together; use json for a JSON document, yaml for a YAML document",
        )),
        _ => {}
    }
    for (name, list) in [("json", &o.json), ("yaml", &o.yaml)] {
        for (i, op) in list.iter().enumerate() {
            let p = index(&field(path, name), i);
            check_pointer(&field(&p, "subPath"), &op.sub_path, errors);
            if op.operator != OverriderOperator::Remove && op.value.is_none() {
                errors.push(FieldError::required(
                    field(&p, "value"),
                    format!("operator {} needs a value", operator_name(op.operator)),
                ));
            }
        }
    }
}
