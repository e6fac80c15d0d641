//! Discovery documents, aggregated and legacy, for the built-ins plus a multi-version custom group.

#![allow(clippy::unwrap_used)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use apimachinery::{Printer, ResourceDef};
use apiserver_views::builtin::resource_defs;
use apiserver_views::discovery::*;
use serde_json::{Value, json};

/// Built-ins plus a Karmada-like group served at two versions (v1alpha2 is the storage version).
fn defs() -> Vec<ResourceDef> {
    let mut defs = resource_defs();
    let template = defs.iter().find(|d| d.kind == "ConfigMap").unwrap().clone();
    for (version, storage) in [("v1alpha1", false), ("v1alpha2", true)] {
        defs.push(ResourceDef {
            group: "work.karmada.io".into(),
            version: version.into(),
            kind: "ResourceBinding".into(),
            plural: "resourcebindings".into(),
            singular: "resourcebinding".into(),
            short_names: vec!["rb".into()],
            categories: vec!["karmada-io".into()],
            status_subresource: true,
            builtin: false,
            printer: Printer::Columns(vec![]),
            storage_version: storage,
            schema: None,
            ..template.clone()
        });
    }
    defs
}

fn find<'a>(items: &'a Value, name: &str) -> &'a Value {
    items
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["metadata"]["name"] == name || item["name"] == name)
        .unwrap()
}

fn resource<'a>(resources: &'a Value, name: &str) -> &'a Value {
    resources
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == name || r["name"] == name)
        .unwrap()
}

#[test]
fn aggregated_core_group_has_only_core_resources() {
    let doc = aggregated_api(&defs());
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    let items = doc["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"]["name"], "");
    let resources = &items[0]["versions"][0]["resources"];
    let pods = resource(resources, "pods");
    assert_eq!(pods["scope"], "Namespaced");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    let namespaces = resource(resources, "namespaces");
    assert_eq!(namespaces["scope"], "Cluster");
    assert!(
        resources
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["responseKind"]["group"] == "")
    );
    let secrets = resource(resources, "secrets");
    assert!(secrets.get("shortNames").is_none() && secrets.get("subresources").is_none());
}

#[test]
fn aggregated_named_groups_carry_deployments_with_scale() {
    let doc = aggregated_apis(&defs());
    let items = &doc["items"];
    assert!(
        items
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item["metadata"]["name"] != "")
    );
    let apps = find(items, "apps");
    assert_eq!(apps["versions"][0]["version"], "v1");
    assert_eq!(apps["versions"][0]["freshness"], "Current");
    let deployments = resource(&apps["versions"][0]["resources"], "deployments");
    assert_eq!(
        *deployments,
        json!({
            "resource": "deployments",
            "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "scope": "Namespaced",
            "singularResource": "deployment",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["deploy"],
            "categories": ["all"],
            "subresources": [
                {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                 "verbs": ["get", "patch", "update"]},
                {"subresource": "status", "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                 "verbs": ["get", "patch", "update"]},
            ],
        })
    );
    // Versions in preference order: v1alpha2 before v1alpha1.
    let work = find(items, "work.karmada.io");
    let versions: Vec<&str> = work["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1alpha2", "v1alpha1"]);
}

#[test]
fn aggregated_content_type_is_exact() {
    assert_eq!(
        AGGREGATED_CONTENT_TYPE,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
}

#[test]
fn legacy_documents() {
    let defs = defs();
    assert_eq!(
        legacy_api_versions("10.0.0.1:6443"),
        json!({"kind": "APIVersions", "versions": ["v1"],
               "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]})
    );

    let list = legacy_group_list(&defs);
    assert_eq!(
        (&list["kind"], &list["apiVersion"]),
        (&json!("APIGroupList"), &json!("v1"))
    );
    let work = find(&list["groups"], "work.karmada.io");
    assert_eq!(
        work["preferredVersion"],
        json!({"groupVersion": "work.karmada.io/v1alpha2", "version": "v1alpha2"})
    );
    assert_eq!(
        work["versions"][1],
        json!({"groupVersion": "work.karmada.io/v1alpha1", "version": "v1alpha1"})
    );
    assert!(
        list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["name"] != "")
    );

    let apps = legacy_group(&defs, "apps").unwrap();
    assert_eq!(
        (&apps["kind"], &apps["name"]),
        (&json!("APIGroup"), &json!("apps"))
    );
    assert_eq!(legacy_group(&defs, "nope.example.com"), None);
    assert_eq!(legacy_group(&defs, ""), None);

    let apps_v1 = legacy_resource_list(&defs, "apps", "v1").unwrap();
    assert_eq!(apps_v1["groupVersion"], "apps/v1");
    let deployments = resource(&apps_v1["resources"], "deployments");
    assert_eq!(deployments["singularName"], "deployment");
    assert_eq!(deployments["namespaced"], true);
    assert_eq!(deployments["kind"], "Deployment");
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
    assert!(
        deployments["storageVersionHash"]
            .as_str()
            .is_some_and(|h| h.len() == 12)
    );
    let scale = resource(&apps_v1["resources"], "deployments/scale");
    assert_eq!(
        (&scale["group"], &scale["version"], &scale["kind"]),
        (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
    );
    assert_eq!(
        resource(&apps_v1["resources"], "deployments/status")["kind"],
        "Deployment"
    );

    let core = legacy_resource_list(&defs, "", "v1").unwrap();
    assert_eq!(core["groupVersion"], "v1");
    assert_eq!(
        resource(&core["resources"], "namespaces")["namespaced"],
        false
    );
    assert_eq!(legacy_resource_list(&defs, "apps", "v2"), None);

    // Both served versions of one kind share the storage version's hash.
    let hash = |version: &str| {
        let list = legacy_resource_list(&defs, "work.karmada.io", version).unwrap();
        resource(&list["resources"], "resourcebindings")["storageVersionHash"].clone()
    };
    assert_eq!(hash("v1alpha1"), hash("v1alpha2"));
    assert_ne!(hash("v1alpha2"), deployments["storageVersionHash"]);
}

#[test]
fn review_resources_are_discoverable_as_create_only() {
    let defs = defs();
    let aggregated = aggregated_apis(&defs);
    let group = find(&aggregated["items"], "authorization.k8s.io");
    let resources = &group["versions"][0]["resources"];
    let local = resource(resources, "localsubjectaccessreviews");
    assert_eq!(local["scope"], "Namespaced");
    assert_eq!(local["verbs"], json!(["create"]));
    assert_eq!(
        resource(resources, "selfsubjectaccessreviews")["responseKind"]["kind"],
        "SelfSubjectAccessReview"
    );
    let group_list = legacy_group_list(&defs);
    let names: Vec<&str> = group_list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(names.contains(&"authentication.k8s.io"), "{names:?}");
    assert_eq!(
        legacy_group(&defs, "authorization.k8s.io").unwrap()["preferredVersion"]["groupVersion"],
        "authorization.k8s.io/v1"
    );
    let list = legacy_resource_list(&defs, "authentication.k8s.io", "v1").unwrap();
    assert_eq!(list["resources"][0]["kind"], "SelfSubjectReview");
    assert_eq!(list["resources"][0]["verbs"], json!(["create"]));
    assert!(legacy_resource_list(&defs, "authentication.k8s.io", "v1beta1").is_none());
}
