//! Placement rules shared by propagation policies and bindings: spread-constraint defaults, replica-scheduling
//! defaults, and validation of affinities, tolerations, spread constraints and weights.

use std::collections::BTreeSet;

use apimachinery::FieldError;
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Map, Value, json};

use super::Request;
use super::common::{check_enum, field, index, normalise_enum};
use crate::policy::{
    ClusterAffinity, DynamicWeightFactor, Placement, ReplicaDivisionPreference,
    ReplicaSchedulingType, SpreadByField,
};

const SPREAD_FIELDS: &[&str] = &["cluster", "region", "zone", "provider"];
const FIELD_SELECTOR_KEYS: &[&str] = &["provider", "region", "zone"];
const FIELD_SELECTOR_OPERATORS: &[&str] = &["In", "NotIn"];
const LABEL_SELECTOR_OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];
const TOLERATION_OPERATORS: &[&str] = &["Exists", "Equal"];
pub(crate) const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const MAX_AFFINITY_NAME: usize = 32;

/// Rewrites accepted misspellings inside a placement (e.g. `spreadByField: Cluster`).
pub(crate) fn normalise(req: &mut Request<'_>, placement: &mut Value, path: &str) {
    let constraints_path = field(path, "spreadConstraints");
    if let Some(Value::Array(constraints)) = placement.get_mut("spreadConstraints") {
        for (i, constraint) in constraints.iter_mut().enumerate() {
            if let Value::Object(map) = constraint {
                let p = field(&index(&constraints_path, i), "spreadByField");
                normalise_enum(req, map, "spreadByField", &p, SPREAD_FIELDS, &[]);
            }
        }
    }
}

