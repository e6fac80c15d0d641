//! Admission of the smaller kinds: quotas, taint policies, networking, MCS, autoscaling, rebalancer,
//! interpreter configuration, remedies and scheduler profiles. Mostly shape (via typed decoding) plus the few
//! rules each kind has.

use std::collections::BTreeSet;

use apimachinery::FieldError;
use serde_json::{Value, json};

use super::Request;
use super::common::{check_enum, decode, default_field, field, index, object_at};
use super::placement::{TAINT_EFFECTS, validate_affinity};
use crate::{apps, autoscaling, config, mcs, networking, policy, remedy, scheduling};

const MAX_RULE_NAME: usize = 32;
const DEFAULT_CPU_UTILIZATION: i64 = 80;
const DEFAULT_HISTORY_LIMIT: i64 = 3;
const MAX_HISTORY_LIMIT: i32 = 32;

fn only_decode<T: serde::de::DeserializeOwned>(obj: &Value) -> (Option<T>, Vec<FieldError>) {
    match decode::<T>(obj) {
        Ok(t) => (Some(t), Vec::new()),
        Err(e) => (None, vec![*e]),
    }
}

pub(crate) fn federated_resource_quota(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (quota, mut errors) = only_decode::<policy::FederatedResourceQuota>(obj);
    let Some(quota) = quota else { return errors };
    for (resource, quantity) in &quota.spec.overall {
        super::cluster::parse_quantity(
            &mut errors,
            &format!("spec.overall[{resource}]"),
            &quantity.0,
        );
    }
    let mut seen = BTreeSet::new();
    for (i, assignment) in quota.spec.static_assignments.iter().enumerate() {
        let p = field(&index("spec.staticAssignments", i), "clusterName");
        if assignment.cluster_name.is_empty() {
            errors.push(FieldError::required(p, "a cluster name"));
        } else if !seen.insert(assignment.cluster_name.clone()) {
            errors.push(FieldError::duplicate(p, json!(assignment.cluster_name)));
        }
        for (resource, quantity) in &assignment.hard {
            let path = format!(
                "{}[{resource}]",
                field(&index("spec.staticAssignments", i), "hard")
            );
            super::cluster::parse_quantity(&mut errors, &path, &quantity.0);
        }
    }
    errors
}

pub(crate) fn cluster_taint_policy(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (policy, mut errors) = only_decode::<policy::ClusterTaintPolicy>(obj);
    let Some(policy) = policy else { return errors };
    let spec = &policy.spec;
    if let Some(target) = &spec.target_clusters {
        validate_affinity(target, "spec.targetClusters", &mut errors);
    }
    if spec.add_on_conditions.is_empty() && spec.remove_on_conditions.is_empty() {
        errors.push(FieldError::required(
            "spec",
            "at least one of addOnConditions or removeOnConditions: [{conditionType: Ready, operator: In, statusValues: [\"False\"]}]",
        ));
    }
    for (name, list) in [
        ("addOnConditions", &spec.add_on_conditions),
        ("removeOnConditions", &spec.remove_on_conditions),
    ] {
        for (i, condition) in list.iter().enumerate() {
            let p = index(&field("spec", name), i);
            if condition.condition_type.is_empty() {
                errors.push(FieldError::required(
                    field(&p, "conditionType"),
                    "e.g. Ready",
                ));
            }
            if condition.status_values.is_empty() {
                errors.push(FieldError::required(
                    field(&p, "statusValues"),
                    "e.g. [\"False\", \"Unknown\"]",
                ));
            }
        }
    }
    if spec.taints.is_empty() {
        errors.push(FieldError::required(
            "spec.taints",
            "at least one {key, effect} taint",
        ));
    }
    for (i, taint) in spec.taints.iter().enumerate() {
        let p = index("spec.taints", i);
        if taint.key.is_empty() {
            errors.push(FieldError::required(field(&p, "key"), ""));
        }
        check_enum(
            &mut errors,
            &field(&p, "effect"),
            &taint.effect,
            TAINT_EFFECTS,
        );
    }
    errors
}

pub(crate) fn multi_cluster_service(req: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (mcs, mut errors) = only_decode::<networking::MultiClusterService>(obj);
    let Some(mcs) = mcs else { return errors };
    // Karmada's mutating webhook labels each MultiClusterService with a permanent id (its Works and the Service
    // binding carry it).
    super::common::permanent_id(
        req,
        obj,
        networking::LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID,
        &mut errors,
    );
    if mcs.spec.types.is_empty() {
        errors.push(FieldError::required(
            "spec.types",
            "supported values: \"CrossCluster\", \"LoadBalancer\"",
        ));
    }
    for (i, port) in mcs.spec.ports.iter().enumerate() {
        check_port(
            &mut errors,
            &field(&index("spec.ports", i), "port"),
            port.port,
        );
    }
    errors
}

