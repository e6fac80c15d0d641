//! Integration tests of apiserver-auth through its public API: RBAC evaluation tables, the
//! default roles, and the store-backed RBAC authorizer.

#![allow(clippy::unwrap_used)]

mod bootstrap;
mod rbac_authorizer;
mod rbac_eval;
mod rbac_properties;
mod support;
