//! Kubernetes API machinery, pure: no I/O, no async, no knowledge of Karmada.
//! Time is always an argument.
//!
//! What lives here: label and field selectors ([`labels`], [`fields`]), name rules and
//! `generateName` ([`names`]), ages and timestamps ([`time`]), the three patch formats
//! ([`patch`]), server-side apply and `managedFields` ([`mod@apply`]), OpenAPI schema walking for
//! strict validation, pruning and defaults ([`schema`]), quantities ([`quantity`]), the printer
//! column JSONPath subset ([`jsonpath`]), and the shapes every response shares ([`status`],
//! [`field`], [`resource`]). Every error converts to an [`ApiError`] that says what is accepted.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod apply;
mod error_chain;
pub mod field;
pub mod fields;
pub mod jsonpath;
pub mod labels;
pub mod names;
pub mod patch;
pub mod quantity;
pub mod resource;
pub mod schema;
pub mod status;
pub mod time;

pub use apply::{
    ApplyError, ApplyOutcome, Conflict, ManagedFieldsEntry, Operation, Writer, apply,
    record_update, record_update_in_place,
};
pub use error_chain::error_chain;
pub use field::{FieldError, FieldErrorKind};
pub use fields::{
    FieldOperator, FieldRequirement, FieldSelector, FieldSelectorError, standard_field,
};
pub use jsonpath::{JsonPath, JsonPathError};
pub use labels::{LabelSelector, Labels, Operator, Requirement, SelectorError};
pub use patch::{
    BuiltinPatchMeta, ListStrategy, NoPatchMeta, PatchError, PatchMeta, json_patch, merge_diff,
    merge_patch, strategic_merge,
};
pub use quantity::{Quantity, QuantityError, QuantityFormat};
pub use resource::{GroupVersionKind, Printer, PrinterColumn, ResourceDef, ScaleSubresource};
pub use schema::{
    SchemaPatchMeta, SchemaWalker, apply_defaults, prune, unknown_field_message, unknown_fields,
};
pub use status::{ApiError, Status, StatusCause, StatusDetails};
