//! The DaemonSet controller: one pod per eligible node.
//!
//! A node is eligible when the pod template (plus the tolerations the DaemonSet controller adds:
//! not-ready/unreachable `NoExecute`, the pressure and unschedulable `NoSchedule` taints) passes
//! the node selector, required affinity and taint checks. Pods are pinned with a required
//! `matchFields metadata.name` node affinity and bound by the scheduler, as in Kubernetes. Extra
//! pods on a node and pods on vanished nodes, nodes they no longer select, or nodes with an
//! untolerated `NoExecute` taint are deleted; a new `NoSchedule` taint only stops new pods (the
//! old one is counted as misscheduled but keeps running). RollingUpdate replaces
//! outdated pods (label `controller-revision-hash`), at most `maxUnavailable` (default 1,
//! percentages round up) unavailable at a time; `maxSurge` is not modeled.
//!
//! Status: desiredNumberScheduled, currentNumberScheduled, numberMisscheduled, numberReady,
//! updatedNumberScheduled, numberAvailable, numberUnavailable, observedGeneration.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::meta;
use crate::naming::{self, Randomness};
use crate::objects::{Controlled, ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::pods;
use crate::predicates;
use crate::replicaset::unique_pod_name;
use crate::rollout;

pub const REVISION_LABEL: &str = "controller-revision-hash";
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

fn daemon_tolerations() -> Vec<Value> {
    let mut tolerations = vec![
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}),
    ];
    for key in [
        "disk-pressure",
        "memory-pressure",
        "pid-pressure",
        "unschedulable",
    ] {
        tolerations.push(json!({"key": format!("node.kubernetes.io/{key}"), "operator": "Exists", "effect": "NoSchedule"}));
    }
    tolerations
}

