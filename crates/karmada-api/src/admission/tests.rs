//! Table-driven tests of defaulting and validation.

use apimachinery::{FieldError, GroupVersionKind};
use serde_json::{Value, json};

use super::{AdmissionContext, Operation, admit};

fn ctx() -> AdmissionContext {
    AdmissionContext {
        new_id: "11111111-2222-3333-4444-555555555555".into(),
        now: "2026-11-29T19:00:00Z".into(),
    }
}

fn gvk(kind: &str) -> GroupVersionKind {
    let (group, version) = match kind {
        "Cluster" => ("cluster.karmada.io", "v1alpha1"),
        "ResourceBinding" | "ClusterResourceBinding" => ("work.karmada.io", "v1alpha2"),
        "Work" => ("work.karmada.io", "v1alpha1"),
        "SchedulerProfile" => ("scheduling.karmada.io", "v1alpha1"),
        "FederatedHPA" | "CronFederatedHPA" => ("autoscaling.karmada.io", "v1alpha1"),
        "ServiceImport" => ("multicluster.x-k8s.io", "v1alpha1"),
        "MultiClusterService" => ("networking.karmada.io", "v1alpha1"),
        _ => ("policy.karmada.io", "v1alpha1"),
    };
    GroupVersionKind::new(group, version, kind)
}

fn create(kind: &str, mut obj: Value) -> (Value, Result<Vec<String>, Vec<FieldError>>) {
    let result = admit(&gvk(kind), Operation::Create, &mut obj, None, &ctx());
    (obj, result)
}

fn pp(spec: Value) -> Value {
    json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
           "metadata": {"name": "p", "namespace": "default"}, "spec": spec})
}

fn selectors() -> Value {
    json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}])
}

fn error_fields(result: &Result<Vec<String>, Vec<FieldError>>) -> Vec<String> {
    match result {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.field.clone()).collect(),
    }
}

#[test]
fn propagation_policy_defaults() {
    // (placement or extra spec fields, pointer, expected value)
    let cases: Vec<(Value, &str, Value)> = vec![
        (
            json!({"placement": {"spreadConstraints": [{"maxGroups": 2}]}}),
            "/spec/placement/spreadConstraints/0/spreadByField",
            json!("cluster"),
        ),
        (
            json!({"placement": {"spreadConstraints": [{"maxGroups": 2}]}}),
            "/spec/placement/spreadConstraints/0/minGroups",
            json!(1),
        ),
        (
            json!({"placement": {"spreadConstraints": [{"spreadByLabel": "x", "minGroups": 2}]}}),
            "/spec/placement/spreadConstraints/0/minGroups",
            json!(2),
        ),
        (
            json!({"placement": {"replicaScheduling": {}}}),
            "/spec/placement/replicaScheduling/replicaSchedulingType",
            json!("Divided"),
        ),
        (
            json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Divided"}}}),
            "/spec/placement/replicaScheduling/replicaDivisionPreference",
            json!("Weighted"),
        ),
        (
            json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}}),
            "/spec/placement/replicaScheduling/replicaDivisionPreference",
            json!("Aggregated"),
        ),
        (json!({}), "/spec/conflictResolution", json!("Abort")),
        (json!({}), "/spec/schedulerName", json!("default-scheduler")),
        (
            json!({"schedulerName": "mine"}),
            "/spec/schedulerName",
            json!("mine"),
        ),
        (
            json!({"propagateDeps": true, "failover": {"application": {}}}),
            "/spec/failover/application/decisionConditions/tolerationSeconds",
            json!(300),
        ),
        (
            json!({"propagateDeps": true, "failover": {"application": {}}}),
            "/spec/failover/application/purgeMode",
            json!("Gracefully"),
        ),
        (
            json!({"propagateDeps": true, "failover": {"application": {}}}),
            "/spec/failover/application/gracePeriodSeconds",
            json!(600),
        ),
        (
            json!({"propagateDeps": true, "failover": {"application": {"purgeMode": "Directly"}}}),
            "/spec/failover/application/gracePeriodSeconds",
            Value::Null,
        ),
        (
            json!({"propagateDeps": true, "failover": {"application": {"purgeMode": "Graciously"}}}),
            "/spec/failover/application/purgeMode",
            json!("Gracefully"),
        ),
        (
            json!({"propagateDeps": true, "failover": {"application": {"purgeMode": "Immediately"}}}),
            "/spec/failover/application/purgeMode",
            json!("Directly"),
        ),
        (
            json!({"failover": {"cluster": {}}}),
            "/spec/failover/cluster/purgeMode",
            json!("Gracefully"),
        ),
        (
            json!({}),
            "/spec/resourceSelectors/0/namespace",
            json!("default"),
        ),
        (
            json!({}),
            "/metadata/labels/propagationpolicy.karmada.io~1permanent-id",
            json!(ctx().new_id),
        ),
        (
            json!({"placement": {"spreadConstraints": [{"spreadByField": "Cluster", "maxGroups": 3}]}}),
            "/spec/placement/spreadConstraints/0/spreadByField",
            json!("cluster"),
        ),
    ];
    for (extra, pointer, expected) in cases {
        let mut spec = json!({"resourceSelectors": selectors()});
        for (k, v) in extra.as_object().into_iter().flatten() {
            spec[k] = v.clone();
        }
        let (obj, result) = create("PropagationPolicy", pp(spec));
        assert!(result.is_ok(), "{extra}: {result:?}");
        assert_eq!(
            obj.pointer(pointer).cloned().unwrap_or(Value::Null),
            expected,
            "{extra} at {pointer}"
        );
    }
}

