//! Every Karmada-kind document in the repository's tests/fixtures is admitted and lands on the outcome decided for it in
//! docs/compat-fixtures.md: accepted with its key fields defaulted as the file's comments intend, or rejected
//! with an error at the named field whose message shows the accepted shape. A fixture document without a
//! decision here fails the test, so new fixtures must be decided.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use apimachinery::{GroupVersionKind, ResourceDef, unknown_fields};
use karmada_api::{AdmissionContext, Operation, admit, resource_defs};
use serde_json::{Value, json};

const NEW_ID: &str = "0b7b7d3e-5f33-4c57-9d0e-5a1f3f0f4b2a";
const NOW: &str = "2026-11-29T12:00:00Z";

enum Outcome {
    /// Accepted: (JSON pointer, expected value) pairs after admission, and fragments expected among warnings.
    Accepted {
        fields: Vec<(&'static str, Value)>,
        warnings: Vec<&'static str>,
    },
    /// Rejected: the first error's field and fragments of its message; and unknown fields the schema flags.
    Rejected {
        field: &'static str,
        message: Vec<&'static str>,
        unknown: Vec<&'static str>,
    },
}

/// (file relative to the fixtures dir, kind, metadata.name) → decided outcome.
fn decisions() -> Vec<(&'static str, &'static str, &'static str, Outcome)> {
    use Outcome::*;
    let pp_common = |ns: &'static str| {
        vec![
            ("/spec/conflictResolution", json!("Abort")),
            ("/spec/schedulerName", json!("default-scheduler")),
            ("/spec/resourceSelectors/0/namespace", json!(ns)),
            (
                "/metadata/labels/propagationpolicy.karmada.io~1permanent-id",
                json!(NEW_ID),
            ),
        ]
    };
    let with = |mut base: Vec<(&'static str, Value)>, more: Vec<(&'static str, Value)>| {
        base.extend(more);
        base
    };
    vec![
        (
            "seed-000/01-nginx-propagation.yaml",
            "PropagationPolicy",
            "nginx-propagation",
            Accepted {
                fields: with(
                    pp_common("default"),
                    vec![
                        (
                            "/spec/placement/spreadConstraints/0/spreadByField",
                            json!("cluster"),
                        ),
                        ("/spec/placement/spreadConstraints/0/minGroups", json!(2)),
                        ("/spec/placement/spreadConstraints/0/maxGroups", json!(3)),
                        (
                            "/spec/placement/replicaScheduling/replicaSchedulingType",
                            json!("Divided"),
                        ),
                        (
                            "/spec/placement/replicaScheduling/replicaDivisionPreference",
                            json!("Weighted"),
                        ),
                        (
                            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/2/weight",
                            json!(20),
                        ),
                    ],
                ),
                warnings: vec![
                    "spec.placement.spreadConstraints[0].spreadByField",
                    "\"cluster\"",
                ],
            },
        ),
        (
            "seed-000/02-namespace-propagation.yaml",
            "PropagationPolicy",
            "microservices-propagation",
            Accepted {
                fields: pp_common("default"),
                warnings: vec![
                    "Namespace is cluster-scoped",
                    "ClusterPropagationPolicy",
                    "propagated to every cluster automatically",
                ],
            },
        ),
        (
            "seed-000/03-redis-statefulset.yaml",
            "PropagationPolicy",
            "redis-propagation",
            Accepted {
                fields: with(
                    pp_common("microservices"),
                    vec![
                        (
                            "/spec/placement/spreadConstraints/0/spreadByField",
                            json!("cluster"),
                        ),
                        ("/spec/placement/spreadConstraints/0/minGroups", json!(3)),
                        (
                            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/2/weight",
                            json!(34),
                        ),
                    ],
                ),
                warnings: vec!["spreadByField"],
            },
        ),
        (
            "seed-000/04-api-server.yaml",
            "PropagationPolicy",
            "api-server-propagation",
            Accepted {
                fields: with(
                    pp_common("microservices"),
                    vec![
                        ("/spec/resourceSelectors/1/kind", json!("Service")),
                        (
                            "/spec/resourceSelectors/1/namespace",
                            json!("microservices"),
                        ),
                        (
                            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/0/weight",
                            json!(40),
                        ),
                        (
                            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/1/weight",
                            json!(35),
                        ),
                        (
                            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/2/weight",
                            json!(25),
                        ),
                    ],
                ),
                warnings: vec![],
            },
        ),
        (
            "seed-000/05-multicluster-service.yaml",
            "ServiceExport",
            "api-server",
            Accepted {
                fields: vec![("/metadata/namespace", json!("microservices"))],
                warnings: vec![],
            },
        ),
        (
            "seed-000/05-multicluster-service.yaml",
            "ServiceImport",
            "api-server",
            Accepted {
                fields: vec![
                    ("/spec/type", json!("ClusterSetIP")),
                    ("/spec/ports/0/port", json!(8080)),
                ],
                warnings: vec![],
            },
        ),
        (
            "seed-000/06-failover-policy.yaml",
            "PropagationPolicy",
            "api-server-propagation",
            Rejected {
                field: "spec.placement.failover",
                message: vec![
                    "move it to spec.failover",
                    "decisionConditions: {tolerationSeconds: <seconds>}",
                    "Directly|Gracefully|Never",
                    "not a list of conditions",
                ],
                unknown: vec![".spec.placement.failover"],
            },
        ),
        (
            "seed-000/07-scheduler-profile.yaml",
            "SchedulerProfile",
            "latency-sensitive",
            Accepted {
                fields: vec![
                    ("/spec/plugins/schedule/enabled/0/weight", json!(100)),
                    (
                        "/spec/plugins/schedule/disabled/0/name",
                        json!("ClusterEviction"),
                    ),
                    ("/spec/pluginConfig/0/args/availablePercentage", json!(70)),
                ],
                warnings: vec![],
            },
        ),
        (
            "seed-001/override-policy.yaml",
            "OverridePolicy",
            "nginx-image-override",
            Accepted {
                fields: vec![
                    (
                        "/spec/overrideRules/0/targetCluster/clusterNames",
                        json!(["cluster-gcp"]),
                    ),
                    (
                        "/spec/overrideRules/0/overriders/imageOverrider/0/value",
                        json!("gcr.io/my-project"),
                    ),
                    ("/spec/targetCluster", Value::Null),
                ],
                warnings: vec!["spec.targetCluster", "spec.overrideRules[0].targetCluster"],
            },
        ),
        (
            "seed-001/propagation-policy.yaml",
            "PropagationPolicy",
            "nginx-ha-policy",
            Accepted {
                fields: with(
                    pp_common("production"),
                    vec![
                        (
                            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/0/weight",
                            json!(2),
                        ),
                        (
                            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/1/weight",
                            json!(1),
                        ),
                    ],
                ),
                warnings: vec![],
            },
        ),
    ]
}

