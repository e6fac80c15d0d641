//! The simulated kube-scheduler: binds Pending pods to nodes, or records why it cannot.
//!
//! Filters run in kube-scheduler's order (NodeUnschedulable, TaintToleration, NodeAffinity,
//! NodeResourcesFit); a node fails on its first failing filter, except that the resource filter
//! reports every resource that is short. Among feasible nodes the least allocated wins (mean of
//! free CPU and memory percentages after placing the pod, counting request-less pods as 100m /
//! 200Mi as the scheduler does for scoring), ties broken by node name, so the choice is
//! deterministic. Pods are placed one at a time in priority, then creation, order and each
//! placement counts against the next: a pass never overcommits a node.
//!
//! When nothing fits the pod keeps `PodScheduled=False`, reason `Unschedulable`, with
//! kube-scheduler's message, e.g. `0/3 nodes are available: 3 Insufficient cpu. preemption:
//! 0/3 nodes are available: 3 No preemption victims found for incoming pod.` Preemption itself
//! is not modeled (no pod is ever evicted).

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::meta::{self, Condition};
use crate::objects::{ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::predicates::{self, Unfit};
use crate::resources::{self, Resources};

pub const DEFAULT_SCHEDULER: &str = "default-scheduler";
/// What the scorer assumes a container without requests uses.
const NON_ZERO_CPU_MILLIS: i64 = 100;
const NON_ZERO_MEMORY_BYTES: i64 = 200 * 1024 * 1024;

/// A node as the scheduler sees it during one pass.
#[derive(Clone, Debug)]
pub struct NodeUsage {
    pub allocatable: Resources,
    pub requested: Resources,
    /// Requests with request-less pods counted at the scoring defaults.
    pub scored: Resources,
}

fn non_zero(pod: &Value) -> Resources {
    let mut requests = resources::pod_requests(pod);
    if requests.cpu_millis == 0 {
        requests.cpu_millis = NON_ZERO_CPU_MILLIS;
    }
    if requests.memory_bytes == 0 {
        requests.memory_bytes = NON_ZERO_MEMORY_BYTES;
    }
    requests
}

/// Current usage of every node by the pods bound to it.
pub fn node_usage(objects: &Objects) -> BTreeMap<String, NodeUsage> {
    let mut usage: BTreeMap<String, NodeUsage> = objects
        .list("Node")
        .map(|node| {
            let entry = NodeUsage {
                allocatable: resources::node_allocatable(node),
                requested: Resources::default(),
                scored: Resources::default(),
            };
            (meta::name(node).to_string(), entry)
        })
        .collect();
    for pod in objects.list("Pod").filter(|p| resources::occupies_node(p)) {
        if let Some(entry) = usage.get_mut(meta::str_at(pod, "/spec/nodeName")) {
            entry.requested = entry.requested + resources::pod_requests(pod);
            entry.scored = entry.scored + non_zero(pod);
        }
    }
    usage
}

/// Resource shortages, in kube-scheduler's order (pods, cpu, memory).
pub fn resource_unfit(request: &Resources, usage: &NodeUsage) -> Vec<Unfit> {
    let free = usage.allocatable - usage.requested;
    let mut unfit = Vec::new();
    if request.pods > free.pods {
        unfit.push(Unfit::TooManyPods);
    }
    if request.cpu_millis > 0 && request.cpu_millis > free.cpu_millis {
        unfit.push(Unfit::Insufficient("cpu"));
    }
    if request.memory_bytes > 0 && request.memory_bytes > free.memory_bytes {
        unfit.push(Unfit::Insufficient("memory"));
    }
    unfit
}

fn least_allocated_score(pod: &Value, usage: &NodeUsage) -> i64 {
    let after = usage.scored + non_zero(pod);
    let free_percent = |allocatable: i64, requested: i64| {
        if allocatable <= 0 || requested > allocatable {
            0
        } else {
            (allocatable - requested) * 100 / allocatable
        }
    };
    (free_percent(usage.allocatable.cpu_millis, after.cpu_millis)
        + free_percent(usage.allocatable.memory_bytes, after.memory_bytes))
        / 2
}

/// Is this pod waiting for the default scheduler?
pub fn needs_scheduling(pod: &Value) -> bool {
    let scheduler = meta::str_at(pod, "/spec/schedulerName");
    meta::str_at(pod, "/spec/nodeName").is_empty()
        && !meta::is_terminating(pod)
        && (scheduler.is_empty() || scheduler == DEFAULT_SCHEDULER)
        && matches!(meta::str_at(pod, "/status/phase"), "" | "Pending")
}

/// The outcome of trying to place one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    Node(String),
    Unschedulable(String),
}

