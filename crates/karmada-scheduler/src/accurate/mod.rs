//! Karmada's accurate estimator (karmada-scheduler-estimator) as a pure function: how many more replicas of a
//! binding's replica requirements a member cluster can run, from its Nodes and the Pods bound to them — the
//! answer its `MaxAvailableReplicas` gRPC call gives (docs/karmada.md, "Scheduler estimators"), plus its ResourceQuota
//! estimate when asked (feature gate ResourceQuotaEstimate).
//!
//! Per node that the replica may use (node selector, required node affinity, tolerations of the node's
//! NoSchedule/NoExecute taints and of `spec.unschedulable`): the replicas that fit in `allocatable − requested`
//! of every requested resource, at most the pods the node still allows; the answer is the sum over those
//! nodes, capped by each applicable ResourceQuota's free share. No nodes: 0.
//!
//! Invariants: pure (the caller keeps the nodes and pods); answers are never negative; requests of resources a
//! node does not offer fit 0 times; a replica without requests is bounded by pod counts alone.

mod claim;
mod nodes;
mod quota;

pub use claim::{ReplicaClaim, node_matches};
pub use nodes::{NodeInfo, pod_occupies_node};
pub use quota::{QuotaInfo, quota_replicas};

use crate::estimator::Resources;

/// Whether a requested resource bounds the estimate (Karmada's MaxDivided: cpu, memory, ephemeral storage and
/// the scalar resources — extended, hugepages, attachable volumes; `pods` is the pod count, handled apart).
pub(crate) fn counted_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage")
        || name.contains('/')
        || name.starts_with("hugepages-")
        || name.starts_with("attachable-volumes-")
}

/// How many times `request` fits in `free` (pods apart): the least over requested resources, `None` when nothing
/// is requested.
pub(crate) fn times_fits(free: &Resources, request: &Resources) -> Option<i64> {
    request
        .iter()
        .filter(|(name, amount)| **amount > 0 && counted_resource(name))
        .map(|(name, amount)| {
            let available = free.get(name).copied().unwrap_or(0).max(0);
            i64::try_from(available / amount).unwrap_or(i64::MAX)
        })
        .min()
}

/// The replicas of `claim` the nodes can still take (the NodeResourceEstimator's answer).
pub fn node_replicas(nodes: &[NodeInfo], claim: &ReplicaClaim) -> i64 {
    nodes
        .iter()
        .filter(|node| node_matches(node, claim))
        .map(|node| node.replicas_of(&claim.requests))
        .fold(0i64, i64::saturating_add)
}

/// `MaxAvailableReplicas`: the nodes' answer, capped by every applicable quota (pass none unless the
/// ResourceQuotaEstimate gate is on), clamped to Karmada's int32 answer.
pub fn max_available_replicas(
    nodes: &[NodeInfo],
    quotas: &[QuotaInfo],
    claim: &ReplicaClaim,
) -> i32 {
    if nodes.is_empty() {
        return 0;
    }
    let mut replicas = node_replicas(nodes, claim);
    for quota in quotas {
        if let Some(limit) = quota_replicas(quota, claim) {
            replicas = replicas.min(limit);
        }
    }
    i32::try_from(replicas.max(0)).unwrap_or(i32::MAX)
}
