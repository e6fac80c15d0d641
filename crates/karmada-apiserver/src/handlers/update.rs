//! Update (PUT) and patch (PATCH) of objects and their `status`, sharing one commit path:
//! preconditions, immutable metadata, admission, no-op detection, removal of a deleting
//! object whose last finalizer went away, and a compare-and-swap write on the revision read.

use std::borrow::Cow;

use apimachinery::{ApiError, FieldError, ResourceDef};
use serde_json::Value;
use store::StoreError;

use super::create::{create_object, is_crd, is_namespace};
use super::{WriteOptions, Written, admit, convert, not_found, validate_fields};
use crate::hooks::{self, PatchType};
use crate::objects::{self, Part};
use crate::server::ApiServer;
use crate::storage;

/// PUT: replaces the object (or its status) with `body`. A write that loses a race to another writer is redone
/// from a fresh read, as kube-apiserver does; a body that names a resourceVersion then fails its precondition
/// (409), one that does not is applied over the newer object.
pub async fn update_object(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    body: Value,
    part: Part,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    if let Some(stored) = convert::stored_def(server, def) {
        // Field validation speaks of the fields the client sent, so it runs on the version it sent.
        let mut body = body;
        objects::check_type(def, &mut body)?;
        let warnings = validate_fields(def, &mut body, options)?;
        let body = convert::to_storage(def, body)?;
        let options = WriteOptions {
            duplicate_fields: Vec::new(),
            ..options.clone()
        };
        let mut written = Box::pin(update_object(
            server, &stored, namespace, name, body, part, &options,
        ))
        .await?;
        written.warnings.splice(0..0, warnings);
        return Ok(convert::present(def, written));
    }
    super::redo_lost_races(def, name, || {
        update_attempt(server, def, namespace, name, body.clone(), part, options)
    })
    .await
}

/// One read-check-write round of [`update_object`]; `None` when another write came in between.
async fn update_attempt(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    mut body: Value,
    part: Part,
    options: &WriteOptions,
) -> Result<Option<Written>, ApiError> {
    objects::check_type(def, &mut body)?;
    objects::check_namespace(def, &mut body, namespace)?;
    let warnings = validate_fields(def, &mut body, options)?;
    let body = convert::to_storage(def, body)?;
    let (live, revision) = server
        .read_object(def, namespace, name)
        .await?
        .ok_or_else(|| not_found(def, name))?;
    let precondition = match objects::meta_str(&body, "resourceVersion").filter(|rv| !rv.is_empty())
    {
        Some(rv) => Some(storage::parse_resource_version(rv)?),
        None => None,
    };
    match precondition {
        Some(rv) if rv != revision => {
            return Err(ApiError::conflict(&def.group, &def.plural, name));
        }
        Some(_) => {}
        None if !def.builtin && part == Part::Main => {
            let errors = [FieldError::invalid(
                "metadata.resourceVersion",
                Value::String("0x0".into()),
                "must be specified for an update",
            )];
            return Err(ApiError::invalid(&def.group, &def.kind, name, &errors));
        }
        None => {}
    }
    let mut next = objects::prepare_update(def, &live, body, part)?;
    keep_namespace_spec(def, &live, &mut next);
    try_commit(
        server, def, namespace, name, &live, revision, next, part, options, warnings,
    )
    .await
}

/// PATCH: applies a patch of `kind` to the live object (or creates it, for apply). Like PUT, a patch that loses
/// a race is applied again to a fresh read; one that names a resourceVersion then fails its precondition.
#[allow(clippy::too_many_arguments)]
pub async fn patch_object(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    kind: PatchType,
    body: &[u8],
    part: Part,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    super::redo_lost_races(def, name, || {
        patch_attempt(server, def, namespace, name, kind, body, part, options)
    })
    .await
}

