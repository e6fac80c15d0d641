//! Property tests: on arbitrary (often ill-typed) objects of every built-in kind, defaulting
//! and validation never panic, defaulting is idempotent, and defaulting keeps every value the
//! user set.

use proptest::prelude::*;
use serde_json::{Map, Value};

use apimachinery::GroupVersionKind;

use super::{default_builtin, validate_builtin};

const KINDS: [(&str, &str); 22] = [
    ("", "Namespace"),
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Service"),
    ("", "Pod"),
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("", "PodTemplate"),
    ("", "ReplicationController"),
    ("", "PersistentVolume"),
    ("", "ResourceQuota"),
    ("", "LimitRange"),
    ("policy", "PodDisruptionBudget"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "IngressClass"),
    ("storage.k8s.io", "StorageClass"),
    ("scheduling.k8s.io", "PriorityClass"),
];

/// Field names the defaulting and validation code looks at, so random objects reach it.
const KEYS: [&str; 52] = [
    "metadata",
    "labels",
    "spec",
    "status",
    "template",
    "jobTemplate",
    "containers",
    "initContainers",
    "ports",
    "port",
    "targetPort",
    "containerPort",
    "protocol",
    "name",
    "image",
    "replicas",
    "selector",
    "matchLabels",
    "strategy",
    "rollingUpdate",
    "type",
    "updateStrategy",
    "data",
    "stringData",
    "immutable",
    "volumes",
    "configMap",
    "env",
    "valueFrom",
    "fieldRef",
    "schedule",
    "readinessProbe",
    "minReplicas",
    "maxReplicas",
    "metrics",
    "behavior",
    "scaleUp",
    "scaleDown",
    "policies",
    "scaleTargetRef",
    "minAvailable",
    "maxUnavailable",
    "policyTypes",
    "ingress",
    "egress",
    "limits",
    "max",
    "min",
    "default",
    "defaultRequest",
    "parameters",
    "hostPath",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..70000).prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "web",
            "nginx:latest",
            "TCP",
            "RollingUpdate",
            "Recreate",
            "25%",
            "a b",
            "ClusterIP"
        ])
        .prop_map(|s| Value::String(s.to_string())),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..6).prop_map(
                |pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

fn kind() -> impl Strategy<Value = GroupVersionKind> {
    prop::sample::select(KINDS.to_vec())
        .prop_map(|(group, kind)| GroupVersionKind::new(group, "v1", kind))
}

/// A value the defaulting may fill in: absent, null, empty string, zero (Service targetPort), or
/// an empty list (HPA `metrics`, NetworkPolicy `policyTypes`: upstream defaults `len(x) == 0`).
fn is_unset(value: &Value) -> bool {
    value.is_null()
        || value.as_str() == Some("")
        || value.as_i64() == Some(0)
        || value.as_array().is_some_and(Vec::is_empty)
}

/// Every set value of `original` is still in `defaulted`, unchanged.
fn keeps_user_values(original: &Value, defaulted: &Value) -> bool {
    match (original, defaulted) {
        (Value::Object(before), Value::Object(after)) => before.iter().all(|(key, value)| {
            is_unset(value)
                || after
                    .get(key)
                    .is_some_and(|now| keeps_user_values(value, now))
        }),
        (Value::Array(before), Value::Array(after)) => {
            before.len() == after.len()
                && before
                    .iter()
                    .zip(after)
                    .all(|(b, a)| keeps_user_values(b, a))
        }
        (before, after) => before == after,
    }
}

proptest! {
    #[test]
    fn defaulting_is_idempotent_and_keeps_user_values(gvk in kind(), body in prop::collection::vec((prop::sample::select(KEYS.to_vec()), json_value()), 0..6)) {
        let original = Value::Object(body.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>());
        let mut once = original.clone();
        default_builtin(&gvk, &mut once);
        let mut twice = once.clone();
        default_builtin(&gvk, &mut twice);
        prop_assert_eq!(&once, &twice);
        // Secrets fold stringData into data on purpose.
        if gvk.kind != "Secret" {
            prop_assert!(keeps_user_values(&original, &once), "{} lost a value: {} -> {}", gvk.kind, original, once);
        }
    }

    #[test]
    fn validation_never_panics(gvk in kind(), new in json_value(), old in proptest::option::of(json_value())) {
        let mut new = new;
        default_builtin(&gvk, &mut new);
        let errors = validate_builtin(&gvk, &new, old.as_ref());
        // Every error names a field and renders a message.
        for error in errors {
            prop_assert!(!error.message().is_empty());
        }
    }
}
