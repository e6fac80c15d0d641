//! PropagationPolicy and ClusterPropagationPolicy admission.

use apimachinery::FieldError;
use serde_json::{Value, json};

use super::common::{decode, default_field, field, index, normalise_enum, object_at, permanent_id};
use super::{Request, placement};
use crate::policy::{
    self, ClusterPropagationPolicy, PriorityClassSource, PropagationPolicy, PropagationSpec,
    PurgeMode,
};

/// Which of the two policy kinds is admitted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Namespaced,
    Cluster,
}

const PURGE_MODES: &[&str] = &["Directly", "Gracefully", "Never"];
const LEGACY_PURGE_MODES: &[(&str, &str)] =
    &[("Immediately", "Directly"), ("Graciously", "Gracefully")];
const DEFAULT_TOLERATION_SECONDS: i64 = 300;
const DEFAULT_GRACE_PERIOD_SECONDS: i64 = 600;

/// The accepted failover shape, shown when the given one is wrong.
const FAILOVER_SHAPE: &str = "spec.failover.application: {decisionConditions: {tolerationSeconds: <seconds>}, purgeMode: Directly|Gracefully|Never, gracePeriodSeconds: <seconds, Gracefully only>} (and spec.propagateDeps: true)";

/// Kinds that are cluster-scoped in every Kubernetes cluster; a PropagationPolicy cannot select them.
const CLUSTER_SCOPED_KINDS: &[&str] = &[
    "Namespace",
    "Node",
    "PersistentVolume",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "StorageClass",
    "PriorityClass",
    "IngressClass",
    "RuntimeClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "APIService",
];

pub(crate) fn admit(req: &mut Request<'_>, obj: &mut Value, scope: Scope) -> Vec<FieldError> {
    let mut errors = shape_errors(obj);
    if !errors.is_empty() {
        return errors;
    }
    normalise(req, obj);
    default(obj, scope);
    // The policy finalizer is not added here but by the policy controller when it first manages
    // the policy: a control plane without that controller must not strand deleted policies.
    let label = match scope {
        Scope::Namespaced => policy::LABEL_PROPAGATION_POLICY_PERMANENT_ID,
        Scope::Cluster => policy::LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
    };
    permanent_id(req, obj, label, &mut errors);
    let decoded = match scope {
        Scope::Namespaced => {
            decode::<PropagationPolicy>(obj).map(|p| (p.metadata.namespace, p.spec))
        }
        Scope::Cluster => decode::<ClusterPropagationPolicy>(obj).map(|p| (None, p.spec)),
    };
    match decoded {
        Ok((namespace, spec)) => validate(req, &spec, scope, namespace.as_deref(), &mut errors),
        Err(e) => errors.push(*e),
    }
    errors
}

/// Shapes that decode silently into something else, so they are rejected before decoding.
fn shape_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(misplaced) = obj.pointer("/spec/placement/failover") {
        let list_note = if misplaced
            .pointer("/application/decisionConditions")
            .is_some_and(Value::is_array)
        {
            " decisionConditions is an object, not a list of conditions: how long the application may stay unhealthy goes in tolerationSeconds."
        } else {
            ""
        };
        errors.push(FieldError::forbidden(
            "spec.placement.failover",
            format!("failover is not part of placement; move it to spec.failover. Accepted shape: {FAILOVER_SHAPE}.{list_note}"),
        ));
    }
    if let Some(conditions) = obj.pointer("/spec/failover/application/decisionConditions")
        && !conditions.is_object()
    {
        errors.push(FieldError::invalid(
            "spec.failover.application.decisionConditions",
            conditions.clone(),
            "must be an object: decisionConditions: {tolerationSeconds: <seconds the application may stay unhealthy before it is moved>}",
        ));
    }
    errors
}

fn normalise(req: &mut Request<'_>, obj: &mut Value) {
    for which in ["application", "cluster"] {
        if let Some(Value::Object(failover)) = obj.pointer_mut(&format!("/spec/failover/{which}")) {
            let path = format!("spec.failover.{which}.purgeMode");
            normalise_enum(
                req,
                failover,
                "purgeMode",
                &path,
                PURGE_MODES,
                LEGACY_PURGE_MODES,
            );
        }
    }
    if let Some(placement) = obj.pointer_mut("/spec/placement") {
        placement::normalise(req, placement, "spec.placement");
    }
}

