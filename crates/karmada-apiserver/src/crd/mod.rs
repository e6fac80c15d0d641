//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): validation, the [`ResourceDef`]s a CRD
//! makes the server serve, and the status kube-apiserver writes back (`acceptedNames`,
//! `NamesAccepted`/`Established`, `storedVersions`).
//!
//! Invariant: [`resource_defs_from_crd`] returns definitions only for a CRD that passed every
//! check, so the server never serves a half-valid custom resource. Name conflicts with other
//! resources are the caller's concern (it knows what is already served).

mod validation;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use apimachinery::time::format_timestamp;
use apimachinery::{FieldError, Printer, PrinterColumn, ResourceDef, ScaleSubresource};

pub use validation::validate_crd;

/// One [`ResourceDef`] per served version of a valid CRD, or every validation problem.
pub fn resource_defs_from_crd(crd: &Value) -> Result<Vec<ResourceDef>, Vec<FieldError>> {
    let errors = validate_crd(crd);
    if !errors.is_empty() {
        return Err(errors);
    }
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let names = Names::of(&spec);
    let group = text(&spec, "group");
    let namespaced = spec.get("scope").and_then(Value::as_str) == Some("Namespaced");
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let defs = versions
        .iter()
        .filter(|version| {
            version
                .get("served")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        })
        .map(|version| ResourceDef {
            group: group.clone(),
            version: text(version, "name"),
            kind: names.kind.clone(),
            plural: names.plural.clone(),
            singular: names.singular.clone(),
            namespaced,
            short_names: names.short_names.clone(),
            categories: names.categories.clone(),
            status_subresource: version
                .pointer("/subresources/status")
                .is_some_and(|s| !s.is_null()),
            scale_subresource: scale_subresource(version),
            builtin: false,
            tracks_generation: true,
            printer: Printer::Columns(printer_columns(version)),
            schema: version
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .map(std::sync::Arc::new),
            storage_version: version
                .get("storage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
        .collect();
    Ok(defs)
}

/// The status kube-apiserver gives an accepted CRD: the names it accepted, both conditions
/// `True`, and the storage version added to `storedVersions` (earlier ones are kept, since
/// objects may still be stored at them). Conditions already `True` keep their transition time.
pub fn crd_status(crd: &Value, now: Timestamp) -> Value {
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let names = Names::of(&spec);
    let old_status = crd.get("status").cloned().unwrap_or(Value::Null);
    let mut accepted = Map::new();
    accepted.insert("plural".into(), json!(names.plural));
    accepted.insert("singular".into(), json!(names.singular));
    if !names.short_names.is_empty() {
        accepted.insert("shortNames".into(), json!(names.short_names));
    }
    accepted.insert("kind".into(), json!(names.kind));
    accepted.insert("listKind".into(), json!(names.list_kind));
    if !names.categories.is_empty() {
        accepted.insert("categories".into(), json!(names.categories));
    }
    let mut stored = crate::objects::string_list(old_status.get("storedVersions"));
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for version in versions {
        let name = text(version, "name");
        if version.get("storage").and_then(Value::as_bool) == Some(true) && !stored.contains(&name)
        {
            stored.push(name);
        }
    }
    let now = format_timestamp(now);
    let condition = |kind: &str, reason: &str, message: &str| {
        let previous = old_status
            .get("conditions")
            .and_then(Value::as_array)
            .and_then(|list| {
                list.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
            })
            .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
            .and_then(|c| c.get("lastTransitionTime").cloned());
        json!({
            "type": kind,
            "status": "True",
            "lastTransitionTime": previous.unwrap_or_else(|| json!(now)),
            "reason": reason,
            "message": message,
        })
    };
    json!({
        "acceptedNames": accepted,
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": stored,
    })
}

/// `spec.names` with kube-apiserver's defaults applied (singular = lower-case kind,
/// listKind = kind + `List`).
struct Names {
    plural: String,
    singular: String,
    kind: String,
    list_kind: String,
    short_names: Vec<String>,
    categories: Vec<String>,
}

impl Names {
    fn of(spec: &Value) -> Self {
        let names = spec.get("names").cloned().unwrap_or(Value::Null);
        let kind = text(&names, "kind");
        let singular = Some(text(&names, "singular"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| kind.to_lowercase());
        let list_kind = Some(text(&names, "listKind"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("{kind}List"));
        Self {
            plural: text(&names, "plural"),
            singular,
            kind,
            list_kind,
            short_names: strings(&names, "shortNames"),
            categories: strings(&names, "categories"),
        }
    }
}

fn scale_subresource(version: &Value) -> Option<ScaleSubresource> {
    let scale = version
        .pointer("/subresources/scale")
        .filter(|s| s.is_object())?;
    Some(ScaleSubresource {
        spec_replicas_path: text(scale, "specReplicasPath"),
        status_replicas_path: text(scale, "statusReplicasPath"),
        label_selector_path: Some(text(scale, "labelSelectorPath")).filter(|p| !p.is_empty()),
    })
}

fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    let columns = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    columns
        .iter()
        .map(|column| PrinterColumn {
            name: text(column, "name"),
            type_: text(column, "type"),
            format: text(column, "format"),
            description: text(column, "description"),
            priority: column
                .get("priority")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            json_path: text(column, "jsonPath"),
        })
        .collect()
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(value: &Value, key: &str) -> Vec<String> {
    crate::objects::string_list(value.get(key))
}

#[cfg(test)]
mod tests;
