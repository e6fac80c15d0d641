//! Scale mode: workload status computed from capacity, without Pod objects, so hundreds of
//! member clusters with thousands of nodes fit in one process.
//!
//! The model. A cluster is a list of per-node free capacities ([`CapacityModel`]; 24 bytes a
//! node). A workload asks for `replicas` copies of one request (its pod template's effective
//! request, counting one pod each). Identical replicas fit a node `min(free cpu / cpu request,
//! free memory / memory request, free pods)` times (a zero request does not limit), so the number
//! that fit is the sum over nodes, whatever the placement order; [`CapacityModel::place`] then
//! consumes that capacity so workloads placed later see what is left (first come, first
//! served, like the scheduler's queue). Every replica that fits counts as Running, Ready and
//! available (the steady state; startup delays and `minReadySeconds` are not simulated);
//! replicas that do not fit count as Pending pods. Node selectors, affinity and taints are not
//! considered: callers pass only the nodes a workload may use.
//!
//! From that, [`deployment_status`] reports what the Deployment controller would once the
//! rollout settles (replicas = updated = spec.replicas, ready = available = fitting replicas, the
//! Available and Progressing conditions with Kubernetes' reasons, ProgressDeadlineExceeded once
//! a shortfall outlasts the deadline) and [`statefulset_status`] what the StatefulSet controller
//! would (OrderedReady stops creating at the first pod that cannot run, so only one Pending pod
//! exists; Parallel creates them all).
//!
//! [`reconcile`] is the scale-mode controller that replaces the scheduler, kubelet and workload
//! controllers: it places every Deployment and StatefulSet, oldest first, on the Ready,
//! schedulable nodes and writes the resulting statuses. A crashed workload
//! ([`Faults::crashed_workloads`]) keeps its capacity but reports nothing ready.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::deployment;
use crate::faults::Faults;
use crate::kubelet;
use crate::meta::{self, Condition};
use crate::objects::{ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::resources::{self, Resources};
use crate::rollout::{self, RollingParams};
use crate::statefulset;

mod incremental;
pub use incremental::ScaleModeState;

/// Free capacity per node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CapacityModel {
    pub free: Vec<Resources>,
}

impl CapacityModel {
    /// `count` identical nodes, each offering `allocatable`.
    pub fn uniform(count: usize, allocatable: Resources) -> Self {
        Self {
            free: vec![allocatable; count],
        }
    }

    /// From Node objects (allocatable), less what pods already bound to them request.
    pub fn from_nodes(nodes: &[Value], pods: &[Value]) -> Self {
        let free = nodes
            .iter()
            .map(|node| {
                let used = pods
                    .iter()
                    .filter(|p| {
                        meta::str_at(p, "/spec/nodeName") == meta::name(node)
                            && resources::occupies_node(p)
                    })
                    .map(resources::pod_requests)
                    .fold(Resources::default(), |a, b| a + b);
                resources::node_allocatable(node) - used
            })
            .collect();
        Self { free }
    }

    /// How many copies of `request` one node can still take.
    pub fn fits_on(free: &Resources, request: &Resources) -> i64 {
        let ratio = |free: i64, need: i64| {
            if need <= 0 {
                i64::MAX
            } else {
                (free / need).max(0)
            }
        };
        ratio(free.cpu_millis, request.cpu_millis)
            .min(ratio(free.memory_bytes, request.memory_bytes))
            .min(ratio(free.pods, request.pods.max(1)))
    }

    /// How many copies of `request` fit in total.
    pub fn fit(&self, request: &Resources) -> i64 {
        self.free
            .iter()
            .map(|f| Self::fits_on(f, request))
            .fold(0i64, i64::saturating_add)
    }

    /// Places up to `replicas` copies, consuming capacity; returns how many were placed.
    pub fn place(&mut self, request: &Resources, replicas: i64) -> i64 {
        self.place_tracked(request, replicas, |_, _| {})
    }

    /// [`CapacityModel::place`], telling `taken` how many copies went to which node index (so
    /// they can be given back with [`CapacityModel::give_back`]).
    pub fn place_tracked(
        &mut self,
        request: &Resources,
        replicas: i64,
        mut taken: impl FnMut(usize, i64),
    ) -> i64 {
        let mut placed = 0;
        for (index, free) in self.free.iter_mut().enumerate() {
            if placed >= replicas {
                break;
            }
            let here = Self::fits_on(free, request).min(replicas - placed);
            if here <= 0 {
                continue;
            }
            *free = *free - consumption(request, here);
            taken(index, here);
            placed += here;
        }
        placed
    }

