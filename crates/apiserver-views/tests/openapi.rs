//! OpenAPI: the v2 protobuf stub, the v3 index and per-group-version documents.

#![allow(clippy::unwrap_used)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use apimachinery::{Printer, ResourceDef};
use apiserver_views::builtin::resource_defs;
use apiserver_views::openapi::*;
use serde_json::{Value, json};

fn policy_def() -> ResourceDef {
    let template = resource_defs()
        .into_iter()
        .find(|d| d.kind == "ConfigMap")
        .unwrap();
    ResourceDef {
        group: "policy.karmada.io".into(),
        version: "v1alpha1".into(),
        kind: "PropagationPolicy".into(),
        plural: "propagationpolicies".into(),
        singular: "propagationpolicy".into(),
        short_names: vec!["pp".into()],
        builtin: false,
        printer: Printer::Columns(vec![]),
        schema: Some(std::sync::Arc::new(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "placement": {"type": "object", "description": "Placement represents the rule for selecting clusters."}}}}}),
        )),
        ..template
    }
}

fn defs() -> Vec<ResourceDef> {
    let mut defs = resource_defs();
    defs.push(policy_def());
    defs
}

#[test]
fn v2_stub_is_the_30_byte_gnostic_document() {
    let expected: Vec<u8> = (0..60)
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(
                &"0a03322e3012170a0a4b756265726e65746573120976312e33322e302d78"[i..i + 2],
                16,
            )
            .unwrap()
        })
        .collect();
    assert_eq!(V2_STUB, expected.as_slice());
    assert_eq!(V2_STUB.len(), 30);
    assert_eq!(
        V2_CONTENT_TYPE,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
}

fn patch_op<'a>(doc: &'a Value, path: &str) -> &'a Value {
    &doc["paths"][path]["patch"]
}

fn has_query_param(op: &Value, name: &str) -> bool {
    op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == name && p["in"] == "query")
}

#[test]
fn apps_v1_document_lets_kubectl_skip_client_side_validation() {
    let doc = v3_document(&defs(), "apps", "v1").unwrap();
    assert_eq!(doc["openapi"], "3.0.0");
    let op = patch_op(
        &doc,
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
    );
    assert_eq!(
        op["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(op["operationId"], "patchAppsV1NamespacedDeployment");
    for param in ["fieldValidation", "fieldManager", "dryRun", "force"] {
        assert!(has_query_param(op, param), "missing {param}");
    }
    assert!(
        op["requestBody"]["content"]
            .get("application/strategic-merge-patch+json")
            .is_some()
    );
    // Every kind of the group-version gets its PATCH operation, and nothing from other groups leaks in.
    for plural in ["statefulsets", "daemonsets", "replicasets"] {
        assert!(
            patch_op(
                &doc,
                &format!("/apis/apps/v1/namespaces/{{namespace}}/{plural}/{{name}}")
            )
            .is_object()
        );
    }
    assert!(
        doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .all(|p| p.starts_with("/apis/apps/v1/"))
    );
    let scale = patch_op(
        &doc,
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
    );
    assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
    assert!(
        doc["paths"]["/apis/apps/v1/deployments"]["get"].is_object(),
        "all-namespaces list"
    );
}

#[test]
fn schemas_support_explain() {
    let doc = v3_document(&defs(), "apps", "v1").unwrap();
    let deployment = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    assert!(deployment["properties"]["spec"]["properties"]["replicas"]["description"].is_string());
    assert!(
        doc["components"]["schemas"]["io.k8s.api.autoscaling.v1.Scale"]["properties"]["spec"]
            .is_object()
    );

    let policy = v3_document(&defs(), "policy.karmada.io", "v1alpha1").unwrap();
    let pp = &policy["components"]["schemas"]["io.karmada.policy.v1alpha1.PropagationPolicy"];
    assert_eq!(
        pp["x-kubernetes-group-version-kind"][0]["kind"],
        "PropagationPolicy"
    );
    assert!(pp["properties"]["spec"]["properties"]["placement"]["description"].is_string());
    let op = patch_op(
        &policy,
        "/apis/policy.karmada.io/v1alpha1/namespaces/{namespace}/propagationpolicies/{name}",
    );
    assert!(has_query_param(op, "fieldValidation"));
    assert!(
        op["requestBody"]["content"]
            .get("application/strategic-merge-patch+json")
            .is_none(),
        "custom kinds take no SMP"
    );

    let core = v3_document(&defs(), "", "v1").unwrap();
    assert!(
        patch_op(&core, "/api/v1/namespaces/{name}").is_object(),
        "cluster-scoped item path"
    );
    assert_eq!(
        core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"]
            [0]["kind"],
        "ConfigMap"
    );
    assert_eq!(v3_document(&defs(), "apps", "v9"), None);
}

#[test]
fn index_lists_every_group_version_with_a_content_hash() {
    let defs = defs();
    let index = v3_index(&defs);
    let paths = index["paths"].as_object().unwrap();
    for key in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/policy.karmada.io/v1alpha1",
        "apis/apiextensions.k8s.io/v1",
    ] {
        let url = paths[key]["serverRelativeURL"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("/openapi/v3/{key}?hash=")),
            "{url}"
        );
    }
    let apps_url = paths["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap();
    let hash = apps_url.split("hash=").nth(1).unwrap();
    assert_eq!(
        hash,
        document_hash(&v3_document(&defs, "apps", "v1").unwrap())
    );
    // Stable across calls, different across documents and after a change.
    assert_eq!(v3_index(&defs), index);
    assert_ne!(paths["api/v1"], paths["apis/apps/v1"]);
    let mut changed = defs.clone();
    changed.retain(|d| d.kind != "DaemonSet");
    let changed_index = v3_index(&changed);
    assert_ne!(
        changed_index["paths"]["apis/apps/v1"],
        paths["apis/apps/v1"]
    );
    let changed_url = changed_index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert_eq!(
        changed_url.split("hash=").nth(1).unwrap(),
        document_hash(&v3_document(&changed, "apps", "v1").unwrap())
    );
    assert_eq!(v3_index(&defs), index, "and back");
}

#[test]
fn int_or_string_fields_refer_to_the_published_component() {
    let doc = v3_document(&defs(), "apps", "v1").unwrap();
    let schemas = &doc["components"]["schemas"];
    let max_surge = &schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]["properties"]["strategy"]
        ["properties"]["rollingUpdate"]["properties"]["maxSurge"];
    assert_eq!(
        max_surge["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"
    );
    assert!(max_surge["description"].is_string(), "{max_surge}");
    let component = &schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(component["format"], "int-or-string");
    assert_eq!(
        component["oneOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    // The served schema, which validates, keeps the extension inline.
    let served = resource_defs()
        .into_iter()
        .find(|d| d.kind == "Deployment")
        .unwrap()
        .schema
        .unwrap();
    assert_eq!(
        served["properties"]["spec"]["properties"]["strategy"]["properties"]["rollingUpdate"]["properties"]
            ["maxSurge"]["x-kubernetes-int-or-string"],
        true
    );
}
