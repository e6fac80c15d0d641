//! The StatefulSet controller: stable, ordered pods `<name>-0..N-1` with PVCs
//! `<claim>-<name>-<ordinal>` from `volumeClaimTemplates`.
//!
//! OrderedReady (the default): pod `i` is created only when every lower ordinal is Running and
//! Ready; scale-down deletes the highest ordinal first, one at a time, while the rest are Ready.
//! Parallel: all missing pods are created and all surplus pods deleted at once. PVCs are created
//! with the pod and kept on scale-down (the default `Retain` policy); [`crate::volumes`] binds
//! them. Rolling updates replace, from the highest ordinal down to `partition`, one pod at a
//! time once all pods are Ready; `OnDelete` leaves replacement to the user. Revisions are
//! `<name>-<template hash>` (pod label `controller-revision-hash`); ControllerRevision objects
//! are not created.
//!
//! Status: observedGeneration, replicas, readyReplicas, currentReplicas, updatedReplicas,
//! availableReplicas, currentRevision, updateRevision, collisionCount.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::meta;
use crate::naming;
use crate::objects::{Controlled, ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::pods;

pub const REVISION_LABEL: &str = "controller-revision-hash";
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// `<name>-<hash of the pod template>`.
pub fn update_revision(sts: &Value) -> String {
    let template = sts
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let collisions = meta::i64_at(sts, "/status/collisionCount");
    format!(
        "{}-{}",
        meta::name(sts),
        naming::stable_hash(&template, collisions)
    )
}

/// `<claim>-<statefulset>-<ordinal>`.
pub fn claim_name(claim: &str, sts: &str, ordinal: i64) -> String {
    format!("{claim}-{sts}-{ordinal}")
}

fn claim_templates(sts: &Value) -> Vec<Value> {
    sts.pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn build_claim(sts: &Value, template: &Value, ordinal: i64) -> Value {
    let claim = meta::name(template);
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(selector) = sts
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
    {
        for (key, value) in selector {
            meta::set_path(&mut labels, &[key], value.clone());
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name(claim, meta::name(sts), ordinal),
            "namespace": meta::namespace(sts),
            "labels": labels,
        },
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

fn build_pod(sts: &Value, ordinal: i64, revision: &str) -> Value {
    let name = format!("{}-{ordinal}", meta::name(sts));
    let template = sts
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut pod = pods::from_template(&template, sts, &name, "");
    for (key, value) in [
        (REVISION_LABEL, revision.to_string()),
        (POD_NAME_LABEL, name.clone()),
        (POD_INDEX_LABEL, ordinal.to_string()),
    ] {
        meta::set_path(&mut pod, &["metadata", "labels", key], json!(value));
    }
    meta::set_path(&mut pod, &["spec", "hostname"], json!(name));
    let service = meta::str_at(sts, "/spec/serviceName");
    if !service.is_empty() {
        meta::set_path(&mut pod, &["spec", "subdomain"], json!(service));
    }
    let mut volumes: Vec<Value> = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for template in claim_templates(sts) {
        let claim = meta::name(&template);
        volumes.retain(|v| meta::str_at(v, "/name") != claim);
        volumes.push(json!({
            "name": claim,
            "persistentVolumeClaim": {"claimName": claim_name(claim, meta::name(sts), ordinal)},
        }));
    }
    if !volumes.is_empty() {
        meta::set_path(&mut pod, &["spec", "volumes"], Value::Array(volumes));
    }
    pod
}

fn ordinal_of(sts: &Value, pod: &Value) -> Option<i64> {
    meta::name(pod)
        .strip_prefix(meta::name(sts))?
        .strip_prefix('-')?
        .parse()
        .ok()
        .filter(|o: &i64| *o >= 0)
}

fn running_and_ready(pod: &Value) -> bool {
    meta::str_at(pod, "/status/phase") == "Running"
        && pods::is_ready(pod)
        && !meta::is_terminating(pod)
}

/// One pass over every StatefulSet.
pub fn reconcile(objects: &Objects, now: Timestamp) -> Outcome {
    let mut outcome = Outcome::default();
    let pods_by_owner = Controlled::index(objects, "Pod");
    for sts in objects.list("StatefulSet") {
        if !meta::is_terminating(sts) {
            sync(objects, &pods_by_owner, sts, now, &mut outcome);
        }
    }
    outcome
}

fn sync(
    objects: &Objects,
    pods_by_owner: &Controlled<'_>,
    sts: &Value,
    now: Timestamp,
    outcome: &mut Outcome,
) {
    let replicas = meta::i64_or(sts, "/spec/replicas", 1).max(0);
    let parallel = meta::str_at(sts, "/spec/podManagementPolicy") == "Parallel";
    let update = update_revision(sts);
    let current = match meta::str_at(sts, "/status/currentRevision") {
        "" => update.clone(),
        revision => revision.to_string(),
    };
    let pods_by_ordinal: BTreeMap<i64, &Value> = pods_by_owner
        .of(sts)
        .into_iter()
        .filter_map(|pod| ordinal_of(sts, pod).map(|o| (o, pod)))
        .collect();

    // Create missing pods (and their claims) in ordinal order.
    for ordinal in 0..replicas {
        match pods_by_ordinal.get(&ordinal) {
            Some(pod) => {
                if !parallel && !running_and_ready(pod) {
                    break;
                }
            }
            None => {
                for template in claim_templates(sts) {
                    let claim = build_claim(sts, &template, ordinal);
                    if objects.get(&ObjectKey::of(&claim)).is_none() {
                        outcome.write(Write::Create(claim));
                    }
                }
                outcome.write(Write::Create(build_pod(sts, ordinal, &update)));
                if !parallel {
                    break;
                }
            }
        }
    }

    let all_ready = (0..replicas).all(|o| {
        pods_by_ordinal
            .get(&o)
            .is_some_and(|p| running_and_ready(p))
    });
    let condemned: Vec<&&Value> = pods_by_ordinal
        .range(replicas..)
        .map(|(_, pod)| pod)
        .collect();
    if parallel {
        for pod in &condemned {
            outcome.write(Write::Delete(ObjectKey::of(pod)));
        }
    } else if let Some(highest) = condemned.last()
        && all_ready
    {
        outcome.write(Write::Delete(ObjectKey::of(highest)));
    }

    let on_delete = meta::str_at(sts, "/spec/updateStrategy/type") == "OnDelete";
    let partition = meta::i64_at(sts, "/spec/updateStrategy/rollingUpdate/partition");
    if !on_delete && condemned.is_empty() && all_ready {
        let outdated = pods_by_ordinal
            .range(partition.max(0)..replicas)
            .rev()
            .find(|(_, pod)| {
                meta::labels(pod)
                    .get(REVISION_LABEL)
                    .and_then(Value::as_str)
                    != Some(update.as_str())
            });
        if let Some((_, pod)) = outdated {
            outcome.write(Write::Delete(ObjectKey::of(pod)));
        }
    }

    let status = statefulset_status(
        sts,
        &pods_by_ordinal,
        replicas,
        &current,
        &update,
        now,
        outcome,
    );
    if sts.get("status") != Some(&status) {
        outcome.write(Write::UpdateStatus(meta::with_status(sts, status)));
    }
}

fn statefulset_status(
    sts: &Value,
    pods_by_ordinal: &BTreeMap<i64, &Value>,
    replicas: i64,
    current: &str,
    update: &str,
    now: Timestamp,
    outcome: &mut Outcome,
) -> Value {
    let min_ready = meta::i64_at(sts, "/spec/minReadySeconds");
    let existing: Vec<&Value> = pods_by_ordinal
        .values()
        .copied()
        .filter(|p| !meta::is_terminating(p))
        .collect();
    let revision_of = |pod: &Value| {
        meta::labels(pod)
            .get(REVISION_LABEL)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let count = |f: &dyn Fn(&Value) -> bool| existing.iter().filter(|p| f(p)).count() as i64;
    let ready = count(&|p| pods::is_ready(p));
    let mut available = 0;
    for pod in &existing {
        match pods::availability(pod, min_ready, now) {
            Ok(true) => available += 1,
            Ok(false) => {}
            Err(at) => outcome.requeue(at),
        }
    }
    let updated = count(&|p| revision_of(p).as_deref() == Some(update));
    let mut current_revision = current.to_string();
    let mut current_replicas = count(&|p| revision_of(p).as_deref() == Some(current));
    let total = existing.len() as i64;
    // The rollout is complete once every pod runs the update revision and is Ready.
    if updated == replicas && total == replicas && ready == replicas {
        current_revision = update.to_string();
        current_replicas = updated;
    }
    let mut status = sts.get("status").cloned().unwrap_or_else(|| json!({}));
    for (field, value) in [
        ("observedGeneration", json!(meta::generation(sts))),
        ("replicas", json!(total)),
        ("readyReplicas", json!(ready)),
        ("currentReplicas", json!(current_replicas)),
        ("updatedReplicas", json!(updated)),
        ("availableReplicas", json!(available)),
        ("currentRevision", json!(current_revision)),
        ("updateRevision", json!(update)),
        (
            "collisionCount",
            json!(meta::i64_at(sts, "/status/collisionCount")),
        ),
    ] {
        meta::set_path(&mut status, &[field], value);
    }
    status
}

/// Whether `kubectl rollout status` would report the StatefulSet rolled out (RollingUpdate):
/// observed, all replicas Ready, and, without a partition, current revision = update revision.
pub fn rollout_status(sts: &Value) -> bool {
    let replicas = meta::i64_or(sts, "/spec/replicas", 1);
    let status = |field: &str| meta::i64_at(sts, &format!("/status/{field}"));
    let observed = status("observedGeneration") >= meta::generation(sts);
    let partition = meta::i64_at(sts, "/spec/updateStrategy/rollingUpdate/partition");
    let revisions_done = if partition > 0 {
        status("updatedReplicas") >= replicas - partition
    } else {
        meta::str_at(sts, "/status/updateRevision") == meta::str_at(sts, "/status/currentRevision")
    };
    observed && status("readyReplicas") >= replicas && revisions_done
}