    /// Returns what [`CapacityModel::place_tracked`] took for `request` on one node.
    pub fn give_back(&mut self, request: &Resources, node: usize, copies: i64) {
        if let Some(free) = self.free.get_mut(node) {
            *free = *free + consumption(request, copies);
        }
    }
}

/// What `copies` replicas of `request` hold on a node (each counts as at least one pod).
fn consumption(request: &Resources, copies: i64) -> Resources {
    Resources {
        cpu_millis: request.cpu_millis * copies,
        memory_bytes: request.memory_bytes * copies,
        pods: request.pods.max(1) * copies,
    }
}

/// The effective request of one replica of a workload (its pod template).
pub fn replica_request(workload: &Value) -> Resources {
    let template = workload
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    resources::pod_requests(&template)
}

/// The Deployment status for `running` replicas able to run, as of `now`.
pub fn deployment_status(
    deployment_object: &Value,
    running: i64,
    now: Timestamp,
) -> Result<Value, String> {
    let replicas = meta::i64_or(deployment_object, "/spec/replicas", 1).max(0);
    let params = if meta::str_at(deployment_object, "/spec/strategy/type") == "Recreate" {
        RollingParams {
            max_surge: 0,
            max_unavailable: 0,
        }
    } else {
        rollout::rolling_params(deployment_object, replicas)?
    };
    let available = running.clamp(0, replicas);
    let old = deployment_object
        .get("status")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut status = old.clone();
    for (field, value) in [
        ("observedGeneration", meta::generation(deployment_object)),
        ("replicas", replicas),
        ("updatedReplicas", replicas),
        ("readyReplicas", available),
        ("availableReplicas", available),
        ("unavailableReplicas", replicas - available),
    ] {
        meta::set_path(&mut status, &[field], json!(value));
    }
    let rs_name = deployment::new_replica_set_name(deployment_object);
    let mut conditions = meta::conditions(deployment_object);
    let available_condition = if available >= replicas - params.max_unavailable {
        Condition::new(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        Condition::new(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    deployment::set_deployment_condition(&mut conditions, available_condition, now, false);
    let progressed = available > meta::i64_at(&old, "/availableReplicas")
        || replicas > meta::i64_at(&old, "/updatedReplicas");
    if available == replicas {
        let message = format!("ReplicaSet \"{rs_name}\" has successfully progressed.");
        deployment::set_deployment_condition(
            &mut conditions,
            Condition::new("Progressing", "True", "NewReplicaSetAvailable", &message),
            now,
            false,
        );
    } else if progressed || meta::find_condition(&conditions, "Progressing").is_none() {
        let message = format!("ReplicaSet \"{rs_name}\" is progressing.");
        deployment::set_deployment_condition(
            &mut conditions,
            Condition::new("Progressing", "True", "ReplicaSetUpdated", &message),
            now,
            true,
        );
    } else {
        let deadline = meta::i64_or(deployment_object, "/spec/progressDeadlineSeconds", 600);
        let current = meta::find_condition(&conditions, "Progressing")
            .cloned()
            .unwrap_or_default();
        let last_update = meta::parse_time(meta::str_at(&current, "/lastUpdateTime"));
        if meta::str_at(&current, "/reason") == "ReplicaSetUpdated"
            && last_update.is_some_and(|t| t + SignedDuration::from_secs(deadline) < now)
        {
            let message = format!("ReplicaSet \"{rs_name}\" has timed out progressing.");
            deployment::set_deployment_condition(
                &mut conditions,
                Condition::new("Progressing", "False", "ProgressDeadlineExceeded", &message),
                now,
                false,
            );
        }
    }
    conditions.sort_by_key(|c| u8::from(meta::str_at(c, "/type") != "Available"));
    meta::set_path(&mut status, &["conditions"], Value::Array(conditions));
    Ok(status)
}

/// The StatefulSet status for `running` replicas able to run.
pub fn statefulset_status(sts: &Value, running: i64) -> Value {
    let replicas = meta::i64_or(sts, "/spec/replicas", 1).max(0);
    let ready = running.clamp(0, replicas);
    let parallel = meta::str_at(sts, "/spec/podManagementPolicy") == "Parallel";
    // OrderedReady creates the next pod only after the previous is Ready: one Pending pod at most.
    let created = if parallel {
        replicas
    } else {
        (ready + 1).min(replicas)
    };
    let revision = statefulset::update_revision(sts);
    let mut status = sts.get("status").cloned().unwrap_or_else(|| json!({}));
    for (field, value) in [
        ("observedGeneration", json!(meta::generation(sts))),
        ("replicas", json!(created)),
        ("readyReplicas", json!(ready)),
        ("currentReplicas", json!(created)),
        ("updatedReplicas", json!(created)),
        ("availableReplicas", json!(ready)),
        ("currentRevision", json!(revision)),
        ("updateRevision", json!(revision)),
        ("collisionCount", json!(0)),
    ] {
        meta::set_path(&mut status, &[field], value);
    }
    status
}

/// Placement order: first created, first served (then kind, namespace and name).
pub(crate) type Slot = (String, ObjectKey);

pub(crate) fn slot_of(workload: &Value) -> Slot {
    (
        meta::str_at(workload, "/metadata/creationTimestamp").to_string(),
        ObjectKey::of(workload),
    )
}

/// The Ready, schedulable nodes' free capacity.
pub(crate) fn capacity_of(objects: &Objects) -> CapacityModel {
    let nodes: Vec<Value> = objects
        .list("Node")
        .filter(|node| {
            kubelet::node_is_ready(node)
                && node.pointer("/spec/unschedulable").and_then(Value::as_bool) != Some(true)
        })
        .cloned()
        .collect();
    let pods: Vec<Value> = objects.list("Pod").cloned().collect();
    CapacityModel::from_nodes(&nodes, &pods)
}

/// What a workload reports with `running` replicas able to run.
pub(crate) struct WorkloadStatus {
    pub status: Value,
    /// When to look again (a stalled rollout's deadline).
    pub requeue: Option<Timestamp>,
}

/// The status of one placed workload, or why its spec is unusable.
pub(crate) fn workload_status(
    workload: &Value,
    running: i64,
    now: Timestamp,
) -> Result<WorkloadStatus, String> {
    let replicas = meta::i64_or(workload, "/spec/replicas", 1).max(0);
    let status = if meta::str_at(workload, "/kind") == "Deployment" {
        deployment_status(workload, running, now).map_err(|error| {
            format!(
                "Deployment {}/{}: {error}",
                meta::namespace(workload),
                meta::name(workload)
            )
        })?
    } else {
        statefulset_status(workload, running)
    };
    let requeue = if running < replicas {
        progress_deadline(workload, &status)
    } else {
        None
    };
    Ok(WorkloadStatus { status, requeue })
}

/// One scale-mode pass: statuses of every Deployment and StatefulSet from node capacity,
/// computed from scratch ([`ScaleModeState`] gives the same result incrementally).
pub fn reconcile(objects: &Objects, faults: &Faults, now: Timestamp) -> Outcome {
    let mut outcome = Outcome::default();
    let mut capacity = capacity_of(objects);
    let mut workloads: Vec<&Value> = objects
        .list("Deployment")
        .chain(objects.list("StatefulSet"))
        .collect();
    workloads.sort_by_cached_key(|w| slot_of(w));
    for workload in workloads {
        if meta::is_terminating(workload) {
            continue;
        }
        let replicas = meta::i64_or(workload, "/spec/replicas", 1).max(0);
        let placed = capacity.place(&replica_request(workload), replicas);
        let running = if faults.is_crashed(meta::namespace(workload), meta::name(workload)) {
            0
        } else {
            placed
        };
        let WorkloadStatus { status, requeue } = match workload_status(workload, running, now) {
            Ok(result) => result,
            Err(error) => {
                outcome.errors.push(error);
                continue;
            }
        };
        if let Some(at) = requeue {
            outcome.requeue(at);
        }
        if workload.get("status") != Some(&status) {
            outcome.write(Write::UpdateStatus(meta::with_status(workload, status)));
        }
    }
    outcome
}

/// When a stalled Deployment's Progressing condition will time out.
fn progress_deadline(workload: &Value, status: &Value) -> Option<Timestamp> {
    let conditions = status.get("conditions").and_then(Value::as_array)?;
    let progressing = meta::find_condition(conditions, "Progressing")?;
    if meta::str_at(progressing, "/reason") != "ReplicaSetUpdated" {
        return None;
    }
    let deadline = meta::i64_or(workload, "/spec/progressDeadlineSeconds", 600);
    meta::parse_time(meta::str_at(progressing, "/lastUpdateTime"))
        .map(|t| t + SignedDuration::from_secs(deadline + 1))
}