fn def_for<'d>(defs: &'d [ResourceDef], doc: &Value) -> Option<&'d ResourceDef> {
    let api_version = doc.get("apiVersion")?.as_str()?;
    let kind = doc.get("kind")?.as_str()?;
    defs.iter()
        .find(|d| d.api_version() == api_version && d.kind == kind)
}

#[test]
fn every_fixture_lands_on_its_decided_outcome() {
    let defs = resource_defs();
    let decisions = decisions();
    let mut used = vec![false; decisions.len()];
    let ctx = AdmissionContext {
        new_id: NEW_ID.into(),
        now: NOW.into(),
    };
    let files = test_fixtures::yaml_files();
    assert!(
        files.len() >= 10,
        "expected the seed fixtures in {}",
        test_fixtures::dir().display()
    );
    for relative in files {
        let relative = relative.as_str();
        for mut doc in test_fixtures::documents(relative) {
            let Some(def) = def_for(&defs, &doc) else {
                // Not a Karmada kind: admission leaves it alone.
                let before = doc.clone();
                let gvk =
                    GroupVersionKind::new("apps", "v1", doc["kind"].as_str().unwrap_or_default());
                assert_eq!(
                    admit(&gvk, Operation::Create, &mut doc, None, &ctx),
                    Ok(vec![]),
                    "{relative}"
                );
                assert_eq!(doc, before, "{relative}: foreign kind changed");
                continue;
            };
            let kind = def.kind.clone();
            let name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let position = decisions
                .iter()
                .position(|(f, k, n, _)| *f == relative && *k == kind && *n == name)
                .unwrap_or_else(|| panic!("{relative}: no decision recorded for {kind} {name}"));
            used[position] = true;
            // The API server fills the namespace of a namespaced object from the request (kubectl: "default").
            if def.namespaced && doc.pointer("/metadata/namespace").is_none() {
                doc["metadata"]["namespace"] = json!("default");
            }
            let schema = def
                .schema
                .as_ref()
                .expect("every Karmada kind has a schema");
            let unknown_before = unknown_fields(schema, &doc);
            let result = admit(&def.gvk(), Operation::Create, &mut doc, None, &ctx);
            match &decisions[position].3 {
                Outcome::Accepted { fields, warnings } => {
                    let got =
                        result.unwrap_or_else(|e| panic!("{relative} {kind}: rejected: {e:?}"));
                    for (pointer, expected) in fields {
                        assert_eq!(
                            doc.pointer(pointer).unwrap_or(&Value::Null),
                            expected,
                            "{relative} {kind} at {pointer}"
                        );
                    }
                    let joined = got.join("\n");
                    for fragment in warnings {
                        assert!(
                            joined.contains(fragment),
                            "{relative}: warning {fragment:?} missing from {joined:?}"
                        );
                    }
                    if warnings.is_empty() {
                        assert!(got.is_empty(), "{relative}: unexpected warnings {got:?}");
                    }
                    assert_eq!(
                        unknown_before,
                        Vec::<String>::new(),
                        "{relative}: the schema flags fields"
                    );
                    assert_eq!(
                        unknown_fields(schema, &doc),
                        Vec::<String>::new(),
                        "{relative}: defaulting added unknown fields"
                    );
                }
                Outcome::Rejected {
                    field,
                    message,
                    unknown,
                } => {
                    let errors = result.expect_err(&format!("{relative} {kind}: accepted"));
                    assert_eq!(errors[0].field, *field, "{relative}: {errors:?}");
                    let text = errors[0].to_string();
                    for fragment in message {
                        assert!(
                            text.contains(fragment),
                            "{relative}: {fragment:?} missing from {text}"
                        );
                    }
                    for path in unknown {
                        assert!(
                            unknown_before.iter().any(|u| u == path),
                            "{relative}: schema does not flag {path}: {unknown_before:?}"
                        );
                    }
                }
            }
        }
    }
    for (done, (file, kind, name, _)) in used.iter().zip(&decisions) {
        assert!(
            done,
            "decision for {file} {kind} {name} matches no fixture document"
        );
    }
}

