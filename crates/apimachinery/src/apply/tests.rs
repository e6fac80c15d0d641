//! Server-side apply and update-ownership tests over a Deployment.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::patch::BuiltinPatchMeta;

fn meta() -> BuiltinPatchMeta {
    BuiltinPatchMeta::for_kind("Deployment")
}

fn at(text: &str) -> Timestamp {
    text.parse().expect("valid timestamp")
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image}]}
            }
        }
    })
}

fn without_managed_fields(mut object: Value) -> Value {
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        metadata.retain(|k, _| k != "managedFields");
    }
    object
}

fn entry_fields(object: &Value, manager: &str) -> Option<Value> {
    object
        .pointer("/metadata/managedFields")?
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
}

#[test]
fn apply_creates_with_one_apply_entry() {
    let applied = deployment(2, "nginx:1.25");
    let outcome = apply(
        None,
        &applied,
        "kubectl",
        false,
        &meta(),
        at("2026-11-29T18:04:07Z"),
    )
    .expect("applies");
    let mut expected = applied.clone();
    expected["metadata"]["managedFields"] = json!([{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-29T18:04:07Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {"f:matchLabels": {"f:app": {}}},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}}}
                }
            }
        }
    }]);
    assert_eq!(outcome.object, expected);
    assert_eq!(outcome.managed_fields.len(), 1);
}

#[test]
fn reapply_removes_fields_the_manager_dropped() {
    let mut first = deployment(2, "nginx:1.25");
    first["metadata"]["labels"]["tier"] = json!("fe");
    first["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .expect("list")
        .push(json!({"name": "sidecar", "image": "busybox"}));
    let now = at("2026-11-29T18:04:07Z");
    let created = apply(None, &first, "kubectl", false, &meta(), now)
        .expect("creates")
        .object;
    // Something the server added and nobody applied stays.
    let mut live = created.clone();
    live["status"] = json!({"replicas": 2});

    let second = deployment(2, "nginx:1.26");
    let outcome = apply(Some(&live), &second, "kubectl", false, &meta(), now).expect("applies");
    let mut expected = deployment(2, "nginx:1.26");
    expected["status"] = json!({"replicas": 2});
    assert_eq!(without_managed_fields(outcome.object), expected);
}

#[test]
fn conflicts_with_another_manager_unless_forced() {
    let now = at("2026-11-29T18:04:07Z");
    let created = record_update(
        None,
        &deployment(2, "nginx:1.25"),
        "kubectl-client-side-apply",
        "apps/v1",
        &meta(),
        now,
    )
    .expect("records");
    let applied = deployment(3, "nginx:1.25");

    let error =
        apply(Some(&created), &applied, "kubectl", false, &meta(), now).expect_err("conflicts");
    assert_eq!(
        error,
        ApplyError::Conflicts(vec![Conflict {
            manager: "kubectl-client-side-apply".into(),
            api_version: "apps/v1".into(),
            field: ".spec.replicas".into(),
        }])
    );
    let api_error = error.to_api_error();
    assert_eq!(api_error.code, 409);
    assert_eq!(
        api_error.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
    );
    assert_eq!(
        api_error.to_status()["details"],
        json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-client-side-apply\" using apps/v1", "field": ".spec.replicas"}]})
    );

    let forced = apply(Some(&created), &applied, "kubectl", true, &meta(), now)
        .expect("forced")
        .object;
    assert_eq!(forced["spec"]["replicas"], json!(3));
    let previous_owner =
        entry_fields(&forced, "kubectl-client-side-apply").expect("still owns the rest");
    assert!(
        previous_owner["f:spec"].get("f:replicas").is_none(),
        "ownership moved: {previous_owner}"
    );
    assert!(
        previous_owner["f:spec"].get("f:template").is_some(),
        "equal fields stay shared"
    );
    let new_owner = entry_fields(&forced, "kubectl").expect("applier entry");
    assert!(new_owner["f:spec"].get("f:replicas").is_some());
}

#[test]
fn equal_values_are_shared_without_conflict() {
    let now = at("2026-11-29T18:04:07Z");
    let created = record_update(
        None,
        &deployment(2, "nginx"),
        "creator",
        "apps/v1",
        &meta(),
        now,
    )
    .expect("records");
    let outcome = apply(
        Some(&created),
        &deployment(2, "nginx"),
        "kubectl",
        false,
        &meta(),
        now,
    )
    .expect("applies");
    assert!(entry_fields(&outcome.object, "creator").is_some());
    assert!(entry_fields(&outcome.object, "kubectl").is_some());
    assert_eq!(
        without_managed_fields(outcome.object),
        deployment(2, "nginx")
    );
}