pub(crate) fn multi_cluster_ingress(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    only_decode::<networking::MultiClusterIngress>(obj).1
}

pub(crate) fn service_export(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    only_decode::<mcs::ServiceExport>(obj).1
}

pub(crate) fn service_import(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (import, mut errors) = only_decode::<mcs::ServiceImport>(obj);
    let Some(import) = import else { return errors };
    if import.spec.ips.len() > 1 {
        errors.push(FieldError {
            kind: apimachinery::FieldErrorKind::TooMany,
            field: "spec.ips".into(),
            value: Some(json!(import.spec.ips.len())),
            detail: "must have at most 1 item".into(),
        });
    }
    for (i, port) in import.spec.ports.iter().enumerate() {
        let p = index("spec.ports", i);
        check_port(&mut errors, &field(&p, "port"), port.port);
        if !port.protocol.is_empty() {
            check_enum(
                &mut errors,
                &field(&p, "protocol"),
                &port.protocol,
                &["TCP", "UDP", "SCTP"],
            );
        }
        if import.spec.ports.len() > 1 && port.name.is_empty() {
            errors.push(FieldError::required(
                field(&p, "name"),
                "ports must be named when there are several",
            ));
        }
    }
    errors
}

fn check_port(errors: &mut Vec<FieldError>, path: &str, port: i32) {
    if !(1..=65535).contains(&port) {
        errors.push(FieldError::invalid(
            path,
            json!(port),
            "must be between 1 and 65535, inclusive",
        ));
    }
}

pub(crate) fn federated_hpa(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    if let Some(spec) = object_at(obj, &["spec"]) {
        default_field(spec, "minReplicas", json!(1));
        let no_metrics = spec
            .get("metrics")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if no_metrics {
            spec.insert(
                "metrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]),
            );
        }
    }
    let (hpa, mut errors) = only_decode::<autoscaling::FederatedHPA>(obj);
    let Some(hpa) = hpa else { return errors };
    let spec = &hpa.spec;
    let min = spec.min_replicas.unwrap_or(1);
    if min < 1 {
        errors.push(FieldError::invalid(
            "spec.minReplicas",
            json!(min),
            "must be greater than or equal to 1",
        ));
    }
    if spec.max_replicas < min {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            json!(spec.max_replicas),
            format!("must be greater than or equal to minReplicas ({min})"),
        ));
    }
    check_target_ref(&mut errors, &spec.scale_target_ref);
    errors
}

fn check_target_ref(
    errors: &mut Vec<FieldError>,
    target: &k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference,
) {
    if target.kind.is_empty() {
        errors.push(FieldError::required(
            "spec.scaleTargetRef.kind",
            "e.g. Deployment",
        ));
    }
    if target.name.is_empty() {
        errors.push(FieldError::required("spec.scaleTargetRef.name", ""));
    }
}

