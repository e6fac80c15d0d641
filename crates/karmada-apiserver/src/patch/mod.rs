//! PATCH request bodies: picks the patch algorithm from the Content-Type, decodes the body and
//! applies it to the live object, answering errors as kube-apiserver does. Also keeps
//! `metadata.managedFields` up to date for ordinary writes.
//!
//! The algorithms themselves live in `apimachinery::patch` (pure JSON functions); this module
//! only adds the HTTP-facing rules:
//! * JSON patch (RFC 6902): a body that is not a list of operations → 400; an operation that
//!   cannot be applied (failed `test`, missing path) → 422 `Invalid`, like kube-apiserver's
//!   "the server rejected our request due to an error in our request".
//! * Merge patch (RFC 7386): the body must be a JSON object (400 otherwise).
//! * Strategic merge patch: built-in kinds only; custom resources get 415 with kube-apiserver's
//!   message, which kubectl shows verbatim.
//! * Apply (server-side apply): see [`apply`].
//!
//! Not done here (the caller owns them, because they need the request): `metadata.resourceVersion`
//! preconditions inside a patch, name/namespace/uid immutability, generation bumps, defaulting
//! and validation of the result.

// `ApiError` is the crate-wide error type and the agreed return type of `apply_patch`; boxing
// it here alone would only add conversions at every call site.
#![allow(clippy::result_large_err)]

mod apply;
mod managed;

use jiff::Timestamp;
use serde_json::Value;

use apimachinery::{
    ApiError, BuiltinPatchMeta, NoPatchMeta, PatchMeta, ResourceDef, SchemaPatchMeta, json_patch,
    merge_patch, strategic_merge,
};

pub use apply::{FieldManagerConflict, apply_conflict_error};
pub use managed::{record_update_for, record_update_managed_fields};

/// kube-apiserver's answer to a strategic merge patch on a custom resource.
pub const STRATEGIC_MERGE_UNSUPPORTED: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// The manager recorded when a write names none and sends no usable User-Agent.
pub const UNKNOWN_FIELD_MANAGER: &str = "unknown";

/// Longest field manager kube-apiserver derives from a User-Agent.
const MAX_FIELD_MANAGER_LEN: usize = 128;

/// The four PATCH body types Kubernetes accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// The patch type of a request's Content-Type; parameters after `;` and letter case are
    /// ignored. `None` for anything else (the caller answers 415).
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        let media_type = ct
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match media_type.as_str() {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" => Some(Self::Apply),
            _ => None,
        }
    }

    /// The Content-Type this patch type is sent with.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => "application/json-patch+json",
            Self::Merge => "application/merge-patch+json",
            Self::Strategic => "application/strategic-merge-patch+json",
            Self::Apply => "application/apply-patch+yaml",
        }
    }
}

/// Applies a PATCH `body` of `patch_type` to `live` (an object of `def`), returning the new
/// object. `live` is `Null` when the object does not exist; only `Apply` then creates it from
/// the applied configuration (other types patch an empty object — the caller normally answers
/// 404 before getting here). `manager` and `force` matter to `Apply` only; other writes record
/// their manager with [`record_update_managed_fields`].
pub fn apply_patch(
    def: &ResourceDef,
    live: &Value,
    patch_type: PatchType,
    body: &[u8],
    manager: &str,
    force: bool,
    now: Timestamp,
) -> Result<Value, ApiError> {
    match patch_type {
        PatchType::Json => {
            let operations = decode_json(body)?;
            Ok(json_patch(live, &operations)?)
        }
        PatchType::Merge => {
            let patch = decode_json(body)?;
            if !patch.is_object() {
                return Err(ApiError::bad_request(format!(
                    "a merge patch must be a JSON object such as {{\"spec\":{{\"replicas\":3}}}}, got {}",
                    kind_of(&patch)
                )));
            }
            Ok(merge_patch(live, &patch))
        }
        PatchType::Strategic => {
            if !def.builtin {
                return Err(ApiError::unsupported_media_type(
                    STRATEGIC_MERGE_UNSUPPORTED,
                ));
            }
            let patch = decode_json(body)?;
            Ok(strategic_merge(
                live,
                &patch,
                &BuiltinPatchMeta::for_kind(&def.kind),
            )?)
        }
        PatchType::Apply => apply::server_side_apply(def, live, body, manager, force, now),
    }
}

/// The field manager of a write that names none: the User-Agent's first `/` segment, printable
/// characters only, at most 128 of them (`kubectl/v1.32.4 (linux/amd64) …` → `kubectl`).
pub fn default_field_manager(user_agent: Option<&str>) -> String {
    let product = user_agent
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default();
    let manager: String = product
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_FIELD_MANAGER_LEN)
        .collect::<String>()
        .trim()
        .to_string();
    if manager.is_empty() {
        UNKNOWN_FIELD_MANAGER.to_string()
    } else {
        manager
    }
}

/// How lists of `def`'s objects merge and are owned: built-in merge keys for built-in kinds,
/// the schema's list extensions for custom resources, atomic lists when neither is known.
fn patch_meta(def: &ResourceDef) -> Box<dyn PatchMeta + '_> {
    match (&def.schema, def.builtin) {
        (_, true) => Box::new(BuiltinPatchMeta::for_kind(&def.kind)),
        (Some(schema), false) => Box::new(SchemaPatchMeta::new(schema, None)),
        (None, false) => Box::new(NoPatchMeta),
    }
}

fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the patch body is not valid JSON: {e}")))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