#[test]
fn several_conflicts_are_listed() {
    let now = at("2026-11-29T18:04:07Z");
    let created = record_update(
        None,
        &deployment(2, "a"),
        "kubectl-edit",
        "apps/v1",
        &meta(),
        now,
    )
    .expect("records");
    let error = apply(
        Some(&created),
        &deployment(3, "b"),
        "kubectl",
        false,
        &meta(),
        now,
    )
    .expect_err("conflicts");
    assert_eq!(
        error.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-edit\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
    );
}

#[test]
fn dropped_field_owned_by_someone_else_stays() {
    let now = at("2026-11-29T18:04:07Z");
    let mut first = deployment(2, "nginx");
    first["metadata"]["labels"]["team"] = json!("a");
    let created = apply(None, &first, "kubectl", false, &meta(), now)
        .expect("creates")
        .object;
    // Another writer sets the same label value: shared ownership.
    let labelled = record_update(
        Some(&created),
        &created,
        "kubectl-label",
        "apps/v1",
        &meta(),
        now,
    )
    .expect("records");
    assert!(
        entry_fields(&labelled, "kubectl-label").is_none(),
        "an unchanged write owns nothing"
    );
    let mut relabelled = labelled.clone();
    relabelled["metadata"]["labels"]["team"] = json!("b");
    let relabelled = record_update(
        Some(&labelled),
        &relabelled,
        "kubectl-label",
        "v1",
        &meta(),
        now,
    )
    .expect("records");
    assert_eq!(
        entry_fields(&relabelled, "kubectl-label"),
        Some(json!({"f:metadata": {"f:labels": {"f:team": {}}}}))
    );

    let outcome = apply(
        Some(&relabelled),
        &deployment(2, "nginx"),
        "kubectl",
        false,
        &meta(),
        now,
    )
    .expect("applies");
    assert_eq!(
        outcome.object["metadata"]["labels"],
        json!({"app": "web", "team": "b"})
    );
}

#[test]
fn update_takes_changed_fields_and_forgets_removed_ones() {
    let now = at("2026-11-29T18:04:07Z");
    let later = at("2026-11-29T19:00:00Z");
    let applied = apply(
        None,
        &deployment(2, "nginx:1.25"),
        "kubectl",
        false,
        &meta(),
        now,
    )
    .expect("creates")
    .object;
    let mut edited = applied.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    if let Some(Value::Object(labels)) = edited.pointer_mut("/metadata/labels") {
        labels.clear();
    }
    let stored = record_update(
        Some(&applied),
        &edited,
        "kubectl-edit",
        "apps/v1",
        &meta(),
        later,
    )
    .expect("records");
    let entries = managed_fields(&stored).expect("valid");
    assert_eq!(entries.len(), 2);
    let edit = &entries[1];
    assert_eq!(
        (edit.manager.as_str(), edit.operation, edit.time.as_str()),
        ("kubectl-edit", Operation::Update, "2026-11-29T19:00:00Z")
    );
    assert_eq!(
        fieldset::to_fields_v1(&edit.fields),
        json!({"f:metadata": {"f:labels": {}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {"f:image": {}}}}}}})
    );
    let kubectl = fieldset::to_fields_v1(&entries[0].fields);
    assert!(
        kubectl["f:metadata"].get("f:labels").is_none(),
        "removed label is owned by nobody: {kubectl}"
    );
    assert!(
        kubectl
            .pointer("/f:spec/f:template/f:spec/f:containers/k:{\"name\":\"nginx\"}/f:image")
            .is_none()
    );
}

#[test]
fn malformed_input_is_rejected() {
    let now = at("2026-11-29T18:04:07Z");
    assert!(matches!(
        apply(None, &json!([1]), "m", false, &meta(), now),
        Err(ApplyError::Invalid(_))
    ));
    let bad_live =
        json!({"metadata": {"managedFields": [{"manager": "x", "operation": "Sideways"}]}});
    let error = apply(
        Some(&bad_live),
        &deployment(1, "a"),
        "m",
        false,
        &meta(),
        now,
    )
    .expect_err("bad entry");
    assert_eq!(
        error.to_string(),
        "metadata.managedFields[0].operation: Unsupported value: Some(\"Sideways\"): supported values: \"Apply\", \"Update\""
    );
}

