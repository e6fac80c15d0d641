//! Resource definitions and schemas: names and columns as Karmada has them, schemas self-contained and in
//! agreement with the types (every field a full object uses is known to the schema and survives a round trip).

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::collections::BTreeSet;

use apimachinery::{Printer, unknown_fields};
use expect_test::expect_file;
use karmada_api::{Cluster, PropagationPolicy, ResourceBinding, Work, resource_defs};
use serde_json::{Value, json};

fn def(kind: &str) -> apimachinery::ResourceDef {
    resource_defs()
        .into_iter()
        .find(|d| d.kind == kind)
        .unwrap_or_else(|| panic!("no def for {kind}"))
}

/// Every Karmada definition as one row: names, scope, short names, status subresource.
fn definitions_table() -> String {
    let header = [
        "KIND",
        "GROUP/VERSION",
        "PLURAL",
        "SINGULAR",
        "SCOPE",
        "SHORT",
        "STATUS",
    ];
    let mut rows = vec![header.map(String::from).to_vec()];
    for d in resource_defs() {
        // What every Karmada definition shares; the table holds what differs.
        assert_eq!(d.categories, vec!["karmada-io".to_string()], "{}", d.kind);
        assert!(
            !d.builtin && d.tracks_generation && d.storage_version,
            "{}",
            d.kind
        );
        rows.push(vec![
            d.kind.clone(),
            d.api_version(),
            d.plural.clone(),
            d.singular.clone(),
            (if d.namespaced {
                "Namespaced"
            } else {
                "Cluster"
            })
            .to_string(),
            if d.short_names.is_empty() {
                "-".to_string()
            } else {
                d.short_names.join(",")
            },
            (if d.status_subresource { "yes" } else { "-" }).to_string(),
        ]);
    }
    test_fixtures::aligned_columns(&rows)
}

#[test]
fn names_scope_and_short_names() {
    // UPDATE_EXPECT=1 rewrites the file; a change there is a change of what clients discover.
    expect_file!["snapshots/karmada_definitions.txt"].assert_eq(&definitions_table());
}

#[test]
fn group_version_kinds_plurals_and_short_names_are_unique() {
    let defs = resource_defs();
    let gvks: BTreeSet<_> = defs.iter().map(|d| d.gvk()).collect();
    let plurals: BTreeSet<_> = defs.iter().map(|d| d.group_resource()).collect();
    let shorts: Vec<_> = defs.iter().flat_map(|d| d.short_names.clone()).collect();
    let unique_shorts: BTreeSet<_> = shorts.iter().collect();
    assert_eq!(gvks.len(), defs.len());
    assert_eq!(plurals.len(), defs.len());
    assert_eq!(unique_shorts.len(), shorts.len());
}

#[test]
fn printer_columns() {
    assert_eq!(def("Cluster").printer, Printer::Builtin);
    let columns = |kind: &str| match def(kind).printer {
        Printer::Columns(c) => c
            .into_iter()
            .map(|c| (c.name, c.json_path))
            .collect::<Vec<_>>(),
        Printer::Builtin => panic!("{kind} uses a builtin printer"),
    };
    let policy = vec![
        (
            "CONFLICT-RESOLUTION".to_string(),
            ".spec.conflictResolution".to_string(),
        ),
        ("PRIORITY".to_string(), ".spec.priority".to_string()),
    ];
    assert_eq!(columns("PropagationPolicy"), policy);
    assert_eq!(columns("ClusterPropagationPolicy"), policy);
    let binding = vec![
        (
            "SCHEDULED".to_string(),
            ".status.conditions[?(@.type==\"Scheduled\")].status".to_string(),
        ),
        (
            "FULLYAPPLIED".to_string(),
            ".status.conditions[?(@.type==\"FullyApplied\")].status".to_string(),
        ),
    ];
    assert_eq!(columns("ResourceBinding"), binding);
    assert_eq!(columns("ClusterResourceBinding"), binding);
    assert_eq!(
        columns("Work"),
        vec![
            (
                "WORKLOAD-KIND".to_string(),
                ".spec.workload.manifests[*].kind".to_string()
            ),
            (
                "APPLIED".to_string(),
                ".status.conditions[?(@.type==\"Applied\")].status".to_string()
            ),
        ]
    );
}

