//! The cluster controllers of the controller-manager (Push mode), and their pure cores.
//!
//! Pure (no I/O, clock passed in): [`health`] (Ready condition and its success/failure thresholds),
//! [`taints`] (health taints from Ready), [`summary`] (node and resource summaries), [`enablements`]
//! (apiEnablements and CompleteAPIEnablements), [`taint_edit`] (a person's taint edits, shared by karmadactl's
//! taint/cordon and the dashboard; its one runtime function reads and replaces the Cluster).
//! Runtime (tokio, kube): [`api`] (Cluster access, member client from the Cluster's Secret),
//! [`cluster_controller`] (finalizer, execution namespace `karmada-es-<name>`, taints, cleanup on deletion),
//! [`status_controller`] (probing members and writing `status`), [`metrics`] (cluster gauges).
//! Every runtime loop stops when its CancellationToken fires.

pub mod api;
pub mod cluster_controller;
pub mod discovery;
pub mod enablements;
pub mod health;
pub mod metrics;
pub mod status_controller;
pub mod summary;
pub mod taint_edit;
pub mod taints;
