//! Tests of PATCH dispatch, error mapping, server-side apply and field-manager helpers.

use jiff::Timestamp;
use serde_json::{Value, json};

use apimachinery::{Printer, ResourceDef};

use super::*;

fn def(group: &str, version: &str, kind: &str, plural: &str, builtin: bool) -> ResourceDef {
    ResourceDef {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        namespaced: true,
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: true,
        scale_subresource: None,
        builtin,
        tracks_generation: true,
        printer: if builtin {
            Printer::Builtin
        } else {
            Printer::Columns(Vec::new())
        },
        schema: None,
        storage_version: true,
    }
}

fn deployments() -> ResourceDef {
    def("apps", "v1", "Deployment", "deployments", true)
}

fn propagation_policies() -> ResourceDef {
    def(
        "policy.karmada.io",
        "v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
        false,
    )
}

fn now() -> Timestamp {
    "2026-11-29T18:30:00Z".parse().unwrap_or_default()
}

fn live_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
            {"name": "sidecar", "image": "busybox"}]}}}
    })
}

fn patch(
    def: &ResourceDef,
    live: &Value,
    patch_type: PatchType,
    body: &str,
) -> Result<Value, ApiError> {
    apply_patch(
        def,
        live,
        patch_type,
        body.as_bytes(),
        "tester",
        false,
        now(),
    )
}

#[test]
fn content_types() {
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        (
            "application/merge-patch+json; charset=utf-8",
            Some(PatchType::Merge),
        ),
        (
            "Application/Strategic-Merge-Patch+JSON",
            Some(PatchType::Strategic),
        ),
        ("application/apply-patch+yaml", Some(PatchType::Apply)),
        ("application/json", None),
        ("", None),
    ];
    for (content_type, expected) in cases {
        assert_eq!(
            PatchType::from_content_type(content_type),
            expected,
            "{content_type}"
        );
        if let Some(patch_type) = expected {
            assert_eq!(
                PatchType::from_content_type(patch_type.content_type()),
                Some(patch_type)
            );
        }
    }
}

#[test]
fn json_patch_applies_and_maps_errors() {
    let live = live_deployment();
    let patched = patch(
        &deployments(),
        &live,
        PatchType::Json,
        r#"[{"op":"replace","path":"/spec/replicas","value":4}]"#,
    );
    assert_eq!(patched.map(|p| p["spec"]["replicas"].clone()), Ok(json!(4)));

    let failed_test = patch(
        &deployments(),
        &live,
        PatchType::Json,
        r#"[{"op":"test","path":"/spec/replicas","value":9}]"#,
    );
    assert_eq!(failed_test.map_err(|e| e.code), Err(422));
    let missing = patch(
        &deployments(),
        &live,
        PatchType::Json,
        r#"[{"op":"remove","path":"/spec/nothing"}]"#,
    );
    assert_eq!(missing.map_err(|e| e.code), Err(422));
    let not_a_list = patch(&deployments(), &live, PatchType::Json, r#"{"op":"remove"}"#);
    assert_eq!(
        not_a_list.map_err(|e| (e.code, e.reason)),
        Err((400, "BadRequest".to_string()))
    );
    let not_json = patch(&deployments(), &live, PatchType::Json, "[{");
    assert_eq!(not_json.map_err(|e| e.code), Err(400));
}

#[test]
fn merge_patch_replaces_lists_and_deletes_nulls() {
    let live = live_deployment();
    let body = r#"{"metadata":{"labels":{"app":null,"tier":"fe"}},"spec":{"template":{"spec":{"containers":[{"name":"only","image":"x"}]}}}}"#;
    let patched = patch(&propagation_policies(), &live, PatchType::Merge, body).unwrap_or_default();
    assert_eq!(patched["metadata"]["labels"], json!({"tier": "fe"}));
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"],
        json!([{"name": "only", "image": "x"}])
    );
    assert_eq!(patched["spec"]["replicas"], 1);
    let list = patch(&propagation_policies(), &live, PatchType::Merge, "[1]");
    assert_eq!(list.map_err(|e| e.code), Err(400));
}

