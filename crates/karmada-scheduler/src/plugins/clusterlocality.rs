//! ClusterLocality score: 100 for a cluster the binding already runs in, 0 otherwise — Karmada's behaviour, so
//! rescheduling prefers staying put.
//!
//! Reconciling the seed's reading. The seed describes ClusterLocality as "score by available resources" and
//! configures it with `ClusterLocalityArgs.availablePercentage: 70`. Karmada's plugin scores locality, not
//! resources, and a binding placed by Karmada must get the same scores here. Decision: ClusterLocality keeps
//! Karmada's meaning, and the seed's argument is honoured as a guard on it — with `availablePercentage: P`, a
//! current cluster keeps its locality bonus only while at least P % of its cpu and memory is free (from
//! `status.resourceSummary`; no summary means no bonus), so a sticky placement yields when its cluster runs hot.
//! `P = 0` (the default) is exactly Karmada. Scoring every cluster by its free resources is a separate plugin,
//! [`super::availableresources`] (`AvailableResources`), which a profile can enable.

use serde::Deserialize;

use crate::estimator::free_percent;
use crate::framework::{MAX_CLUSTER_SCORE, MIN_CLUSTER_SCORE, Plugin, SchedulingContext};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "ClusterLocality";

/// `ClusterLocalityArgs` (the seed's `config.karmada.io/v1alpha1` kind).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterLocalityArgs {
    /// Minimum free share (0..=100) of cpu and memory a current cluster needs to keep its locality score.
    #[serde(default)]
    pub available_percentage: i64,
}

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClusterLocality {
    args: ClusterLocalityArgs,
}

impl ClusterLocality {
    /// Validates the args: the percentage must be within 0..=100.
    pub fn new(args: ClusterLocalityArgs) -> Result<Self, String> {
        if !(0..=100).contains(&args.available_percentage) {
            return Err(format!(
                "availablePercentage must be between 0 and 100, got {}",
                args.available_percentage
            ));
        }
        Ok(Self { args })
    }
}

impl Plugin for ClusterLocality {
    fn name(&self) -> &str {
        NAME
    }

    fn score(&self, context: &SchedulingContext<'_>, cluster: &ClusterSnapshot) -> Option<i64> {
        if !context.is_targeted(&cluster.name) {
            return Some(MIN_CLUSTER_SCORE);
        }
        if self.args.available_percentage > 0 {
            let free = cluster.summary.as_ref().and_then(free_percent).unwrap_or(0);
            if free < self.args.available_percentage {
                return Some(MIN_CLUSTER_SCORE);
            }
        }
        Some(MAX_CLUSTER_SCORE)
    }
}