/// One read-patch-write round of [`patch_object`]; `None` when another write came in between.
#[allow(clippy::too_many_arguments)]
async fn patch_attempt(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    kind: PatchType,
    body: &[u8],
    part: Part,
    options: &WriteOptions,
) -> Result<Option<Written>, ApiError> {
    if kind == PatchType::Strategic && !def.builtin {
        return Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    if kind == PatchType::Apply && options.field_manager.is_empty() {
        let errors = [FieldError::required(
            "fieldManager",
            "is required for apply patch",
        )];
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &errors,
        ));
    }
    let now = jiff::Timestamp::now();
    let options = &WriteOptions {
        apply: kind == PatchType::Apply,
        ..options.clone()
    };
    // A converted view is patched as the client sees it, then written as stored.
    let stored_def = convert::stored_def(server, def);
    let store_def = stored_def.as_deref().unwrap_or(def);
    let Some((live, revision)) = server.read_object(store_def, namespace, name).await? else {
        if kind == PatchType::Apply && part == Part::Main {
            let mut object = hooks::apply_patch(
                def,
                &Value::Null,
                kind,
                body,
                &options.field_manager,
                options.force,
                now,
            )?;
            let url_name = name.to_string();
            let body_name = objects::name_of(&object).to_string();
            if !body_name.is_empty() && body_name != url_name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
                )));
            }
            objects::meta_mut(&mut object)?.insert("name".into(), Value::String(url_name));
            return create_object(server, def, namespace, object, options)
                .await
                .map(Some);
        }
        return Err(not_found(def, name));
    };
    let view = match stored_def {
        Some(_) => Cow::Owned(stamped_view(def, &live, revision)),
        None => Cow::Borrowed(&live),
    };
    let mut patched = hooks::apply_patch(
        def,
        &view,
        kind,
        body,
        &options.field_manager,
        options.force,
        now,
    )?;
    if let Some(rv) = objects::meta_str(&patched, "resourceVersion")
        && !rv.is_empty()
        && storage::parse_resource_version(rv)? != revision
    {
        return Err(ApiError::conflict(&def.group, &def.plural, name));
    }
    objects::check_type(def, &mut patched)?;
    if def.namespaced && objects::meta_str(&patched, "namespace") != namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let warnings = validate_fields(def, &mut patched, options)?;
    let patched = convert::to_storage(def, patched)?;
    let mut next = objects::prepare_update(store_def, &live, patched, part)?;
    keep_namespace_spec(store_def, &live, &mut next);
    let written = try_commit(
        server, store_def, namespace, name, &live, revision, next, part, options, warnings,
    )
    .await?;
    Ok(match stored_def {
        Some(_) => written.map(|written| convert::present(def, written)),
        None => written,
    })
}

/// The stored object `live` as the converted view `def` shows it.
fn stamped_view(def: &ResourceDef, live: &Value, revision: u64) -> Value {
    let mut view = live.clone();
    storage::stamp(def, &mut view, revision);
    view
}

/// Writes `next` over `live` (read at `revision`); 409 when another write came in between.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn commit(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    live: &Value,
    revision: u64,
    next: Value,
    part: Part,
    options: &WriteOptions,
    warnings: Vec<String>,
) -> Result<Written, ApiError> {
    try_commit(
        server, def, namespace, name, live, revision, next, part, options, warnings,
    )
    .await?
    .ok_or_else(|| ApiError::conflict(&def.group, &def.plural, name))
}

