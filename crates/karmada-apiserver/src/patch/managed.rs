//! `metadata.managedFields` bookkeeping for ordinary writes (create, update, JSON/merge/
//! strategic patches), delegated to `apimachinery::record_update_in_place`.
//!
//! Like kube-apiserver, a write whose managed fields cannot be recorded (the client sent
//! malformed `managedFields`) is still accepted, with its `managedFields` removed rather than
//! stored as garbage.

use jiff::Timestamp;
use serde_json::Value;

use apimachinery::{BuiltinPatchMeta, PatchMeta, ResourceDef, Writer, record_update_in_place};

/// Records a non-apply write by `writer` in `new`'s `metadata.managedFields`, as an `Update`
/// entry at `api_version` (a write through a subresource has its own entry, naming it). Fields the write changed move to `manager`; fields it removed are
/// owned by nobody; a client that rewrote `managedFields` itself (kubectl's migration to
/// server-side apply) is taken at its word. `old` is `None` on create.
pub fn record_update_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    writer: Writer<'_>,
    api_version: &str,
    now: Timestamp,
) {
    // Without the definition, the kind's built-in merge keys decide how list elements are
    // owned; other kinds get atomic lists plus the object-metadata rules.
    let kind = new
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    record(
        old,
        new,
        writer,
        api_version,
        &BuiltinPatchMeta::for_kind(&kind),
        now,
    );
}

/// [`record_update_managed_fields`] for an object of `def`, at `def`'s apiVersion. Prefer it:
/// custom resources then own list elements by their schema's list-map keys, the same way their
/// server-side applies do.
pub fn record_update_for(
    def: &ResourceDef,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    now: Timestamp,
) {
    let meta = super::patch_meta(def);
    record(
        old,
        new,
        Writer::of(manager),
        &def.api_version(),
        meta.as_ref(),
        now,
    );
}

fn record(
    old: Option<&Value>,
    new: &mut Value,
    writer: Writer<'_>,
    api_version: &str,
    meta: &dyn PatchMeta,
    now: Timestamp,
) {
    match record_update_in_place(old, new, writer, api_version, meta, now) {
        Ok(()) => {}
        Err(_) => {
            if let Some(metadata) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("managedFields");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap_or_default()
    }

    fn managers(object: &Value) -> Vec<(String, String, Value)> {
        object
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|e| {
                        (
                            e["manager"].as_str().unwrap_or("").to_string(),
                            e["operation"].as_str().unwrap_or("").to_string(),
                            e["fieldsV1"].clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn create_records_every_user_field() {
        let mut created = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default", "uid": "u", "resourceVersion": "5", "labels": {"a": "1"}},
            "data": {"k": "v"}
        });
        record_update_managed_fields(
            None,
            &mut created,
            Writer::of("kubectl-create"),
            "v1",
            at("2026-11-29T18:00:00Z"),
        );
        let entry = &created["metadata"]["managedFields"][0];
        assert_eq!(entry["manager"], "kubectl-create");
        assert_eq!(entry["operation"], "Update");
        assert_eq!(entry["apiVersion"], "v1");
        assert_eq!(entry["time"], "2026-11-29T18:00:00Z");
        assert_eq!(entry["fieldsType"], "FieldsV1");
        assert_eq!(entry["fieldsV1"]["f:data"], json!({"f:k": {}}));
        assert_eq!(
            entry["fieldsV1"]["f:metadata"],
            json!({"f:labels": {"f:a": {}}})
        );
    }

    #[test]
    fn a_managers_status_writes_have_an_entry_of_their_own() {
        let mut created =
            json!({"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}});
        record_update_managed_fields(
            None,
            &mut created,
            Writer::of("controller"),
            "apps/v1",
            at("2026-11-29T18:00:00Z"),
        );
        let status_writer = Writer {
            manager: "controller",
            subresource: Some("status"),
        };
        let mut reported = created.clone();
        reported["status"] = json!({"replicas": 1});
        record_update_managed_fields(
            Some(&created),
            &mut reported,
            status_writer,
            "apps/v1",
            at("2026-11-29T18:01:00Z"),
        );
        let entries = reported["metadata"]["managedFields"]
            .as_array()
            .expect("entries");
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert!(entries[0].get("subresource").is_none());
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert_eq!(entries[1]["manager"], "controller");
        assert_eq!(entries[1]["subresource"], "status");
        assert_eq!(entries[1]["time"], "2026-11-29T18:01:00Z");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status": {"f:replicas": {}}})
        );

        // The next status write by the same manager updates that entry, not a third one.
        let mut again = reported.clone();
        again["status"]["readyReplicas"] = json!(1);
        record_update_managed_fields(
            Some(&reported),
            &mut again,
            status_writer,
            "apps/v1",
            at("2026-11-29T18:02:00Z"),
        );
        let entries = again["metadata"]["managedFields"]
            .as_array()
            .expect("entries");
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status": {"f:readyReplicas": {}, "f:replicas": {}}})
        );
        assert_eq!(entries[1]["time"], "2026-11-29T18:02:00Z");
    }

    #[test]
    fn updates_move_ownership_between_managers() {
        let mut old = json!({"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1, "paused": false}});
        record_update_managed_fields(
            None,
            &mut old,
            Writer::of("creator"),
            "apps/v1",
            at("2026-11-29T18:00:00Z"),
        );
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = json!(3);
        record_update_managed_fields(
            Some(&old),
            &mut scaled,
            Writer::of("kubectl-scale"),
            "apps/v1",
            at("2026-11-29T18:05:00Z"),
        );
        assert_eq!(
            managers(&scaled),
            vec![
                (
                    "creator".into(),
                    "Update".into(),
                    json!({"f:spec": {"f:paused": {}}})
                ),
                (
                    "kubectl-scale".into(),
                    "Update".into(),
                    json!({"f:spec": {"f:replicas": {}}})
                ),
            ]
        );
    }

    #[test]
    fn custom_resources_own_list_elements_by_schema_keys() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object"}}}}}});
        let def = ResourceDef {
            group: "example.io".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            namespaced: true,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            scale_subresource: None,
            builtin: false,
            tracks_generation: true,
            printer: apimachinery::Printer::Columns(Vec::new()),
            schema: Some(std::sync::Arc::new(schema)),
            storage_version: true,
        };
        let mut created = json!({"kind": "Widget", "metadata": {"name": "w"}, "spec": {"items": [{"name": "a", "size": 1}]}});
        record_update_for(
            &def,
            None,
            &mut created,
            "creator",
            at("2026-11-29T18:00:00Z"),
        );
        let entry = &created["metadata"]["managedFields"][0];
        assert_eq!(entry["apiVersion"], "example.io/v1");
        let items = &entry["fieldsV1"]["f:spec"]["f:items"];
        assert!(items.get("k:{\"name\":\"a\"}").is_some(), "{items}");
    }

    #[test]
    fn malformed_managed_fields_are_dropped_not_stored() {
        let old = json!({"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}});
        let mut new = json!({"kind": "ConfigMap", "metadata": {"name": "x", "managedFields": [{"operation": "Sideways"}]}, "data": {"a": "2"}});
        record_update_managed_fields(
            Some(&old),
            &mut new,
            Writer::of("m"),
            "v1",
            at("2026-11-29T18:00:00Z"),
        );
        assert!(new["metadata"].get("managedFields").is_none());
        assert_eq!(new["data"]["a"], "2");
    }
}