#[test]
fn a_refused_update_leaves_the_written_object_as_it_came() {
    let now = at("2026-11-29T18:04:07Z");
    let mut stored = deployment(1, "a");
    stored["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Sideways", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    let mut written = stored.clone();
    written["spec"]["replicas"] = json!(2);
    let before = written.clone();
    let error = record_update_in_place(
        Some(&stored),
        &mut written,
        Writer::of("m"),
        "apps/v1",
        &meta(),
        now,
    )
    .expect_err("bad stored entry");
    assert!(error.to_string().contains("Sideways"), "{error}");
    assert_eq!(written, before);
}

mod properties {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{at, meta};
    use crate::apply::{FieldSet, apply, fields_of, fieldset, record_update, record_update_with};

    fn config() -> impl Strategy<Value = Value> {
        (
            proptest::collection::btree_map("[a-c]", "[x-z]", 0..3),
            proptest::option::of(0i64..4),
            proptest::collection::btree_map("[a-c]", proptest::option::of("img[0-2]"), 0..3),
            proptest::collection::btree_set("f[0-2]", 0..3),
        )
            .prop_map(|(labels, replicas, containers, finalizers)| {
                let containers: Vec<Value> = containers
                    .into_iter()
                    .map(|(name, image)| match image {
                        Some(image) => json!({"name": name, "image": image}),
                        None => json!({"name": name}),
                    })
                    .collect();
                let mut config = json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "labels": labels, "finalizers": finalizers},
                    "spec": {"template": {"spec": {"containers": containers}}}
                });
                if let Some(replicas) = replicas {
                    config["spec"]["replicas"] = json!(replicas);
                }
                config
            })
    }

    /// What an update changes and removes, from the whole field sets of both objects.
    fn changed_and_removed_in_full(old: &Value, new: &Value) -> (FieldSet, FieldSet) {
        let (old_set, new_set) = (fields_of(old, &meta()), fields_of(new, &meta()));
        let changed = new_set
            .iter()
            .filter(|path| {
                !old_set.contains(*path)
                    || (!path.ends_in_element()
                        && fieldset::value_at(old, path) != fieldset::value_at(new, path))
            })
            .cloned()
            .collect();
        (changed, old_set.difference(&new_set).cloned().collect())
    }

    fn with_status(config: Value, status: Option<(i64, String)>) -> Value {
        let mut object = config;
        if let Some((ready, reason)) = status {
            // Nested maps, one part changing with `ready` and one fixed, so the walk goes down through maps.
            object["status"] = json!({"readyReplicas": ready, "conditions": [{"type": "Available", "reason": reason}],
                                      "summary": {"ready": {"count": ready, "empty": {}}, "fixed": {"k": "v"},
                                                  "reason": {reason.clone(): {"seen": true}}}});
        }
        object
    }

    proptest! {
        #[test]
        fn patched_managed_fields_equal_the_ones_written_from_the_field_sets(
            first in config(), second in config(),
            first_status in proptest::option::of((0i64..3, "[a-b]")),
            second_status in proptest::option::of((0i64..3, "[a-b]")),
            same_spec in any::<bool>(),
            managers in proptest::collection::vec(prop_oneof![Just("m1"), Just("m2"), Just("m3")], 3),
            seconds in 0i64..3,
        ) {
            let earlier = at("2026-11-29T18:04:07Z");
            let later = at(&format!("2026-11-29T18:04:0{}Z", 7 + seconds));
            // History: the first configuration created by one manager, then updated to the second by another.
            let created = record_update(None, &with_status(first.clone(), first_status.clone()), managers[0], "apps/v1", &meta(), earlier)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut next = with_status(second, second_status.clone());
            if same_spec {
                next["spec"] = created["spec"].clone();
            }
            next["metadata"]["managedFields"] = created["metadata"]["managedFields"].clone();
            let updated = record_update(Some(&created), &next, managers[1], "apps/v1", &meta(), earlier)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            // Then a status-only change, or the same object again, by a third manager at a later time.
            let mut last = updated.clone();
            if let Some((ready, reason)) = second_status {
                last["status"] = json!({"readyReplicas": ready + 1, "conditions": [{"type": "Available", "reason": reason}]});
            }
            // A writer that sends no managed fields keeps the stored ones too.
            let mut unsent = last.clone();
            if let Some(metadata) = unsent["metadata"].as_object_mut() {
                metadata.remove("managedFields");
            }
            for (old, new) in [(&created, &next), (&updated, &last), (&updated, &updated), (&updated, &unsent)] {
                let patched = record_update_with(Some(old), new, managers[2], "apps/v1", &meta(), later, true)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let written = record_update_with(Some(old), new, managers[2], "apps/v1", &meta(), later, false)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                // Byte for byte: the stored JSON and its key order are what clients read back.
                prop_assert_eq!(patched.to_string(), written.to_string());
            }
        }

        #[test]
        fn walking_only_differing_entries_finds_what_the_whole_sets_find(
            first in config(), second in config(),
            first_status in proptest::option::of((0i64..3, "[a-b]")),
            second_status in proptest::option::of((0i64..3, "[a-b]")),
            same_spec in any::<bool>(),
        ) {
            let old = with_status(first, first_status);
            let mut new = with_status(second, second_status);
            if same_spec {
                // The common case the shortcut is for: a status update.
                new["spec"] = old["spec"].clone();
                new["metadata"] = old["metadata"].clone();
            }
            prop_assert_eq!(
                fieldset::changed_and_removed(&old, &new, &meta()),
                changed_and_removed_in_full(&old, &new)
            );
        }

        #[test]
        fn the_object_holds_what_was_last_applied_and_reapplying_is_stable(first in config(), second in config()) {
            let now = at("2026-11-29T18:04:07Z");
            let created = apply(None, &first, "kubectl", false, &meta(), now).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let updated = apply(Some(&created.object), &second, "kubectl", false, &meta(), now)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            for path in fields_of(&second, &meta()) {
                prop_assert_eq!(fieldset::value_at(&updated.object, &path).is_some(), true, "{} missing", path);
                if !path.ends_in_element() {
                    prop_assert_eq!(fieldset::value_at(&updated.object, &path), fieldset::value_at(&second, &path));
                }
            }
            // Fields only the first configuration set are gone: the sole manager dropped them
            // (unless the second configuration sets something inside them).
            let second_fields = fields_of(&second, &meta());
            for path in fields_of(&first, &meta()).difference(&second_fields) {
                if second_fields.iter().any(|p| p.starts_with(path)) {
                    continue;
                }
                prop_assert!(fieldset::value_at(&updated.object, path).is_none(), "{} left behind", path);
            }
            let again = apply(Some(&updated.object), &second, "kubectl", false, &meta(), now)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(again.object, updated.object);
        }
    }
}