pub(crate) fn cron_federated_hpa(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    if let Some(Value::Array(rules)) = obj.pointer_mut("/spec/rules") {
        for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
            default_field(rule, "suspend", json!(false));
            default_field(rule, "successfulHistoryLimit", json!(DEFAULT_HISTORY_LIMIT));
            default_field(rule, "failedHistoryLimit", json!(DEFAULT_HISTORY_LIMIT));
        }
    }
    let (cron, mut errors) = only_decode::<autoscaling::CronFederatedHPA>(obj);
    let Some(cron) = cron else { return errors };
    let target = &cron.spec.scale_target_ref;
    // Karmada's rule: a target in this API group is a FederatedHPA (its bounds change); any other
    // target is a workload whose scale subresource changes.
    let targets_fhpa = target.api_version.as_deref() == Some(AUTOSCALING_GROUP_VERSION);
    if targets_fhpa && target.kind != "FederatedHPA" {
        errors.push(FieldError::invalid(
            "spec.scaleTargetRef.kind",
            json!(target.kind),
            format!(
                "invalid scaleTargetRef kind: {}, only FederatedHPA is supported in {AUTOSCALING_GROUP_VERSION}",
                target.kind
            ),
        ));
        return errors;
    }
    check_target_ref(&mut errors, target);
    let mut names = BTreeSet::new();
    for (i, rule) in cron.spec.rules.iter().enumerate() {
        let p = index("spec.rules", i);
        if rule.name.is_empty() {
            errors.push(FieldError::required(field(&p, "name"), ""));
        } else if rule.name.len() > MAX_RULE_NAME {
            errors.push(FieldError::too_long(
                field(&p, "name"),
                json!(rule.name),
                MAX_RULE_NAME,
            ));
        } else if !names.insert(rule.name.as_str()) {
            errors.push(FieldError::duplicate(field(&p, "name"), json!(rule.name)));
        }
        if let Err(error) = crate::cron_schedule::parse_expression(&rule.schedule) {
            errors.push(FieldError::invalid(
                field(&p, "schedule"),
                json!(rule.schedule),
                error.to_string(),
            ));
        }
        if let Some(zone) = &rule.time_zone
            && let Err(error) = crate::cron_schedule::zone(zone)
        {
            errors.push(FieldError::invalid(
                field(&p, "timeZone"),
                json!(zone),
                error.to_string(),
            ));
        }
        if targets_fhpa {
            check_fhpa_bounds(&mut errors, &p, rule);
        } else {
            match rule.target_replicas {
                None => errors.push(FieldError::required(
                    field(&p, "targetReplicas"),
                    format!(
                        "targetReplicas cannot be nil if you want to scale {}",
                        target.kind
                    ),
                )),
                Some(replicas) if replicas < 0 => errors.push(FieldError::invalid(
                    field(&p, "targetReplicas"),
                    json!(replicas),
                    "must be greater than or equal to 0",
                )),
                Some(_) => {}
            }
        }
        if let Some(limit) = rule.successful_history_limit
            && !(1..=MAX_HISTORY_LIMIT).contains(&limit)
        {
            errors.push(FieldError::invalid(
                field(&p, "successfulHistoryLimit"),
                json!(limit),
                "must be between 1 and 32",
            ));
        }
        if let Some(limit) = rule.failed_history_limit
            && !(0..=MAX_HISTORY_LIMIT).contains(&limit)
        {
            errors.push(FieldError::invalid(
                field(&p, "failedHistoryLimit"),
                json!(limit),
                "must be between 0 and 32",
            ));
        }
    }
    errors
}

const AUTOSCALING_GROUP_VERSION: &str = "autoscaling.karmada.io/v1alpha1";

/// A rule scaling a FederatedHPA: at least one bound, each positive, min not above max.
fn check_fhpa_bounds(
    errors: &mut Vec<FieldError>,
    p: &str,
    rule: &autoscaling::CronFederatedHPARule,
) {
    if rule.target_min_replicas.is_none() && rule.target_max_replicas.is_none() {
        errors.push(FieldError::required(
            field(p, "targetMaxReplicas"),
            "targetMinReplicas and targetMaxReplicas cannot both be nil when the target is a FederatedHPA",
        ));
    }
    for (name, value) in [
        ("targetMinReplicas", rule.target_min_replicas),
        ("targetMaxReplicas", rule.target_max_replicas),
    ] {
        if let Some(n) = value
            && n <= 0
        {
            errors.push(FieldError::invalid(
                field(p, name),
                json!(n),
                "must be greater than 0",
            ));
        }
    }
    if let (Some(min), Some(max)) = (rule.target_min_replicas, rule.target_max_replicas)
        && min > max
    {
        errors.push(FieldError::invalid(
            field(p, "targetMinReplicas"),
            json!(min),
            format!("must be less than or equal to targetMaxReplicas ({max})"),
        ));
    }
}

pub(crate) fn workload_rebalancer(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (rebalancer, mut errors) = only_decode::<apps::WorkloadRebalancer>(obj);
    let Some(rebalancer) = rebalancer else {
        return errors;
    };
    if rebalancer.spec.workloads.is_empty() {
        errors.push(FieldError::required(
            "spec.workloads",
            "at least one {apiVersion, kind, name, namespace} workload",
        ));
    }
    for (i, workload) in rebalancer.spec.workloads.iter().enumerate() {
        let p = index("spec.workloads", i);
        for (name, value) in [
            ("apiVersion", &workload.api_version),
            ("kind", &workload.kind),
            ("name", &workload.name),
        ] {
            if value.is_empty() {
                errors.push(FieldError::required(field(&p, name), ""));
            }
        }
    }
    errors
}

