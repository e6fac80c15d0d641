//! Validation of an `apiextensions.k8s.io/v1` CustomResourceDefinition: names, group, scope,
//! versions (unique, exactly one storage version, a structural-root schema for each served one),
//! subresources and printer columns. Messages follow kube-apiserver's.

use serde_json::Value;

use apimachinery::FieldError;
use apimachinery::names::{dns1123_label_problems, dns1123_subdomain_problems};

const SCOPES: [&str; 2] = ["Cluster", "Namespaced"];
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];
const DNS1035_LABEL_MAX_LEN: usize = 63;

/// Every problem of `crd`; empty when the server can serve it.
pub fn validate_crd(crd: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(spec) = crd.get("spec").filter(|s| s.is_object()) else {
        errors.push(FieldError::required("spec", ""));
        return errors;
    };
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    validate_group(group, &mut errors);
    let plural = validate_names(spec.get("names").unwrap_or(&Value::Null), &mut errors);
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errors.push(FieldError::invalid(
            "metadata.name",
            Value::String(name.to_string()),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    match spec.get("scope").and_then(Value::as_str) {
        None | Some("") => errors.push(FieldError::required("spec.scope", "")),
        Some(scope) if SCOPES.contains(&scope) => {}
        Some(scope) => errors.push(FieldError::not_supported(
            "spec.scope",
            Value::String(scope.to_string()),
            &SCOPES,
        )),
    }
    validate_versions(spec, &mut errors);
    errors
}

fn validate_group(group: &str, errors: &mut Vec<FieldError>) {
    if group.is_empty() {
        errors.push(FieldError::required("spec.group", ""));
        return;
    }
    for problem in dns1123_subdomain_problems(group) {
        errors.push(FieldError::invalid(
            "spec.group",
            Value::String(group.to_string()),
            problem,
        ));
    }
    if !group.contains('.') {
        errors.push(FieldError::invalid(
            "spec.group",
            Value::String(group.to_string()),
            "should be a domain with at least one dot",
        ));
    }
}

/// Validates `spec.names` and returns the plural (empty when missing).
fn validate_names(names: &Value, errors: &mut Vec<FieldError>) -> String {
    let text = |key: &str| names.get(key).and_then(Value::as_str).unwrap_or_default();
    let plural = text("plural");
    if plural.is_empty() {
        errors.push(FieldError::required("spec.names.plural", ""));
    } else {
        label("spec.names.plural", plural, errors);
    }
    if !text("singular").is_empty() {
        label("spec.names.singular", text("singular"), errors);
    }
    let kind = text("kind");
    if kind.is_empty() {
        errors.push(FieldError::required("spec.names.kind", ""));
    } else {
        kind_name("spec.names.kind", kind, errors);
    }
    if !text("listKind").is_empty() {
        kind_name("spec.names.listKind", text("listKind"), errors);
    }
    for list in ["shortNames", "categories"] {
        let items = names
            .get(list)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (index, item) in items.iter().enumerate() {
            label(
                &format!("spec.names.{list}[{index}]"),
                item.as_str().unwrap_or_default(),
                errors,
            );
        }
    }
    plural.to_string()
}

fn label(field: &str, value: &str, errors: &mut Vec<FieldError>) {
    for problem in dns1123_label_problems(value) {
        errors.push(FieldError::invalid(
            field,
            Value::String(value.to_string()),
            problem,
        ));
    }
}

/// Kinds may be mixed case but must otherwise be DNS-1035 labels.
fn kind_name(field: &str, kind: &str, errors: &mut Vec<FieldError>) {
    if !is_dns1035_label(&kind.to_lowercase()) {
        errors.push(FieldError::invalid(
            field,
            Value::String(kind.to_string()),
            "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
        ));
    }
}

fn is_dns1035_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    let inner_ok = bytes
        .iter()
        .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            value.len() <= DNS1035_LABEL_MAX_LEN
                && first.is_ascii_lowercase()
                && (last.is_ascii_lowercase() || last.is_ascii_digit())
                && inner_ok
        }
        _ => false,
    }
}

