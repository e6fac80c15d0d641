//! One error type for the runtime controllers, with the retry rules in one place.

use std::time::Duration;

/// What a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("API call failed: {0}")]
    Kube(#[from] kube::Error),
    #[error("object is malformed: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("cluster {cluster}: {message}")]
    Member { cluster: String, message: String },
}

impl ControllerError {
    /// 409: someone else wrote first; re-read and try again at once.
    pub fn is_conflict(&self) -> bool {
        self.status_code() == Some(409)
    }

    /// 404: the object is gone.
    pub fn is_not_found(&self) -> bool {
        self.status_code() == Some(404)
    }

    /// 409 on create: the object already exists.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, ControllerError::Kube(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists")
    }

    pub fn status_code(&self) -> Option<u16> {
        match self {
            ControllerError::Kube(kube::Error::Api(s)) => Some(s.code),
            _ => None,
        }
    }

    /// How soon to retry: conflicts at once, everything else after a short backoff (the controller's queue
    /// deduplicates, so a later watch event for the same key supersedes the wait).
    pub fn retry_after(&self) -> Duration {
        if self.is_conflict() {
            Duration::from_millis(10)
        } else {
            Duration::from_secs(2)
        }
    }
}
