//! Create: type and namespace checks, field validation, server-owned metadata, admission, then
//! one compare-and-swap create in the store (nothing is stored under dry-run).

use apimachinery::{ApiError, ResourceDef};
use serde_json::{Value, json};
use store::StoreError;

use super::{
    WriteOptions, Written, admit, convert, require_namespace, token_request, validate_fields,
};
use crate::server::ApiServer;
use crate::storage;
use crate::{hooks, objects};

/// Creates `object` in `namespace` (ignored for cluster-scoped kinds). 201 with the stored object.
pub async fn create_object(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    mut object: Value,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let Some(stored) = convert::stored_def(server, def) else {
        return create_stored(server, def, namespace, object, options).await;
    };
    // Field validation speaks of the fields the client sent, so it runs on the version it sent.
    objects::check_type(def, &mut object)?;
    let warnings = validate_fields(def, &mut object, options)?;
    let object = convert::to_storage(def, object)?;
    let options = WriteOptions {
        duplicate_fields: Vec::new(),
        ..options.clone()
    };
    let mut written = create_stored(server, &stored, namespace, object, &options).await?;
    written.warnings.splice(0..0, warnings);
    Ok(convert::present(def, written))
}

/// [`create_object`] for a definition objects are stored through.
async fn create_stored(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    mut object: Value,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    objects::check_type(def, &mut object)?;
    objects::check_namespace(def, &mut object, namespace)?;
    // Karmada's admission knows misplaced fields (e.g. `failover` under `placement`) and answers
    // with the accepted shape, which beats the generic unknown-field message: it goes first.
    let early_warnings = if def.builtin {
        Vec::new()
    } else {
        admit(server, def, &mut object, None)?
    };
    let mut warnings = validate_fields(def, &mut object, options)?;
    warnings.extend(early_warnings);
    crate::quota_admission::check(server, def, &object, None).await?;
    let mut object = convert::to_storage(def, object)?;
    let now = jiff::Timestamp::now();
    objects::prepare_create(def, &mut object, now, uuid::Uuid::new_v4(), rand::random())?;
    if def.namespaced
        && let Some(ns) = namespace
    {
        require_namespace(server, def, ns, objects::name_of(&object)).await?;
    }
    prepare_kind(def, &mut object, now)?;
    if is_secret(def)
        && let Some(ns) = namespace
    {
        token_request::fill_token_secret(server, ns, &mut object).await?;
    }
    if def.builtin {
        warnings.extend(admit(server, def, &mut object, None)?);
    }
    crate::interpreter_customizations::check_conflicts(server, def, &object).await?;
    if !options.apply {
        hooks::record_update(
            def,
            None,
            &mut object,
            apimachinery::Writer::of(&options.field_manager),
            now,
        );
    }
    hooks::shape_builtin(def, &mut object);
    let name = objects::name_of(&object).to_string();
    if options.dry_run {
        return Ok(Written {
            code: 201,
            object,
            warnings,
            json: None,
        });
    }
    let key = storage::object_key(def, namespace, &name);
    let stored = storage::encode(&object)?;
    let revision = match server.store.create(&key, stored.clone()).await {
        Ok(revision) => revision,
        Err(StoreError::AlreadyExists(_)) => {
            return Err(ApiError::already_exists(&def.group, &def.plural, &name));
        }
        Err(err) => return Err(storage::store_error(err)),
    };
    storage::stamp(def, &mut object, revision);
    if is_crd(def) {
        crate::crds::on_crd_written(server, &object);
    }
    Ok(Written {
        code: 201,
        json: storage::response_json(def, &stored, revision),
        object,
        warnings,
    })
}

fn is_secret(def: &ResourceDef) -> bool {
    def.builtin && def.group.is_empty() && def.plural == "secrets"
}

pub(crate) fn is_crd(def: &ResourceDef) -> bool {
    def.group == "apiextensions.k8s.io" && def.plural == "customresourcedefinitions"
}

pub(crate) fn is_namespace(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "namespaces"
}

/// Kind-specific create rules: namespaces start Active with the `kubernetes` finalizer; CRDs
/// are validated and get their status conditions.
fn prepare_kind(
    def: &ResourceDef,
    object: &mut Value,
    now: jiff::Timestamp,
) -> Result<(), ApiError> {
    if is_namespace(def)
        && let Some(map) = object.as_object_mut()
    {
        map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
        map.insert("status".into(), json!({"phase": "Active"}));
    }
    if is_crd(def) {
        crate::crds::prepare(def, object, now)?;
    }
    Ok(())
}
