//! ClusterEviction filter: a cluster the binding is being evicted from (listed in `gracefulEvictionTasks`) is not
//! a candidate, so replicas move elsewhere.

use crate::framework::{Plugin, Rejection, SchedulingContext, Verdict};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "ClusterEviction";

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClusterEviction;

impl Plugin for ClusterEviction {
    fn name(&self) -> &str {
        NAME
    }

    fn filter(
        &self,
        context: &SchedulingContext<'_>,
        cluster: &ClusterSnapshot,
    ) -> Option<Verdict> {
        let evicting = context
            .spec
            .graceful_eviction_tasks
            .iter()
            .find(|task| *task.from_cluster == *cluster.name);
        Some(match evicting {
            None => Verdict::Pass,
            Some(task) => Verdict::Reject(
                Rejection::new("cluster(s) is in the process of eviction").with_detail(format!(
                    "eviction task reason {} by {}",
                    task.reason, task.producer
                )),
            ),
        })
    }
}
