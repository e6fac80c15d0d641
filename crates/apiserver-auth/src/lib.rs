//! Certificates, TLS, authentication and RBAC authorization for the API server.
//!
//! - [`pki`]: the CA, serving and admin client certificates kept in the data directory.
//! - [`tls`]: the rustls server configuration (optional client certificates, so certificate
//!   users and bearer-token users share one port).
//! - [`authn`]: turns a request's credentials into a [`UserInfo`].
//! - [`service_account`]: ServiceAccount tokens (TokenRequest and token Secrets) and their
//!   authenticator.
//! - [`rbac`]: Kubernetes RBAC evaluation over Role/ClusterRole/RoleBinding/ClusterRoleBinding.
//!
//! Invariants: the authorization types here carry no HTTP; a request is authorized only after it
//! was authenticated (anonymous is a user too, and RBAC decides what it may do).
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may unwrap: a panic is the failure report.
#![cfg_attr(test, allow(clippy::unwrap_used))]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod authn;
pub mod authz;
pub mod bootstrap_token;
pub mod csr;
pub mod files;
pub mod pki;
pub mod rbac;
pub mod service_account;
pub mod signer;
pub mod tls;
mod user;

pub use authz::{
    AlwaysAllow, Authorizer, Decision, RequestAttributes, forbidden_message, unrestricted_rules,
};
pub use user::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, MASTERS_GROUP, UNAUTHENTICATED_GROUP, UserInfo,
};
