//! Properties of admission: it never panics on arbitrary input, and defaulting is idempotent — admitting an
//! accepted object again (as an update) changes nothing and still accepts it.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use apimachinery::GroupVersionKind;
use karmada_api::{AdmissionContext, Operation, PropagationPolicy, admit};
use proptest::prelude::*;
use serde_json::{Value, json};

fn ctx() -> AdmissionContext {
    AdmissionContext {
        new_id: "6f1c2a34-0000-4000-8000-000000000001".into(),
        now: "2026-11-29T00:00:00Z".into(),
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[A-Za-z/]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("placement".to_string()),
                    Just("spreadConstraints".to_string()),
                    Just("failover".to_string()),
                    Just("application".to_string()),
                    Just("resourceSelectors".to_string()),
                    Just("overrideRules".to_string()),
                    Just("syncMode".to_string()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const KINDS: &[(&str, &str, &str)] = &[
    ("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
    ("policy.karmada.io", "v1alpha1", "ClusterPropagationPolicy"),
    ("policy.karmada.io", "v1alpha1", "OverridePolicy"),
    ("policy.karmada.io", "v1alpha1", "ClusterTaintPolicy"),
    ("cluster.karmada.io", "v1alpha1", "Cluster"),
    ("work.karmada.io", "v1alpha2", "ResourceBinding"),
    ("work.karmada.io", "v1alpha1", "Work"),
    ("scheduling.karmada.io", "v1alpha1", "SchedulerProfile"),
    ("autoscaling.karmada.io", "v1alpha1", "CronFederatedHPA"),
];

fn spread_constraint() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec![
            "cluster", "region", "Cluster", "zone",
        ])),
        0i64..4,
        0i64..4,
    )
        .prop_map(|(by, max, min)| {
            let mut c = json!({"maxGroups": max, "minGroups": min});
            if let Some(by) = by {
                c["spreadByField"] = json!(by);
            }
            c
        })
}

fn policy_spec() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(spread_constraint(), 0..3),
        prop::option::of(prop::sample::select(vec!["Duplicated", "Divided"])),
        prop::option::of(prop::sample::select(vec!["Directly", "Gracefully", "Never", "Immediately", "Graciously"])),
        any::<bool>(),
    )
        .prop_map(|(constraints, scheduling, purge, deps)| {
            let mut spec = json!({
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                "propagateDeps": deps,
                "placement": {"spreadConstraints": constraints},
            });
            if let Some(t) = scheduling {
                spec["placement"]["replicaScheduling"] = json!({"replicaSchedulingType": t});
            }
            if let Some(p) = purge {
                spec["failover"] = json!({"application": {"purgeMode": p}});
            }
            spec
        })
}

proptest! {
    #[test]
    fn admission_never_panics(kind in prop::sample::select(KINDS), spec in arbitrary_json(), metadata in arbitrary_json()) {
        let gvk = GroupVersionKind::new(kind.0, kind.1, kind.2);
        let mut obj = json!({"apiVersion": gvk.api_version(), "kind": kind.2, "metadata": metadata, "spec": spec});
        let old = obj.clone();
        let _ = admit(&gvk, Operation::Create, &mut obj, None, &ctx());
        let mut again = old.clone();
        let _ = admit(&gvk, Operation::Update, &mut again, Some(&old), &ctx());
    }

    #[test]
    fn policy_defaulting_is_idempotent(spec in policy_spec()) {
        let gvk = GroupVersionKind::new("policy.karmada.io", "v1alpha1", "PropagationPolicy");
        let mut obj = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec});
        if admit(&gvk, Operation::Create, &mut obj, None, &ctx()).is_ok() {
            let mut second = obj.clone();
            let result = admit(&gvk, Operation::Update, &mut second, Some(&obj), &ctx());
            prop_assert!(result.is_ok(), "{:?}", result);
            prop_assert_eq!(&second, &obj);
            let typed: PropagationPolicy = serde_json::from_value(obj).map_err(|e| TestCaseError::fail(e.to_string()))?;
            for c in &typed.spec.placement.spread_constraints {
                prop_assert!(c.min_groups >= 1);
                prop_assert!(c.spread_by_field.is_some() || !c.spread_by_label.is_empty());
            }
            if let Some(app) = typed.spec.failover.and_then(|f| f.application) {
                prop_assert!(app.purge_mode.is_some());
                prop_assert_eq!(app.decision_conditions.toleration_seconds, Some(300));
            }
        }
    }
}