fn default(obj: &mut Value, scope: Scope) {
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(spec) = object_at(obj, &["spec"]) else {
        return;
    };
    default_field(spec, "schedulerName", json!(policy::DEFAULT_SCHEDULER_NAME));
    if spec.get("schedulerName").and_then(Value::as_str) == Some("") {
        spec.insert(
            "schedulerName".into(),
            json!(policy::DEFAULT_SCHEDULER_NAME),
        );
    }
    default_field(spec, "conflictResolution", json!("Abort"));
    default_field(spec, "preemption", json!("Never"));
    default_field(spec, "priority", json!(0));
    if let Some(Value::Array(selectors)) = spec.get_mut("resourceSelectors") {
        let mut imports_services = false;
        for selector in selectors.iter_mut().filter_map(Value::as_object_mut) {
            if scope == Scope::Namespaced
                && let Some(ns) = &namespace
                && selector
                    .get("namespace")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                selector.insert("namespace".into(), json!(ns));
            }
            imports_services |= selector.get("apiVersion").and_then(Value::as_str)
                == Some("multicluster.x-k8s.io/v1alpha1")
                && selector.get("kind").and_then(Value::as_str) == Some("ServiceImport");
        }
        if imports_services {
            spec.insert("propagateDeps".into(), json!(true));
        }
    }
    if let Some(Value::Object(placement)) = spec.get_mut("placement") {
        placement::default(placement);
    }
    if let Some(Value::Object(application)) = spec
        .get_mut("failover")
        .and_then(|f| f.get_mut("application"))
    {
        if let Some(Value::Object(conditions)) = Some(
            application
                .entry("decisionConditions")
                .or_insert_with(|| json!({})),
        ) {
            default_field(
                conditions,
                "tolerationSeconds",
                json!(DEFAULT_TOLERATION_SECONDS),
            );
        }
        default_field(application, "purgeMode", json!("Gracefully"));
        if application.get("purgeMode").and_then(Value::as_str) == Some("Gracefully") {
            default_field(
                application,
                "gracePeriodSeconds",
                json!(DEFAULT_GRACE_PERIOD_SECONDS),
            );
        }
    }
    if let Some(Value::Object(cluster)) =
        spec.get_mut("failover").and_then(|f| f.get_mut("cluster"))
    {
        default_field(cluster, "purgeMode", json!("Gracefully"));
    }
}

fn validate(
    req: &mut Request<'_>,
    spec: &PropagationSpec,
    scope: Scope,
    namespace: Option<&str>,
    errors: &mut Vec<FieldError>,
) {
    validate_selectors(req, spec, scope, namespace, errors);
    placement::validate(req, &spec.placement, "spec.placement", errors);
    for (i, name) in spec.dependent_overrides.iter().enumerate() {
        if name.is_empty() {
            errors.push(FieldError::required(
                index("spec.dependentOverrides", i),
                "an OverridePolicy name",
            ));
        }
    }
    validate_failover(spec, errors);
    if let Some(suspension) = &spec.suspension
        && suspension.dispatching.is_some()
        && suspension.dispatching_on_clusters.is_some()
    {
        errors.push(FieldError::invalid(
            "spec.suspension",
            json!({"dispatching": suspension.dispatching}),
            "dispatching and dispatchingOnClusters cannot be used together; use one of them",
        ));
    }
    validate_schedule_priority(spec, errors);
}

/// `spec.resourceSelectors`: each names a kind, a namespaced policy selects its own namespace only, and
/// preemption needs names.
fn validate_selectors(
    req: &mut Request<'_>,
    spec: &PropagationSpec,
    scope: Scope,
    namespace: Option<&str>,
    errors: &mut Vec<FieldError>,
) {
    let selectors_path = "spec.resourceSelectors";
    if spec.resource_selectors.is_empty() {
        errors.push(FieldError::required(
            selectors_path,
            "at least one resource selector, e.g. [{apiVersion: apps/v1, kind: Deployment, name: nginx}]",
        ));
    }
    for (i, selector) in spec.resource_selectors.iter().enumerate() {
        let p = index(selectors_path, i);
        if selector.api_version.is_empty() {
            errors.push(FieldError::required(
                field(&p, "apiVersion"),
                "e.g. apps/v1",
            ));
        }
        if selector.kind.is_empty() {
            errors.push(FieldError::required(field(&p, "kind"), "e.g. Deployment"));
        }
        if let Some(labels) = &selector.label_selector {
            placement::validate_label_selector(labels, &field(&p, "labelSelector"), errors);
        }
        if is_reserved_namespace(&selector.namespace) {
            req.warnings.push(format!(
                "{p}.namespace: \"{}\" is reserved by Karmada and never propagated; this selector matches nothing",
                selector.namespace
            ));
        }
        if scope == Scope::Namespaced {
            if let Some(ns) = namespace
                && !selector.namespace.is_empty()
                && selector.namespace != ns
            {
                errors.push(FieldError::invalid(
                    field(&p, "namespace"),
                    json!(selector.namespace),
                    format!("must be the policy's own namespace \"{ns}\" (or empty); use a ClusterPropagationPolicy to select resources in other namespaces"),
                ));
            }
            if CLUSTER_SCOPED_KINDS.contains(&selector.kind.as_str()) {
                req.warnings.push(format!(
                    "{p}: {} is cluster-scoped and a PropagationPolicy only selects resources of its own namespace, so this selector matches nothing; use a ClusterPropagationPolicy{}",
                    selector.kind,
                    if selector.kind == "Namespace" { " (namespaces are also propagated to every cluster automatically)" } else { "" },
                ));
            }
        }
        if spec.preemption == Some(policy::PreemptionBehavior::Always) && selector.name.is_empty() {
            errors.push(FieldError::required(
                field(&p, "name"),
                "every resource selector must name its resource when preemption is Always",
            ));
        }
    }
}

