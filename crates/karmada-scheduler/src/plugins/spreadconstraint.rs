//! SpreadConstraint filter: for a constraint by `provider`, `region` or `zone` the cluster must have that
//! property; for `spreadByLabel` (an extension; Karmada only validates it) the cluster must carry the label.
//! Without such constraints every cluster passes.

use karmada_api::SpreadByField;

use crate::affinity::cluster_zones;
use crate::framework::{Plugin, Rejection, SchedulingContext, Verdict};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "SpreadConstraint";

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct SpreadConstraint;

impl Plugin for SpreadConstraint {
    fn name(&self) -> &str {
        NAME
    }

    fn filter(
        &self,
        context: &SchedulingContext<'_>,
        cluster: &ClusterSnapshot,
    ) -> Option<Verdict> {
        let spec = &cluster.cluster.spec;
        for constraint in &context.placement.spread_constraints {
            if !constraint.spread_by_label.is_empty() {
                if cluster.label(&constraint.spread_by_label).is_none() {
                    return Some(Verdict::Reject(Rejection::new(format!(
                        "cluster(s) did not have label {}",
                        constraint.spread_by_label
                    ))));
                }
                continue;
            }
            let missing = match constraint.spread_by_field {
                Some(SpreadByField::Provider) => spec.provider.is_empty().then_some("provider"),
                Some(SpreadByField::Region) => spec.region.is_empty().then_some("region"),
                Some(SpreadByField::Zone) => {
                    cluster_zones(&cluster.cluster).is_empty().then_some("zone")
                }
                Some(SpreadByField::Cluster) | None => None,
            };
            if let Some(property) = missing {
                return Some(Verdict::Reject(Rejection::new(format!(
                    "cluster(s) did not have {property} property"
                ))));
            }
        }
        Some(Verdict::Pass)
    }
}
