//! API errors and the `Status` body kube-apiserver sends for them. Every error a client sees
//! becomes a [`Status`] here, in one place.
//!
//! The body is a typed struct rather than a JSON literal so its field order and omissions are
//! those of Go's `metav1.Status` (declaration order; `omitempty` fields left out when empty):
//! clients that log or compare error bodies see kube-apiserver's exact bytes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::field::FieldError;

/// An error answered to an API client, with the HTTP code and Kubernetes reason.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `BadRequest`, `Forbidden`, ...
    pub reason: String,
    pub message: String,
    /// The Status `details` object (`name`, `group`, `kind`, `causes`), when there is one.
    pub details: Option<StatusDetails>,
    /// For 429/503 answers: the `Retry-After` header.
    pub retry_after_seconds: Option<u32>,
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
            retry_after_seconds: None,
        }
    }

    fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// `deployments.apps "web" not found`. `group_resource` is `deployments.apps` or `configmaps`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(resource, group)),
        )
        .with_details(StatusDetails::named(group, resource, name))
    }

    /// The path or type is unknown.
    pub fn not_found_path() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(resource, group)),
        )
        .with_details(StatusDetails::named(group, resource, name))
    }

    /// A resourceVersion precondition failed.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(resource, group)
            ),
        )
        .with_details(StatusDetails::named(group, resource, name))
    }

    /// A conflict with a custom explanation (e.g. server-side apply field conflicts).
    pub fn conflict_with(message: impl Into<String>, details: StatusDetails) -> Self {
        Self::new(409, "Conflict", message).with_details(details)
    }

    /// 422: `Deployment.apps "web" is invalid: spec.replicas: Invalid value: ...`.
    /// `kind` is the Kind (not the resource), as kube-apiserver reports it.
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let qualified_kind = qualified(kind, group);
        let summary = match errors {
            [] => "invalid object".to_string(),
            [one] => one.to_string(),
            many => format!(
                "[{}]",
                many.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let causes = errors
            .iter()
            .map(|e| StatusCause::new(e.kind.reason(), e.message(), &e.field))
            .collect();
        Self::new(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {summary}"),
        )
        .with_details(StatusDetails {
            causes,
            ..StatusDetails::named(group, kind, name)
        })
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `deployments.apps "x" is forbidden: User "alice" cannot create resource ...`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// The request body's media type is not accepted for this resource.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// A watch or list from a compacted resourceVersion.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Gone", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            "the server was unable to respond with a content type that the client supports",
        )
    }

    pub fn request_entity_too_large(limit_bytes: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit_bytes}"),
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The `Status` object for the response body.
    pub fn status(&self) -> Status {
        let mut details = self.details.clone();
        // kube-apiserver repeats Retry-After in the details of a 429 (`NewTooManyRequests`).
        if let (429, Some(seconds)) = (self.code, self.retry_after_seconds) {
            details
                .get_or_insert_with(StatusDetails::default)
                .retry_after_seconds = seconds;
        }
        Status {
            status: "Failure".into(),
            message: self.message.clone(),
            reason: self.reason.clone(),
            details,
            code: self.code,
            ..Status::default()
        }
    }

    /// [`Self::status`] as JSON, e.g. for a watch `ERROR` event.
    pub fn to_status(&self) -> Value {
        self.status().to_value()
    }
}

/// `metav1.Status`, fields in Go's declaration order, which is the order kube-apiserver writes
/// them in: `kind, apiVersion, metadata, status, message, reason, details, code`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub kind: String,
    pub api_version: String,
    /// `ListMeta`, a non-pointer struct: always present, `{}` here.
    #[serde(default)]
    pub metadata: serde_json::Map<String, Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: u16,
}

impl Default for Status {
    fn default() -> Self {
        Self {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: serde_json::Map::new(),
            status: String::new(),
            message: String::new(),
            reason: String::new(),
            details: None,
            code: 0,
        }
    }
}

impl Status {
    pub fn to_value(&self) -> Value {
        // A struct of strings, numbers and maps always serializes.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The compact JSON body, as written on the wire.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

/// `metav1.StatusDetails`; every field is `omitempty` in Go.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// kube-apiserver puts the resource (plural) here for most errors, the Kind for `Invalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub retry_after_seconds: u32,
}

impl StatusDetails {
    pub fn named(group: &str, kind: &str, name: &str) -> Self {
        Self {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
            ..Self::default()
        }
    }

    pub fn with_causes(causes: Vec<StatusCause>) -> Self {
        Self {
            causes,
            ..Self::default()
        }
    }
}

/// `metav1.StatusCause`: `reason, message, field`, each `omitempty`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusCause {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl StatusCause {
    pub fn new(reason: &str, message: impl Into<String>, field: &str) -> Self {
        Self {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }
    }
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

fn is_zero_u32(seconds: &u32) -> bool {
    *seconds == 0
}

/// A successful deletion's Status body.
pub fn success_status(group: &str, kind: &str, name: &str, uid: &str) -> Value {
    Status {
        status: "Success".into(),
        details: Some(StatusDetails {
            uid: uid.into(),
            ..StatusDetails::named(group, kind, name)
        }),
        ..Status::default()
    }
    .to_value()
}

fn qualified(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}
