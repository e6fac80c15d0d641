//! Errors of the interpreter: each names the object, the field and what is accepted.

/// An operation could not interpret an object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterpretError {
    /// A field has the wrong shape or an invalid value.
    #[error("{kind} {name}: {field}: {message}")]
    InvalidField {
        kind: String,
        name: String,
        field: String,
        message: String,
    },
    /// No layer implements the operation for this kind.
    #[error("operation {operation} is not supported for {api_version} {kind}")]
    Unsupported {
        operation: String,
        api_version: String,
        kind: String,
    },
    /// A customization script failed or returned the wrong shape.
    #[error("{object}: customization {operation}: {message}")]
    Script {
        /// Kind and `namespace/name` of the object.
        object: String,
        /// The operation and its entry point, e.g. `InterpretReplica (GetReplicas)`.
        operation: String,
        message: String,
    },
    /// An interpreter webhook could not be asked or gave an unusable answer.
    #[error("{object}: {operation}: {message}")]
    Webhook {
        /// Kind and `namespace/name` of the object.
        object: String,
        /// The operation and the webhook asked, e.g. `InterpretReplica (webhook workloads.example.io)`.
        operation: String,
        message: String,
    },
    /// The object is not a JSON object with apiVersion and kind.
    #[error("not a Kubernetes object: {0}")]
    NotAnObject(String),
}

impl InterpretError {
    pub(crate) fn script(
        object: &serde_json::Value,
        operation: crate::Operation,
        entry_point: &str,
        error: crate::declarative::LuaError,
    ) -> Self {
        let Self::InvalidField { kind, name, .. } = Self::invalid(object, "", "") else {
            return Self::NotAnObject(error.to_string());
        };
        Self::Script {
            object: format!("{kind} {name}"),
            operation: format!("{operation} ({entry_point})"),
            message: error.to_string(),
        }
    }

    pub(crate) fn webhook(
        object: &serde_json::Value,
        operation: crate::Operation,
        webhook: &str,
        message: String,
    ) -> Self {
        let Self::InvalidField { kind, name, .. } = Self::invalid(object, "", "") else {
            return Self::NotAnObject(message);
        };
        Self::Webhook {
            object: format!("{kind} {name}"),
            operation: format!("{operation} (webhook {webhook})"),
            message,
        }
    }

    pub(crate) fn invalid(
        object: &serde_json::Value,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let namespace = text("/metadata/namespace");
        let name = text("/metadata/name");
        Self::InvalidField {
            kind: text("/kind"),
            name: if namespace.is_empty() {
                name
            } else {
                format!("{namespace}/{name}")
            },
            field: field.into(),
            message: message.into(),
        }
    }
}