pub(crate) fn interpreter_customization(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (ric, mut errors) = only_decode::<config::ResourceInterpreterCustomization>(obj);
    let Some(ric) = ric else { return errors };
    if ric.spec.target.api_version.is_empty() {
        errors.push(FieldError::required(
            "spec.target.apiVersion",
            "e.g. apps/v1",
        ));
    }
    if ric.spec.target.kind.is_empty() {
        errors.push(FieldError::required("spec.target.kind", "e.g. Deployment"));
    }
    errors
}

pub(crate) fn interpreter_webhook_configuration(
    _: &mut Request<'_>,
    obj: &mut Value,
) -> Vec<FieldError> {
    let (configuration, mut errors) =
        only_decode::<config::ResourceInterpreterWebhookConfiguration>(obj);
    let Some(configuration) = configuration else {
        return errors;
    };
    for (i, webhook) in configuration.webhooks.iter().enumerate() {
        let p = index("webhooks", i);
        if webhook.name.is_empty() {
            errors.push(FieldError::required(
                field(&p, "name"),
                "a fully qualified name, e.g. workloads.example.com",
            ));
        }
        for (j, rule) in webhook.rules.iter().enumerate() {
            for (k, operation) in rule.operations.iter().enumerate() {
                let op_path = index(&field(&index(&field(&p, "rules"), j), "operations"), k);
                check_enum(
                    &mut errors,
                    &op_path,
                    operation,
                    config::INTERPRETER_OPERATIONS,
                );
            }
        }
        if let Some(timeout) = webhook.timeout_seconds
            && !(1..=30).contains(&timeout)
        {
            errors.push(FieldError::invalid(
                field(&p, "timeoutSeconds"),
                json!(timeout),
                "must be between 1 and 30 seconds",
            ));
        }
    }
    errors
}

pub(crate) fn remedy(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (remedy, mut errors) = only_decode::<remedy::Remedy>(obj);
    let Some(remedy) = remedy else { return errors };
    for (i, decision) in remedy.spec.decision_matches.iter().enumerate() {
        if let Some(condition) = &decision.cluster_condition_match {
            let p = field(&index("spec.decisionMatches", i), "clusterConditionMatch");
            if condition.condition_type.is_empty() {
                errors.push(FieldError::required(field(&p, "conditionType"), ""));
            }
            check_enum(
                &mut errors,
                &field(&p, "conditionStatus"),
                &condition.condition_status,
                &["True", "False", "Unknown"],
            );
        }
    }
    errors
}

pub(crate) fn scheduler_profile(_: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let (profile, mut errors) = only_decode::<scheduling::SchedulerProfile>(obj);
    let Some(profile) = profile else {
        return errors;
    };
    let set = &profile.spec.plugins.schedule;
    let base = "spec.plugins.schedule";
    let mut enabled = BTreeSet::new();
    for (i, plugin) in set.enabled.iter().enumerate() {
        let p = index(&field(base, "enabled"), i);
        if plugin.name.is_empty() {
            errors.push(FieldError::required(
                field(&p, "name"),
                "a plugin name, e.g. ClusterAffinity",
            ));
        } else if !enabled.insert(plugin.name.as_str()) {
            errors.push(FieldError::duplicate(field(&p, "name"), json!(plugin.name)));
        }
        if let Some(weight) = plugin.weight
            && weight < 0
        {
            errors.push(FieldError::invalid(
                field(&p, "weight"),
                json!(weight),
                "must be greater than or equal to 0",
            ));
        }
    }
    for (i, plugin) in set.disabled.iter().enumerate() {
        let p = index(&field(base, "disabled"), i);
        if plugin.name.is_empty() {
            errors.push(FieldError::required(
                field(&p, "name"),
                "a plugin name, or \"*\" for all defaults",
            ));
        } else if enabled.contains(plugin.name.as_str()) {
            errors.push(FieldError::invalid(
                field(&p, "name"),
                json!(plugin.name),
                "a plugin cannot be both enabled and disabled",
            ));
        }
        if plugin.weight.is_some() {
            errors.push(FieldError::forbidden(
                field(&p, "weight"),
                "weights apply to enabled plugins only",
            ));
        }
    }
    let mut configured = BTreeSet::new();
    for (i, config) in profile.spec.plugin_config.iter().enumerate() {
        let p = field(&index("spec.pluginConfig", i), "name");
        if config.name.is_empty() {
            errors.push(FieldError::required(p, "the plugin these args are for"));
        } else if !configured.insert(config.name.as_str()) {
            errors.push(FieldError::duplicate(p, json!(config.name)));
        }
    }
    errors
}
