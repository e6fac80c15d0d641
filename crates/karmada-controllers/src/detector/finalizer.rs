//! The (Cluster)PropagationPolicy finalizer the detector keeps (docs/karmada.md, "Finalizers":
//! `karmada.io/propagation-policy-controller` and `karmada.io/cluster-propagation-policy-controller`): added to
//! every live policy, and removed from a deleted one only after its claims are released from every binding and
//! template, so a policy deleted while the detector is down is still cleaned up when it comes back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

/// A policy in the finalizer queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PolicyKey {
    /// A ClusterPropagationPolicy (else a PropagationPolicy).
    pub cluster: bool,
    /// Empty for a ClusterPropagationPolicy.
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for PolicyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.cluster {
            write!(f, "ClusterPropagationPolicy {}", self.name)
        } else {
            write!(f, "PropagationPolicy {}/{}", self.namespace, self.name)
        }
    }
}

/// What the finalizer asks for a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizerAction {
    /// Nothing to do.
    None,
    /// A live policy without the finalizer: add it.
    Add,
    /// A deleted policy still holding the finalizer: release its claims, then remove it.
    Finalize,
}

fn has(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

pub fn finalizer_action(meta: &ObjectMeta, finalizer: &str) -> FinalizerAction {
    match (meta.deletion_timestamp.is_some(), has(meta, finalizer)) {
        (false, false) => FinalizerAction::Add,
        (true, true) => FinalizerAction::Finalize,
        _ => FinalizerAction::None,
    }
}

/// Merge patch adding (`add`) or removing `finalizer`, conditional on the policy's resourceVersion (a merge
/// patch replaces the whole list, so it must not overwrite a list changed meanwhile).
pub fn finalizers_patch(meta: &ObjectMeta, finalizer: &str, add: bool) -> Value {
    let mut finalizers: Vec<String> = meta
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    if add {
        finalizers.push(finalizer.to_string());
    }
    json!({"metadata": {"finalizers": finalizers, "resourceVersion": meta.resource_version}})
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    const F: &str = "karmada.io/propagation-policy-controller";

    fn meta(deleting: bool, finalizers: &[&str]) -> ObjectMeta {
        ObjectMeta {
            resource_version: Some("7".into()),
            deletion_timestamp: deleting.then_some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
            finalizers: Some(finalizers.iter().map(|f| (*f).to_string()).collect()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn actions() {
        let cases = [
            (meta(false, &[]), FinalizerAction::Add),
            (meta(false, &[F]), FinalizerAction::None),
            (meta(true, &[F, "other"]), FinalizerAction::Finalize),
            (meta(true, &["other"]), FinalizerAction::None),
        ];
        for (meta, expected) in cases {
            assert_eq!(finalizer_action(&meta, F), expected, "{meta:?}");
        }
    }

    #[test]
    fn patches_keep_other_finalizers_and_carry_the_version() {
        assert_eq!(
            finalizers_patch(&meta(false, &["other"]), F, true),
            json!({"metadata": {"finalizers": ["other", F], "resourceVersion": "7"}})
        );
        assert_eq!(
            finalizers_patch(&meta(true, &[F, "other"]), F, false),
            json!({"metadata": {"finalizers": ["other"], "resourceVersion": "7"}})
        );
    }
}
