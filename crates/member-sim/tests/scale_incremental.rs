//! The incremental scale-mode controller returns exactly what the from-scratch pass returns, over
//! random sequences of workload adds, spec updates, deletions, cordons, pods, crashes, time
//! passing, and status writes that land or are lost.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use std::collections::BTreeSet;

use common::{Sim, container, deployment, t0};
use jiff::SignedDuration;
use member_sim::faults::Faults;
use member_sim::objects::{ObjectKey, Objects, Write};
use member_sim::scale_mode::{self, ScaleModeState};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Clone, Debug)]
enum Op {
    Add {
        minute: u8,
        statefulset: bool,
        replicas: i64,
        cpu: i64,
        invalid: bool,
    },
    Update {
        target: usize,
        replicas: i64,
        cpu: i64,
    },
    Label {
        target: usize,
    },
    Terminate {
        target: usize,
    },
    Delete {
        target: usize,
    },
    Cordon {
        node: usize,
        on: bool,
    },
    Pod {
        node: usize,
        cpu: i64,
    },
    RemovePod {
        target: usize,
    },
    Crash {
        target: usize,
    },
    Heal,
    Advance {
        seconds: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..6, any::<bool>(), 0i64..5, 0i64..4, prop::bool::weighted(0.1)).prop_map(
            |(minute, statefulset, replicas, cpu, invalid)| Op::Add {
                minute,
                statefulset,
                replicas,
                cpu,
                invalid
            }
        ),
        2 => (any::<usize>(), 0i64..5, 0i64..4)
            .prop_map(|(target, replicas, cpu)| Op::Update { target, replicas, cpu }),
        1 => any::<usize>().prop_map(|target| Op::Label { target }),
        1 => any::<usize>().prop_map(|target| Op::Terminate { target }),
        1 => any::<usize>().prop_map(|target| Op::Delete { target }),
        1 => (0usize..3, any::<bool>()).prop_map(|(node, on)| Op::Cordon { node, on }),
        1 => (0usize..3, 1i64..4).prop_map(|(node, cpu)| Op::Pod { node, cpu }),
        1 => any::<usize>().prop_map(|target| Op::RemovePod { target }),
        1 => any::<usize>().prop_map(|target| Op::Crash { target }),
        1 => Just(Op::Heal),
        2 => (0i64..700).prop_map(|seconds| Op::Advance { seconds }),
    ]
}

fn workload_keys(objects: &Objects) -> Vec<ObjectKey> {
    ["Deployment", "StatefulSet"]
        .iter()
        .flat_map(|kind| objects.list(kind))
        .map(ObjectKey::of)
        .collect()
}

fn pick<T: Clone>(items: &[T], target: usize) -> Option<T> {
    (!items.is_empty()).then(|| items[target % items.len()].clone())
}

fn millis(cpu: i64) -> String {
    format!("{}m", cpu * 700)
}

