//! What the binding status controller writes, as pure functions (docs/karmada.md, "Bindings and Works",
//! "Status collection and aggregation").
//!
//! - [`aggregated_status_items`]: one item per Work of the binding, sorted by cluster: `applied` and
//!   `appliedMessage` from the Work's `Applied` condition, `status` and `health` from the manifest status that
//!   describes the template. A Work not applied (condition False or absent) reports Unknown health and no status;
//!   an applied Work whose member status is not collected yet reports Unknown health.
//! - [`fully_applied_condition`]: True iff every cluster the binding exists in (scheduled clusters, `requiredBy`
//!   clusters, graceful-eviction clusters not purged directly) has exactly one applied item.
//! - [`desired_binding_status`]: the binding status with both written, other fields and conditions untouched;
//!   a condition's `lastTransitionTime` only moves when its status changes.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::ResourceBindingSpec;
use karmada_api::policy::PurgeMode;
use karmada_api::work::{
    AggregatedStatusItem, CONDITION_FULLY_APPLIED, MESSAGE_FULLY_APPLIED_FAILED,
    MESSAGE_FULLY_APPLIED_SUCCESS, ManifestStatus, ObjectReference, REASON_FULLY_APPLIED_FAILED,
    REASON_FULLY_APPLIED_SUCCESS, ResourceBindingStatus, ResourceHealth, WORK_CONDITION_APPLIED,
    Work,
};
use serde_json::Value;

use crate::names::cluster_of_execution_namespace;

/// Clusters the binding's resource exists in: scheduled, required by dependents, and being evicted gracefully.
pub fn existing_clusters(spec: &ResourceBindingSpec) -> BTreeSet<String> {
    let mut clusters: BTreeSet<String> = spec.clusters.iter().map(|c| c.name.clone()).collect();
    for snapshot in &spec.required_by {
        clusters.extend(snapshot.clusters.iter().map(|c| c.name.clone()));
    }
    for task in &spec.graceful_eviction_tasks {
        if task.purge_mode != Some(PurgeMode::Directly) {
            clusters.insert(task.from_cluster.clone());
        }
    }
    clusters
}

fn group_of(api_version: &str) -> &str {
    api_version
        .split_once('/')
        .map(|(group, _)| group)
        .unwrap_or_default()
}

/// The manifest status describing `resource`; the only one when the Work carries a single manifest status
/// without a usable identifier.
fn manifest_status_of<'a>(
    statuses: &'a [ManifestStatus],
    resource: &ObjectReference,
) -> Option<&'a ManifestStatus> {
    let group = group_of(&resource.api_version);
    statuses
        .iter()
        .find(|s| {
            let id = &s.identifier;
            id.kind == resource.kind
                && id.name == resource.name
                && id.namespace == resource.namespace
                && id.group == group
        })
        .or(match statuses {
            [only] if only.identifier.name.is_empty() => Some(only),
            _ => None,
        })
}

/// The aggregated item of one Work; `None` for a Work outside an execution namespace.
pub fn aggregated_status_item(
    resource: &ObjectReference,
    work: &Work,
) -> Option<AggregatedStatusItem> {
    let cluster = work
        .metadata
        .namespace
        .as_deref()
        .and_then(cluster_of_execution_namespace)?;
    let status = work.status.as_ref();
    let applied = status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == WORK_CONDITION_APPLIED);
    let mut item = AggregatedStatusItem {
        cluster_name: cluster.to_string(),
        health: Some(ResourceHealth::Unknown),
        ..AggregatedStatusItem::default()
    };
    match applied {
        Some(condition) if condition.status == "True" => item.applied = true,
        Some(condition) => item.applied_message = condition.message.clone(),
        None => {}
    }
    if item.applied
        && let Some(manifest) =
            status.and_then(|s| manifest_status_of(&s.manifest_statuses, resource))
    {
        item.status = manifest.status.clone().filter(|s| !s.is_null());
        if let Some(health) = manifest.health {
            item.health = Some(health);
        }
    }
    Some(item)
}

/// One aggregated item per Work in an execution namespace, sorted by cluster name.
pub fn aggregated_status_items(
    resource: &ObjectReference,
    works: &[Work],
) -> Vec<AggregatedStatusItem> {
    let mut items: Vec<AggregatedStatusItem> = works
        .iter()
        .filter_map(|work| aggregated_status_item(resource, work))
        .collect();
    sort_items(&mut items);
    items
}

