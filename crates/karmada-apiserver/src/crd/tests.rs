//! Tests of CRD validation, the definitions a CRD yields, and its status.

use jiff::Timestamp;
use serde_json::{Value, json};

use apimachinery::Printer;

use super::*;

fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"], "categories": ["all"]},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                 "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "description": "the cron spec", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "format": "int32", "priority": 1, "jsonPath": ".spec.replicas"}]},
                {"name": "v0", "served": false, "storage": false}
            ]
        }
    })
}

fn with(mut crd: Value, pointer: &str, value: Value) -> Value {
    if let Some(slot) = crd.pointer_mut(pointer) {
        *slot = value;
    }
    crd
}

#[test]
fn served_versions_become_resource_defs() {
    let defs = resource_defs_from_crd(&crontab_crd()).unwrap_or_default();
    let versions: Vec<&str> = defs.iter().map(|d| d.version.as_str()).collect();
    assert_eq!(versions, ["v1beta1", "v1"]);
    let v1 = &defs[1];
    assert_eq!(v1.group, "stable.example.com");
    assert_eq!(v1.kind, "CronTab");
    assert_eq!(v1.plural, "crontabs");
    assert_eq!(v1.singular, "crontab");
    assert!(v1.namespaced);
    assert_eq!(v1.short_names, ["ct"]);
    assert_eq!(v1.categories, ["all"]);
    assert!(v1.status_subresource && v1.storage_version && v1.tracks_generation && !v1.builtin);
    let scale = v1
        .scale_subresource
        .clone()
        .unwrap_or_else(|| panic!("scale subresource expected"));
    assert_eq!(scale.spec_replicas_path, ".spec.replicas");
    assert_eq!(
        scale.label_selector_path.as_deref(),
        Some(".status.selector")
    );
    let Printer::Columns(columns) = &v1.printer else {
        panic!("custom columns expected")
    };
    assert_eq!(columns.len(), 2);
    assert_eq!(
        (columns[0].name.as_str(), columns[0].json_path.as_str()),
        ("Spec", ".spec.cronSpec")
    );
    assert_eq!(columns[0].description, "the cron spec");
    assert_eq!(
        (
            columns[1].type_.as_str(),
            columns[1].format.as_str(),
            columns[1].priority
        ),
        ("integer", "int32", 1)
    );
    assert_eq!(
        v1.schema
            .as_ref()
            .and_then(|s| s.pointer("/properties/spec/type")),
        Some(&json!("object"))
    );

    let beta = &defs[0];
    assert!(!beta.storage_version && !beta.status_subresource && beta.scale_subresource.is_none());
    assert_eq!(beta.printer, Printer::Columns(Vec::new()));
}

#[test]
fn cluster_scope_and_explicit_singular() {
    let crd = with(crontab_crd(), "/spec/scope", json!("Cluster"));
    let crd = with(
        crd,
        "/spec/names",
        json!({"plural": "crontabs", "singular": "tab", "kind": "CronTab"}),
    );
    let defs = resource_defs_from_crd(&crd).unwrap_or_default();
    assert!(
        defs.iter()
            .all(|d| !d.namespaced && d.singular == "tab" && d.short_names.is_empty())
    );
}

#[test]
fn invalid_crds_report_every_problem() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            with(
                crontab_crd(),
                "/metadata/name",
                json!("crontab.stable.example.com"),
            ),
            vec![
                "metadata.name: Invalid value: \"crontab.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
            ],
        ),
        (
            with(
                with(crontab_crd(), "/spec/group", json!("example")),
                "/metadata/name",
                json!("crontabs.example"),
            ),
            vec![
                "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
            ],
        ),
        (
            with(crontab_crd(), "/spec/names", json!({"plural": "crontabs"})),
            vec!["spec.names.kind: Required value"],
        ),
        (
            with(
                crontab_crd(),
                "/spec/names",
                json!({"plural": "crontabs", "kind": "Cron Tab", "shortNames": ["CT"]}),
            ),
            vec![
                "spec.names.kind: Invalid value: \"Cron Tab\": may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
                "spec.names.shortNames[0]: Invalid value: \"CT\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
        (
            with(crontab_crd(), "/spec/scope", json!("Global")),
            vec![
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            ],
        ),
        (
            with(crontab_crd(), "/spec/versions", json!([])),
            vec!["spec.versions: Required value: must have at least one version"],
        ),
        (
            with(crontab_crd(), "/spec/versions/0/storage", json!(true)),
            vec![
                "spec.versions: Invalid value: [\"v1beta1\",\"v1\"]: must have exactly one version marked as storage version",
            ],
        ),
        (
            with(crontab_crd(), "/spec/versions/0/name", json!("v1")),
            vec!["spec.versions[1].name: Duplicate value: \"v1\""],
        ),
        (
            with(crontab_crd(), "/spec/versions/0/schema", Value::Null),
            vec!["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"],
        ),
        (
            with(
                crontab_crd(),
                "/spec/versions/0/schema/openAPIV3Schema",
                json!({"type": "string"}),
            ),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root",
            ],
        ),
        (
            with(
                crontab_crd(),
                "/spec/versions/1/subresources/scale",
                json!({"specReplicasPath": "spec.replicas"}),
            ),
            vec![
                "spec.versions[1].subresources.scale.specReplicasPath: Invalid value: \"spec.replicas\": should be a json path under .spec",
                "spec.versions[1].subresources.scale.statusReplicasPath: Required value",
            ],
        ),
        (
            with(
                crontab_crd(),
                "/spec/versions/1/additionalPrinterColumns",
                json!([{"name": "X", "type": "object", "format": "uuid", "priority": -1}]),
            ),
            vec![
                "spec.versions[1].additionalPrinterColumns[0].type: Unsupported value: \"object\": supported values: \"boolean\", \"date\", \"integer\", \"number\", \"string\"",
                "spec.versions[1].additionalPrinterColumns[0].format: Unsupported value: \"uuid\": supported values: \"byte\", \"date\", \"date-time\", \"double\", \"float\", \"int32\", \"int64\", \"password\"",
                "spec.versions[1].additionalPrinterColumns[0].priority: Invalid value: -1: must be greater than or equal to 0",
                "spec.versions[1].additionalPrinterColumns[0].jsonPath: Required value",
            ],
        ),
        (
            json!({"metadata": {"name": "x"}}),
            vec!["spec: Required value"],
        ),
    ];
    for (crd, expected) in cases {
        let found: Vec<String> = match resource_defs_from_crd(&crd) {
            Ok(defs) => panic!("expected errors, got {} definitions", defs.len()),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        };
        assert_eq!(found, expected, "{crd}");
    }
}

