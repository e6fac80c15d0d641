//! The scale-mode controller kept up to date between passes, so a pass costs what changed
//! rather than the whole cluster: [`ScaleModeState::reconcile`] returns exactly what
//! [`super::reconcile`] would for the same objects, faults and time.
//!
//! Why that holds. Placement is first fit in a fixed order, and the capacity left after a
//! prefix of that order is the nodes' capacity less what the prefix took. So the state keeps
//! the order (a sorted set), what each workload took per node, and what is left: a change at
//! some position gives back what every workload from there on took and places them again;
//! a workload appended at the end (the usual new Deployment) costs one placement. A status is
//! a function of the workload, its running count and the time, and the time only matters once
//! a stalled rollout's progress deadline passes; so a status is recomputed only when the
//! workload changed, its running count changed, the faults changed, its deadline passed, or
//! its last computed status has not been seen back yet (the write is pending or was refused).
//!
//! Invariant: the caller reports every object key whose value changed since the previous
//! pass (added, replaced or removed); the first pass reads everything.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::{CapacityModel, Slot, WorkloadStatus, capacity_of, replica_request, slot_of};
use crate::faults::Faults;
use crate::meta;
use crate::objects::{ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::resources::Resources;

const WORKLOAD_KINDS: [&str; 2] = ["Deployment", "StatefulSet"];

/// What placement reads of a workload.
#[derive(Clone, Debug, PartialEq)]
struct Demand {
    request: Resources,
    replicas: i64,
    /// A terminating workload takes part in nothing.
    terminating: bool,
}

impl Demand {
    fn of(workload: &Value) -> Self {
        Demand {
            request: replica_request(workload),
            replicas: meta::i64_or(workload, "/spec/replicas", 1).max(0),
            terminating: meta::is_terminating(workload),
        }
    }
}

#[derive(Debug)]
struct Entry {
    slot: Slot,
    demand: Demand,
    /// Copies placed per node index.
    taken: Vec<(usize, i64)>,
    placed: i64,
    requeue: Option<Timestamp>,
    /// After this time the status may change without anything else changing.
    recheck: Option<Timestamp>,
}

/// The scale-mode controller's memory between passes (one per cluster).
#[derive(Debug, Default)]
pub struct ScaleModeState {
    started: bool,
    /// The nodes' free capacity before any workload.
    base: CapacityModel,
    /// What is left after every workload.
    free: CapacityModel,
    entries: HashMap<ObjectKey, Entry>,
    order: BTreeSet<Slot>,
    requeues: BTreeSet<(Timestamp, Slot)>,
    rechecks: BTreeSet<(Timestamp, Slot)>,
    errors: BTreeMap<Slot, String>,
    /// Workloads whose computed status differed from the observed one.
    unsettled: BTreeSet<Slot>,
    faults: Faults,
}

impl ScaleModeState {
    pub fn new() -> Self {
        Self::default()
    }

    /// One pass; `changed` holds every key whose object changed since the previous pass.
    pub fn reconcile(
        &mut self,
        objects: &Objects,
        changed: &BTreeSet<ObjectKey>,
        faults: &Faults,
        now: Timestamp,
    ) -> Outcome {
        let first = !self.started;
        self.started = true;
        let mut dirty = std::mem::take(&mut self.unsettled);

        let mut replace_all = false;
        if first || changed.iter().any(|k| k.kind == "Node" || k.kind == "Pod") {
            let base = capacity_of(objects);
            if first || base != self.base {
                self.free = base.clone();
                self.base = base;
                replace_all = true;
            }
        }
        if first || self.faults != *faults {
            self.faults = faults.clone();
            dirty.extend(self.order.iter().cloned());
        }

        let keys: Vec<ObjectKey> = if first {
            WORKLOAD_KINDS
                .iter()
                .flat_map(|kind| objects.list(kind))
                .map(ObjectKey::of)
                .collect()
        } else {
            changed
                .iter()
                .filter(|k| WORKLOAD_KINDS.contains(&k.kind.as_str()))
                .cloned()
                .collect()
        };
        let mut replace_from: Option<Slot> = None;
        for key in keys {
            self.observe(key, objects, replace_all, &mut replace_from, &mut dirty);
        }
        self.replace(replace_all, replace_from, &mut dirty);

        while let Some((at, slot)) = self.rechecks.first().cloned()
            && at < now
        {
            self.rechecks.remove(&(at, slot.clone()));
            dirty.insert(slot);
        }

        let mut outcome = Outcome::default();
        for slot in dirty {
            self.refresh(&slot, objects, now, &mut outcome);
        }
        outcome.errors = self.errors.values().cloned().collect();
        if let Some((at, _)) = self.requeues.first() {
            outcome.requeue(*at);
        }
        outcome
    }

    /// Takes in one changed workload: its place in the order, its demand.
    fn observe(
        &mut self,
        key: ObjectKey,
        objects: &Objects,
        replace_all: bool,
        replace_from: &mut Option<Slot>,
        dirty: &mut BTreeSet<Slot>,
    ) {
        let object = objects.get(&key);
        let current = object.map(|o| (slot_of(o), Demand::of(o)));
        if let (Some(entry), Some((slot, demand))) = (self.entries.get(&key), &current)
            && entry.slot == *slot
            && entry.demand == *demand
        {
            // Only its status or metadata changed: placement stays.
            dirty.insert(slot.clone());
            return;
        }
        if let Some(old) = self.entries.remove(&key) {
            self.unindex(&old);
            dirty.remove(&old.slot);
            self.order.remove(&old.slot);
            if !replace_all {
                for &(node, copies) in &old.taken {
                    self.free.give_back(&old.demand.request, node, copies);
                }
            }
            if old.placed > 0 {
                lower(replace_from, &old.slot);
            }
        }
        if let Some((slot, demand)) = current {
            lower(replace_from, &slot);
            self.order.insert(slot.clone());
            dirty.insert(slot.clone());
            self.entries.insert(
                key,
                Entry {
                    slot,
                    demand,
                    taken: Vec::new(),
                    placed: 0,
                    requeue: None,
                    recheck: None,
                },
            );
        }
    }

    /// Places again every workload from `from` on (all of them after a capacity change).
    fn replace(&mut self, all: bool, from: Option<Slot>, dirty: &mut BTreeSet<Slot>) {
        let slots: Vec<Slot> = match (all, from) {
            (true, _) => self.order.iter().cloned().collect(),
            (false, Some(from)) => self.order.range(from..).cloned().collect(),
            (false, None) => return,
        };
        for slot in &slots {
            if let Some(entry) = self.entries.get_mut(&slot.1)
                && !all
            {
                for &(node, copies) in &entry.taken {
                    self.free.give_back(&entry.demand.request, node, copies);
                }
                entry.taken.clear();
            }
        }
        for slot in slots {
            let Some(entry) = self.entries.get_mut(&slot.1) else {
                continue;
            };
            entry.taken.clear();
            let placed = if entry.demand.terminating {
                0
            } else {
                let taken = &mut entry.taken;
                self.free
                    .place_tracked(&entry.demand.request, entry.demand.replicas, |node, n| {
                        taken.push((node, n))
                    })
            };
            if placed != entry.placed {
                entry.placed = placed;
                dirty.insert(slot);
            }
        }
    }

    /// Recomputes one workload's status; writes it if it differs from the observed one.
    fn refresh(&mut self, slot: &Slot, objects: &Objects, now: Timestamp, outcome: &mut Outcome) {
        let Some(entry) = self.entries.get_mut(&slot.1) else {
            return;
        };
        if let Some(at) = entry.requeue.take() {
            self.requeues.remove(&(at, slot.clone()));
        }
        if let Some(at) = entry.recheck.take() {
            self.rechecks.remove(&(at, slot.clone()));
        }
        self.errors.remove(slot);
        let Some(workload) = objects.get(&slot.1) else {
            return;
        };
        if entry.demand.terminating {
            return;
        }
        let running = if self
            .faults
            .is_crashed(meta::namespace(workload), meta::name(workload))
        {
            0
        } else {
            entry.placed
        };
        match super::workload_status(workload, running, now) {
            Err(error) => {
                self.errors.insert(slot.clone(), error);
            }
            Ok(WorkloadStatus { status, requeue }) => {
                if let Some(at) = requeue {
                    entry.requeue = Some(at);
                    self.requeues.insert((at, slot.clone()));
                }
                if let Some(at) = recheck_at(workload, &status)
                    && at >= now
                {
                    entry.recheck = Some(at);
                    self.rechecks.insert((at, slot.clone()));
                }
                if workload.get("status") != Some(&status) {
                    outcome.write(Write::UpdateStatus(meta::with_status(workload, status)));
                    self.unsettled.insert(slot.clone());
                }
            }
        }
    }

    fn unindex(&mut self, entry: &Entry) {
        if let Some(at) = entry.requeue {
            self.requeues.remove(&(at, entry.slot.clone()));
        }
        if let Some(at) = entry.recheck {
            self.rechecks.remove(&(at, entry.slot.clone()));
        }
        self.errors.remove(&entry.slot);
        self.unsettled.remove(&entry.slot);
    }
}

fn lower(from: &mut Option<Slot>, slot: &Slot) {
    if from.as_ref().is_none_or(|f| slot < f) {
        *from = Some(slot.clone());
    }
}

/// The time after which a recomputed status would time out the rollout: the Progressing
/// condition's last update plus the progress deadline (past it, status changes with time alone).
fn recheck_at(workload: &Value, status: &Value) -> Option<Timestamp> {
    let conditions = status.get("conditions").and_then(Value::as_array)?;
    let progressing = meta::find_condition(conditions, "Progressing")?;
    if meta::str_at(progressing, "/reason") != "ReplicaSetUpdated" {
        return None;
    }
    let deadline = meta::i64_or(workload, "/spec/progressDeadlineSeconds", 600);
    meta::parse_time(meta::str_at(progressing, "/lastUpdateTime"))?
        .checked_add(SignedDuration::from_secs(deadline))
        .ok()
}
