//! Errors for input the scheduler cannot accept. Each names where the problem is and what is accepted.

/// One piece of input is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct InputError {
    /// Where the problem is, e.g. `PropagationPolicy default/nginx: placement.spreadConstraints[0]`.
    pub path: String,
    pub message: String,
}

impl InputError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The same error located inside `outer` (prefixes the path).
    pub fn within(mut self, outer: &str) -> Self {
        self.path = format!("{outer}: {}", self.path);
        self
    }
}
