//! Server-side apply (`application/apply-patch+yaml`): decoding and checking the applied
//! configuration, then `apimachinery::apply` (field ownership, conflicts, removal of fields the
//! manager stopped applying, merge), and the 409 a field-manager conflict produces, worded as
//! kube-apiserver words it.
//!
//! List semantics come from the kind: built-in merge keys for built-in kinds, the schema's
//! `x-kubernetes-list-type`/`x-kubernetes-list-map-keys` for custom resources, atomic lists when
//! neither is known.

use jiff::Timestamp;
use serde_json::Value;

use apimachinery::{
    ApiError, ApplyError, Conflict, FieldError, ResourceDef, StatusCause, StatusDetails, apply,
};

/// One field another manager owns that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldManagerConflict {
    /// The other manager's name, e.g. `kubectl-client-side-apply`.
    pub manager: String,
    /// Its operation, `Apply` or `Update`.
    pub operation: String,
    /// The apiVersion of its entry (shown for `Update` managers).
    pub api_version: String,
    /// `status`, `scale`… when the manager wrote through a subresource.
    pub subresource: Option<String>,
    /// The field in structured-merge-diff notation, e.g. `.spec.replicas` or
    /// `.spec.template.spec.containers[name="web"].image`.
    pub path: String,
}

impl FieldManagerConflict {
    /// `"kubectl-client-side-apply" using apps/v1`, as kube-apiserver names managers.
    fn manager_label(&self) -> String {
        let mut label = format!("\"{}\"", self.manager);
        if let Some(subresource) = &self.subresource {
            label.push_str(&format!(" with subresource \"{subresource}\""));
        }
        if self.operation == "Update" {
            label.push_str(&format!(" using {}", self.api_version));
        }
        label
    }
}

/// The 409 for apply conflicts: `Apply failed with 1 conflict: conflict with "m" using apps/v1:
/// .spec.replicas`, or one `conflicts with "m":` block per manager (sorted) listing `- path`
/// lines; one `FieldManagerConflict` cause per field.
pub fn apply_conflict_error(conflicts: &[FieldManagerConflict]) -> ApiError {
    let causes = conflicts
        .iter()
        .map(|c| {
            StatusCause::new(
                "FieldManagerConflict",
                format!("conflict with {}", c.manager_label()),
                &c.path,
            )
        })
        .collect();
    let message = match conflicts {
        [one] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager_label(),
            one.path
        ),
        many => {
            let mut labels: Vec<String> = many
                .iter()
                .map(FieldManagerConflict::manager_label)
                .collect();
            labels.sort();
            labels.dedup();
            let blocks: Vec<String> = labels
                .iter()
                .map(|label| {
                    let paths: Vec<String> = many
                        .iter()
                        .filter(|c| &c.manager_label() == label)
                        .map(|c| format!("- {}", c.path))
                        .collect();
                    format!("conflicts with {label}:\n{}", paths.join("\n"))
                })
                .collect();
            format!(
                "Apply failed with {} conflicts: {}",
                many.len(),
                blocks.join("\n")
            )
        }
    };
    ApiError::conflict_with(message, StatusDetails::with_causes(causes))
}

/// Applies the configuration in `body` for `manager`; `live` is `Null` when creating.
pub(super) fn server_side_apply(
    def: &ResourceDef,
    live: &Value,
    body: &[u8],
    manager: &str,
    force: bool,
    now: Timestamp,
) -> Result<Value, ApiError> {
    if manager.is_empty() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &[FieldError::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    let applied = decode_applied(def, body)?;
    let live = (!live.is_null()).then_some(live);
    let meta = super::patch_meta(def);
    match apply(live, &applied, manager, force, meta.as_ref(), now) {
        Ok(outcome) => Ok(outcome.object),
        Err(ApplyError::Conflicts(conflicts)) => {
            let described: Vec<FieldManagerConflict> = conflicts
                .iter()
                .map(|c| describe_conflict(c, live, manager))
                .collect();
            Err(apply_conflict_error(&described))
        }
        Err(other) => Err(other.to_api_error()),
    }
}

/// Adds what the conflict message needs from the other manager's entry: whether it applied or
/// updated, and through which subresource.
fn describe_conflict(
    conflict: &Conflict,
    live: Option<&Value>,
    applier: &str,
) -> FieldManagerConflict {
    let entry = live
        .and_then(|l| l.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .and_then(|entries| {
            entries.iter().find(|e| {
                e.get("manager").and_then(Value::as_str) == Some(conflict.manager.as_str())
                    && e.get("manager").and_then(Value::as_str) != Some(applier)
                    && e.get("apiVersion").and_then(Value::as_str)
                        == Some(conflict.api_version.as_str())
            })
        });
    let text = |key: &str| {
        entry
            .and_then(|e| e.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    FieldManagerConflict {
        manager: conflict.manager.clone(),
        operation: text("operation").unwrap_or_else(|| "Update".to_string()),
        api_version: conflict.api_version.clone(),
        subresource: text("subresource"),
        path: conflict.field.clone(),
    }
}

/// The applied configuration: JSON (what kubectl, kube-rs and Python send) or YAML, one object
/// of this resource's apiVersion and kind, without `managedFields`.
fn decode_applied(def: &ResourceDef, body: &[u8]) -> Result<Value, ApiError> {
    let applied: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(_) => serde_saphyr::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the apply configuration is neither valid JSON nor valid YAML: {e}"
            ))
        })?,
    };
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "the apply configuration must be a single object with apiVersion, kind and metadata.name",
        ));
    }
    let expected_version = def.api_version();
    match applied.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            return Err(ApiError::bad_request(format!(
                "the apply configuration has no apiVersion; expected {expected_version}"
            )));
        }
        Some(version) if version != expected_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({version}) does not match the expected API version ({expected_version})"
            )));
        }
        Some(_) => {}
    }
    match applied.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            return Err(ApiError::bad_request(format!(
                "the apply configuration has no kind; expected {}",
                def.kind
            )));
        }
        Some(kind) if kind != def.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                def.kind
            )));
        }
        Some(_) => {}
    }
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(applied)
}