fn walk(value: &Value, path: &str, visit: &mut dyn FnMut(&str, &serde_json::Map<String, Value>)) {
    match value {
        Value::Object(map) => {
            visit(path, map);
            for (k, v) in map {
                walk(v, &format!("{path}/{k}"), visit);
            }
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| walk(v, &format!("{path}/{i}"), visit)),
        _ => {}
    }
}

#[test]
fn schemas_are_plain_structural_trees() {
    for d in resource_defs() {
        let schema = d
            .schema
            .clone()
            .unwrap_or_else(|| panic!("{} has no schema", d.kind));
        assert_eq!(schema["type"], json!("object"), "{}", d.kind);
        assert!(
            schema["description"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{} has no description",
            d.kind
        );
        assert!(
            schema.pointer("/properties/metadata").is_some(),
            "{}",
            d.kind
        );
        assert!(
            schema.get("components").is_none(),
            "{}: left-over definitions",
            d.kind
        );
        walk(&schema, "", &mut |path, map| {
            for banned in [
                "$ref", "anyOf", "oneOf", "allOf", "nullable", "$schema", "$defs",
            ] {
                assert!(!map.contains_key(banned), "{}: {banned} at {path}", d.kind);
            }
            if let Some(default) = map.get("default") {
                assert!(
                    !default.is_object() && !default.is_array(),
                    "{}: structured default at {path}",
                    d.kind
                );
            }
        });
    }
}

#[test]
fn enums_and_required_fields_are_in_the_schema() {
    let pp = def("PropagationPolicy").schema.unwrap_or_default();
    let placement = "/properties/spec/properties/placement/properties";
    let cases = [
        (
            &pp,
            format!("{placement}/spreadConstraints/items/properties/spreadByField/enum"),
            json!(["cluster", "region", "zone", "provider"]),
        ),
        (
            &pp,
            format!("{placement}/replicaScheduling/properties/replicaSchedulingType/enum"),
            json!(["Duplicated", "Divided"]),
        ),
        (
            &pp,
            format!("{placement}/replicaScheduling/properties/replicaSchedulingType/default"),
            json!("Divided"),
        ),
        (
            &pp,
            format!(
                "{placement}/replicaScheduling/properties/weightPreference/properties/dynamicWeight/enum"
            ),
            json!(["AvailableReplicas"]),
        ),
        (
            &pp,
            "/properties/spec/properties/conflictResolution/enum".to_string(),
            json!(["Abort", "Overwrite"]),
        ),
        (
            &pp,
            "/properties/spec/properties/failover/properties/application/properties/purgeMode/enum"
                .to_string(),
            json!(["Directly", "Gracefully", "Never"]),
        ),
        (
            &pp,
            "/properties/spec/properties/resourceSelectors/items/required".to_string(),
            json!(["apiVersion", "kind"]),
        ),
    ];
    for (schema, pointer, expected) in cases {
        assert_eq!(schema.pointer(&pointer), Some(&expected), "{pointer}");
    }
    let cluster = def("Cluster").schema.unwrap_or_default();
    assert_eq!(
        cluster.pointer("/properties/spec/required"),
        Some(&json!(["syncMode"]))
    );
    assert_eq!(
        cluster.pointer("/properties/spec/properties/syncMode/enum"),
        Some(&json!(["Push", "Pull"]))
    );
    let description = pp
        .pointer(&format!("{placement}/clusterAffinities/description"))
        .and_then(Value::as_str);
    assert!(
        description.is_some_and(|d| d.contains("clusterAffinity")),
        "{description:?}"
    );
}

/// Full objects in Karmada's wire shape: each must decode, serialise back identically, and use only fields
/// the schema knows.
#[test]
fn full_objects_round_trip_and_match_the_schema() {
    let cluster = json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "member1"},
        "spec": {
            "id": "abc", "syncMode": "Pull", "apiEndpoint": "https://1.2.3.4:6443",
            "secretRef": {"namespace": "karmada-cluster", "name": "member1"},
            "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "member1-impersonator"},
            "insecureSkipTLSVerification": true, "proxyURL": "socks5://p:1080", "proxyHeader": {"X-A": "1,2"},
            "provider": "aws", "region": "us-east-1", "zones": ["a", "b"],
            "taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}],
            "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]}]
        },
        "status": {
            "kubernetesVersion": "v1.30.2",
            "apiEnablements": [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "cluster is healthy and ready to accept workloads", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "nodeSummary": {"totalNum": 3, "readyNum": 3},
            "resourceSummary": {"allocatable": {"cpu": "12", "memory": "48Gi"}, "allocating": {"cpu": "1"}, "allocated": {"cpu": "2"},
                                "allocatableModelings": [{"grade": 0, "count": 1}]},
            "remedyActions": ["TrafficControl"]
        }
    });
    let pp = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "labelSelector": {"matchLabels": {"app": "x"}}}],
            "propagateDeps": true,
            "placement": {
                "clusterAffinities": [{"affinityName": "primary", "clusterNames": ["a"], "exclude": ["b"],
                                       "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r"]}]},
                                       "overflowAffinities": [{"affinityName": "burst", "clusterNames": ["c"]}]}],
                "clusterTolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
                "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}, {"spreadByLabel": "topology", "maxGroups": 1, "minGroups": 1}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                      "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["a"]}, "weight": 2}], "dynamicWeight": "AvailableReplicas"}},
                "workloadAffinity": {"affinity": {"groupByLabelKey": "g"}, "antiAffinity": {"groupByLabelKey": "h"}}
            },
            "priority": 5, "preemption": "Never", "dependentOverrides": ["op1"], "schedulerName": "default-scheduler",
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Gracefully", "gracePeriodSeconds": 600,
                                         "statePreservation": {"rules": [{"aliasLabelName": "a", "jsonPath": "{.x}"}]}},
                         "cluster": {"purgeMode": "Directly"}},
            "conflictResolution": "Overwrite", "activationPreference": "Lazy",
            "suspension": {"dispatchingOnClusters": {"clusterNames": ["a"]}},
            "preserveResourcesOnDeletion": true,
            "schedulePriority": {"priorityClassSource": "KubePriorityClass", "priorityClassName": "high"}
        }
    });
    let rb = json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": {"name": "nginx-deployment", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx", "uid": "u", "resourceVersion": "7"},
            "propagateDeps": true,
            "replicaRequirements": {"nodeClaim": {"nodeSelector": {"a": "b"}, "tolerations": [{"key": "k", "operator": "Exists"}]},
                                    "resourceRequest": {"cpu": "100m"}, "namespace": "default", "priorityClassName": "p"},
            "replicas": 3,
            "clusters": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}],
            "gracefulEvictionTasks": [{"fromCluster": "c", "purgeMode": "Gracefully", "replicas": 1, "reason": "TaintUntolerated",
                                       "producer": "TaintManager", "gracePeriodSeconds": 600, "creationTimestamp": "2026-01-01T00:00:00Z",
                                       "clustersBeforeFailover": ["a", "c"]}],
            "requiredBy": [{"namespace": "default", "name": "x-deployment", "clusters": [{"name": "a"}]}],
            "schedulerName": "default-scheduler", "conflictResolution": "Abort",
            "rescheduleTriggeredAt": "2026-01-01T00:00:00Z",
            "suspension": {"scheduling": true}, "schedulePriority": {"priority": 10},
            "workloadAffinityGroups": {"affinityGroup": "g=1"}
        },
        "status": {
            "schedulerObservedGeneration": 2, "schedulerObservingAffinityName": "primary", "lastScheduledTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success", "message": "Binding has been scheduled successfully.", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "aggregatedStatus": [{"clusterName": "a", "status": {"readyReplicas": 2}, "applied": true, "health": "Healthy"}]
        }
    });
    let work = json!({
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": {"name": "nginx-687f7fb96f", "namespace": "karmada-es-a"},
        "spec": {"workload": {"manifests": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx"}, "spec": {"replicas": 2}}]},
                 "suspendDispatching": false},
        "status": {"manifestStatuses": [{"identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                                                        "resource": "deployments", "namespace": "default", "name": "nginx"},
                                         "status": {"replicas": 2}, "health": "Healthy"}]}
    });
    fn check<T: serde::de::DeserializeOwned + serde::Serialize>(kind: &str, obj: &Value) {
        let typed: T =
            serde_json::from_value(obj.clone()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let back = serde_json::to_value(&typed).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(&back, obj, "{kind} round trip");
        let schema = def(kind).schema.unwrap_or_default();
        assert_eq!(unknown_fields(&schema, obj), Vec::<String>::new(), "{kind}");
    }
    check::<Cluster>("Cluster", &cluster);
    check::<PropagationPolicy>("PropagationPolicy", &pp);
    check::<ResourceBinding>("ResourceBinding", &rb);
    check::<Work>("Work", &work);
}