/// [`commit`], with `None` for a lost race (the object changed after `revision`), for callers that redo it.
#[allow(clippy::too_many_arguments)]
async fn try_commit(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    live: &Value,
    revision: u64,
    mut next: Value,
    part: Part,
    options: &WriteOptions,
    mut warnings: Vec<String>,
) -> Result<Option<Written>, ApiError> {
    if part == Part::Main {
        let requested = objects::finalizers(&next);
        warnings.extend(admit(server, def, &mut next, Some(live))?);
        crate::quota_admission::check(server, def, &next, Some(live)).await?;
        if objects::is_deleting(live) {
            // Admission may not hold a deleting object back with finalizers of its own.
            let kept: Vec<String> = objects::finalizers(&next)
                .into_iter()
                .filter(|f| requested.contains(f))
                .collect();
            objects::set_finalizers(&mut next, &kept)?;
        }
    }
    if is_crd(def) {
        crate::crds::check_update(def, &next)?;
    }
    if part == Part::Main {
        crate::interpreter_customizations::check_conflicts(server, def, &next).await?;
    }
    hooks::shape_builtin(def, &mut next);
    if objects::same_content(live, &next) {
        return Ok(Some(Written {
            code: 200,
            object: live.clone(),
            warnings,
            json: None,
        }));
    }
    let now = jiff::Timestamp::now();
    if is_crd(def)
        && part == Part::Main
        && let Some(map) = next.as_object_mut()
    {
        let status = hooks::crd_status(&Value::Object(map.clone()), now);
        map.insert("status".into(), status);
    }
    if !options.apply && !options.field_manager.is_empty() {
        let writer = apimachinery::Writer {
            manager: &options.field_manager,
            subresource: (part == Part::Status).then_some("status"),
        };
        hooks::record_update(def, Some(live), &mut next, writer, now);
    }
    let key = storage::object_key(def, namespace, name);
    if objects::is_deleting(&next)
        && objects::finalizers(&next).is_empty()
        && !namespace_pending(def, &next)
    {
        // The last finalizer went away: the deletion completes now.
        if options.dry_run {
            return Ok(Some(Written {
                code: 200,
                object: next,
                warnings,
                json: None,
            }));
        }
        let deleted_at = match server.store.delete(&key, Some(revision)).await {
            Ok((rev, _)) => rev,
            Err(StoreError::Conflict { .. }) => return Ok(None),
            Err(StoreError::NotFound(_)) => return Err(not_found(def, name)),
            Err(err) => return Err(storage::store_error(err)),
        };
        storage::stamp(def, &mut next, deleted_at);
        if is_crd(def) {
            crate::crds::on_crd_deleted(server, &next).await;
        }
        return Ok(Some(Written {
            code: 200,
            object: next,
            warnings,
            json: None,
        }));
    }
    if options.dry_run {
        return Ok(Some(Written {
            code: 200,
            object: next,
            warnings,
            json: None,
        }));
    }
    let stored = storage::encode(&next)?;
    let new_revision = match server
        .store
        .update(&key, stored.clone(), Some(revision))
        .await
    {
        Ok(rev) => rev,
        Err(StoreError::Conflict { .. }) => return Ok(None),
        Err(StoreError::NotFound(_)) => return Err(not_found(def, name)),
        Err(err) => return Err(storage::store_error(err)),
    };
    storage::stamp(def, &mut next, new_revision);
    if is_crd(def) {
        crate::crds::on_crd_written(server, &next);
    }
    Ok(Some(Written {
        code: 200,
        object: next,
        warnings,
        json: storage::response_json(def, &stored, new_revision),
    }))
}

/// Namespace finalizers (`spec`) change only through `/finalize`.
fn keep_namespace_spec(def: &ResourceDef, live: &Value, next: &mut Value) {
    if is_namespace(def)
        && let Some(map) = next.as_object_mut()
    {
        match live.get("spec") {
            Some(spec) => map.insert("spec".into(), spec.clone()),
            None => map.remove("spec"),
        };
    }
}

/// A terminating namespace stays until its `spec.finalizers` are empty too.
fn namespace_pending(def: &ResourceDef, object: &Value) -> bool {
    is_namespace(def)
        && object
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
}

/// PUT `/api/v1/namespaces/{name}/finalize`: replaces `spec.finalizers` only.
pub async fn finalize_namespace(
    server: &ApiServer,
    def: &ResourceDef,
    name: &str,
    body: Value,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let (live, revision) = server
        .read_object(def, None, name)
        .await?
        .ok_or_else(|| not_found(def, name))?;
    let mut next = live.clone();
    let finalizers = body
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    if let Some(map) = next.as_object_mut() {
        let spec = map
            .entry("spec")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert("finalizers".into(), finalizers);
        }
    }
    commit(
        server,
        def,
        None,
        name,
        &live,
        revision,
        next,
        Part::Status,
        options,
        Vec::new(),
    )
    .await
}
