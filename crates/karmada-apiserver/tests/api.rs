//! Integration tests of the API server through its Router, in-process.

#![allow(clippy::unwrap_used, clippy::result_large_err)]

mod api {
    mod bad_input;
    mod crud;
    mod delete;
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