#[test]
fn strategic_merge_is_for_builtin_kinds_only() {
    let live = live_deployment();
    let body = r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.26"},{"$patch":"delete","name":"sidecar"}]}}}}"#;
    let patched = patch(&deployments(), &live, PatchType::Strategic, body).unwrap_or_default();
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web", "image": "nginx:1.26", "ports": [{"containerPort": 80, "protocol": "TCP"}]}])
    );

    let refused = patch(&propagation_policies(), &live, PatchType::Strategic, "{}").err();
    let refused = refused.map(|e| (e.code, e.reason, e.message));
    assert_eq!(
        refused,
        Some((
            415,
            "UnsupportedMediaType".to_string(),
            STRATEGIC_MERGE_UNSUPPORTED.to_string()
        ))
    );
}

#[test]
fn apply_creates_from_json_or_yaml() {
    let json_body = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2}}"#;
    let yaml_body =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n";
    for body in [json_body, yaml_body] {
        let created = apply_patch(
            &deployments(),
            &Value::Null,
            PatchType::Apply,
            body.as_bytes(),
            "kubectl",
            false,
            now(),
        )
        .unwrap_or_default();
        assert_eq!(created["spec"]["replicas"], 2, "{body}");
        assert_eq!(created["metadata"]["name"], "web");
        assert_eq!(
            created["metadata"]["managedFields"],
            json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-29T18:30:00Z",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}])
        );
    }
}

#[test]
fn apply_conflicts_unless_forced_then_merges() {
    let mut live = live_deployment();
    record_update_managed_fields(
        None,
        &mut live,
        apimachinery::Writer::of("kubectl-create"),
        "apps/v1",
        now(),
    );
    let body = br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
        "spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}"#;

    let refused = apply_patch(
        &deployments(),
        &live,
        PatchType::Apply,
        body,
        "kubectl",
        false,
        now(),
    )
    .err();
    assert_eq!(
        refused.map(|e| (e.code, e.message)),
        Some((
            409,
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1: .spec.template.spec.containers[name=\"web\"].image"
                .to_string()
        ))
    );

    let applied = apply_patch(
        &deployments(),
        &live,
        PatchType::Apply,
        body,
        "kubectl",
        true,
        now(),
    )
    .unwrap_or_default();
    let containers = &applied["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["image"], "nginx:1.27");
    assert_eq!(containers[0]["ports"][0]["containerPort"], 80);
    assert_eq!(containers[1]["name"], "sidecar");
    let managers: Vec<(&str, &str)> = applied["metadata"]["managedFields"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or(""),
                        e["operation"].as_str().unwrap_or(""),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        managers,
        [("kubectl-create", "Update"), ("kubectl", "Apply")]
    );
}

#[test]
fn reapplying_without_a_field_removes_it() {
    let first = br#"{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{"name":"p","labels":{"a":"1","b":"2"}},"spec":{"priority":1}}"#;
    let second = br#"{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{"name":"p","labels":{"a":"1"}},"spec":{"priority":1}}"#;
    let def = propagation_policies();
    let created = apply_patch(
        &def,
        &Value::Null,
        PatchType::Apply,
        first,
        "kubectl",
        false,
        now(),
    )
    .unwrap_or_default();
    assert_eq!(created["metadata"]["labels"], json!({"a": "1", "b": "2"}));
    let updated = apply_patch(
        &def,
        &created,
        PatchType::Apply,
        second,
        "kubectl",
        false,
        now(),
    )
    .unwrap_or_default();
    assert_eq!(updated["metadata"]["labels"], json!({"a": "1"}));
    assert_eq!(updated["spec"]["priority"], 1);
}

#[test]
fn apply_rejects_bad_requests() {
    let body = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}"#;
    let no_manager = apply_patch(
        &deployments(),
        &Value::Null,
        PatchType::Apply,
        body.as_bytes(),
        "",
        false,
        now(),
    )
    .err();
    assert_eq!(
        no_manager.map(|e| (e.code, e.message)),
        Some((422, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".to_string()))
    );
    let cases = [
        (
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"web"}}"#,
            "the kind in the data (StatefulSet) does not match the expected kind (Deployment)",
        ),
        (
            r#"{"apiVersion":"apps/v2","kind":"Deployment"}"#,
            "the API version in the data (apps/v2) does not match the expected API version (apps/v1)",
        ),
        (
            r#"{"kind":"Deployment"}"#,
            "the apply configuration has no apiVersion; expected apps/v1",
        ),
        (
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"managedFields":[{}]}}"#,
            "metadata.managedFields must be nil",
        ),
        (
            "[1, 2]",
            "the apply configuration must be a single object with apiVersion, kind and metadata.name",
        ),
    ];
    for (body, message) in cases {
        let error = apply_patch(
            &deployments(),
            &Value::Null,
            PatchType::Apply,
            body.as_bytes(),
            "m",
            false,
            now(),
        )
        .err();
        assert_eq!(
            error.map(|e| (e.code, e.message)),
            Some((400, message.to_string())),
            "{body}"
        );
    }
    let garbage = apply_patch(
        &deployments(),
        &Value::Null,
        PatchType::Apply,
        b"{ unclosed: [",
        "m",
        false,
        now(),
    )
    .err();
    assert_eq!(garbage.map(|e| e.code), Some(400));
}