#[test]
fn status_accepts_names_and_records_stored_versions() {
    let now: Timestamp = "2026-11-29T18:04:07Z".parse().unwrap_or_default();
    let status = crd_status(&crontab_crd(), now);
    assert_eq!(
        status["acceptedNames"],
        json!({"plural": "crontabs", "singular": "crontab", "shortNames": ["ct"], "kind": "CronTab", "listKind": "CronTabList", "categories": ["all"]})
    );
    assert_eq!(status["storedVersions"], json!(["v1"]));
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    let summary: Vec<(&str, &str, &str)> = conditions
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
                c["lastTransitionTime"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("NamesAccepted", "True", "2026-11-29T18:04:07Z"),
            ("Established", "True", "2026-11-29T18:04:07Z")
        ]
    );

    // A later storage-version switch keeps the old stored version and the transition times.
    let mut updated = with(crontab_crd(), "/spec/versions/1/storage", json!(false));
    updated = with(updated, "/spec/versions/0/storage", json!(true));
    updated["status"] = status;
    let later: Timestamp = "2026-11-30T00:00:00Z".parse().unwrap_or_default();
    let next = crd_status(&updated, later);
    assert_eq!(next["storedVersions"], json!(["v1", "v1beta1"]));
    assert_eq!(
        next["conditions"][1]["lastTransitionTime"],
        "2026-11-29T18:04:07Z"
    );
}

mod properties {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::super::{crd_status, resource_defs_from_crd};

    const VERSION_NAMES: [&str; 5] = ["v1alpha1", "v1beta1", "v1", "v2alpha1", "v2"];

    /// A valid CRD with 1..=5 versions: one storage version (always served), others served at
    /// random.
    fn valid_crd() -> impl Strategy<Value = (Value, usize, String)> {
        (1usize..=5, any::<u64>(), prop::collection::vec(any::<bool>(), 5), any::<bool>()).prop_map(
            |(count, storage_seed, served_flags, namespaced)| {
                let storage = usize::try_from(storage_seed % count as u64).unwrap_or(0);
                let mut served_count = 0;
                let versions: Vec<Value> = VERSION_NAMES[..count]
                    .iter()
                    .enumerate()
                    .map(|(index, name)| {
                        let served = index == storage || served_flags[index];
                        served_count += usize::from(served);
                        json!({"name": name, "served": served, "storage": index == storage,
                               "schema": {"openAPIV3Schema": {"type": "object"}}})
                    })
                    .collect();
                let crd = json!({
                    "metadata": {"name": "widgets.example.io"},
                    "spec": {"group": "example.io", "scope": if namespaced { "Namespaced" } else { "Cluster" },
                             "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions}
                });
                (crd, served_count, VERSION_NAMES[storage].to_string())
            },
        )
    }

    const KEYS: [&str; 20] = [
        "metadata",
        "name",
        "spec",
        "group",
        "names",
        "plural",
        "kind",
        "scope",
        "versions",
        "served",
        "storage",
        "schema",
        "openAPIV3Schema",
        "type",
        "subresources",
        "scale",
        "status",
        "additionalPrinterColumns",
        "jsonPath",
        "specReplicasPath",
    ];

    /// Arbitrary JSON built from CRD field names, so that random documents reach deep checks.
    fn crd_like() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-2i64..3).prop_map(Value::from),
            prop::sample::select(vec![
                "",
                "v1",
                "object",
                "Namespaced",
                "widgets",
                "Widget",
                ".spec.x",
                "a.b"
            ])
            .prop_map(|s| Value::String(s.to_string())),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..6).prop_map(
                    |pairs| {
                        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                    }
                ),
            ]
        })
    }

    proptest! {
        #[test]
        fn valid_crds_serve_exactly_their_served_versions((crd, served, storage) in valid_crd()) {
            let defs = resource_defs_from_crd(&crd).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(defs.len(), served);
            prop_assert_eq!(defs.iter().filter(|d| d.storage_version).count(), 1);
            prop_assert!(defs.iter().all(|d| d.kind == "Widget" && d.singular == "widget" && !d.builtin));
            let status = crd_status(&crd, jiff::Timestamp::UNIX_EPOCH);
            prop_assert_eq!(&status["storedVersions"], &json!([storage]));
        }

        #[test]
        fn arbitrary_documents_never_panic(value in crd_like()) {
            let result = resource_defs_from_crd(&value);
            prop_assert!(result.is_ok() || result.as_ref().is_err_and(|errors| !errors.is_empty()));
            let status = crd_status(&value, jiff::Timestamp::UNIX_EPOCH);
            prop_assert_eq!(status["conditions"].as_array().map(Vec::len), Some(2));
        }
    }
}
