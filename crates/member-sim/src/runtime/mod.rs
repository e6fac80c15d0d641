//! The async runtime of a simulated member cluster: an API server (the same crate the control
//! plane runs) plus the pure controllers of this crate, driven through that API as a client.
//!
//! Design invariants. The controllers reach the API only through a `kube::Client` whose
//! transport is the server's router, in process: the same code path kubectl takes minus the
//! socket, so every write is validated, defaulted and versioned like any other client's.
//! Network-level faults ([`fault_layer`]) sit only in front of the socket; the controllers
//! keep running while a cluster is "unreachable", as a real cluster's would. Every task is
//! owned by a [`cluster::RunningCluster`] (a `TaskTracker`) and stops on its cancellation
//! token. The pure modules never import this tree.

pub mod cluster;
pub mod controller;
pub mod custom_metrics_api;
pub mod dns;
pub mod fault_layer;
pub mod faults_file;
pub mod kubelet;
pub mod metrics_api;
pub mod watch;
pub mod writer;

pub use cluster::{ClusterOptions, RunningCluster, StartError};
