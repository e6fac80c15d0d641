//! The Job controller (NonIndexed completion mode): runs up to `parallelism` pods until
//! `completions` have succeeded (the kubelet lets a Job's pod succeed `job_run_time` after it
//! starts).
//!
//! With `completions` unset the Job is a work queue: no new pods once one succeeded, complete
//! when one succeeded and none is active. Status: startTime, active, ready, succeeded, failed,
//! terminating, completionTime, and on success the conditions SuccessCriteriaMet and Complete
//! (reason CompletionsReached). Not modeled: Indexed mode, backoffLimit and pod failure
//! policies (simulated pods never fail), suspend, activeDeadlineSeconds, TTL after finished.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::meta::{self, Condition};
use crate::naming::Randomness;
use crate::objects::{Controlled, ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::pods;
use crate::replicaset::unique_pod_name;

const COMPLETED_MESSAGE: &str = "Reached expected number of succeeded pods";

fn is_finished(job: &Value) -> bool {
    ["Complete", "Failed"]
        .iter()
        .any(|t| meta::condition_status(job, t) == Some("True"))
}

fn build_pod(job: &Value, name: &str) -> Value {
    let mut template = job
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let uid = meta::uid(job);
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", meta::name(job)),
        ("controller-uid", uid),
        ("job-name", meta::name(job)),
    ] {
        if !value.is_empty() {
            meta::set_path(&mut template, &["metadata", "labels", key], json!(value));
        }
    }
    pods::from_template(&template, job, name, &format!("{}-", meta::name(job)))
}

/// One pass over every Job.
pub fn reconcile(objects: &Objects, now: Timestamp, randomness: &mut dyn Randomness) -> Outcome {
    let mut outcome = Outcome::default();
    let mut taken = BTreeSet::new();
    let pods_by_owner = Controlled::index(objects, "Pod");
    for job in objects.list("Job") {
        if meta::is_terminating(job) || is_finished(job) {
            continue;
        }
        let owned: Vec<&Value> = pods_by_owner.of(job);
        let phase_count = |phase: &str| {
            owned
                .iter()
                .filter(|p| meta::str_at(p, "/status/phase") == phase)
                .count() as i64
        };
        let succeeded = phase_count("Succeeded");
        let failed = phase_count("Failed");
        let mut active: Vec<&Value> = owned
            .iter()
            .copied()
            .filter(|p| pods::is_active(p))
            .collect();
        let parallelism = meta::i64_or(job, "/spec/parallelism", 1).max(0);
        let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
        let want_active = match completions {
            Some(completions) => parallelism.min((completions - succeeded).max(0)),
            None if succeeded > 0 => 0,
            None => parallelism,
        };
        let active_count = active.len() as i64;
        if active_count < want_active {
            for _ in active_count..want_active {
                let name = unique_pod_name(
                    objects,
                    meta::namespace(job),
                    meta::name(job),
                    &mut taken,
                    randomness,
                );
                outcome.write(Write::Create(build_pod(job, &name)));
            }
        } else if active_count > want_active {
            active.sort_by_key(|p| {
                std::cmp::Reverse(meta::str_at(p, "/metadata/creationTimestamp").to_string())
            });
            for pod in active.iter().take((active_count - want_active) as usize) {
                outcome.write(Write::Delete(ObjectKey::of(pod)));
            }
        }

        let complete = match completions {
            Some(completions) => succeeded >= completions,
            None => succeeded > 0 && active_count == 0,
        };
        let mut status = job.get("status").cloned().unwrap_or_else(|| json!({}));
        if status.get("startTime").is_none() {
            meta::set_path(&mut status, &["startTime"], json!(meta::format_time(now)));
        }
        let ready = active.iter().filter(|p| pods::is_ready(p)).count() as i64;
        for (field, value) in [
            ("active", if complete { 0 } else { active_count }),
            ("ready", if complete { 0 } else { ready }),
            ("succeeded", succeeded),
            ("failed", failed),
            ("terminating", 0),
        ] {
            meta::set_path(&mut status, &[field], json!(value));
        }
        meta::set_path(&mut status, &["uncountedTerminatedPods"], json!({}));
        if complete {
            let mut conditions = meta::conditions(job);
            for type_ in ["SuccessCriteriaMet", "Complete"] {
                let index = meta::set_condition(
                    &mut conditions,
                    Condition::new(type_, "True", "CompletionsReached", COMPLETED_MESSAGE),
                    now,
                );
                meta::set_path(
                    &mut conditions[index],
                    &["lastProbeTime"],
                    json!(meta::format_time(now)),
                );
            }
            meta::set_path(&mut status, &["conditions"], Value::Array(conditions));
            meta::set_path(
                &mut status,
                &["completionTime"],
                json!(meta::format_time(now)),
            );
        }
        if job.get("status") != Some(&status) {
            outcome.write(Write::UpdateStatus(meta::with_status(job, status)));
        }
    }
    outcome
}
