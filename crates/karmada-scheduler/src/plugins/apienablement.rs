//! APIEnablement filter: a cluster must serve the resource's API (group/version and kind in
//! `status.apiEnablements`), unless the binding already targets it (Karmada keeps existing placements).
//!
//! Unknown (the list is incomplete and the kind is absent) fails like Disabled, as in Karmada.

use crate::framework::{Plugin, Rejection, SchedulingContext, Verdict};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "APIEnablement";

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct ApiEnablement;

impl Plugin for ApiEnablement {
    fn name(&self) -> &str {
        NAME
    }

    fn filter(
        &self,
        context: &SchedulingContext<'_>,
        cluster: &ClusterSnapshot,
    ) -> Option<Verdict> {
        if context.is_targeted(&cluster.name) {
            return Some(Verdict::Pass);
        }
        let resource = &context.spec.resource;
        let verdict = match cluster
            .cluster
            .api_enabled(&resource.api_version, &resource.kind)
        {
            Some(true) => Verdict::Pass,
            state => {
                let why = if state == Some(false) {
                    "is not served (API list complete)"
                } else {
                    "is not in status.apiEnablements (API list incomplete or unknown)"
                };
                Verdict::Reject(
                    Rejection::new("cluster(s) did not have the API resource")
                        .with_detail(format!("{} {} {why}", resource.api_version, resource.kind)),
                )
            }
        };
        Some(verdict)
    }
}
