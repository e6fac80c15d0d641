//! The WorkloadRebalancer's pure core (docs/karmada.md, "Workload rebalancer"): from a rebalancer, the bindings found
//! for its unfinished workloads and `now`, which bindings to mark for a fresh schedule, the status to record and what
//! happens next (nothing, a wake-up when the TTL runs out, or deletion).
//!
//! Rules, as Karmada has them:
//! - Each workload's binding is the (Cluster)ResourceBinding named `binding_name(kind, name)`, in the workload's
//!   namespace (cluster-scoped when the namespace is empty).
//! - A found binding gets `spec.rescheduleTriggeredAt` = the rebalancer's creationTimestamp unless it already holds
//!   that time or a later one; the workload is then `Successful`. No binding: `Failed` with
//!   `ReferencedBindingNotFound`, not retried.
//! - A result, once recorded, is final: later passes do not touch that binding again. A workload removed from the
//!   spec stays in the status if it was `Successful` (the reschedule happened) and leaves it otherwise; added ones
//!   are processed. Duplicates in the spec count once. `observedWorkloads` is sorted by the string
//!   `"apiVersion kind namespace name"`.
//! - `finishTime` becomes `now` whenever a pass changes the status (results or observedGeneration, so a spec edit
//!   restarts the TTL) and leaves every workload with a result; otherwise it is kept. It is cleared while a workload
//!   is pending. With `ttlSecondsAfterFinished` the rebalancer is deleted that long after `finishTime`.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::apps::{
    ObjectReference, ObservedWorkload, REASON_REFERENCED_BINDING_NOT_FOUND, RebalanceResult,
    WorkloadRebalancer, WorkloadRebalancerStatus,
};

use crate::names::binding_name;

/// Where a workload's binding lives.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BindingKey {
    /// Empty for a ClusterResourceBinding.
    pub namespace: String,
    pub name: String,
}

impl BindingKey {
    /// The binding of `workload`.
    pub fn of(workload: &ObjectReference) -> Self {
        BindingKey {
            namespace: workload.namespace.clone(),
            name: binding_name(&workload.kind, &workload.name),
        }
    }

    /// A ClusterResourceBinding (the workload is cluster-scoped).
    pub fn is_cluster_scoped(&self) -> bool {
        self.namespace.is_empty()
    }
}

/// What a lookup of one binding found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoundBinding {
    /// The binding exists, with this `spec.rescheduleTriggeredAt`.
    Present { triggered_at: Option<Time> },
    /// There is no such binding.
    Missing,
}

/// One binding to mark for a fresh schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingWrite {
    pub binding: BindingKey,
    /// The value for `spec.rescheduleTriggeredAt`.
    pub triggered_at: Time,
}

/// What the controller does after writing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Nothing until the rebalancer changes.
    Wait,
    /// Some workloads have no result yet (their binding was not looked up): come back soon.
    Retry,
    /// Wake up when the TTL runs out.
    DeleteAfter(Duration),
    /// The TTL ran out: delete the rebalancer.
    DeleteNow,
}

/// The outcome of one pass.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Bindings to mark; each must succeed before `status` is recorded.
    pub writes: Vec<BindingWrite>,
    /// The status to record.
    pub status: WorkloadRebalancerStatus,
    /// Whether `status` differs from the recorded one.
    pub status_changed: bool,
    pub next: Next,
}

/// Karmada's order of `observedWorkloads`.
fn order_key(w: &ObjectReference) -> String {
    format!("{} {} {} {}", w.api_version, w.kind, w.namespace, w.name)
}

/// Distinct workloads of the spec, in Karmada's order.
fn spec_workloads(rebalancer: &WorkloadRebalancer) -> Vec<ObjectReference> {
    let mut workloads = rebalancer.spec.workloads.clone();
    workloads.sort_by_key(order_key);
    workloads.dedup();
    workloads
}

/// Results already recorded, per workload.
fn recorded(rebalancer: &WorkloadRebalancer) -> BTreeMap<String, &ObservedWorkload> {
    rebalancer
        .status
        .iter()
        .flat_map(|s| &s.observed_workloads)
        .filter(|o| o.result.is_some())
        .map(|o| (order_key(&o.workload), o))
        .collect()
}