/// Fills the webhook defaults of a placement.
pub(crate) fn default(placement: &mut Map<String, Value>) {
    if let Some(Value::Array(constraints)) = placement.get_mut("spreadConstraints") {
        for constraint in constraints.iter_mut().filter_map(Value::as_object_mut) {
            let has = |m: &Map<String, Value>, k: &str| {
                m.get(k)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            if !has(constraint, "spreadByField") && !has(constraint, "spreadByLabel") {
                constraint.insert("spreadByField".into(), json!("cluster"));
            }
            if constraint
                .get("minGroups")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                == 0
            {
                constraint.insert("minGroups".into(), json!(1));
            }
        }
    }
    if let Some(Value::Object(strategy)) = placement.get_mut("replicaScheduling") {
        super::common::default_field(strategy, "replicaSchedulingType", json!("Divided"));
        if strategy
            .get("replicaSchedulingType")
            .and_then(Value::as_str)
            == Some("Divided")
        {
            super::common::default_field(strategy, "replicaDivisionPreference", json!("Weighted"));
        }
    }
}

/// Validates a decoded placement.
pub(crate) fn validate(
    req: &mut Request<'_>,
    placement: &Placement,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(affinity) = &placement.cluster_affinity {
        validate_affinity(affinity, &field(path, "clusterAffinity"), errors);
    }
    let terms_path = field(path, "clusterAffinities");
    if placement.cluster_affinity.is_some() && !placement.cluster_affinities.is_empty() {
        errors.push(FieldError::forbidden(
            &terms_path,
            "clusterAffinity and clusterAffinities cannot be used together; use one of them",
        ));
    }
    let overflow_allowed = placement.replica_scheduling.as_ref().is_some_and(|r| {
        r.replica_scheduling_type == ReplicaSchedulingType::Divided
            && (r.replica_division_preference == Some(ReplicaDivisionPreference::Aggregated)
                || r.weight_preference.as_ref().is_some_and(|w| {
                    w.dynamic_weight == Some(DynamicWeightFactor::AvailableReplicas)
                }))
    });
    let mut names = BTreeSet::new();
    for (i, term) in placement.cluster_affinities.iter().enumerate() {
        let term_path = index(&terms_path, i);
        check_affinity_name(
            &term.affinity_name,
            &field(&term_path, "affinityName"),
            errors,
        );
        if !term.affinity_name.is_empty() && !names.insert(term.affinity_name.clone()) {
            errors.push(FieldError::duplicate(
                field(&term_path, "affinityName"),
                json!(term.affinity_name),
            ));
        }
        validate_affinity(&term.cluster_affinity, &term_path, errors);
        if !term.overflow_affinities.is_empty() && !overflow_allowed {
            errors.push(FieldError::forbidden(
                field(&term_path, "overflowAffinities"),
                "overflow affinities are only allowed with replicaSchedulingType Divided and either dynamicWeight: AvailableReplicas or replicaDivisionPreference: Aggregated",
            ));
        }
        for (j, overflow) in term.overflow_affinities.iter().enumerate() {
            let overflow_path = index(&field(&term_path, "overflowAffinities"), j);
            check_affinity_name(
                &overflow.affinity_name,
                &field(&overflow_path, "affinityName"),
                errors,
            );
            validate_affinity(&overflow.cluster_affinity, &overflow_path, errors);
        }
    }
    for (i, toleration) in placement.cluster_tolerations.iter().enumerate() {
        validate_toleration(
            toleration,
            &index(&field(path, "clusterTolerations"), i),
            errors,
        );
    }
    validate_spread_constraints(placement, &field(path, "spreadConstraints"), errors);
    if let Some(strategy) = &placement.replica_scheduling {
        let strategy_path = field(path, "replicaScheduling");
        if let Some(weights) = &strategy.weight_preference {
            let list_path = field(
                &field(&strategy_path, "weightPreference"),
                "staticWeightList",
            );
            for (i, entry) in weights.static_weight_list.iter().enumerate() {
                let entry_path = index(&list_path, i);
                if entry.weight < 1 {
                    errors.push(FieldError::invalid(
                        field(&entry_path, "weight"),
                        json!(entry.weight),
                        "must be greater than or equal to 1",
                    ));
                }
                validate_affinity(
                    &entry.target_cluster,
                    &field(&entry_path, "targetCluster"),
                    errors,
                );
            }
            if weights.dynamic_weight.is_some() && !weights.static_weight_list.is_empty() {
                req.warnings
                    .push(format!("{list_path}: ignored because dynamicWeight is set"));
            }
        }
        if strategy.replica_scheduling_type == ReplicaSchedulingType::Duplicated
            && (strategy.weight_preference.is_some()
                || strategy.replica_division_preference.is_some())
        {
            req.warnings.push(format!(
                "{strategy_path}: replicaDivisionPreference and weightPreference are ignored when replicaSchedulingType is Duplicated"
            ));
        }
    }
}

fn check_affinity_name(name: &str, path: &str, errors: &mut Vec<FieldError>) {
    if name.is_empty() {
        errors.push(FieldError::required(path, "a name of 1 to 32 characters"));
    } else if name.len() > MAX_AFFINITY_NAME {
        errors.push(FieldError::too_long(path, json!(name), MAX_AFFINITY_NAME));
    }
}

/// Validates one cluster affinity (also used for override targets and static weights).
pub(crate) fn validate_affinity(
    affinity: &ClusterAffinity,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(selector) = &affinity.label_selector {
        validate_label_selector(selector, &field(path, "labelSelector"), errors);
    }
    if let Some(selector) = &affinity.field_selector {
        let expressions_path = field(&field(path, "fieldSelector"), "matchExpressions");
        for (i, requirement) in selector.match_expressions.iter().enumerate() {
            let p = index(&expressions_path, i);
            check_enum(
                errors,
                &field(&p, "key"),
                &requirement.key,
                FIELD_SELECTOR_KEYS,
            );
            check_enum(
                errors,
                &field(&p, "operator"),
                &requirement.operator,
                FIELD_SELECTOR_OPERATORS,
            );
            if requirement.values.as_ref().is_none_or(Vec::is_empty) {
                errors.push(FieldError::required(
                    field(&p, "values"),
                    "In and NotIn need at least one value",
                ));
            }
        }
    }
    for (list, name) in [
        (&affinity.cluster_names, "clusterNames"),
        (&affinity.exclude, "exclude"),
    ] {
        for (i, cluster) in list.iter().enumerate() {
            if cluster.is_empty() {
                errors.push(FieldError::required(
                    index(&field(path, name), i),
                    "a cluster name",
                ));
            }
        }
    }
}

/// Validates a metav1 label selector's operators and values.
pub(crate) fn validate_label_selector(
    selector: &LabelSelector,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let expressions_path = field(path, "matchExpressions");
    for (i, requirement) in selector.match_expressions.iter().flatten().enumerate() {
        let p = index(&expressions_path, i);
        if requirement.key.is_empty() {
            errors.push(FieldError::required(field(&p, "key"), ""));
        }
        check_enum(
            errors,
            &field(&p, "operator"),
            &requirement.operator,
            LABEL_SELECTOR_OPERATORS,
        );
        let has_values = requirement.values.as_ref().is_some_and(|v| !v.is_empty());
        match requirement.operator.as_str() {
            "In" | "NotIn" if !has_values => errors.push(FieldError::required(
                field(&p, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if has_values => errors.push(FieldError::forbidden(
                field(&p, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            _ => {}
        }
    }
}

fn validate_toleration(toleration: &Toleration, path: &str, errors: &mut Vec<FieldError>) {
    let operator = toleration.operator.as_deref().unwrap_or("Equal");
    check_enum(
        errors,
        &field(path, "operator"),
        operator,
        TOLERATION_OPERATORS,
    );
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty()) {
        check_enum(errors, &field(path, "effect"), effect, TAINT_EFFECTS);
    }
    let key_empty = toleration.key.as_deref().is_none_or(str::is_empty);
    if key_empty && operator != "Exists" {
        errors.push(FieldError::invalid(
            field(path, "operator"),
            json!(operator),
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ));
    }
    if operator == "Exists" && toleration.value.as_deref().is_some_and(|v| !v.is_empty()) {
        errors.push(FieldError::invalid(
            field(path, "operator"),
            json!(operator),
            "value must be empty when `operator` is 'Exists'",
        ));
    }
    if toleration.toleration_seconds.is_some() && toleration.effect.as_deref() != Some("NoExecute")
    {
        errors.push(FieldError::invalid(
            field(path, "effect"),
            json!(toleration.effect),
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
}

fn validate_spread_constraints(placement: &Placement, path: &str, errors: &mut Vec<FieldError>) {
    let mut seen = BTreeSet::new();
    for (i, constraint) in placement.spread_constraints.iter().enumerate() {
        let p = index(path, i);
        if constraint.spread_by_field.is_some() && !constraint.spread_by_label.is_empty() {
            errors.push(FieldError::invalid(
                field(&p, "spreadByLabel"),
                json!(constraint.spread_by_label),
                "spreadByLabel cannot be used together with spreadByField; use one of them",
            ));
        }
        if constraint.min_groups < 0 {
            errors.push(FieldError::invalid(
                field(&p, "minGroups"),
                json!(constraint.min_groups),
                "must be greater than or equal to 0",
            ));
        }
        if constraint.max_groups < 0 {
            errors.push(FieldError::invalid(
                field(&p, "maxGroups"),
                json!(constraint.max_groups),
                "must be greater than or equal to 0",
            ));
        }
        if constraint.max_groups > 0 && constraint.max_groups < constraint.min_groups {
            errors.push(FieldError::invalid(
                field(&p, "maxGroups"),
                json!(constraint.max_groups),
                format!(
                    "must be greater than or equal to minGroups ({})",
                    constraint.min_groups
                ),
            ));
        }
        if let Some(by) = constraint.spread_by_field
            && !seen.insert(by.as_str())
        {
            errors.push(FieldError::duplicate(
                field(&p, "spreadByField"),
                json!(by.as_str()),
            ));
        }
    }
    let uses_fields = placement
        .spread_constraints
        .iter()
        .any(|c| c.spread_by_field.is_some());
    let has_cluster = placement
        .spread_constraints
        .iter()
        .any(|c| c.spread_by_field == Some(SpreadByField::Cluster));
    if uses_fields && !has_cluster {
        errors.push(FieldError::invalid(
            path,
            json!(placement.spread_constraints.iter().filter_map(|c| c.spread_by_field.map(SpreadByField::as_str)).collect::<Vec<_>>()),
            "when spreadByField is used, a constraint with spreadByField: cluster must also be given",
        ));
    }
}