/// Chooses a node for `pod` given the current usage (which the caller updates on success).
pub fn place(pod: &Value, nodes: &[&Value], usage: &BTreeMap<String, NodeUsage>) -> Placement {
    if nodes.is_empty() {
        return Placement::Unschedulable("no nodes available to schedule pods".to_string());
    }
    let request = resources::pod_requests(pod);
    let mut best: Option<(i64, &str)> = None;
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut preemption: BTreeMap<&'static str, usize> = BTreeMap::new();
    for node in nodes {
        let name = meta::name(node);
        let Some(node_usage) = usage.get(name) else {
            continue;
        };
        let unfit = match predicates::placement_unfit(pod, node) {
            Some(unfit) => vec![unfit],
            None => resource_unfit(&request, node_usage),
        };
        if unfit.is_empty() {
            let score = least_allocated_score(pod, node_usage);
            if best.is_none_or(|(best_score, best_name)| {
                (score, std::cmp::Reverse(name)) > (best_score, std::cmp::Reverse(best_name))
            }) {
                best = Some((score, name));
            }
            continue;
        }
        let helpful = unfit.iter().all(Unfit::preemption_could_help);
        let preemption_reason = if helpful {
            "No preemption victims found for incoming pod"
        } else {
            "Preemption is not helpful for scheduling"
        };
        *preemption.entry(preemption_reason).or_default() += 1;
        for reason in unfit {
            *reasons.entry(reason.message()).or_default() += 1;
        }
    }
    if let Some((_, name)) = best {
        return Placement::Node(name.to_string());
    }
    Placement::Unschedulable(unschedulable_message(nodes.len(), &reasons, &preemption))
}

/// kube-scheduler's FitError text: `count reason` pairs sorted as strings.
fn unschedulable_message(
    total: usize,
    reasons: &BTreeMap<String, usize>,
    preemption: &BTreeMap<&'static str, usize>,
) -> String {
    let histogram = |pairs: Vec<String>| {
        let mut pairs = pairs;
        pairs.sort();
        pairs.join(", ")
    };
    let filter = histogram(reasons.iter().map(|(r, n)| format!("{n} {r}")).collect());
    let post = histogram(preemption.iter().map(|(r, n)| format!("{n} {r}")).collect());
    format!(
        "0/{total} nodes are available: {filter}. preemption: 0/{total} nodes are available: {post}."
    )
}

fn scheduling_order(pod: &Value) -> (std::cmp::Reverse<i64>, String, String, String) {
    (
        std::cmp::Reverse(meta::i64_at(pod, "/spec/priority")),
        meta::str_at(pod, "/metadata/creationTimestamp").to_string(),
        meta::namespace(pod).to_string(),
        meta::name(pod).to_string(),
    )
}

/// One scheduling pass over every pod waiting for the default scheduler.
pub fn reconcile(objects: &Objects, now: Timestamp) -> Outcome {
    let mut outcome = Outcome::default();
    let nodes: Vec<&Value> = objects.list("Node").collect();
    let mut usage = node_usage(objects);
    let mut pending: Vec<&Value> = objects
        .list("Pod")
        .filter(|p| needs_scheduling(p))
        .collect();
    pending.sort_by_key(|pod| scheduling_order(pod));
    for pod in pending {
        match place(pod, &nodes, &usage) {
            Placement::Node(node) => {
                if let Some(entry) = usage.get_mut(&node) {
                    entry.requested = entry.requested + resources::pod_requests(pod);
                    entry.scored = entry.scored + non_zero(pod);
                }
                outcome.write(Write::Bind {
                    pod: ObjectKey::of(pod),
                    node,
                });
            }
            Placement::Unschedulable(message) => {
                let mut conditions = meta::conditions(pod);
                let index = meta::set_condition(
                    &mut conditions,
                    Condition::new("PodScheduled", "False", "Unschedulable", &message),
                    now,
                );
                meta::set_path(&mut conditions[index], &["lastProbeTime"], Value::Null);
                let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
                meta::set_path(&mut status, &["phase"], json!("Pending"));
                meta::set_path(&mut status, &["conditions"], Value::Array(conditions));
                if pod.get("status") != Some(&status) {
                    outcome.write(Write::UpdateStatus(meta::with_status(pod, status)));
                }
            }
        }
    }
    outcome
}