#[test]
fn legacy_spellings_warn() {
    let spec = json!({"resourceSelectors": selectors(), "propagateDeps": true,
                      "failover": {"application": {"purgeMode": "Immediately"}}});
    let (_, result) = create("PropagationPolicy", pp(spec));
    let warnings = result.unwrap_or_default();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("spec.failover.application.purgeMode")
                && w.contains("legacy")
                && w.contains("\"Directly\"")),
        "{warnings:?}"
    );
}

#[test]
fn propagation_policy_validation() {
    // (spec, expected error field paths, a fragment of the first message)
    let cases: Vec<(Value, Vec<&str>, &str)> = vec![
        (json!({}), vec!["spec.resourceSelectors"], "at least one"),
        (
            json!({"resourceSelectors": [{"kind": "Deployment"}]}),
            vec!["spec.resourceSelectors[0].apiVersion"],
            "Required",
        ),
        (
            json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "other"}]}),
            vec!["spec.resourceSelectors[0].namespace"],
            "\"default\"",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"replicaScheduling": {"replicaSchedulingType": "Foo"}}}),
            vec!["spec.placement.replicaScheduling.replicaSchedulingType"],
            "Unsupported value: \"Foo\": supported values: \"Duplicated\", \"Divided\"",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"spreadConstraints": [{"spreadByField": "region", "spreadByLabel": "x"}]}}),
            vec![
                "spec.placement.spreadConstraints[0].spreadByLabel",
                "spec.placement.spreadConstraints",
            ],
            "cannot be used together",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"spreadConstraints": [{"minGroups": -1}]}}),
            vec!["spec.placement.spreadConstraints[0].minGroups"],
            "greater than or equal to 0",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"spreadConstraints": [{"minGroups": 3, "maxGroups": 2}]}}),
            vec!["spec.placement.spreadConstraints[0].maxGroups"],
            "minGroups (3)",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"spreadConstraints": [{"spreadByField": "cluster"}, {"spreadByField": "cluster"}]}}),
            vec!["spec.placement.spreadConstraints[1].spreadByField"],
            "Duplicate",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"spreadConstraints": [{"spreadByField": "region"}]}}),
            vec!["spec.placement.spreadConstraints"],
            "spreadByField: cluster",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"spreadConstraints": [{"spreadByField": "planet"}]}}),
            vec!["spec.placement.spreadConstraints[0].spreadByField"],
            "\"cluster\", \"region\", \"zone\", \"provider\"",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"clusterAffinity": {}, "clusterAffinities": [{"affinityName": "a"}]}}),
            vec!["spec.placement.clusterAffinities"],
            "cannot be used together",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"clusterAffinities": [{"affinityName": "a", "overflowAffinities": [{"affinityName": "b"}]}]}}),
            vec!["spec.placement.clusterAffinities[0].overflowAffinities"],
            "dynamicWeight",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"clusterAffinities": [{"affinityName": "a"}, {"affinityName": "a"}]}}),
            vec!["spec.placement.clusterAffinities[1].affinityName"],
            "Duplicate",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"clusterTolerations": [{"key": "k", "operator": "Lt", "value": "1"}]}}),
            vec!["spec.placement.clusterTolerations[0].operator"],
            "\"Exists\", \"Equal\"",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "color", "operator": "In", "values": ["x"]}]}}}}),
            vec!["spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key"],
            "\"provider\", \"region\", \"zone\"",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"replicaScheduling": {"weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["a"]}, "weight": 0}]}}}}),
            vec!["spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight"],
            "greater than or equal to 1",
        ),
        (
            json!({"resourceSelectors": selectors(), "failover": {"application": {}}}),
            vec!["spec.propagateDeps"],
            "must be true",
        ),
        (
            json!({"resourceSelectors": selectors(), "propagateDeps": true, "failover": {"application": {"purgeMode": "Directly", "gracePeriodSeconds": 5}}}),
            vec!["spec.failover.application.gracePeriodSeconds"],
            "only allowed when purgeMode is Gracefully",
        ),
        (
            json!({"resourceSelectors": selectors(), "propagateDeps": true, "failover": {"application": {"purgeMode": "Sometimes"}}}),
            vec!["spec.failover.application.purgeMode"],
            "\"Directly\", \"Gracefully\", \"Never\"",
        ),
        (
            json!({"resourceSelectors": selectors(), "suspension": {"dispatching": true, "dispatchingOnClusters": {"clusterNames": ["a"]}}}),
            vec!["spec.suspension"],
            "cannot be used together",
        ),
        (
            json!({"resourceSelectors": selectors(), "conflictResolution": "Replace"}),
            vec!["spec.conflictResolution"],
            "\"Abort\", \"Overwrite\"",
        ),
        (
            json!({"resourceSelectors": selectors(), "placement": {"failover": {"application": {}}}}),
            vec!["spec.placement.failover"],
            "spec.failover.application",
        ),
        (
            json!({"resourceSelectors": selectors(), "failover": {"application": {"decisionConditions": [{"type": "Healthy"}]}}}),
            vec!["spec.failover.application.decisionConditions"],
            "tolerationSeconds",
        ),
    ];
    for (spec, fields, fragment) in cases {
        let (_, result) = create("PropagationPolicy", pp(spec.clone()));
        let Err(errors) = &result else {
            panic!("{spec} was accepted")
        };
        assert_eq!(error_fields(&result), fields, "{spec}: {errors:?}");
        let text = errors[0].to_string();
        assert!(text.contains(fragment), "{spec}: {text}");
    }
}

