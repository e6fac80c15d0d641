//! What the API server shows, as pure functions: built-in resource definitions, `meta.k8s.io/v1`
//! Tables, discovery documents, OpenAPI documents and protobuf request decoding.
//!
//! Nothing here does I/O or reads the clock: time is an argument, so every output is a function
//! of its inputs.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::unwrap_used))]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod builtin;
pub mod conversion;
pub mod custom_metrics_api;
pub mod discovery;
mod hash;
pub mod metrics_api;
pub mod openapi;
mod patch_extensions;
pub mod protobuf;
mod review_discovery;
mod schema;
pub mod tables;
mod value_structs;
mod versions;
