//! Defaulting and validation of the built-in Kubernetes kinds the server stores: Namespace,
//! ConfigMap, Secret, Service, Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob;
//! HorizontalPodAutoscaler, PodDisruptionBudget and ReplicationController (defaulted and
//! validated, [`scaling`]); PodTemplate, PersistentVolume, LimitRange, StorageClass,
//! PriorityClass, NetworkPolicy and IngressClass (defaulted in [`infrastructure`], validated in
//! the `*_validation` modules); ResourceQuota (validated only).
//!
//! Defaulting fills in what kube-apiserver fills in and what clients' output depends on
//! (`kubectl describe` prints `80/TCP` only when the protocol is set, for example). It only ever
//! adds absent fields, except for Secret `stringData`, which is folded into `data` as
//! kube-apiserver does. Validation returns every problem found, in Kubernetes' wording, so the
//! caller can answer one 422 listing all of them. Both are pure functions of their inputs; kinds
//! they don't know are left alone.

mod defaulting;
mod infrastructure;
mod infrastructure_validation;
mod json;
mod limit_range_validation;
mod network_policy_validation;
mod persistent_volume_validation;
mod pod;
mod pod_validation;
mod quota_validation;
mod rules;
mod scaling;
mod validation;

#[cfg(test)]
mod proptests;

pub use defaulting::default_builtin;
pub use validation::validate_builtin;
