//! The pure part of `GetUnschedulableReplicas`: a Deployment's pods are those of its newest ReplicaSet (the one
//! with the Deployment's revision, as the deployment controller records it in `deployment.kubernetes.io/revision`),
//! and a replica is unschedulable when its pod's PodScheduled condition has been False with reason
//! Unschedulable for longer than the threshold (docs/karmada.md, "Descheduler"). Other kinds are not supported, as in
//! Karmada.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

/// The annotation the deployment controller keeps the revision in, on Deployments and their ReplicaSets.
pub const ANNOTATION_REVISION: &str = "deployment.kubernetes.io/revision";

fn revision(annotations: Option<&std::collections::BTreeMap<String, String>>) -> Option<i64> {
    annotations?.get(ANNOTATION_REVISION)?.parse().ok()
}

fn owned_by(
    owners: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>,
    uid: &str,
) -> bool {
    owners
        .into_iter()
        .flatten()
        .any(|owner| owner.controller == Some(true) && owner.uid == uid)
}

/// The Deployment's current ReplicaSet among `sets`: owned by it, with its revision (or, without revisions, the
/// newest revision it owns).
pub fn newest_replica_set<'s>(
    deployment: &Deployment,
    sets: &'s [ReplicaSet],
) -> Option<&'s ReplicaSet> {
    let uid = deployment.metadata.uid.as_deref().unwrap_or_default();
    let owned = sets
        .iter()
        .filter(|set| owned_by(set.metadata.owner_references.as_ref(), uid));
    let wanted = revision(deployment.metadata.annotations.as_ref());
    let mut best: Option<(&ReplicaSet, i64)> = None;
    for set in owned {
        let set_revision = revision(set.metadata.annotations.as_ref()).unwrap_or(0);
        if wanted == Some(set_revision) {
            return Some(set);
        }
        if best.is_none_or(|(_, r)| set_revision > r) {
            best = Some((set, set_revision));
        }
    }
    best.map(|(set, _)| set)
}

/// Since when `pod` has been unschedulable (its PodScheduled=False condition with reason Unschedulable).
pub fn unschedulable_since(pod: &Pod) -> Option<Timestamp> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")?;
    if condition.status != "False" || condition.reason.as_deref() != Some("Unschedulable") {
        return None;
    }
    condition.last_transition_time.as_ref().map(|at| at.0)
}

/// How many of `pods` (those of the workload's current ReplicaSet) have been unschedulable for longer than
/// `threshold` at `now`.
pub fn unschedulable_replicas<'p>(
    pods: impl IntoIterator<Item = &'p Pod>,
    replica_set_uid: &str,
    now: Timestamp,
    threshold: SignedDuration,
) -> i32 {
    let threshold = threshold.max(SignedDuration::ZERO);
    let count = pods
        .into_iter()
        .filter(|pod| owned_by(pod.metadata.owner_references.as_ref(), replica_set_uid))
        .filter_map(unschedulable_since)
        .filter(|since| {
            since
                .saturating_add(threshold)
                .is_ok_and(|until| until < now)
        })
        .count();
    i32::try_from(count).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(owner: &str, condition: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": owner, "controller": true}]},
            "status": {"conditions": [condition]}
        }))
        .expect("pod")
    }

    #[test]
    fn counts_pods_unschedulable_beyond_the_threshold() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().expect("time");
        let unschedulable = |at: &str| json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": at});
        let pods = [
            pod("rs-2", unschedulable("2026-01-01T00:00:00Z")),
            pod("rs-2", unschedulable("2026-01-01T00:09:00Z")),
            pod("rs-1", unschedulable("2026-01-01T00:00:00Z")),
            pod(
                "rs-2",
                json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}),
            ),
        ];
        let count = unschedulable_replicas(&pods, "rs-2", now, SignedDuration::from_mins(5));
        assert_eq!(count, 1);
        assert_eq!(
            unschedulable_replicas(&pods, "rs-2", now, SignedDuration::ZERO),
            2
        );
    }

    #[test]
    fn the_current_replica_set_has_the_deployments_revision() {
        let deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web", "uid": "d", "annotations": {ANNOTATION_REVISION: "2"}}
        }))
        .expect("deployment");
        let set = |name: &str, revision: &str, owner: &str| -> ReplicaSet {
            serde_json::from_value(json!({"metadata": {"name": name, "uid": name, "annotations": {ANNOTATION_REVISION: revision},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": owner, "controller": true}]}}))
            .expect("set")
        };
        let sets = [
            set("a", "1", "d"),
            set("b", "2", "d"),
            set("c", "3", "other"),
        ];
        assert_eq!(
            newest_replica_set(&deployment, &sets).and_then(|s| s.metadata.name.as_deref()),
            Some("b")
        );
        let sets = [set("a", "1", "d"), set("x", "7", "d")];
        assert_eq!(
            newest_replica_set(&deployment, &sets).and_then(|s| s.metadata.name.as_deref()),
            Some("x")
        );
    }
}
