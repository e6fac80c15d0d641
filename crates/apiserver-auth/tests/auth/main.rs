//! Integration tests of apiserver-auth through its public API: RBAC evaluation tables, the
//! default roles, and the store-backed RBAC authorizer.

#![allow(clippy::unwrap_used)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod bootstrap;
mod rbac_authorizer;
mod rbac_eval;
mod rbac_properties;
mod support;