#[test]
fn cluster_propagation_policy_uses_its_own_label() {
    let obj = json!({"metadata": {"name": "c"}, "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace", "name": "x"}]}});
    let (obj, result) = create("ClusterPropagationPolicy", obj);
    assert_eq!(result, Ok(vec![]));
    assert_eq!(
        obj.pointer("/metadata/labels/clusterpropagationpolicy.karmada.io~1permanent-id"),
        Some(&json!(ctx().new_id))
    );
    assert_eq!(
        obj.pointer("/metadata/finalizers"),
        None,
        "the controller adds it, not admission"
    );
    assert_eq!(obj.pointer("/spec/resourceSelectors/0/namespace"), None);
}

#[test]
fn permanent_id_is_immutable() {
    let label = "propagationpolicy.karmada.io/permanent-id";
    let old = json!({"metadata": {"name": "p", "namespace": "default", "labels": {label: "old-id"}}, "spec": {"resourceSelectors": selectors()}});
    let gvk = gvk("PropagationPolicy");
    // Dropped on update: restored.
    let mut dropped = pp(json!({"resourceSelectors": selectors()}));
    assert!(admit(&gvk, Operation::Update, &mut dropped, Some(&old), &ctx()).is_ok());
    assert_eq!(dropped["metadata"]["labels"][label], json!("old-id"));
    // Changed on update: rejected.
    let mut changed = pp(json!({"resourceSelectors": selectors()}));
    changed["metadata"]["labels"] = json!({label: "new-id"});
    let result = admit(&gvk, Operation::Update, &mut changed, Some(&old), &ctx());
    assert_eq!(
        error_fields(&result),
        vec![format!("metadata.labels[{label}]")]
    );
}

