use serde_json::json;

use super::*;

fn parent(name: &str, clusters: Value) -> ResourceBinding {
    serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"resourcebinding.karmada.io/permanent-id": format!("id-{name}")}},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"},
            "propagateDeps": true,
            "conflictResolution": "Overwrite",
            "clusters": clusters,
        },
    }))
    .expect("binding")
}

fn config_map(resource_version: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "app-config", "namespace": "default", "uid": "cm-uid",
                        "resourceVersion": resource_version},
           "data": {"k": "v"}})
}

#[test]
fn attached_binding_follows_the_parent() {
    let web = parent(
        "web-deployment",
        json!([{"name": "aws", "replicas": 4}, {"name": "gcp", "replicas": 2}]),
    );
    let attached = attached_binding(&web, &config_map("5")).expect("attached");
    let value = serde_json::to_value(&attached).expect("json");
    let key = depended_by_label_key("default", "web-deployment");
    assert_eq!(
        value,
        json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {
                "name": "app-config-configmap", "namespace": "default",
                "labels": {key: "id-web-deployment"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config",
                                     "uid": "cm-uid", "controller": true, "blockOwnerDeletion": true}],
                "finalizers": ["karmada.io/binding-controller"],
            },
            "spec": {
                "resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default",
                             "name": "app-config", "uid": "cm-uid", "resourceVersion": "5"},
                "requiredBy": [{"namespace": "default", "name": "web-deployment",
                                "clusters": [{"name": "aws", "replicas": 4}, {"name": "gcp", "replicas": 2}]}],
                "conflictResolution": "Overwrite",
            },
        })
    );
}

#[test]
fn bad_input_is_an_error() {
    let mut anonymous = parent("web-deployment", json!([]));
    anonymous.metadata.labels = None;
    assert!(matches!(
        attached_binding(&anonymous, &config_map("1")),
        Err(DistributorError::MissingBindingId(_))
    ));
    let web = parent("web-deployment", json!([]));
    assert!(matches!(
        attached_binding(&web, &json!({"kind": "ConfigMap"})),
        Err(DistributorError::InvalidDependency(_))
    ));
}

#[test]
fn merge_table() {
    let web = parent("web-deployment", json!([{"name": "aws", "replicas": 1}]));
    let api = parent("api-deployment", json!([{"name": "gcp", "replicas": 1}]));
    let from_web = attached_binding(&web, &config_map("5")).expect("web");
    let from_api = attached_binding(&api, &config_map("5")).expect("api");

    // Same requirement again: nothing to write.
    assert_eq!(merge_attached(&from_web, &from_web), None);

    // A second parent: its snapshot and label are added, the first kept.
    let both = merge_attached(&from_web, &from_api).expect("changed");
    let names: Vec<&str> = both
        .spec
        .required_by
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["web-deployment", "api-deployment"]);
    let labels = both.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.len(), 2);

    // The first parent rescheduled: its snapshot is replaced in place.
    let moved = parent("web-deployment", json!([{"name": "azure", "replicas": 1}]));
    let from_moved = attached_binding(&moved, &config_map("5")).expect("moved");
    let rescheduled = merge_attached(&both, &from_moved).expect("changed");
    assert_eq!(rescheduled.spec.required_by[0].clusters[0].name, "azure");
    assert_eq!(rescheduled.spec.required_by[1].name, "api-deployment");

    // The ConfigMap changed: the binding's resource follows (so its Works are re-rendered).
    let edited = attached_binding(&web, &config_map("9")).expect("edited");
    let refreshed = merge_attached(&from_web, &edited).expect("changed");
    assert_eq!(refreshed.spec.resource.resource_version, "9");
}

#[test]
fn detach_table() {
    let web = parent("web-deployment", json!([{"name": "aws", "replicas": 1}]));
    let api = parent("api-deployment", json!([{"name": "gcp", "replicas": 1}]));
    let from_web = attached_binding(&web, &config_map("5")).expect("web");
    let from_api = attached_binding(&api, &config_map("5")).expect("api");
    let both = merge_attached(&from_web, &from_api).expect("both");

    // Last requirement gone, no policy: delete.
    assert_eq!(
        detach(&from_web, "default", "web-deployment"),
        Detached::Delete
    );
    // Another parent still needs it: update without the first.
    match detach(&both, "default", "web-deployment") {
        Detached::Update(updated) => {
            assert_eq!(updated.spec.required_by.len(), 1);
            assert_eq!(updated.spec.required_by[0].name, "api-deployment");
            let labels = updated.metadata.labels.unwrap_or_default();
            assert!(!labels.contains_key(&depended_by_label_key("default", "web-deployment")));
            assert!(labels.contains_key(&depended_by_label_key("default", "api-deployment")));
        }
        other => panic!("expected an update, got {other:?}"),
    }
    // Not required by that parent at all: unchanged.
    assert_eq!(
        detach(&from_api, "default", "web-deployment"),
        Detached::Unchanged
    );
    // Claimed by its own policy: kept with its placement when the last parent lets go.
    let mut claimed = from_web.clone();
    claimed.spec.placement = Some(Default::default());
    match detach(&claimed, "default", "web-deployment") {
        Detached::Update(updated) => assert!(updated.spec.required_by.is_empty()),
        other => panic!("expected an update, got {other:?}"),
    }
}

#[test]
fn binds_and_annotation() {
    let web = parent("web-deployment", json!([]));
    let attached = attached_binding(&web, &config_map("1")).expect("attached");
    let dependency = DependentObjectReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: "default".into(),
        name: "app-config".into(),
        label_selector: None,
    };
    assert!(binds(&attached, &dependency));
    let other = DependentObjectReference {
        kind: "Secret".into(),
        ..dependency.clone()
    };
    assert!(!binds(&attached, &other));
    assert_eq!(
        dependencies_annotation(&[dependency]),
        r#"[{"apiVersion":"v1","kind":"ConfigMap","namespace":"default","name":"app-config"}]"#
    );
}
