//! The three PATCH bodies Kubernetes accepts, as pure functions over JSON:
//! RFC 6902 JSON patch ([`fn@json_patch`]), RFC 7386 merge patch ([`merge_patch`]) and strategic
//! merge patch ([`strategic_merge`], list semantics from a [`PatchMeta`]).
//!
//! Invariant: a failed patch never yields a partly patched document; callers get either the
//! whole result or a [`PatchError`] saying what is accepted.

mod json;
mod merge;
mod meta;
mod strategic;

pub use json::json_patch;
pub use merge::{merge_diff, merge_patch};
pub use meta::{BuiltinPatchMeta, ListStrategy, NoPatchMeta, PatchMeta};
pub use strategic::strategic_merge;

use crate::status::ApiError;

/// Why a patch was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a well-formed patch of its type (answered 400 Bad Request).
    #[error("{0}")]
    Malformed(String),
    /// The patch is well formed but cannot be applied to this object (answered 422).
    #[error("{0}")]
    Unprocessable(String),
}

impl PatchError {
    pub fn to_api_error(&self) -> ApiError {
        match self {
            Self::Malformed(message) => ApiError::bad_request(message.clone()),
            Self::Unprocessable(message) => ApiError::new(422, "Invalid", message.clone()),
        }
    }
}

impl From<PatchError> for ApiError {
    fn from(error: PatchError) -> Self {
        error.to_api_error()
    }
}