#[test]
fn unmanaged_objects_belong_to_before_first_apply() {
    let now = at("2026-11-29T18:04:07Z");
    let mut live = deployment(2, "nginx");
    live["spec"]["paused"] = json!(false);
    let error = apply(
        Some(&live),
        &deployment(5, "nginx"),
        "kubectl",
        false,
        &meta(),
        now,
    )
    .expect_err("conflicts");
    assert_eq!(
        error.to_string(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
    );
    let outcome = apply(
        Some(&live),
        &deployment(2, "nginx"),
        "kubectl",
        false,
        &meta(),
        now,
    )
    .expect("applies");
    let managers: Vec<&str> = outcome
        .managed_fields
        .iter()
        .map(|e| e.manager.as_str())
        .collect();
    assert_eq!(managers, vec![BEFORE_FIRST_APPLY, "kubectl"]);
    assert_eq!(
        outcome.object["spec"]["paused"],
        json!(false),
        "fields the applier never set stay"
    );
}

#[test]
fn an_owner_updating_its_own_fields_renews_its_entry_and_keeps_the_rest() {
    let earlier = at("2026-11-29T18:04:07Z");
    let later = at("2026-11-29T18:05:09Z");
    let mut first = deployment(2, "nginx");
    first["status"] = json!({"readyReplicas": 1});
    let created =
        record_update(None, &first, "owner", "apps/v1", &meta(), earlier).expect("created");
    let mut second = created.clone();
    second["status"]["readyReplicas"] = json!(2);
    let patched = record_update_with(
        Some(&created),
        &second,
        "owner",
        "apps/v1",
        &meta(),
        later,
        true,
    )
    .expect("patched");
    let written = record_update_with(
        Some(&created),
        &second,
        "owner",
        "apps/v1",
        &meta(),
        later,
        false,
    )
    .expect("written");
    assert_eq!(patched, written);
    assert_eq!(
        patched["metadata"]["managedFields"][0]["time"],
        "2026-11-29T18:05:09Z"
    );
    assert_eq!(
        patched["metadata"]["managedFields"][0]["fieldsV1"],
        created["metadata"]["managedFields"][0]["fieldsV1"]
    );
}