#[test]
fn fixture_06_purge_mode_would_be_normalised_in_the_right_place() {
    // The seed's intent, written in the accepted shape, is admitted: the legacy `Immediately` becomes `Directly`.
    let mut doc = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "api-server-propagation", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api-server"}],
            "propagateDeps": true,
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                                "weightPreference": {"dynamicWeight": "AvailableReplicas"}}},
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": 10}, "purgeMode": "Immediately"}}
        }
    });
    let ctx = AdmissionContext {
        new_id: NEW_ID.into(),
        now: NOW.into(),
    };
    let gvk = GroupVersionKind::new("policy.karmada.io", "v1alpha1", "PropagationPolicy");
    let warnings = admit(&gvk, Operation::Create, &mut doc, None, &ctx).expect("accepted shape");
    assert_eq!(
        doc.pointer("/spec/failover/application/purgeMode"),
        Some(&json!("Directly"))
    );
    assert_eq!(
        doc.pointer("/spec/failover/application/decisionConditions/tolerationSeconds"),
        Some(&json!(10))
    );
    assert_eq!(
        doc.pointer("/spec/failover/application/gracePeriodSeconds"),
        None
    );
    assert!(
        warnings.iter().any(|w| w.contains("Immediately")),
        "{warnings:?}"
    );
}
