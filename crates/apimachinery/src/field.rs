//! Field-level validation errors, as Kubernetes reports them in a Status's `details.causes`.

use serde_json::Value;

/// Why a field is wrong. The names are Kubernetes' `field.ErrorType` reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    NotSupported,
    Forbidden,
    Duplicate,
    TooLong,
    TooMany,
}

impl FieldErrorKind {
    /// The `reason` string of a Status cause.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::Duplicate => "FieldValueDuplicate",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
        }
    }
}

/// One invalid field: `spec.replicas: Invalid value: -1: must be greater than or equal to 0`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    /// Dotted path with indexes, e.g. `spec.placement.spreadConstraints[0].minGroups`.
    pub field: String,
    /// The offending value, when there is one to show.
    pub value: Option<Value>,
    /// What is wrong and what is accepted.
    pub detail: String,
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Required,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value: Some(value),
            detail: detail.into(),
        }
    }

    /// `allowed` is the accepted set, shown in the message as Kubernetes does.
    pub fn not_supported(field: impl Into<String>, value: Value, allowed: &[&str]) -> Self {
        let list = allowed
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            kind: FieldErrorKind::NotSupported,
            field: field.into(),
            value: Some(value),
            detail: format!("supported values: {list}"),
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Forbidden,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    pub fn duplicate(field: impl Into<String>, value: Value) -> Self {
        Self {
            kind: FieldErrorKind::Duplicate,
            field: field.into(),
            value: Some(value),
            detail: String::new(),
        }
    }

    pub fn too_long(field: impl Into<String>, value: Value, max: usize) -> Self {
        Self {
            kind: FieldErrorKind::TooLong,
            field: field.into(),
            value: Some(value),
            detail: format!("must have at most {max} bytes"),
        }
    }

    /// A list longer than `max`, reported as Kubernetes' `field.TooMany` does.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        Self {
            kind: FieldErrorKind::TooMany,
            field: field.into(),
            value: Some(Value::from(actual)),
            detail: format!("must have at most {max} items"),
        }
    }

    /// The cause message without the field, e.g. `Invalid value: -1: must be ...`.
    pub fn message(&self) -> String {
        let shown = self.value.as_ref().map(show_value);
        let head = match self.kind {
            FieldErrorKind::Required => "Required value".to_string(),
            FieldErrorKind::Invalid => format!("Invalid value: {}", shown.unwrap_or_default()),
            FieldErrorKind::NotSupported => {
                format!("Unsupported value: {}", shown.unwrap_or_default())
            }
            FieldErrorKind::Forbidden => "Forbidden".to_string(),
            FieldErrorKind::Duplicate => format!("Duplicate value: {}", shown.unwrap_or_default()),
            FieldErrorKind::TooLong => "Too long".to_string(),
            FieldErrorKind::TooMany => match shown {
                Some(actual) => format!("Too many: {actual}"),
                None => "Too many".to_string(),
            },
        };
        if self.detail.is_empty() {
            head
        } else {
            format!("{head}: {}", self.detail)
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

fn show_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}
