//! The built-in resource definitions: names, scopes, subresources and inlined schemas.

#![allow(clippy::unwrap_used)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use apiserver_views::builtin::{resource_defs, schema_name};
use expect_test::expect_file;
use serde_json::json;

fn find(plural: &str) -> apimachinery::ResourceDef {
    resource_defs()
        .into_iter()
        .find(|d| d.plural == plural)
        .unwrap_or_else(|| panic!("no def for {plural}"))
}

/// Every built-in definition as one row: names, scope, short names, categories and
/// subresources, as kube-apiserver serves them.
fn definitions_table() -> String {
    let yes_no = |b: bool| if b { "yes" } else { "-" };
    let header = [
        "PLURAL",
        "GROUP/VERSION",
        "KIND",
        "SINGULAR",
        "SCOPE",
        "SHORT",
        "CATEGORIES",
        "STATUS",
        "SCALE",
    ];
    let mut rows = vec![header.map(String::from).to_vec()];
    for def in resource_defs() {
        assert!(def.builtin, "{}", def.plural);
        let list = |items: &[String]| {
            if items.is_empty() {
                "-".to_string()
            } else {
                items.join(",")
            }
        };
        rows.push(vec![
            def.plural.clone(),
            def.api_version(),
            def.kind.clone(),
            def.singular.clone(),
            (if def.namespaced {
                "Namespaced"
            } else {
                "Cluster"
            })
            .to_string(),
            list(&def.short_names),
            list(&def.categories),
            yes_no(def.status_subresource).to_string(),
            yes_no(def.scale_subresource.is_some()).to_string(),
        ]);
    }
    test_fixtures::aligned_columns(&rows)
}

#[test]
fn names_scopes_and_subresources_follow_upstream() {
    // UPDATE_EXPECT=1 rewrites the file; a change there is a change of what clients discover.
    expect_file!["snapshots/builtin_definitions.txt"].assert_eq(&definitions_table());
}

#[test]
fn every_def_has_a_self_contained_schema() {
    for def in resource_defs() {
        let schema = def
            .schema
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no schema", def.kind));
        let text = serde_json::to_string(schema).unwrap();
        // JSONSchemaProps has a *property* named `$ref`; only string-valued references are links.
        assert!(
            !text.contains("\"$ref\":\"#"),
            "{} schema still has a $ref link",
            def.kind
        );
        assert!(
            schema["properties"]["metadata"]["properties"]["name"].is_object(),
            "{}",
            def.kind
        );
    }
}

#[test]
fn deployment_schema_reaches_into_the_pod_template() {
    let def = find("deployments");
    let schema = def.schema.unwrap();
    let replicas = &schema["properties"]["spec"]["properties"]["replicas"];
    assert_eq!(replicas["type"], "integer");
    let containers = &schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
        ["properties"]["containers"];
    assert_eq!(containers["items"]["properties"]["image"]["type"], "string");
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
}

#[test]
fn served_schemas_leave_descriptions_to_the_openapi_documents() {
    let served = find("deployments").schema.unwrap();
    let text = served.to_string();
    assert!(
        !text.contains("\"description\""),
        "the served schema keeps no descriptions"
    );
    let described = apiserver_views::builtin::described_schema("apps", "v1", "Deployment").unwrap();
    let replicas = &described["properties"]["spec"]["properties"]["replicas"];
    assert!(
        replicas["description"]
            .as_str()
            .unwrap()
            .contains("desired pods")
    );
    let containers = &described["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
        ["properties"]["containers"];
    assert!(containers["items"]["properties"]["image"]["description"].is_string());
    assert_eq!(
        containers["x-kubernetes-patch-merge-key"], "name",
        "the described schema carries the patch extensions too"
    );
    let document = apiserver_views::openapi::v3_document(&resource_defs(), "apps", "v1").unwrap();
    assert_eq!(
        document["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]["properties"]
            ["replicas"]["description"],
        replicas["description"]
    );
    assert!(
        text.len() * 4 < described.to_string().len(),
        "descriptions are most of a schema: {} bytes served, {} described",
        text.len(),
        described.to_string().len()
    );
}

#[test]
fn recursive_crd_schema_is_cut_not_looped() {
    let schema = find("customresourcedefinitions").schema.unwrap();
    let props = &schema["properties"]["spec"]["properties"]["versions"]["items"]["properties"]["schema"]
        ["properties"]["openAPIV3Schema"];
    assert_eq!(props["type"], "object");
    assert_eq!(
        props["properties"]["properties"]["additionalProperties"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
}

#[test]
fn schema_names_match_upstream_definitions() {
    assert_eq!(
        schema_name("apps", "v1", "Deployment").as_deref(),
        Some("io.k8s.api.apps.v1.Deployment")
    );
    assert_eq!(
        schema_name("", "v1", "ConfigMap").as_deref(),
        Some("io.k8s.api.core.v1.ConfigMap")
    );
    assert_eq!(
        schema_name("autoscaling", "v2", "HorizontalPodAutoscaler").as_deref(),
        Some("io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler")
    );
    assert_eq!(
        schema_name("policy", "v1", "PodDisruptionBudget").as_deref(),
        Some("io.k8s.api.policy.v1.PodDisruptionBudget")
    );
    assert_eq!(schema_name("apps", "v1", "Nope"), None);
}

#[test]
fn generation_is_tracked_where_kube_apiserver_bumps_it() {
    // v1.32 strategies: spec (or template) changes bump metadata.generation for these kinds only;
    // HorizontalPodAutoscaler got a generation in later releases.
    let cases = [
        ("poddisruptionbudgets", true),
        ("replicationcontrollers", true),
        ("podtemplates", true),
        ("networkpolicies", true),
        ("ingressclasses", true),
        ("horizontalpodautoscalers", false),
        ("persistentvolumes", false),
        ("resourcequotas", false),
        ("limitranges", false),
        ("storageclasses", false),
        ("priorityclasses", false),
    ];
    for (plural, tracked) in cases {
        assert_eq!(find(plural).tracks_generation, tracked, "{plural}");
    }
}

#[test]
fn scale_selectors_of_built_in_kinds_are_label_selector_strings() {
    use apiserver_views::builtin::scale_selector;
    let deployment = json!({"spec": {"selector": {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                             {"key": "legacy", "operator": "DoesNotExist"}]}}});
    assert_eq!(
        scale_selector("Deployment", &deployment).as_deref(),
        Some("app=web,!legacy,tier in (a,b)")
    );
    let rc = json!({"spec": {"selector": {"app": "web", "env": "prod"}}});
    assert_eq!(
        scale_selector("ReplicationController", &rc).as_deref(),
        Some("app=web,env=prod")
    );
    assert_eq!(scale_selector("StatefulSet", &json!({"spec": {}})), None);
    let scaled: Vec<String> = resource_defs()
        .into_iter()
        .filter(|d| d.scale_subresource.is_some())
        .map(|d| {
            assert_eq!(
                d.scale_subresource.as_ref().unwrap().label_selector_path,
                None,
                "{}: rendered from the spec, not read from a path",
                d.kind
            );
            d.kind
        })
        .collect();
    assert!(
        scaled.contains(&"ReplicationController".to_string()),
        "{scaled:?}"
    );
}
