//! Kubernetes API machinery, pure: no I/O, no async, no knowledge of Karmada.
//! Time is always an argument.

pub mod field;
pub mod resource;
pub mod status;

pub use field::{FieldError, FieldErrorKind};
pub use resource::{GroupVersionKind, PrinterColumn, Printer, ResourceDef, ScaleSubresource};
pub use status::ApiError;
