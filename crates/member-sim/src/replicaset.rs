//! The ReplicaSet controller: keeps `spec.replicas` active pods and reports their status.
//!
//! Missing pods are created all at once (`<rs-name>-<5 random chars>`, randomness from the
//! caller); surplus pods are deleted in Kubernetes' preference order: unbound before bound,
//! Pending before Running, not Ready before Ready, Ready for less time first, newer first.
//! Status counts the pods observed in this pass (like the real controller, it catches up with
//! its own creations and deletions on the next pass): replicas, fullyLabeledReplicas,
//! readyReplicas, availableReplicas (Ready for `minReadySeconds`), observedGeneration.
//! Orphan adoption and the `ReplicaFailure` condition are not modeled.

use std::collections::BTreeSet;

use apimachinery::labels::LabelSelector;
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::meta;
use crate::naming::{self, Randomness};
use crate::objects::{Controlled, ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::pods;

/// Pods controlled by `owner` (by controller reference), in name order.
pub fn owned_pods<'a>(objects: &'a Objects, owner: &'a Value) -> Vec<&'a Value> {
    objects
        .list_in("Pod", meta::namespace(owner))
        .filter(|pod| meta::is_controlled_by(pod, owner))
        .collect()
}

/// A fresh pod name `<prefix>-<suffix>` not used in the namespace.
pub fn unique_pod_name(
    objects: &Objects,
    namespace: &str,
    prefix: &str,
    taken: &mut BTreeSet<String>,
    randomness: &mut dyn Randomness,
) -> String {
    loop {
        let name = format!("{prefix}-{}", naming::random_suffix(randomness));
        if objects.get_named("Pod", namespace, &name).is_none() && taken.insert(name.clone()) {
            return name;
        }
    }
}

/// Rank for deletion: lower is deleted first.
fn deletion_rank(
    pod: &Value,
) -> (
    u8,
    u8,
    u8,
    std::cmp::Reverse<String>,
    std::cmp::Reverse<String>,
) {
    let bound = u8::from(!meta::str_at(pod, "/spec/nodeName").is_empty());
    let phase = match meta::str_at(pod, "/status/phase") {
        "Pending" | "" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    let ready = u8::from(pods::is_ready(pod));
    let ready_since = pods::ready_since(pod)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let created = meta::str_at(pod, "/metadata/creationTimestamp").to_string();
    // Later timestamps sort first: shorter-ready and newer pods go before older ones.
    (
        bound,
        phase,
        ready,
        std::cmp::Reverse(ready_since),
        std::cmp::Reverse(created),
    )
}

/// The status a ReplicaSet reports for the pods observed now.
pub fn replica_set_status(
    rs: &Value,
    pods: &[&Value],
    now: Timestamp,
    outcome: &mut Outcome,
) -> Value {
    let min_ready = meta::i64_at(rs, "/spec/minReadySeconds");
    let template_labels = rs
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let active: Vec<&&Value> = pods.iter().filter(|p| pods::is_active(p)).collect();
    let fully_labeled = active
        .iter()
        .filter(|pod| {
            let labels = meta::labels(pod);
            template_labels
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        })
        .count();
    let ready = active.iter().filter(|p| pods::is_ready(p)).count();
    let mut available = 0;
    for pod in &active {
        match pods::availability(pod, min_ready, now) {
            Ok(true) => available += 1,
            Ok(false) => {}
            Err(at) => outcome.requeue(at),
        }
    }
    let mut status = rs.get("status").cloned().unwrap_or_else(|| json!({}));
    for (field, value) in [
        ("replicas", active.len()),
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ] {
        meta::set_path(&mut status, &[field], json!(value));
    }
    meta::set_path(
        &mut status,
        &["observedGeneration"],
        json!(meta::generation(rs)),
    );
    status
}

/// One pass over every ReplicaSet.
pub fn reconcile(objects: &Objects, now: Timestamp, randomness: &mut dyn Randomness) -> Outcome {
    let mut outcome = Outcome::default();
    let mut taken = BTreeSet::new();
    let pods_by_owner = Controlled::index(objects, "Pod");
    for rs in objects.list("ReplicaSet") {
        if meta::is_terminating(rs) {
            continue;
        }
        if let Err(error) =
            LabelSelector::from_label_selector(rs.pointer("/spec/selector").unwrap_or(&Value::Null))
        {
            outcome.errors.push(format!(
                "ReplicaSet {}/{}: spec.selector: {error}",
                meta::namespace(rs),
                meta::name(rs)
            ));
            continue;
        }
        let owned = pods_by_owner.of(rs);
        let mut active: Vec<&Value> = owned
            .iter()
            .copied()
            .filter(|p| pods::is_active(p))
            .collect();
        let desired = usize::try_from(meta::i64_or(rs, "/spec/replicas", 1)).unwrap_or(0);
        let template = rs
            .pointer("/spec/template")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if active.len() < desired {
            let prefix = meta::name(rs);
            for _ in active.len()..desired {
                let name =
                    unique_pod_name(objects, meta::namespace(rs), prefix, &mut taken, randomness);
                let pod = pods::from_template(&template, rs, &name, &format!("{prefix}-"));
                outcome.write(Write::Create(pod));
            }
        } else if active.len() > desired {
            active.sort_by_key(|pod| deletion_rank(pod));
            for pod in &active[..active.len() - desired] {
                outcome.write(Write::Delete(ObjectKey::of(pod)));
            }
        }
        let status = replica_set_status(rs, &owned, now, &mut outcome);
        if rs.get("status") != Some(&status) {
            outcome.write(Write::UpdateStatus(meta::with_status(rs, status)));
        }
    }
    outcome
}
