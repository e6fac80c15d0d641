//! AvailableResources score (not in Karmada; the seed's "score by available resources"): the lowest free share of
//! cpu and memory in `status.resourceSummary`, as 0..=100. A cluster without a summary scores 0. Not in the
//! default plugin set; enable it in a SchedulerProfile.

use crate::estimator::free_percent;
use crate::framework::{MIN_CLUSTER_SCORE, Plugin, SchedulingContext};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "AvailableResources";

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct AvailableResources;

impl Plugin for AvailableResources {
    fn name(&self) -> &str {
        NAME
    }

    fn score(&self, _context: &SchedulingContext<'_>, cluster: &ClusterSnapshot) -> Option<i64> {
        Some(
            cluster
                .summary
                .as_ref()
                .and_then(free_percent)
                .unwrap_or(MIN_CLUSTER_SCORE),
        )
    }
}