/// `spec.failover`: application failover needs the dependencies propagated and coherent purge settings;
/// cluster failover never leaves workloads behind (`Never`).
fn validate_failover(spec: &PropagationSpec, errors: &mut Vec<FieldError>) {
    let Some(failover) = &spec.failover else {
        return;
    };
    if let Some(application) = &failover.application {
        let p = "spec.failover.application";
        if !spec.propagate_deps {
            errors.push(FieldError::invalid(
                "spec.propagateDeps",
                json!(spec.propagate_deps),
                "must be true when spec.failover.application is set (the replacement needs the application's dependencies)",
            ));
        }
        if let Some(seconds) = application.decision_conditions.toleration_seconds
            && seconds < 0
        {
            errors.push(FieldError::invalid(
                format!("{p}.decisionConditions.tolerationSeconds"),
                json!(seconds),
                "must be greater than or equal to 0",
            ));
        }
        match (application.purge_mode, application.grace_period_seconds) {
            (Some(PurgeMode::Gracefully) | None, Some(seconds)) if seconds <= 0 => {
                errors.push(FieldError::invalid(
                    format!("{p}.gracePeriodSeconds"),
                    json!(seconds),
                    "must be greater than 0",
                ))
            }
            (Some(mode @ (PurgeMode::Directly | PurgeMode::Never)), Some(_)) => {
                errors.push(FieldError::forbidden(
                    format!("{p}.gracePeriodSeconds"),
                    format!(
                        "only allowed when purgeMode is Gracefully, not {}",
                        mode.as_str()
                    ),
                ))
            }
            _ => {}
        }
        validate_state_preservation(
            application.state_preservation.as_ref(),
            &format!("{p}.statePreservation"),
            errors,
        );
    }
    if let Some(cluster) = &failover.cluster {
        let p = "spec.failover.cluster";
        if cluster.purge_mode == Some(PurgeMode::Never) {
            errors.push(FieldError::not_supported(
                format!("{p}.purgeMode"),
                json!("Never"),
                &["Directly", "Gracefully"],
            ));
        }
        validate_state_preservation(
            cluster.state_preservation.as_ref(),
            &format!("{p}.statePreservation"),
            errors,
        );
    }
}

/// `spec.schedulePriority`: only Kubernetes PriorityClasses, named.
fn validate_schedule_priority(spec: &PropagationSpec, errors: &mut Vec<FieldError>) {
    let Some(priority) = &spec.schedule_priority else {
        return;
    };
    let p = "spec.schedulePriority";
    if let Some(source) = priority.priority_class_source
        && source != PriorityClassSource::KubePriorityClass
    {
        errors.push(FieldError::not_supported(
            format!("{p}.priorityClassSource"),
            json!(format!("{source:?}")),
            &["KubePriorityClass"],
        ));
    }
    if priority.priority_class_source.is_some() && priority.priority_class_name.is_empty() {
        errors.push(FieldError::required(
            format!("{p}.priorityClassName"),
            "the name of a PriorityClass",
        ));
    }
}

/// Namespaces Karmada never propagates from.
fn is_reserved_namespace(namespace: &str) -> bool {
    matches!(namespace, "karmada-system" | "karmada-cluster")
        || namespace.starts_with("karmada-es-")
}

fn validate_state_preservation(
    preservation: Option<&policy::StatePreservation>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(preservation) = preservation else {
        return;
    };
    if preservation.rules.is_empty() {
        errors.push(FieldError::required(
            field(path, "rules"),
            "at least one {aliasLabelName, jsonPath} rule",
        ));
    }
    for (i, rule) in preservation.rules.iter().enumerate() {
        let p = index(&field(path, "rules"), i);
        if rule.alias_label_name.is_empty() {
            errors.push(FieldError::required(
                field(&p, "aliasLabelName"),
                "a label key",
            ));
        }
        if rule.json_path.is_empty() {
            errors.push(FieldError::required(
                field(&p, "jsonPath"),
                "a JSONPath into .status, e.g. {.replicas}",
            ));
        }
    }
}
