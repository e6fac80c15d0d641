//! TaintToleration filter: every `NoSchedule` and `NoExecute` taint of a cluster must be tolerated by
//! `placement.clusterTolerations`, unless the binding already targets the cluster (eviction of running
//! placements is the taint manager's job, not the scheduler's).
//!
//! Toleration matching is Kubernetes': an empty effect matches every effect; `Exists` with an empty key matches
//! every taint; `Exists` matches any value of its key; `Equal` (the default) needs the same key and value.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::framework::{Plugin, Rejection, SchedulingContext, Verdict};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "TaintToleration";

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaintToleration;

/// Whether `toleration` tolerates `taint`.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    let operator = toleration.operator.as_deref().unwrap_or("Equal");
    if key.is_empty() {
        return operator == "Exists";
    }
    if key != taint.key {
        return false;
    }
    match operator {
        "Exists" => true,
        "Equal" | "" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// Karmada's rendering of a taint in reasons: `{key=value:Effect}` (value omitted when empty).
pub fn describe_taint(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{{{}={}:{}}}", taint.key, value, taint.effect),
        None => format!("{{{}:{}}}", taint.key, taint.effect),
    }
}

impl Plugin for TaintToleration {
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
        let tolerations = &context.placement.cluster_tolerations;
        let untolerated = cluster
            .cluster
            .spec
            .taints
            .iter()
            .filter(|taint| taint.effect == "NoSchedule" || taint.effect == "NoExecute")
            .find(|taint| {
                !tolerations
                    .iter()
                    .any(|toleration| tolerates(toleration, taint))
            });
        Some(match untolerated {
            None => Verdict::Pass,
            Some(taint) => Verdict::Reject(Rejection::new(format!(
                "cluster(s) had untolerated taint {}",
                describe_taint(taint)
            ))),
        })
    }
}
