//! The agent CSR approver and signer (Karmada's `agentcsrapproving` controller, plus the signing
//! kube-controller-manager does for `kubernetes.io/kube-apiserver-client`).
//!
//! Pure: [`approve`] (which requests to approve, deny or sign), [`agent_rbac`] (the RBAC objects
//! that confine an agent to its own cluster). Runtime: [`controller`] (list, decide, write).

pub mod agent_rbac;
pub mod approve;
pub mod controller;

pub use controller::{CertificateControllerConfig, run};