fn validate_versions(spec: &Value, errors: &mut Vec<FieldError>) {
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if versions.is_empty() {
        errors.push(FieldError::required(
            "spec.versions",
            "must have at least one version",
        ));
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut storage: Vec<Value> = Vec::new();
    let mut served = 0;
    for (index, version) in versions.iter().enumerate() {
        let path = format!("spec.versions[{index}]");
        let name = version
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name.is_empty() {
            errors.push(FieldError::required(format!("{path}.name"), ""));
        } else if seen.contains(&name) {
            errors.push(FieldError::duplicate(
                format!("{path}.name"),
                Value::String(name.to_string()),
            ));
        } else {
            if !is_dns1035_label(name) {
                errors.push(FieldError::invalid(
                    format!("{path}.name"),
                    Value::String(name.to_string()),
                    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                ));
            }
            seen.push(name);
        }
        if version.get("storage").and_then(Value::as_bool) == Some(true) {
            storage.push(Value::String(name.to_string()));
        }
        if version.get("served").and_then(Value::as_bool) == Some(true) {
            served += 1;
            validate_schema(version, &path, errors);
        }
        validate_subresources(version, &path, errors);
        validate_printer_columns(version, &path, errors);
    }
    if storage.len() != 1 {
        errors.push(FieldError::invalid(
            "spec.versions",
            Value::Array(storage),
            "must have exactly one version marked as storage version",
        ));
    }
    if served == 0 {
        errors.push(FieldError::invalid(
            "spec.versions",
            Value::Array(
                seen.iter()
                    .map(|n| Value::String((*n).to_string()))
                    .collect(),
            ),
            "must have at least one served version",
        ));
    }
}

/// A served version needs a schema whose root is an object (a structural schema's root).
fn validate_schema(version: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let field = format!("{path}.schema.openAPIV3Schema");
    let Some(schema) = version
        .pointer("/schema/openAPIV3Schema")
        .filter(|s| !s.is_null())
    else {
        errors.push(FieldError::required(field, "schemas are required"));
        return;
    };
    if !schema.is_object() {
        errors.push(FieldError::invalid(
            field,
            schema.clone(),
            "must be an object",
        ));
        return;
    }
    match schema.get("type").and_then(Value::as_str) {
        None | Some("") => errors.push(FieldError::required(
            format!("{field}.type"),
            "must not be empty at the root",
        )),
        Some("object") => {}
        Some(other) => {
            errors.push(FieldError::invalid(
                format!("{field}.type"),
                Value::String(other.to_string()),
                "must be object at the root",
            ));
        }
    }
}

fn validate_subresources(version: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(scale) = version
        .pointer("/subresources/scale")
        .filter(|s| !s.is_null())
    else {
        return;
    };
    let path = format!("{path}.subresources.scale");
    let text = |key: &str| scale.get(key).and_then(Value::as_str).unwrap_or_default();
    let json_path_under =
        |key: &str, roots: &[&str], message: &str, errors: &mut Vec<FieldError>| {
            let value = text(key);
            if value.is_empty() {
                errors.push(FieldError::required(format!("{path}.{key}"), ""));
            } else if !roots.iter().any(|root| {
                value
                    .strip_prefix(root)
                    .is_some_and(|rest| rest.starts_with('.') && rest.len() > 1)
            }) {
                errors.push(FieldError::invalid(
                    format!("{path}.{key}"),
                    Value::String(value.to_string()),
                    message,
                ));
            }
        };
    json_path_under(
        "specReplicasPath",
        &[".spec"],
        "should be a json path under .spec",
        errors,
    );
    json_path_under(
        "statusReplicasPath",
        &[".status"],
        "should be a json path under .status",
        errors,
    );
    if !text("labelSelectorPath").is_empty() {
        json_path_under(
            "labelSelectorPath",
            &[".spec", ".status"],
            "should be a json path under either .spec or .status",
            errors,
        );
    }
}

fn validate_printer_columns(version: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let columns = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (index, column) in columns.iter().enumerate() {
        let path = format!("{path}.additionalPrinterColumns[{index}]");
        let text = |key: &str| column.get(key).and_then(Value::as_str).unwrap_or_default();
        if text("name").is_empty() {
            errors.push(FieldError::required(format!("{path}.name"), ""));
        }
        match text("type") {
            "" => errors.push(FieldError::required(format!("{path}.type"), "")),
            t if COLUMN_TYPES.contains(&t) => {}
            t => errors.push(FieldError::not_supported(
                format!("{path}.type"),
                Value::String(t.to_string()),
                &COLUMN_TYPES,
            )),
        }
        let format = text("format");
        if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
            errors.push(FieldError::not_supported(
                format!("{path}.format"),
                Value::String(format.to_string()),
                &COLUMN_FORMATS,
            ));
        }
        if let Some(priority) = column.get("priority").and_then(Value::as_i64)
            && priority < 0
        {
            errors.push(FieldError::invalid(
                format!("{path}.priority"),
                Value::from(priority),
                "must be greater than or equal to 0",
            ));
        }
        if text("jsonPath").is_empty() {
            errors.push(FieldError::required(format!("{path}.jsonPath"), ""));
        }
    }
}