#[test]
fn cluster_defaults() {
    let (obj, result) = create(
        "Cluster",
        json!({"metadata": {"name": "member1"}, "spec": {
        "syncMode": "Push", "zone": "z1",
        "taints": [{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoSchedule"}]}}),
    );
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(obj["spec"]["zones"], json!(["z1"]));
    assert_eq!(obj["spec"].get("zone"), None);
    assert_eq!(obj["spec"]["taints"][0]["timeAdded"], json!(ctx().now));
    assert_eq!(obj["spec"]["taints"][1].get("timeAdded"), None);
    let models = obj["spec"]["resourceModels"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(models.len(), 9);
    assert_eq!(
        models[1]["ranges"][0],
        json!({"name": "cpu", "min": "1", "max": "2"})
    );
    assert_eq!(
        models[1]["ranges"][1],
        json!({"name": "memory", "min": "4Gi", "max": "16Gi"})
    );
    assert_eq!(models[8]["ranges"][1]["min"], json!("1024Gi"));
    assert_eq!(models[8]["ranges"][0]["max"], json!("9223372036854775807"));
}

#[test]
fn cluster_models_are_normalised() {
    let (obj, result) = create(
        "Cluster",
        json!({"metadata": {"name": "m"}, "spec": {"syncMode": "Pull", "resourceModels": [
        {"grade": 1, "ranges": [{"name": "cpu", "min": "2", "max": "4"}]},
        {"grade": 0, "ranges": [{"name": "cpu", "min": "1", "max": "2"}]}]}}),
    );
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(obj["spec"]["resourceModels"][0]["grade"], json!(0));
    assert_eq!(
        obj["spec"]["resourceModels"][0]["ranges"][0]["min"],
        json!("0")
    );
    assert_eq!(
        obj["spec"]["resourceModels"][1]["ranges"][0]["max"],
        json!("9223372036854775807")
    );
}

#[test]
fn cluster_validation() {
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({}), "spec.syncMode", "\"Push\", \"Pull\""),
        (
            json!({"syncMode": "push"}),
            "spec.syncMode",
            "Unsupported value: \"push\"",
        ),
        (
            json!({"syncMode": "Push", "apiEndpoint": "10.0.0.1:6443"}),
            "spec.apiEndpoint",
            "https://",
        ),
        (
            json!({"syncMode": "Push", "taints": [{"key": "a", "effect": "Sometimes"}]}),
            "spec.taints[0].effect",
            "\"NoSchedule\"",
        ),
        (
            json!({"syncMode": "Push", "resourceModels": [{"grade": 0, "ranges": [{"name": "gpu", "min": "0", "max": "1"}]}]}),
            "spec.resourceModels[0].ranges[0].name",
            "\"cpu\", \"memory\"",
        ),
    ];
    for (spec, path, fragment) in cases {
        let (_, result) = create("Cluster", json!({"metadata": {"name": "m"}, "spec": spec}));
        let Err(errors) = &result else {
            panic!("{spec} accepted")
        };
        assert_eq!(errors[0].field, path, "{spec}");
        assert!(errors[0].to_string().contains(fragment), "{}", errors[0]);
    }
    let (_, result) = create(
        "Cluster",
        json!({"metadata": {"name": "x".repeat(49)}, "spec": {"syncMode": "Push"}}),
    );
    assert_eq!(error_fields(&result), vec!["metadata.name"]);
}

#[test]
fn override_policy_rules() {
    let op = |spec: Value| json!({"metadata": {"name": "o", "namespace": "prod"}, "spec": spec});
    let cases: Vec<(Value, Option<&str>)> = vec![
        (
            json!({"overrideRules": [{"overriders": {"plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 1}]}}]}),
            None,
        ),
        (
            json!({"overrideRules": [{"overriders": {"plaintext": [{"path": "spec.replicas", "operator": "replace", "value": 1}]}}]}),
            Some("spec.overrideRules[0].overriders.plaintext[0].path"),
        ),
        (
            json!({"overrideRules": [{"overriders": {"plaintext": [{"path": "/a", "operator": "patch"}]}}]}),
            Some("spec.overrideRules[0].overriders.plaintext[0].operator"),
        ),
        (
            json!({"overrideRules": [{"overriders": {"plaintext": [{"path": "/a", "operator": "add"}]}}]}),
            Some("spec.overrideRules[0].overriders.plaintext[0].value"),
        ),
        (
            json!({"overrideRules": [{"overriders": {"commandOverrider": [{"containerName": "c", "operator": "replace", "value": ["x"]}]}}]}),
            Some("spec.overrideRules[0].overriders.commandOverrider[0].operator"),
        ),
        (
            json!({"overrideRules": [{"overriders": {"fieldOverrider": [{"fieldPath": "/data/x", "json": [{"subPath": "/a", "operator": "remove"}], "yaml": [{"subPath": "/a", "operator": "remove"}]}]}}]}),
            Some("spec.overrideRules[0].overriders.fieldOverrider[0].yaml"),
        ),
        (
            json!({"overrideRules": [{"overriders": {"fieldOverrider": [{"fieldPath": "/data/x"}]}}]}),
            Some("spec.overrideRules[0].overriders.fieldOverrider[0]"),
        ),
        (
            json!({"overrideRules": [{"overriders": {"imageOverrider": [{"component": "Host", "operator": "replace", "value": "x"}]}}]}),
            Some("spec.overrideRules[0].overriders.imageOverrider[0].component"),
        ),
        (
            json!({"overrideRules": [{"targetCluster": {"clusterNames": ["a"]}, "overriders": {}}], "overriders": {"plaintext": [{"path": "/a", "operator": "remove"}]}}),
            Some("spec.overriders"),
        ),
        (
            json!({"targetCluster": {"clusterNames": ["a"]}, "overrideRules": [{"targetCluster": {"clusterNames": ["b"]}, "overriders": {}}]}),
            Some("spec.targetCluster"),
        ),
        (
            json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "dev"}]}),
            Some("spec.resourceSelectors[0].namespace"),
        ),
    ];
    for (spec, expected) in cases {
        let (_, result) = create("OverridePolicy", op(spec.clone()));
        match expected {
            None => assert!(result.is_ok(), "{spec}: {result:?}"),
            Some(path) => assert_eq!(
                error_fields(&result).first().map(String::as_str),
                Some(path),
                "{spec}: {result:?}"
            ),
        }
    }
}

#[test]
fn override_top_level_target_moves_into_rules() {
    let (obj, result) = create(
        "OverridePolicy",
        json!({"metadata": {"name": "o", "namespace": "prod"}, "spec": {
        "targetCluster": {"clusterNames": ["gcp"]},
        "overrideRules": [{"overriders": {"imageOverrider": [{"component": "Registry", "operator": "replace", "value": "gcr.io/p"}]}}]}}),
    );
    let warnings = result.unwrap_or_default();
    assert_eq!(
        obj["spec"]["overrideRules"][0]["targetCluster"],
        json!({"clusterNames": ["gcp"]})
    );
    assert_eq!(obj["spec"].get("targetCluster"), None);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("spec.overrideRules[0].targetCluster")),
        "{warnings:?}"
    );
}

#[test]
fn bindings_and_works_get_permanent_ids() {
    let cases = [
        (
            "ResourceBinding",
            "resourcebinding.karmada.io~1permanent-id",
        ),
        (
            "ClusterResourceBinding",
            "clusterresourcebinding.karmada.io~1permanent-id",
        ),
        ("Work", "work.karmada.io~1permanent-id"),
        (
            "MultiClusterService",
            "multiclusterservice.karmada.io~1permanent-id",
        ),
    ];
    for (kind, label) in cases {
        let spec = if kind == "Work" {
            json!({"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}})
        } else if kind == "MultiClusterService" {
            json!({"types": ["CrossCluster"]})
        } else {
            json!({"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "n"}, "clusters": [{"name": "a", "replicas": 2}]})
        };
        let (obj, result) = create(
            kind,
            json!({"metadata": {"name": "b", "namespace": "default"}, "spec": spec}),
        );
        assert!(result.is_ok(), "{kind}: {result:?}");
        assert_eq!(
            obj.pointer(&format!("/metadata/labels/{label}")),
            Some(&json!(ctx().new_id)),
            "{kind}"
        );
    }
}

#[test]
fn binding_validation() {
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"resource": {"apiVersion": "apps/v1", "kind": "Deployment"}}),
            "spec.resource.name",
        ),
        (
            json!({"resource": {"apiVersion": "v1", "kind": "Pod", "name": "p"}, "clusters": [{"name": "a"}, {"name": "a"}]}),
            "spec.clusters[1].name",
        ),
        (
            json!({"resource": {"apiVersion": "v1", "kind": "Pod", "name": "p"}, "gracefulEvictionTasks": [{"fromCluster": "a", "producer": "x", "reason": "not camel"}]}),
            "spec.gracefulEvictionTasks[0].reason",
        ),
        (
            json!({"resource": {"apiVersion": "v1", "kind": "Pod", "name": "p"}, "replicas": "three"}),
            "spec.replicas",
        ),
    ];
    for (spec, path) in cases {
        let (_, result) = create(
            "ResourceBinding",
            json!({"metadata": {"name": "b", "namespace": "d"}, "spec": spec}),
        );
        assert_eq!(
            error_fields(&result).first().map(String::as_str),
            Some(path),
            "{result:?}"
        );
    }
}

#[test]
fn other_kinds() {
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        (
            "SchedulerProfile",
            json!({"plugins": {"schedule": {"enabled": [{"name": "A", "weight": 2}], "disabled": [{"name": "B"}]}}}),
            None,
        ),
        (
            "SchedulerProfile",
            json!({"plugins": {"schedule": {"enabled": [{"name": "A"}], "disabled": [{"name": "A"}]}}}),
            Some("spec.plugins.schedule.disabled[0].name"),
        ),
        (
            "SchedulerProfile",
            json!({"plugins": {"schedule": {"enabled": [{"name": "A"}, {"name": "A"}]}}}),
            Some("spec.plugins.schedule.enabled[1].name"),
        ),
        (
            "ServiceImport",
            json!({"type": "ClusterSetIP", "ports": [{"port": 80}]}),
            None,
        ),
        (
            "ServiceImport",
            json!({"type": "NodePort", "ports": [{"port": 80}]}),
            Some("spec.type"),
        ),
        (
            "FederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 5}),
            None,
        ),
        (
            "FederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "minReplicas": 6, "maxReplicas": 5}),
            Some("spec.maxReplicas"),
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "rules": [{"name": "r", "schedule": "* * *", "targetReplicas": 1}]}),
            Some("spec.rules[0].schedule"),
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "rules": [{"name": "r", "schedule": "61 * * * *", "targetReplicas": 1}]}),
            Some("spec.rules[0].schedule"),
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "rules": [{"name": "r", "schedule": "0 8 * * 1-5", "timeZone": "Mars/Olympus", "targetReplicas": 1}]}),
            Some("spec.rules[0].timeZone"),
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "rules": [{"name": "r", "schedule": "@daily", "timeZone": "Asia/Shanghai", "targetReplicas": 0}]}),
            None,
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "FederatedHPA", "name": "h"}, "rules": [{"name": "r", "schedule": "0 8 * * *", "targetMinReplicas": 2, "targetMaxReplicas": 5}]}),
            None,
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "FederatedHPA", "name": "h"}, "rules": [{"name": "r", "schedule": "0 8 * * *", "targetReplicas": 2}]}),
            Some("spec.rules[0].targetMaxReplicas"),
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "FederatedHPA", "name": "h"}, "rules": [{"name": "r", "schedule": "0 8 * * *", "targetMinReplicas": 6, "targetMaxReplicas": 5}]}),
            Some("spec.rules[0].targetMinReplicas"),
        ),
        (
            "CronFederatedHPA",
            json!({"scaleTargetRef": {"apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "CronFederatedHPA", "name": "h"}, "rules": []}),
            Some("spec.scaleTargetRef.kind"),
        ),
    ];
    for (kind, spec, expected) in cases {
        let (obj, result) = create(
            kind,
            json!({"metadata": {"name": "x", "namespace": "d"}, "spec": spec}),
        );
        match expected {
            None => assert!(result.is_ok(), "{kind}: {result:?}"),
            Some(path) => assert_eq!(
                error_fields(&result).first().map(String::as_str),
                Some(path),
                "{kind}: {result:?}"
            ),
        }
        if kind == "FederatedHPA" && expected.is_none() {
            assert_eq!(obj["spec"]["minReplicas"], json!(1));
            assert_eq!(
                obj["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
                json!(80)
            );
        }
    }
}

#[test]
fn foreign_kinds_pass_untouched() {
    let mut obj =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "weird"}});
    let before = obj.clone();
    let result = admit(
        &GroupVersionKind::new("apps", "v1", "Deployment"),
        Operation::Create,
        &mut obj,
        None,
        &ctx(),
    );
    assert_eq!(result, Ok(vec![]));
    assert_eq!(obj, before);
}

