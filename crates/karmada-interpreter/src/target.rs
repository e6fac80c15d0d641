//! The apiVersion and kind an operation is asked about.

use serde_json::Value;

use crate::InterpretError;

/// apiVersion and kind of an object, e.g. `apps/v1` `Deployment`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    pub api_version: String,
    pub kind: String,
}

impl Target {
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }

    /// Reads `apiVersion` and `kind` from an object.
    pub fn of(object: &Value) -> Result<Self, InterpretError> {
        let read = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        match (read("apiVersion"), read("kind")) {
            (Some(api_version), Some(kind)) => Ok(Self { api_version, kind }),
            _ => Err(InterpretError::NotAnObject(
                "expected a JSON object with non-empty apiVersion and kind".into(),
            )),
        }
    }

    /// The API group: the part of apiVersion before `/`, empty for the core group.
    pub fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    /// Whether this is `kind` in `group` (any version).
    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group() == group && self.kind == kind
    }
}
