//! ClusterAffinity filter and score: the cluster must match `placement.clusterAffinity`, or the
//! `clusterAffinities` term in force (plus its overflow affinities, for workloads). The score is the constant 0,
//! as in Karmada.

use crate::framework::{
    AffinityMatch, MIN_CLUSTER_SCORE, Plugin, Rejection, SchedulingContext, Verdict,
};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "ClusterAffinity";

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClusterAffinity;

impl Plugin for ClusterAffinity {
    fn name(&self) -> &str {
        NAME
    }

    fn filter(
        &self,
        context: &SchedulingContext<'_>,
        cluster: &ClusterSnapshot,
    ) -> Option<Verdict> {
        Some(match context.affinity_match(&cluster.cluster) {
            AffinityMatch::Primary | AffinityMatch::Overflow(_) => Verdict::Pass,
            AffinityMatch::NoMatch(why) => Verdict::Reject(
                Rejection::new(
                    "cluster(s) did not match the placement cluster affinity constraint",
                )
                .with_detail(why),
            ),
        })
    }

    fn score(&self, _context: &SchedulingContext<'_>, _cluster: &ClusterSnapshot) -> Option<i64> {
        Some(MIN_CLUSTER_SCORE)
    }
}