#[test]
fn non_object_is_rejected_not_panicking() {
    for mut body in [
        json!(null),
        json!([1]),
        json!("x"),
        json!({"spec": 5}),
        json!({"spec": {"placement": []}}),
    ] {
        let result = admit(
            &gvk("PropagationPolicy"),
            Operation::Create,
            &mut body,
            None,
            &ctx(),
        );
        assert!(result.is_err(), "{body}");
    }
}

#[test]
fn policy_warnings() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "ClusterPropagationPolicy",
            json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "karmada-es-member1"}]}),
            "reserved",
        ),
        (
            "PropagationPolicy",
            json!({"resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "r"}]}),
            "ClusterPropagationPolicy",
        ),
        (
            "PropagationPolicy",
            json!({"resourceSelectors": selectors(), "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
            "weightPreference": {"dynamicWeight": "AvailableReplicas", "staticWeightList": [{"targetCluster": {"clusterNames": ["a"]}, "weight": 1}]}}}}),
            "ignored because dynamicWeight",
        ),
        (
            "PropagationPolicy",
            json!({"resourceSelectors": selectors(), "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated",
            "replicaDivisionPreference": "Weighted"}}}),
            "ignored when replicaSchedulingType is Duplicated",
        ),
    ];
    for (kind, spec, fragment) in cases {
        let obj = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec});
        let (_, result) = create(kind, obj);
        let warnings = result.unwrap_or_else(|e| panic!("{kind} {spec}: {e:?}"));
        assert!(
            warnings.iter().any(|w| w.contains(fragment)),
            "{kind}: {warnings:?}"
        );
    }
}
