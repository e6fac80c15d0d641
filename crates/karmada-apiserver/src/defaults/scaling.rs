//! Defaulting and validation of the kinds that set or bound a workload's replicas:
//! HorizontalPodAutoscaler (`autoscaling/v2`), PodDisruptionBudget (`policy/v1`) and
//! ReplicationController (core `v1`), as kube-apiserver v1.32 does them.
//!
//! Validation covers what keeps users from silent nonsense (replica bounds, a budget set both
//! ways, a selector that matches nothing the template makes); HPA metric sources and behavior
//! policies are not checked here.

use serde_json::{Map, Value, json};

use apimachinery::{FieldError, LabelSelector};

use super::json::{child_object, existing_object, set_default};
use super::pod::default_template;
use super::rules::{int_or_percent, non_negative};
use super::validation::validate_template;

/// What an HPA without metrics scales on: 80% average CPU utilization.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Whether a value counts as unset where Go checks `len(x) == 0`: absent, null or empty.
fn empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(map)) => map.is_empty(),
        Some(_) => false,
    }
}

/// `minReplicas: 1`, a CPU-utilization metric when none is given, and the scale-up/scale-down
/// rules filled in when `behavior` is present.
pub fn default_hpa(spec: &mut Map<String, Value>) {
    set_default(spec, "minReplicas", json!(1));
    if empty(spec.get("metrics")) {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]),
        );
    }
    if let Some(behavior) = existing_object(spec, "behavior") {
        default_scaling_rules(
            behavior,
            "scaleUp",
            Some(0),
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                   {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
        // The scale-down window stays unset: the controller's flag decides it.
        default_scaling_rules(
            behavior,
            "scaleDown",
            None,
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

fn default_scaling_rules(
    behavior: &mut Map<String, Value>,
    direction: &str,
    window_seconds: Option<i64>,
    policies: Value,
) {
    let Some(rules) = child_object(behavior, direction) else {
        return;
    };
    set_default(rules, "selectPolicy", json!("Max"));
    if let Some(window) = window_seconds {
        set_default(rules, "stabilizationWindowSeconds", json!(window));
    }
    set_default(rules, "policies", policies);
}

/// `replicas: 1`; the selector and the object's labels default to the template's labels; the
/// template's pod spec gets the usual pod defaults.
pub fn default_replication_controller(object: &mut Map<String, Value>) {
    let template_labels = object
        .get("spec")
        .and_then(|spec| spec.pointer("/template/metadata/labels"))
        .filter(|labels| !empty(Some(labels)))
        .cloned();
    if let Some(labels) = template_labels {
        if let Some(spec) = child_object(object, "spec")
            && empty(spec.get("selector"))
        {
            spec.insert("selector".into(), labels.clone());
        }
        if let Some(metadata) = child_object(object, "metadata")
            && empty(metadata.get("labels"))
        {
            metadata.insert("labels".into(), labels);
        }
    }
    if let Some(spec) = child_object(object, "spec") {
        set_default(spec, "replicas", json!(1));
        default_template(spec);
    }
}

/// `minAvailable` and `maxUnavailable` are exclusive, each a non-negative count or a percentage
/// up to 100%; the selector must parse.
pub fn validate_pdb(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let is_set = |field: &str| spec.get(field).is_some_and(|v| !v.is_null());
    if is_set("minAvailable") && is_set("maxUnavailable") {
        errors.push(FieldError::invalid(
            "spec",
            Value::Object(spec.clone()),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for field in ["minAvailable", "maxUnavailable"] {
        let path = format!("spec.{field}");
        if let Some((percent, true)) = int_or_percent(spec.get(field), &path, errors)
            && percent > 100
        {
            errors.push(FieldError::invalid(
                path,
                spec.get(field).cloned().unwrap_or(Value::Null),
                "must not be greater than 100%",
            ));
        }
    }
    if let Some(selector) = spec.get("selector").filter(|s| !s.is_null())
        && let Err(error) = LabelSelector::from_label_selector(selector)
    {
        errors.push(FieldError::invalid(
            "spec.selector",
            selector.clone(),
            error.message,
        ));
    }
    const EVICTION_POLICIES: [&str; 2] = ["AlwaysAllow", "IfHealthyBudget"];
    if let Some(policy) = spec
        .get("unhealthyPodEvictionPolicy")
        .and_then(Value::as_str)
        && !EVICTION_POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            Value::String(policy.to_string()),
            &EVICTION_POLICIES,
        ));
    }
}

/// Replica bounds (`1 ≤ minReplicas ≤ maxReplicas`) and a target to scale.
pub fn validate_hpa(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if let Some(min) = min
        && min < 1
    {
        errors.push(FieldError::invalid(
            "spec.minReplicas",
            json!(min),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            json!(max),
            "must be greater than 0",
        ));
    }
    if let Some(min) = min
        && max < min
    {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            json!(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = spec.get("scaleTargetRef");
    for field in ["kind", "name"] {
        let value = target.and_then(|t| t.get(field)).and_then(Value::as_str);
        if value.is_none_or(str::is_empty) {
            errors.push(FieldError::required(
                format!("spec.scaleTargetRef.{field}"),
                "",
            ));
        }
    }
}

/// A non-empty selector (a label map) that matches the template's labels, non-negative counts,
/// and a pod template whose pods restart `Always`.
pub fn validate_replication_controller(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    non_negative(spec, "spec", "minReadySeconds", errors);
    let selector = spec.get("selector").filter(|s| !empty(Some(s)));
    if selector.is_none() {
        errors.push(FieldError::required("spec.selector", ""));
    }
    non_negative(spec, "spec", "replicas", errors);
    let Some(template) = spec.get("template").filter(|t| t.is_object()) else {
        errors.push(FieldError::required("spec.template", ""));
        return;
    };
    if let Some(selector) = selector {
        match LabelSelector::from_label_selector(&json!({ "matchLabels": selector })) {
            Ok(parsed) if !parsed.matches_object(template) => {
                errors.push(FieldError::invalid(
                    "spec.template.metadata.labels",
                    template
                        .pointer("/metadata/labels")
                        .cloned()
                        .unwrap_or(Value::Null),
                    "`selector` does not match template `labels`",
                ));
            }
            Ok(_) => {}
            Err(error) => errors.push(FieldError::invalid(
                "spec.selector",
                selector.clone(),
                error.message,
            )),
        }
    }
    validate_template(spec, "spec", &["Always"], errors);
    if template
        .pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        errors.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use apimachinery::GroupVersionKind;

    use super::super::{default_builtin, validate_builtin};

    fn gvk(kind: &str) -> GroupVersionKind {
        match kind {
            "HorizontalPodAutoscaler" => GroupVersionKind::new("autoscaling", "v2", kind),
            "PodDisruptionBudget" => GroupVersionKind::new("policy", "v1", kind),
            _ => GroupVersionKind::new("", "v1", kind),
        }
    }

    fn defaulted(kind: &str, mut obj: Value) -> Value {
        default_builtin(&gvk(kind), &mut obj);
        obj
    }

    /// The error lines (`field: message`) after defaulting, as the server answers them.
    fn problems(kind: &str, obj: Value) -> Vec<String> {
        let obj = defaulted(kind, obj);
        validate_builtin(&gvk(kind), &obj, None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn template(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}})
    }

    #[test]
    fn hpa_defaults() {
        // (spec, expected spec after defaulting)
        let cases = [
            (
                json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5}),
                json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, "minReplicas": 1,
                       "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                           "target": {"type": "Utilization", "averageUtilization": 80}}}]}),
            ),
            (
                json!({"minReplicas": 3, "maxReplicas": 5, "metrics": [{"type": "Pods", "pods": {}}],
                       "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}),
                json!({"minReplicas": 3, "maxReplicas": 5, "metrics": [{"type": "Pods", "pods": {}}],
                       "behavior": {
                           "scaleUp": {"selectPolicy": "Max", "stabilizationWindowSeconds": 0, "policies": [
                               {"type": "Pods", "value": 4, "periodSeconds": 15},
                               {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                           "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                               {"type": "Percent", "value": 100, "periodSeconds": 15}]}}}),
            ),
            (
                json!({"maxReplicas": 2, "metrics": [], "behavior": {"scaleUp": {"policies": [], "selectPolicy": "Disabled"}}}),
                json!({"maxReplicas": 2, "minReplicas": 1,
                       "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                           "target": {"type": "Utilization", "averageUtilization": 80}}}],
                       "behavior": {
                           "scaleUp": {"policies": [], "selectPolicy": "Disabled", "stabilizationWindowSeconds": 0},
                           "scaleDown": {"selectPolicy": "Max", "policies": [
                               {"type": "Percent", "value": 100, "periodSeconds": 15}]}}}),
            ),
        ];
        for (spec, expected) in cases {
            let hpa = defaulted("HorizontalPodAutoscaler", json!({"spec": spec.clone()}));
            assert_eq!(hpa["spec"], expected, "{spec}");
        }
    }

    #[test]
    fn replication_controller_defaults_from_the_template() {
        let rc = defaulted(
            "ReplicationController",
            json!({"metadata": {"name": "rc"}, "spec": {"template": template(json!({"app": "web"}))}}),
        );
        assert_eq!(rc["spec"]["replicas"], 1);
        assert_eq!(rc["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(rc["spec"]["template"]["spec"]["restartPolicy"], "Always");

        let explicit = defaulted(
            "ReplicationController",
            json!({"metadata": {"labels": {"team": "a"}},
                   "spec": {"replicas": 0, "selector": {"app": "web"}, "template": template(json!({"app": "web", "v": "2"}))}}),
        );
        assert_eq!(explicit["spec"]["replicas"], 0);
        assert_eq!(explicit["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(explicit["metadata"]["labels"], json!({"team": "a"}));
    }

    #[test]
    fn valid_objects_have_no_problems() {
        let cases = [
            (
                "PodDisruptionBudget",
                json!({"spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}),
            ),
            (
                "PodDisruptionBudget",
                json!({"spec": {"maxUnavailable": "50%", "unhealthyPodEvictionPolicy": "AlwaysAllow"}}),
            ),
            (
                "HorizontalPodAutoscaler",
                json!({"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 1}}),
            ),
            (
                "ReplicationController",
                json!({"spec": {"replicas": 2, "template": template(json!({"app": "web"}))}}),
            ),
            (
                "ReplicationController",
                json!({"spec": {"selector": {"app": "web"}, "template": template(json!({"app": "web", "extra": "x"}))}}),
            ),
        ];
        for (kind, obj) in cases {
            assert_eq!(
                problems(kind, obj.clone()),
                Vec::<String>::new(),
                "{kind}: {obj}"
            );
        }
    }

    #[test]
    fn invalid_objects_report_kubernetes_messages() {
        let cases: Vec<(&str, Value, Vec<&str>)> = vec![
            (
                "PodDisruptionBudget",
                json!({"spec": {"minAvailable": 1, "maxUnavailable": 1}}),
                vec![
                    "spec: Invalid value: {\"minAvailable\":1,\"maxUnavailable\":1}: minAvailable and maxUnavailable cannot be both set",
                ],
            ),
            (
                "PodDisruptionBudget",
                json!({"spec": {"minAvailable": -1}}),
                vec!["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                "PodDisruptionBudget",
                json!({"spec": {"maxUnavailable": "150%", "unhealthyPodEvictionPolicy": "Never"}}),
                vec![
                    "spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
                    "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
                ],
            ),
            (
                "HorizontalPodAutoscaler",
                json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 5, "maxReplicas": 3}}),
                vec![
                    "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`",
                ],
            ),
            (
                "HorizontalPodAutoscaler",
                json!({"spec": {"minReplicas": 0}}),
                vec![
                    "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                    "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                    "spec.scaleTargetRef.kind: Required value",
                    "spec.scaleTargetRef.name: Required value",
                ],
            ),
            (
                "HorizontalPodAutoscaler",
                json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}}),
                vec![
                    "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                    "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
                ],
            ),
            (
                "ReplicationController",
                json!({"spec": {"selector": {"app": "other"}, "template": template(json!({"app": "web"}))}}),
                vec![
                    "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
                ],
            ),
            (
                "ReplicationController",
                json!({"spec": {"replicas": -1, "template": {"spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 5,
                    "containers": [{"name": "c", "image": "busybox"}]}}}}),
                vec![
                    "spec.selector: Required value",
                    "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                    "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                    "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported",
                ],
            ),
            (
                "ReplicationController",
                json!({"spec": {"selector": {"app": "web"}}}),
                vec!["spec.template: Required value"],
            ),
        ];
        for (kind, obj, expected) in cases {
            assert_eq!(problems(kind, obj.clone()), expected, "{kind}: {obj}");
        }
    }
}