fn workload(name: &str, statefulset: bool, replicas: i64, cpu: i64, invalid: bool) -> Value {
    let mut object = deployment(name, replicas, &millis(cpu));
    if statefulset {
        object["kind"] = json!("StatefulSet");
    }
    if invalid {
        object["spec"]["strategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
    }
    object
}

/// Every key whose object differs between two snapshots.
fn changed(before: &Objects, after: &Objects) -> BTreeSet<ObjectKey> {
    let mut keys: BTreeSet<ObjectKey> = after
        .iter()
        .filter(|(key, value)| before.get(key) != Some(*value))
        .map(|(key, _)| key.clone())
        .collect();
    keys.extend(
        before
            .iter()
            .filter(|(key, _)| after.get(key).is_none())
            .map(|(key, _)| key.clone()),
    );
    keys
}

fn perform(sim: &mut Sim, op: &Op, serial: usize) {
    let workloads = workload_keys(&sim.objects);
    let now = sim.now;
    match op {
        Op::Add {
            minute,
            statefulset,
            replicas,
            cpu,
            invalid,
        } => {
            let mut object = workload(
                &format!("w{serial}"),
                *statefulset,
                *replicas,
                *cpu,
                *invalid,
            );
            // Creation times from a few minutes: new workloads land anywhere in the order.
            let created = t0() + SignedDuration::from_mins(i64::from(*minute));
            object["metadata"]["creationTimestamp"] = json!(created.to_string());
            object["metadata"]["generation"] = json!(1);
            sim.objects.insert(object);
        }
        Op::Update {
            target,
            replicas,
            cpu,
        } => {
            if let Some(key) = pick(&workloads, *target) {
                let mut object = sim.objects.get(&key).cloned().unwrap_or_default();
                object["spec"]["replicas"] = json!(replicas);
                object["spec"]["template"]["spec"]["containers"] =
                    json!([container(&millis(*cpu), "64Mi")]);
                sim.objects
                    .apply(&Write::Update(object), now)
                    .expect("update");
            }
        }
        Op::Label { target } => {
            if let Some(key) = pick(&workloads, *target) {
                let mut object = sim.objects.get(&key).cloned().unwrap_or_default();
                object["metadata"]["labels"] = json!({"touched": serial.to_string()});
                sim.objects.insert(object);
            }
        }
        Op::Terminate { target } => {
            if let Some(key) = pick(&workloads, *target) {
                let mut object = sim.objects.get(&key).cloned().unwrap_or_default();
                object["metadata"]["deletionTimestamp"] = json!(now.to_string());
                sim.objects.insert(object);
            }
        }
        Op::Delete { target } => {
            if let Some(key) = pick(&workloads, *target) {
                sim.objects.remove(&key);
            }
        }
        Op::Cordon { node, on } => {
            let nodes: Vec<ObjectKey> = sim.objects.list("Node").map(ObjectKey::of).collect();
            if let Some(key) = pick(&nodes, *node) {
                let mut object = sim.objects.get(&key).cloned().unwrap_or_default();
                object["spec"]["unschedulable"] = json!(on);
                sim.objects.insert(object);
            }
        }
        Op::Pod { node, cpu } => {
            let mut pod = common::pod(&format!("p{serial}"), &millis(*cpu));
            pod["spec"]["nodeName"] = json!(format!("member-node-{}", node + 1));
            sim.objects.insert(pod);
        }
        Op::RemovePod { target } => {
            let pods: Vec<ObjectKey> = sim.objects.list("Pod").map(ObjectKey::of).collect();
            if let Some(key) = pick(&pods, *target) {
                sim.objects.remove(&key);
            }
        }
        Op::Crash { target } => {
            if let Some(key) = pick(&workloads, *target) {
                sim.faults
                    .apply(format!("crash {}", key.name).parse().expect("fault"));
            }
        }
        Op::Heal => sim.faults = Faults::default(),
        Op::Advance { seconds } => sim.now += SignedDuration::from_secs(*seconds),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn incremental_passes_equal_full_passes(
        steps in prop::collection::vec((op(), prop::bool::weighted(0.8)), 1..60)
    ) {
        let mut sim = Sim::with_nodes(3, "4", "16Gi");
        let mut state = ScaleModeState::new();
        let mut seen = Objects::new();
        for (serial, (op, deliver)) in steps.iter().enumerate() {
            perform(&mut sim, op, serial);
            let full = scale_mode::reconcile(&sim.objects, &sim.faults, sim.now);
            let incremental =
                state.reconcile(&sim.objects, &changed(&seen, &sim.objects), &sim.faults, sim.now);
            prop_assert_eq!(&incremental, &full, "after {:?}", op);
            seen = sim.objects.clone();
            // A status write lands (the watch shows it) or is lost (refused, retried later).
            if *deliver {
                for write in &full.writes {
                    sim.objects.apply(write, sim.now).expect("status write applies");
                }
            }
        }
    }
}

#[test]
fn a_new_workload_at_the_end_places_only_itself() {
    // A regression guard for the common case the state exists for: appending does not
    // disturb earlier placements, and a pass with no changes writes nothing.
    let mut sim = Sim::with_nodes(1, "2", "16Gi");
    let mut state = ScaleModeState::new();
    let mut seen = Objects::new();
    for (i, replicas) in [(0, 1), (1, 1), (2, 5)] {
        let mut object = deployment(&format!("d{i}"), replicas, "500m");
        object["metadata"]["creationTimestamp"] =
            json!((t0() + SignedDuration::from_secs(i)).to_string());
        sim.objects.insert(object);
        let outcome = state.reconcile(
            &sim.objects,
            &changed(&seen, &sim.objects),
            &sim.faults,
            sim.now,
        );
        assert_eq!(outcome.writes.len(), 1, "only the new workload is written");
        seen = sim.objects.clone();
        for write in &outcome.writes {
            sim.objects.apply(write, sim.now).expect("applies");
        }
    }
    let idle = state.reconcile(
        &sim.objects,
        &changed(&seen, &sim.objects),
        &sim.faults,
        sim.now,
    );
    assert!(idle.writes.is_empty(), "settled: {:?}", idle.writes);
    let available =
        |name: &str| sim.get("Deployment", "default", name)["status"]["availableReplicas"].as_i64();
    // 2 CPUs of 500m: two for the first two, the third gets the remaining two of five.
    assert_eq!(
        (available("d0"), available("d1"), available("d2")),
        (Some(1), Some(1), Some(2))
    );
}
