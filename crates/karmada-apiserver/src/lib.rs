//! The Kubernetes-compatible API server of karmada-rs: what the real kubectl v1.32, the Python
//! `kubernetes` client and the `kube` crate talk to, unchanged.
//!
//! - [`server::ApiServer`] holds the state (store, served kinds, authorizer, options, metrics)
//!   and owns the background controllers ([`gc`], [`namespaces`], [`event_ttl`]);
//! - [`router::router`] is the HTTP surface (also the in-process seam for tests);
//! - [`handlers`] implement the verbs over API objects; [`watch`] streams changes; [`crds`]
//!   turns stored CustomResourceDefinitions into served kinds; [`respond`] renders answers;
//! - [`objects`] (metadata rules), [`content`] (bodies and Accept), [`selectors`], [`storage`]
//!   (the store layout) and [`registry`] are pure helpers; [`hooks`] gathers every call into
//!   the other modules and crates the server builds on.
//!
//! Invariants: every error a client sees is an `ApiError` rendered by `to_status`; the store
//! revision is the resourceVersion; no lock is held across an await.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// `ApiError` is the one error every handler returns (it becomes the client's Status); it is
// built once per failed request, so its size costs nothing worth boxing for.
#![allow(clippy::result_large_err)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod aggregator;
mod background;
pub mod content;
pub mod crds;
pub mod custom_metrics;
pub mod custom_metrics_adapter;
pub mod discovery_cache;
pub mod event_ttl;
pub mod gc;
pub mod handlers;
pub mod hooks;
mod impersonation;
pub mod interpreter_customizations;
pub mod member_fanout;
pub mod metered_store;
pub mod metrics_adapter;
pub mod namespaces;
pub mod objects;
pub mod provided;
pub mod proxy;
mod quota_admission;
pub mod registry;
pub mod request_body;
pub mod respond;
mod reviews;
pub mod router;
pub mod selectors;
pub mod server;
pub mod storage;
pub mod storage_objects;
pub mod tokens_controller;
pub mod watch;

// Modules owned by other engineers: pure cores (CRD translation, built-in defaulting and
// validation, metrics, patches) and the TLS accept loop.
pub mod crd;
pub mod defaults;
pub mod metrics;
pub mod patch;
pub mod process_metrics;
pub mod serve;

pub use router::router;
pub use server::{Anonymous, ApiServer, ApiServerOptions, StartError};