/// The order items are written in: by cluster name.
pub fn sort_items(items: &mut [AggregatedStatusItem]) {
    items.sort_by(|a, b| a.cluster_name.cmp(&b.cluster_name));
}

fn fully_applied(spec: &ResourceBindingSpec, items: &[AggregatedStatusItem]) -> bool {
    let targets = existing_clusters(spec);
    !targets.is_empty()
        && items.len() == targets.len()
        && items
            .iter()
            .all(|item| item.applied && targets.contains(&item.cluster_name))
}

/// The FullyApplied condition, transitioning at `now` ([`set_condition`] keeps an unchanged one's time).
pub fn fully_applied_condition(
    spec: &ResourceBindingSpec,
    items: &[AggregatedStatusItem],
    now: &Time,
) -> Condition {
    let (status, reason, message) = if fully_applied(spec, items) {
        (
            "True",
            REASON_FULLY_APPLIED_SUCCESS,
            MESSAGE_FULLY_APPLIED_SUCCESS,
        )
    } else {
        (
            "False",
            REASON_FULLY_APPLIED_FAILED,
            MESSAGE_FULLY_APPLIED_FAILED,
        )
    };
    Condition {
        type_: CONDITION_FULLY_APPLIED.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_transition_time: now.clone(),
        observed_generation: None,
    }
}

/// Sets `condition` in `conditions`, keeping the previous transition time when the status did not change.
pub fn set_condition(conditions: &mut Vec<Condition>, mut condition: Condition) {
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => {
            if existing.status == condition.status {
                condition.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = condition;
        }
        None => conditions.push(condition),
    }
}

/// Gives each condition of the aggregated template `status` that has no `lastTransitionTime` the one the
/// template's `previous` status recorded for its type when the condition's status did not change, else `now`: an
/// aggregator says what holds, the controller knows since when, and an unchanged condition compares equal so
/// nothing is written for it.
pub fn stamp_transition_times(previous: Option<&Value>, status: Option<&mut Value>, now: &Time) {
    let Some(conditions) = status
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let previous = previous
        .and_then(|p| p.get("conditions"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let field = |condition: &Value, name: &str| {
        condition
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    for condition in conditions {
        let Some(map) = condition.as_object_mut() else {
            continue;
        };
        if map.contains_key("lastTransitionTime") {
            continue;
        }
        let kept = previous
            .iter()
            .find(|p| field(p, "type").as_deref() == map.get("type").and_then(Value::as_str))
            .filter(|p| field(p, "status").as_deref() == map.get("status").and_then(Value::as_str))
            .and_then(|p| field(p, "lastTransitionTime"));
        let time = kept.unwrap_or_else(|| now.0.to_string());
        map.insert("lastTransitionTime".into(), Value::String(time));
    }
}

/// The binding status to write: `current` with the aggregated `items` (one per Work, in any order) and the
/// FullyApplied condition.
pub fn desired_binding_status(
    current: Option<&ResourceBindingStatus>,
    spec: &ResourceBindingSpec,
    mut items: Vec<AggregatedStatusItem>,
    now: &Time,
) -> ResourceBindingStatus {
    // Everything but the aggregated items, which are replaced (a copy of them costs as much as making them).
    let mut status = current.map_or_else(ResourceBindingStatus::default, |current| {
        ResourceBindingStatus {
            scheduler_observed_generation: current.scheduler_observed_generation,
            scheduler_observed_affinity_name: current.scheduler_observed_affinity_name.clone(),
            last_scheduled_time: current.last_scheduled_time.clone(),
            conditions: current.conditions.clone(),
            aggregated_status: Vec::new(),
        }
    });
    sort_items(&mut items);
    status.aggregated_status = items;
    let condition = fully_applied_condition(spec, &status.aggregated_status, now);
    set_condition(&mut status.conditions, condition);
    status
}

/// Ready replicas the members report: `readyReplicas` (workloads) or `numberReady` (DaemonSet), summed.
pub fn ready_replicas(items: &[AggregatedStatusItem]) -> i64 {
    items
        .iter()
        .filter_map(|item| item.status.as_ref())
        .filter_map(|status| {
            status
                .get("readyReplicas")
                .or_else(|| status.get("numberReady"))
                .and_then(Value::as_i64)
        })
        .sum()
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
