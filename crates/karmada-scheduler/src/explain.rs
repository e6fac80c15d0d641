//! The explanation of one scheduling decision: per cluster the filter that rejected it and why, each plugin's
//! score, the estimate and available replicas; the Select phase's reasoning; the division arithmetic; the result.
//!
//! Invariant: it is plain serde data (camelCase JSON), so it can travel on the binding — the structured form goes
//! in the annotation [`ANNOTATION_EXPLANATION`] and a one-line summary in the Scheduled condition message.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::division::{ClusterReplicas, DivisionTrace};
use crate::estimator::Estimate;
use crate::select::SelectTrace;

/// Binding annotation holding the explanation as JSON. Proposed name; the `scheduling.karmada.io` group is the
/// seed's scheduling API group, and Karmada defines no annotation there.
pub const ANNOTATION_EXPLANATION: &str = "scheduling.karmada.io/explanation";

/// A plugin of the framework that made the decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginWeight {
    pub name: String,
    pub weight: i64,
}

/// A filter's rejection of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterDecision {
    pub plugin: Arc<str>,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
}

/// One plugin's score for one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginScore {
    pub plugin: Arc<str>,
    pub score: i64,
    pub weight: i64,
}

/// Everything decided about one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecision {
    // Shared with the cluster snapshot: a decision per cluster per binding must not allocate names.
    pub name: Arc<str>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub filtered_by: Option<FilterDecision>,
    #[serde(skip_serializing_if = "smallvec::SmallVec::is_empty", default)]
    pub scores: smallvec::SmallVec<[PluginScore; 4]>,
    /// Σ weight × score.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub score: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub estimate: Option<Estimate>,
    /// The cluster's scheduler estimator's answer (the accurate estimator), when one answered; the cluster's
    /// allocatable replicas are the lesser of it and the general estimate.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub accurate_estimate: Option<i64>,
    /// Estimated replicas plus what the cluster already holds.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub available_replicas: Option<i64>,
    /// 0 for the primary affinity, i for the i-th overflow affinity.
    #[serde(skip_serializing_if = "is_zero", default)]
    pub overflow_order: usize,
    pub selected: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replicas: Option<i64>,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// One clusterAffinities term tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AffinityAttempt {
    pub name: String,
    pub scheduled: bool,
    pub message: String,
}

/// The explanation of a scheduling decision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub scheduler_name: String,
    pub profile: String,
    /// The SchedulerProfile's `metadata.generation` the decision used (none for the default plugin set).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub profile_generation: Option<i64>,
    pub plugins: Vec<PluginWeight>,
    /// Duplicated, StaticWeight, DynamicWeight or Aggregated.
    pub strategy: String,
    pub replicas: i64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub affinity_name: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub affinity_attempts: Vec<AffinityAttempt>,
    pub clusters: Vec<ClusterDecision>,
    pub selection: SelectTrace,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub divisions: Vec<DivisionTrace>,
    pub result: Vec<ClusterReplicas>,
    pub scheduled: bool,
    /// The Scheduled condition reason: Success, NoClusterFit, Unschedulable or SchedulerError.
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
}

/// Largest explanation kept whole in the annotation; Kubernetes caps all annotations of an object at 256 KiB.
pub const ANNOTATION_BUDGET_BYTES: usize = 64 * 1024;

impl Explanation {
    /// The JSON for [`ANNOTATION_EXPLANATION`]. Past [`ANNOTATION_BUDGET_BYTES`] the per-cluster entries of
    /// clusters that got nothing and the unchosen groups are dropped, and a note counts what was dropped by
    /// reason, so the annotation stays bounded with thousands of clusters.
    pub fn to_annotation(&self) -> Result<String, serde_json::Error> {
        let full = serde_json::to_string(self)?;
        if full.len() <= ANNOTATION_BUDGET_BYTES {
            return Ok(full);
        }
        let mut compact = self.clone();
        let mut dropped: std::collections::BTreeMap<String, usize> =
            std::collections::BTreeMap::new();
        compact.clusters.retain(|decision| {
            let keep = decision.selected || decision.replicas.is_some();
            if !keep {
                let why = match &decision.filtered_by {
                    Some(filter) => filter.reason.clone(),
                    None => "feasible but not selected".to_string(),
                };
                *dropped.entry(why).or_insert(0) += 1;
            }
            keep
        });
        let groups_before = compact.selection.groups.len();
        compact.selection.groups.retain(|group| group.chosen);
        let summary: Vec<String> = dropped
            .iter()
            .map(|(why, count)| format!("{count} {why}"))
            .collect();
        compact.notes.push(format!(
            "{} cluster entries and {} unchosen groups omitted to bound the annotation: {}",
            self.clusters.len() - compact.clusters.len(),
            groups_before - compact.selection.groups.len(),
            summary.join(", ")
        ));
        serde_json::to_string(&compact)
    }

    /// A short human summary of the outcome, e.g. `cluster-aws: 4, cluster-gcp: 2 (StaticWeight, 6 replicas)`.
    pub fn summary(&self) -> String {
        if !self.scheduled {
            return self.message.clone();
        }
        if self.replicas == 0 && self.result.iter().all(|target| target.replicas == 0) {
            let names: Vec<&str> = self
                .result
                .iter()
                .map(|target| target.name.as_str())
                .collect();
            return format!("{} (no replicas to divide)", names.join(", "));
        }
        let placed: Vec<String> = self
            .result
            .iter()
            .map(|target| format!("{}: {}", target.name, target.replicas))
            .collect();
        format!(
            "{} ({}, {} replicas)",
            placed.join(", "),
            self.strategy,
            self.replicas
        )
    }
}
