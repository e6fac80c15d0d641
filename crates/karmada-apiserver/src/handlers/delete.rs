//! Delete and deletecollection: preconditions, propagation policy (Background, Foreground,
//! Orphan — the latter two become finalizers the garbage collector works off), finalizers and
//! `deletionTimestamp`, namespace termination, dry-run.

use apimachinery::{ApiError, ResourceDef, StatusDetails};
use serde_json::{Value, json};
use store::StoreError;

use super::create::{is_crd, is_namespace};
use super::read::{ListParams, list_objects};
use super::{Written, convert, not_found, parse_dry_run};
use crate::objects;
use crate::server::ApiServer;
use crate::storage;

pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
pub const ORPHAN_FINALIZER: &str = "orphan";

/// Namespaces kube-apiserver refuses to delete.
const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// DeleteOptions, from the body (kubectl, kube-rs) or the query (Python).
#[derive(Clone, Debug)]
pub struct DeleteOptions {
    pub propagation: Propagation,
    pub dry_run: bool,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
}

impl Default for DeleteOptions {
    fn default() -> Self {
        Self {
            propagation: Propagation::Background,
            dry_run: false,
            precondition_uid: None,
            precondition_resource_version: None,
        }
    }
}

impl DeleteOptions {
    /// Reads DeleteOptions from a JSON body (may be empty) and query parameters.
    pub fn parse(body: &Value, query: impl Fn(&str) -> Option<String>) -> Result<Self, ApiError> {
        let mut options = Self::default();
        let policy = body
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| query("propagationPolicy"));
        if let Some(orphan) = body
            .get("orphanDependents")
            .and_then(Value::as_bool)
            .or_else(|| query("orphanDependents").map(|v| v == "true"))
        {
            options.propagation = if orphan {
                Propagation::Orphan
            } else {
                Propagation::Background
            };
        }
        if let Some(policy) = policy {
            options.propagation = match policy.as_str() {
                "Background" => Propagation::Background,
                "Foreground" => Propagation::Foreground,
                "Orphan" => Propagation::Orphan,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Background\", \"Foreground\", \"Orphan\""
                    )));
                }
            };
        }
        let body_dry_run: Vec<&str> = body
            .get("dryRun")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let query_dry_run = query("dryRun");
        options.dry_run = parse_dry_run(body_dry_run.into_iter().chain(query_dry_run.as_deref()))?;
        options.precondition_uid = body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        options.precondition_resource_version = body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(options)
    }
}

/// Deletes one object: immediately when nothing holds it, else marks it deleting. A concurrent write (a
/// controller updating status, say) makes the server read again and redo the delete, as kube-apiserver does:
/// a DELETE answers 409 only when its own preconditions fail.
pub async fn delete_object(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
) -> Result<Written, ApiError> {
    // A converted view is deleted through the version it is stored at: a delete that marks the
    // object (finalizers) writes it back.
    if let Some(stored) = convert::stored_def(server, def) {
        let written = super::redo_lost_races(def, name, || {
            delete_attempt(server, &stored, namespace, name, options)
        })
        .await?;
        return Ok(convert::present(def, written));
    }
    super::redo_lost_races(def, name, || {
        delete_attempt(server, def, namespace, name, options)
    })
    .await
}

/// One read-check-write round of [`delete_object`]; `None` when another write came in between.
async fn delete_attempt(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
) -> Result<Option<Written>, ApiError> {
    if is_namespace(def) && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(format!(
            "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
        )));
    }
    let (live, revision) = server
        .read_object(def, namespace, name)
        .await?
        .ok_or_else(|| not_found(def, name))?;
    if let Some(uid) = &options.precondition_uid
        && uid != objects::uid_of(&live)
    {
        return Err(ApiError::conflict_with(
            format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                objects::uid_of(&live)
            ),
            StatusDetails::named(&def.group, &def.plural, name),
        ));
    }
    if let Some(rv) = &options.precondition_resource_version
        && storage::parse_resource_version(rv)? != revision
    {
        return Err(ApiError::conflict_with(
            format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {revision}"
            ),
            StatusDetails::named(&def.group, &def.plural, name),
        ));
    }
    if objects::is_deleting(&live) {
        return Ok(Some(Written {
            code: 200,
            object: live,
            warnings: Vec::new(),
            json: None,
        }));
    }
    let mut finalizers = objects::finalizers(&live);
    let extra = match options.propagation {
        Propagation::Foreground => Some(FOREGROUND_FINALIZER),
        Propagation::Orphan => Some(ORPHAN_FINALIZER),
        Propagation::Background => None,
    };
    if let Some(extra) = extra
        && !finalizers.iter().any(|f| f == extra)
    {
        finalizers.push(extra.to_string());
    }
    let key = storage::object_key(def, namespace, name);
    if !finalizers.is_empty() || is_namespace(def) {
        let mut marked = live.clone();
        objects::set_finalizers(&mut marked, &finalizers)?;
        let meta = objects::meta_mut(&mut marked)?;
        meta.insert(
            "deletionTimestamp".into(),
            Value::String(objects::timestamp(jiff::Timestamp::now())),
        );
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        if is_namespace(def)
            && let Some(map) = marked.as_object_mut()
        {
            map.insert("status".into(), json!({"phase": "Terminating"}));
        }
        if options.dry_run {
            return Ok(Some(Written {
                code: 200,
                object: marked,
                warnings: Vec::new(),
                json: None,
            }));
        }
        let new_revision = match server
            .store
            .update(&key, storage::encode(&marked)?, Some(revision))
            .await
        {
            Ok(rev) => rev,
            Err(StoreError::Conflict { .. }) => return Ok(None),
            Err(StoreError::NotFound(_)) => return Err(not_found(def, name)),
            Err(err) => return Err(storage::store_error(err)),
        };
        storage::stamp(def, &mut marked, new_revision);
        return Ok(Some(Written {
            code: 200,
            object: marked,
            warnings: Vec::new(),
            json: None,
        }));
    }
    if options.dry_run {
        return Ok(Some(Written {
            code: 200,
            object: live,
            warnings: Vec::new(),
            json: None,
        }));
    }
    let mut deleted = live;
    match server.store.delete(&key, Some(revision)).await {
        Ok((rev, _)) => storage::stamp(def, &mut deleted, rev),
        Err(StoreError::Conflict { .. }) => return Ok(None),
        Err(StoreError::NotFound(_)) => return Err(not_found(def, name)),
        Err(err) => return Err(storage::store_error(err)),
    }
    if is_crd(def) {
        crate::crds::on_crd_deleted(server, &deleted).await;
    }
    Ok(Some(Written {
        code: 200,
        object: deleted,
        warnings: Vec::new(),
        json: None,
    }))
}

/// Deletes every object of the collection matching `params`' selectors; returns the list of
/// what was deleted (or marked deleting).
pub async fn delete_collection(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    params: &ListParams,
    options: &DeleteOptions,
) -> Result<Value, ApiError> {
    let list = list_objects(
        server,
        def,
        namespace,
        &ListParams {
            limit: 0,
            continue_token: None,
            ..params.clone()
        },
    )
    .await?;
    let mut deleted = Vec::new();
    for item in list
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        let item_ns = objects::meta_str(&item, "namespace").map(str::to_string);
        match delete_object(
            server,
            def,
            item_ns.as_deref().or(namespace),
            objects::name_of(&item),
            options,
        )
        .await
        {
            Ok(written) => deleted.push(written.object),
            Err(err) if err.code == 404 => {}
            Err(err) => return Err(err),
        }
    }
    let mut result = list;
    result["items"] = Value::Array(deleted);
    Ok(result)
}