/// The pod template as the DaemonSet controller runs it: its tolerations added.
fn effective_template(ds: &Value) -> Value {
    let mut template = ds
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut tolerations: Vec<Value> = template
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for toleration in daemon_tolerations() {
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
    meta::set_path(
        &mut template,
        &["spec", "tolerations"],
        Value::Array(tolerations),
    );
    template
}

/// The template hash behind `controller-revision-hash`.
pub fn revision(ds: &Value) -> String {
    let template = ds
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    naming::stable_hash(&template, meta::i64_at(ds, "/status/collisionCount"))
}

/// The node a daemon pod is for: its binding, else its pinned affinity.
pub fn target_node(pod: &Value) -> String {
    let bound = meta::str_at(pod, "/spec/nodeName");
    if !bound.is_empty() {
        return bound.to_string();
    }
    pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|term| term.get("matchFields").and_then(Value::as_array))
        .flatten()
        .find(|f| meta::str_at(f, "/key") == "metadata.name")
        .and_then(|f| f.pointer("/values/0"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn build_pod(ds: &Value, template: &Value, node: &str, name: &str) -> Value {
    let mut pod = pods::from_template(template, ds, name, &format!("{}-", meta::name(ds)));
    meta::set_path(
        &mut pod,
        &["metadata", "labels", REVISION_LABEL],
        json!(revision(ds)),
    );
    meta::set_path(
        &mut pod,
        &["metadata", "labels", TEMPLATE_GENERATION_LABEL],
        json!(meta::generation(ds).to_string()),
    );
    let pin = json!({"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node]}
    ]}]});
    meta::set_path(
        &mut pod,
        &[
            "spec",
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
        pin,
    );
    pod
}

/// One pass over every DaemonSet.
pub fn reconcile(objects: &Objects, now: Timestamp, randomness: &mut dyn Randomness) -> Outcome {
    let mut outcome = Outcome::default();
    let mut taken = BTreeSet::new();
    let pods_by_owner = Controlled::index(objects, "Pod");
    for ds in objects.list("DaemonSet") {
        if !meta::is_terminating(ds) {
            let owned = pods_by_owner.of(ds);
            sync(
                objects,
                &owned,
                ds,
                now,
                randomness,
                &mut taken,
                &mut outcome,
            );
        }
    }
    outcome
}

#[allow(clippy::too_many_arguments)]
fn sync(
    objects: &Objects,
    owned: &[&Value],
    ds: &Value,
    now: Timestamp,
    randomness: &mut dyn Randomness,
    taken: &mut BTreeSet<String>,
    outcome: &mut Outcome,
) {
    let template = effective_template(ds);
    let nodes = NodeSets::of(objects, &template);
    let by_node = pods_by_node(owned);
    let current = revision(ds);
    let is_current = |pod: &Value| {
        meta::labels(pod)
            .get(REVISION_LABEL)
            .and_then(Value::as_str)
            == Some(current.as_str())
    };
    let min_ready = meta::i64_at(ds, "/spec/minReadySeconds");
    let available = |pod: &Value| pods::is_available(pod, min_ready, now);
    let mut deleted: BTreeSet<String> = BTreeSet::new();
    for node in &nodes.eligible {
        match by_node.get(*node) {
            None => {
                let name = unique_pod_name(
                    objects,
                    meta::namespace(ds),
                    meta::name(ds),
                    taken,
                    randomness,
                );
                outcome.write(Write::Create(build_pod(ds, &template, node, &name)));
            }
            Some(list) => {
                for extra in list.iter().skip(1) {
                    deleted.insert(meta::name(extra).to_string());
                    outcome.write(Write::Delete(ObjectKey::of(extra)));
                }
            }
        }
    }
    let misscheduled = evict_misscheduled(&nodes, &by_node, &mut deleted, outcome);
    // Per eligible node: its (first) daemon pod.
    let daemon_pods: Vec<&Value> = nodes
        .eligible
        .iter()
        .filter_map(|n| by_node.get(*n).and_then(|l| l.first().copied()))
        .collect();
    if meta::str_at(ds, "/spec/updateStrategy/type") != "OnDelete" {
        let desired = i64::try_from(nodes.eligible.len()).unwrap_or(i64::MAX);
        let outdated = daemon_pods.iter().copied().filter(|p| !is_current(p));
        for pod in rolling_update_victims(ds, desired, &daemon_pods, outdated, &available) {
            if deleted.insert(meta::name(pod).to_string()) {
                outcome.write(Write::Delete(ObjectKey::of(pod)));
            }
        }
    }
    for pod in &daemon_pods {
        if let Err(at) = pods::availability(pod, min_ready, now) {
            outcome.requeue(at);
        }
    }
    let counts = StatusCounts {
        desired: nodes.eligible.len(),
        misscheduled,
    };
    let status = daemon_status(ds, &daemon_pods, counts, &is_current, &available);
    if ds.get("status") != Some(&status) {
        outcome.write(Write::UpdateStatus(meta::with_status(ds, status)));
    }
}

/// The nodes a DaemonSet's pod template fits.
struct NodeSets<'a> {
    /// Fits wholly: a daemon pod runs there.
    eligible: BTreeSet<&'a str>,
    /// A daemon pod already there may stay despite NoSchedule taints, as in Kubernetes.
    may_continue: BTreeSet<&'a str>,
}

impl<'a> NodeSets<'a> {
    fn of(objects: &'a Objects, template: &Value) -> Self {
        let probe = json!({"spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
        let eligible = objects
            .list("Node")
            .filter(|node| predicates::placement_unfit(&probe, node).is_none())
            .map(meta::name)
            .collect();
        let may_continue = objects
            .list("Node")
            .filter(|node| {
                predicates::matches_node_affinity(&probe, node)
                    && !predicates::has_untolerated_no_execute_taint(&probe, node)
            })
            .map(meta::name)
            .collect();
        NodeSets {
            eligible,
            may_continue,
        }
    }
}

/// The active pods by the node they are for, oldest first.
fn pods_by_node<'a>(owned: &[&'a Value]) -> BTreeMap<String, Vec<&'a Value>> {
    let mut by_node: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for pod in owned.iter().copied() {
        if pods::is_active(pod) {
            by_node.entry(target_node(pod)).or_default().push(pod);
        }
    }
    for list in by_node.values_mut() {
        list.sort_by_key(|p| {
            (
                meta::str_at(p, "/metadata/creationTimestamp").to_string(),
                meta::name(p).to_string(),
            )
        });
    }
    by_node
}

