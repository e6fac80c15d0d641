//! The plugin contract: what a filter or score plugin sees and returns. In-tree plugins and user plugins (see
//! [`crate::custom::clusterlatency`]) implement the same public [`Plugin`] trait.
//!
//! Invariants: plugins are pure functions of the [`SchedulingContext`] and the [`ClusterSnapshot`]; a filter
//! rejection carries Karmada's aggregated reason (counted in "0/N clusters are available: …") and an optional
//! cluster-specific detail for the explanation; scores are expected in `0..=MAX_CLUSTER_SCORE` and the
//! framework clamps them there.

use karmada_api::{Cluster, Placement, ResourceBindingSpec};
use serde_json::Value;

use crate::affinity::CompiledAffinity;
use crate::estimator::Resources;
use crate::snapshot::ClusterSnapshot;

/// Highest score a plugin gives one cluster.
pub const MAX_CLUSTER_SCORE: i64 = 100;
/// Lowest score a plugin gives one cluster.
pub const MIN_CLUSTER_SCORE: i64 = 0;

/// Why a filter rejected a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Karmada's reason, shared by every cluster rejected the same way ("cluster(s) did not have the API resource").
    pub reason: String,
    /// What exactly failed for this cluster, when more can be said.
    pub detail: Option<String>,
}

impl Rejection {
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            detail: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// A filter's verdict on one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Reject(Rejection),
}

/// A scheduler plugin: a filter, a score, or both. Return `None` from an extension point the plugin does not
/// implement.
pub trait Plugin: Send + Sync {
    /// The name profiles use to enable, disable, weigh and configure the plugin.
    fn name(&self) -> &str;

    /// Filter phase: may the binding go to this cluster?
    fn filter(
        &self,
        _context: &SchedulingContext<'_>,
        _cluster: &ClusterSnapshot,
    ) -> Option<Verdict> {
        None
    }

    /// Score phase: how much this plugin likes the cluster, `0..=100`.
    fn score(&self, _context: &SchedulingContext<'_>, _cluster: &ClusterSnapshot) -> Option<i64> {
        None
    }
}

/// How a cluster relates to the affinity in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AffinityMatch {
    /// Matches the primary affinity (or there is none).
    Primary,
    /// Matches only the overflow affinity with this 1-based order.
    Overflow(usize),
    /// Matches nothing; the rule that rejected it.
    NoMatch(String),
}

/// The affinity in force for one scheduling attempt, compiled.
#[derive(Debug, Clone, Default)]
pub struct AffinityInForce {
    pub(crate) primary: Option<CompiledAffinity>,
    pub(crate) overflow: Vec<CompiledAffinity>,
}

impl AffinityInForce {
    pub(crate) fn new(primary: Option<CompiledAffinity>, overflow: Vec<CompiledAffinity>) -> Self {
        Self { primary, overflow }
    }

    /// Whether the term has overflow affinities.
    pub fn has_overflow(&self) -> bool {
        !self.overflow.is_empty()
    }
}

/// Everything a plugin may read about the binding being scheduled.
#[derive(Debug, Clone, Copy)]
pub struct SchedulingContext<'a> {
    /// The binding's spec: resource, replicas, requirements, current `clusters`, eviction tasks.
    pub spec: &'a ResourceBindingSpec,
    /// The placement in force (the binding's, from its policy).
    pub placement: &'a Placement,
    /// The resource template (workload) when the caller has it; plugins that need more than the binding
    /// carries (container ports, say) read it.
    pub workload: Option<&'a Value>,
    /// The clusterAffinities term in force, when the placement uses them.
    pub affinity_name: Option<&'a str>,
    /// Per-replica resource requests in milli-units, `None` when the binding has no replica requirements.
    pub requests: Option<&'a Resources>,
    pub(crate) affinity: &'a AffinityInForce,
}

impl<'a> SchedulingContext<'a> {
    /// Builds a context (used by the scheduler, and by plugin authors in their tests).
    pub fn new(
        spec: &'a ResourceBindingSpec,
        placement: &'a Placement,
        workload: Option<&'a Value>,
        affinity_name: Option<&'a str>,
        requests: Option<&'a Resources>,
        affinity: &'a AffinityInForce,
    ) -> Self {
        Self {
            spec,
            placement,
            workload,
            affinity_name,
            requests,
            affinity,
        }
    }

    /// Whether the binding's current `spec.clusters` lists `cluster`.
    pub fn is_targeted(&self, cluster: &str) -> bool {
        self.spec
            .clusters
            .iter()
            .any(|target| target.name == cluster)
    }

    /// Whether the binding is a workload (has replicas or replica requirements), as opposed to a ConfigMap,
    /// Service and the like.
    pub fn is_workload(&self) -> bool {
        self.spec.replicas > 0 || self.spec.replica_requirements.is_some()
    }

    /// How `cluster` relates to the affinity in force; overflow affinities count only for workloads.
    pub fn affinity_match(&self, cluster: &Cluster) -> AffinityMatch {
        let primary = match &self.affinity.primary {
            None => return AffinityMatch::Primary,
            Some(primary) => primary.matches(cluster),
        };
        let Err(reason) = primary else {
            return AffinityMatch::Primary;
        };
        if self.is_workload() {
            for (index, overflow) in self.affinity.overflow.iter().enumerate() {
                if overflow.matches(cluster).is_ok() {
                    return AffinityMatch::Overflow(index + 1);
                }
            }
        }
        AffinityMatch::NoMatch(reason)
    }
}
