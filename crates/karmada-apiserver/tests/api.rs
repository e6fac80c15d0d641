//! Integration tests of the API server through its Router, in-process.

#![allow(clippy::unwrap_used, clippy::result_large_err)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod api {
    mod bad_input;
    mod crud;
    mod delete;
    mod event_list;
    mod event_ttl;
    pub mod harness;
    mod kube_client;
    mod kubectl;
    mod list_watch;
    mod namespaces_gc;
    mod races;
    mod service_accounts;
    mod surface;
    mod validation;
    mod versions;
}