/// Deletes the pods on nodes that are not eligible, unless they may continue there; the number of such
/// nodes (`numberMisscheduled`).
fn evict_misscheduled(
    nodes: &NodeSets<'_>,
    by_node: &BTreeMap<String, Vec<&Value>>,
    deleted: &mut BTreeSet<String>,
    outcome: &mut Outcome,
) -> i64 {
    let mut misscheduled = 0;
    for (node, list) in by_node {
        if !nodes.eligible.contains(node.as_str()) {
            misscheduled += 1;
            if nodes.may_continue.contains(node.as_str()) {
                continue;
            }
            for pod in list {
                deleted.insert(meta::name(pod).to_string());
                outcome.write(Write::Delete(ObjectKey::of(pod)));
            }
        }
    }
    misscheduled
}

/// The outdated pods a RollingUpdate replaces now: unavailable ones always, available ones within
/// `maxUnavailable` (less the pods unavailable already).
fn rolling_update_victims<'a>(
    ds: &Value,
    desired: i64,
    daemon_pods: &[&Value],
    outdated: impl Iterator<Item = &'a Value>,
    available: &impl Fn(&Value) -> bool,
) -> Vec<&'a Value> {
    let max_unavailable = rollout::int_or_percent(
        ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable"),
        "1",
        desired,
        true,
        "spec.updateStrategy.rollingUpdate.maxUnavailable",
    )
    .unwrap_or(1)
    .max(1);
    let unavailable = desired - daemon_pods.iter().filter(|p| available(p)).count() as i64;
    let mut budget = max_unavailable - unavailable;
    let mut victims = Vec::new();
    for pod in outdated {
        // Outdated pods that are already unavailable cost nothing to replace.
        if available(pod) {
            if budget <= 0 {
                continue;
            }
            budget -= 1;
        }
        victims.push(pod);
    }
    victims
}

/// What the status counts besides the pods.
#[derive(Clone, Copy)]
struct StatusCounts {
    /// Eligible nodes.
    desired: usize,
    misscheduled: i64,
}

/// The DaemonSet's status from its daemon pods (one per eligible node that has one).
fn daemon_status(
    ds: &Value,
    daemon_pods: &[&Value],
    counts: StatusCounts,
    is_current: &impl Fn(&Value) -> bool,
    available: &impl Fn(&Value) -> bool,
) -> Value {
    let scheduled: Vec<&Value> = daemon_pods
        .iter()
        .copied()
        .filter(|p| !meta::str_at(p, "/spec/nodeName").is_empty())
        .collect();
    let desired = counts.desired;
    let number_available = scheduled.iter().filter(|p| available(p)).count();
    let mut status = ds.get("status").cloned().unwrap_or_else(|| json!({}));
    for (field, value) in [
        ("desiredNumberScheduled", desired as i64),
        ("currentNumberScheduled", scheduled.len() as i64),
        ("numberMisscheduled", counts.misscheduled),
        (
            "numberReady",
            scheduled.iter().filter(|p| pods::is_ready(p)).count() as i64,
        ),
        (
            "updatedNumberScheduled",
            scheduled.iter().filter(|p| is_current(p)).count() as i64,
        ),
        ("numberAvailable", number_available as i64),
        (
            "numberUnavailable",
            desired.saturating_sub(number_available) as i64,
        ),
        ("observedGeneration", meta::generation(ds)),
    ] {
        meta::set_path(&mut status, &[field], json!(value));
    }
    status
}

/// Whether `kubectl rollout status` would report the DaemonSet rolled out: observed, every
/// desired node running an updated, available pod.
pub fn rollout_status(ds: &Value) -> bool {
    let status = |field: &str| meta::i64_at(ds, &format!("/status/{field}"));
    status("observedGeneration") >= meta::generation(ds)
        && status("updatedNumberScheduled") >= status("desiredNumberScheduled")
        && status("numberAvailable") >= status("desiredNumberScheduled")
}