#[test]
fn conflict_errors_use_kube_apiserver_wording() {
    let replicas = FieldManagerConflict {
        manager: "kubectl-client-side-apply".into(),
        operation: "Update".into(),
        api_version: "apps/v1".into(),
        subresource: None,
        path: ".spec.replicas".into(),
    };
    let one = apply_conflict_error(std::slice::from_ref(&replicas));
    assert_eq!((one.code, one.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        one.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
    );
    assert_eq!(
        one.to_status()["details"],
        json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-client-side-apply\" using apps/v1", "field": ".spec.replicas"}]})
    );

    let image = FieldManagerConflict {
        manager: "ci".into(),
        operation: "Apply".into(),
        api_version: "apps/v1".into(),
        subresource: None,
        path: ".spec.template.spec.containers[name=\"web\"].image".into(),
    };
    let scale = FieldManagerConflict {
        path: ".spec.paused".into(),
        ..replicas.clone()
    };
    let many = apply_conflict_error(&[replicas, image, scale]);
    assert_eq!(
        many.message,
        "Apply failed with 3 conflicts: conflicts with \"ci\":\n- .spec.template.spec.containers[name=\"web\"].image\nconflicts with \"kubectl-client-side-apply\" using apps/v1:\n- .spec.replicas\n- .spec.paused"
    );
    assert_eq!(many.details.map(|d| d.causes.len()), Some(3));
}

#[test]
fn field_manager_from_user_agent() {
    let cases = [
        (
            Some("kubectl/v1.32.4 (linux/amd64) kubernetes/abc"),
            "kubectl",
        ),
        (Some("OpenAPI-Generator/31.0.0/python"), "OpenAPI-Generator"),
        (Some("karmadactl"), "karmadactl"),
        (Some(""), UNKNOWN_FIELD_MANAGER),
        (None, UNKNOWN_FIELD_MANAGER),
    ];
    for (agent, expected) in cases {
        assert_eq!(default_field_manager(agent), expected, "{agent:?}");
    }
    assert_eq!(default_field_manager(Some(&"x".repeat(300))).len(), 128);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn patch_type() -> impl Strategy<Value = PatchType> {
        prop::sample::select(vec![
            PatchType::Json,
            PatchType::Merge,
            PatchType::Strategic,
            PatchType::Apply,
        ])
    }

    proptest! {
        #[test]
        fn any_body_gets_an_object_or_a_client_error(kind in patch_type(), builtin in any::<bool>(), body in prop::collection::vec(any::<u8>(), 0..64)) {
            let def = if builtin { deployments() } else { propagation_policies() };
            match apply_patch(&def, &live_deployment(), kind, &body, "m", false, now()) {
                Ok(_) => {}
                Err(error) => prop_assert!((400..500).contains(&error.code), "{error:?}"),
            }
        }

        #[test]
        fn strategic_merge_on_custom_resources_is_always_415(body in "\\PC{0,40}") {
            let error = apply_patch(&propagation_policies(), &live_deployment(), PatchType::Strategic, body.as_bytes(), "m", false, now()).err();
            prop_assert_eq!(error.map(|e| e.code), Some(415));
        }

        #[test]
        fn content_type_parameters_are_ignored(kind in patch_type(), parameter in "[a-z]{1,8}=[a-z0-9-]{0,8}") {
            let content_type = format!("{}; {parameter}", kind.content_type());
            prop_assert_eq!(PatchType::from_content_type(&content_type), Some(kind));
        }
    }
}