/// The bindings to look up: those of spec workloads without a recorded result.
pub fn bindings_to_look_up(rebalancer: &WorkloadRebalancer) -> Vec<BindingKey> {
    let done = recorded(rebalancer);
    let mut keys: Vec<BindingKey> = spec_workloads(rebalancer)
        .iter()
        .filter(|w| !done.contains_key(&order_key(w)))
        .map(BindingKey::of)
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Whether a binding holding `current` must be marked for a rebalancer created at `created`.
pub fn needs_trigger(current: Option<&Time>, created: &Time) -> bool {
    current.is_none_or(|current| current < created)
}

/// Errors the plan reports instead of guessing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("the WorkloadRebalancer has no creationTimestamp")]
    NoCreationTimestamp,
}

/// One pass over `rebalancer`, given what the lookups of [`bindings_to_look_up`] found (a binding absent from
/// `found` was not looked up and stays pending).
pub fn plan(
    rebalancer: &WorkloadRebalancer,
    found: &BTreeMap<BindingKey, FoundBinding>,
    now: Timestamp,
) -> Result<Plan, PlanError> {
    let created = rebalancer
        .metadata
        .creation_timestamp
        .clone()
        .ok_or(PlanError::NoCreationTimestamp)?;
    let done = recorded(rebalancer);
    let workloads = spec_workloads(rebalancer);
    let mut writes: Vec<BindingWrite> = Vec::new();
    // Removed from the spec but already rescheduled: kept as a record of what happened.
    let mut observed: Vec<ObservedWorkload> = done
        .values()
        .filter(|o| o.result == Some(RebalanceResult::Successful))
        .filter(|o| !workloads.contains(&o.workload))
        .map(|o| (*o).clone())
        .collect();
    let mut pending = false;
    for workload in workloads {
        if let Some(previous) = done.get(&order_key(&workload)) {
            observed.push((*previous).clone());
            continue;
        }
        let key = BindingKey::of(&workload);
        let (result, reason) = match found.get(&key) {
            Some(FoundBinding::Present { triggered_at }) => {
                if needs_trigger(triggered_at.as_ref(), &created)
                    && !writes.iter().any(|w| w.binding == key)
                {
                    writes.push(BindingWrite {
                        binding: key,
                        triggered_at: created.clone(),
                    });
                }
                (Some(RebalanceResult::Successful), String::new())
            }
            Some(FoundBinding::Missing) => (
                Some(RebalanceResult::Failed),
                REASON_REFERENCED_BINDING_NOT_FOUND.to_string(),
            ),
            None => {
                pending = true;
                (None, String::new())
            }
        };
        observed.push(ObservedWorkload {
            workload,
            result,
            reason,
        });
    }

    observed.sort_by_key(|o| order_key(&o.workload));

    let previous = rebalancer.status.clone().unwrap_or_default();
    let observed_generation = rebalancer
        .metadata
        .generation
        .or(previous.observed_generation);
    let unchanged = previous.observed_workloads == observed
        && previous.observed_generation == observed_generation;
    let finish_time = if pending {
        None
    } else if unchanged && previous.finish_time.is_some() {
        previous.finish_time.clone()
    } else {
        Some(Time(now))
    };
    let status = WorkloadRebalancerStatus {
        observed_workloads: observed,
        observed_generation,
        finish_time,
    };
    let next = if pending {
        Next::Retry
    } else {
        ttl_next(
            status.finish_time.as_ref(),
            rebalancer.spec.ttl_seconds_after_finished,
            now,
        )
    };
    Ok(Plan {
        writes,
        status_changed: rebalancer.status.as_ref() != Some(&status),
        status,
        next,
    })
}

/// When a finished rebalancer is due for deletion.
fn ttl_next(finish_time: Option<&Time>, ttl_seconds: Option<i32>, now: Timestamp) -> Next {
    let (Some(finished), Some(ttl)) = (finish_time, ttl_seconds) else {
        return Next::Wait;
    };
    let ttl = jiff::SignedDuration::from_secs(i64::from(ttl.max(0)));
    let Ok(expires) = finished.0.checked_add(ttl) else {
        return Next::Wait;
    };
    let left = now.duration_until(expires);
    if left.is_zero() || left.is_negative() {
        return Next::DeleteNow;
    }
    // Round up so the wake-up never lands just before expiry (which would only requeue once more).
    let millis = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
    Next::DeleteAfter(Duration::from_millis(millis.saturating_add(1)))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
