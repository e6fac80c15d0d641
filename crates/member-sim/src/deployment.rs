//! The Deployment controller: Deployment → ReplicaSets, with Kubernetes' revisions, strategies
//! and status, so that `kubectl rollout status` logic completes.
//!
//! The new ReplicaSet is the one whose template equals the Deployment's (ignoring
//! `pod-template-hash`); it is named `<deployment>-<hash>` where the hash is a stable hash of the
//! template and `status.collisionCount`. Its `deployment.kubernetes.io/revision` is one more
//! than any old ReplicaSet's, and the Deployment carries the same annotation. RollingUpdate
//! follows [`crate::rollout`]; Recreate scales every old ReplicaSet to zero, waits for their pods
//! to be gone, then scales the new one up. Old ReplicaSets beyond `revisionHistoryLimit`
//! (default 10) are deleted once empty.
//!
//! Status: observedGeneration, replicas (all ReplicaSets' pods), updatedReplicas,
//! readyReplicas, availableReplicas, unavailableReplicas, and the conditions Available
//! (MinimumReplicasAvailable / MinimumReplicasUnavailable) and Progressing
//! (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
//! ProgressDeadlineExceeded) with Kubernetes' messages. Not modeled: proportional scaling of
//! several live ReplicaSets on a mid-rollout resize (the rollout arithmetic converges instead),
//! adoption of orphaned ReplicaSets, `rollbackTo`.

use apimachinery::labels::LabelSelector;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::meta::{self, Condition};
use crate::naming;
use crate::objects::{Controlled, ObjectKey, Objects, Write};
use crate::outcome::Outcome;
use crate::pods;
use crate::rollout::{self, ReplicaCounts, RollingParams};

pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
const DEFAULT_PROGRESS_DEADLINE_SECONDS: i64 = 600;
const DEFAULT_REVISION_HISTORY_LIMIT: i64 = 10;

/// A template without the `pod-template-hash` label, for comparing templates.
fn without_hash(template: &Value) -> Value {
    let mut template = template.clone();
    if let Some(labels) = template
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty()
            && let Some(metadata) = template.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.remove("labels");
        }
    }
    template
}

fn revision(rs: &Value) -> i64 {
    meta::annotation(rs, REVISION_ANNOTATION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn spec_replicas(object: &Value) -> i64 {
    meta::i64_or(object, "/spec/replicas", 1).max(0)
}

fn counts(rs: &Value) -> ReplicaCounts {
    ReplicaCounts {
        spec: spec_replicas(rs),
        available: meta::i64_at(rs, "/status/availableReplicas"),
    }
}

/// The `pod-template-hash` of a Deployment's current template.
fn template_hash(deployment: &Value) -> String {
    let collisions = meta::i64_at(deployment, "/status/collisionCount");
    match deployment.pointer("/spec/template") {
        Some(template) => naming::stable_hash(template, collisions),
        None => naming::stable_hash(&json!({}), collisions),
    }
}

/// The name of the ReplicaSet a Deployment's current template asks for, without building it.
pub fn new_replica_set_name(deployment: &Value) -> String {
    format!("{}-{}", meta::name(deployment), template_hash(deployment))
}

/// The ReplicaSet a Deployment's current template asks for.
pub fn new_replica_set(deployment: &Value, replicas: i64, revision: i64, max_surge: i64) -> Value {
    let template = deployment
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let hash = template_hash(deployment);
    let name = format!("{}-{hash}", meta::name(deployment));
    let mut template = template;
    meta::set_path(
        &mut template,
        &["metadata", "labels", POD_TEMPLATE_HASH],
        json!(hash),
    );
    let mut selector = deployment
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    meta::set_path(
        &mut selector,
        &["matchLabels", POD_TEMPLATE_HASH],
        json!(hash),
    );
    let mut rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": meta::namespace(deployment),
            "labels": template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({})),
            "annotations": {
                REVISION_ANNOTATION: revision.to_string(),
                DESIRED_REPLICAS_ANNOTATION: replicas.to_string(),
                MAX_REPLICAS_ANNOTATION: (replicas + max_surge).to_string(),
            },
            "ownerReferences": [meta::owner_reference(deployment)],
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": meta::i64_at(deployment, "/spec/minReadySeconds"),
            "selector": selector,
            "template": template,
        },
    });
    meta::set_path(&mut rs, &["spec", "replicas"], json!(replicas));
    rs
}

/// What the rollout decided about ReplicaSets in this pass.
struct Plan {
    writes: Vec<Write>,
    created: Option<String>,
}

/// One pass over every Deployment.
pub fn reconcile(objects: &Objects, now: Timestamp) -> Outcome {
    let mut outcome = Outcome::default();
    let index = Index {
        replica_sets: Controlled::index(objects, "ReplicaSet"),
        pods: Controlled::index(objects, "Pod"),
    };
    for deployment in objects.list("Deployment") {
        if meta::is_terminating(deployment) {
            continue;
        }
        if let Err(error) = sync(&index, deployment, now, &mut outcome) {
            outcome.errors.push(format!(
                "Deployment {}/{}: {error}",
                meta::namespace(deployment),
                meta::name(deployment)
            ));
        }
    }
    outcome
}

/// Dependents by controller, built once per pass.
struct Index<'a> {
    replica_sets: Controlled<'a>,
    pods: Controlled<'a>,
}

fn sync(
    index: &Index<'_>,
    deployment: &Value,
    now: Timestamp,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let selector = deployment.pointer("/spec/selector").unwrap_or(&Value::Null);
    LabelSelector::from_label_selector(selector).map_err(|e| format!("spec.selector: {e}"))?;
    let replicas = spec_replicas(deployment);
    let recreate = meta::str_at(deployment, "/spec/strategy/type") == "Recreate";
    let params = if recreate {
        RollingParams {
            max_surge: 0,
            max_unavailable: 0,
        }
    } else {
        rollout::rolling_params(deployment, replicas)?
    };

    let mut owned: Vec<&Value> = index
        .replica_sets
        .of(deployment)
        .into_iter()
        .filter(|rs| !meta::is_terminating(rs))
        .collect();
    owned.sort_by_key(|rs| {
        (
            meta::str_at(rs, "/metadata/creationTimestamp").to_string(),
            meta::name(rs).to_string(),
        )
    });
    let template = without_hash(deployment.pointer("/spec/template").unwrap_or(&Value::Null));
    let new_rs = owned
        .iter()
        .copied()
        .find(|rs| without_hash(rs.pointer("/spec/template").unwrap_or(&Value::Null)) == template);
    let olds: Vec<&Value> = owned
        .iter()
        .copied()
        .filter(|rs| Some(*rs) != new_rs)
        .collect();
    let max_old_revision = olds.iter().map(|rs| revision(rs)).max().unwrap_or(0);
    let new_revision = match new_rs {
        Some(rs) if revision(rs) > max_old_revision => revision(rs),
        _ => max_old_revision + 1,
    };

    let paused = deployment.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let plan = if paused {
        Plan {
            writes: Vec::new(),
            created: None,
        }
    } else if recreate {
        plan_recreate(
            &index.pods,
            deployment,
            replicas,
            new_rs,
            &olds,
            new_revision,
        )
    } else {
        plan_rolling(deployment, replicas, params, new_rs, &olds, new_revision)
    };
    outcome.writes.extend(plan.writes);
    cleanup_history(deployment, &olds, outcome);

    if meta::annotation(deployment, REVISION_ANNOTATION) != Some(new_revision.to_string().as_str())
        && (new_rs.is_some() || plan.created.is_some())
    {
        let mut updated = deployment.clone();
        meta::set_path(
            &mut updated,
            &["metadata", "annotations", REVISION_ANNOTATION],
            json!(new_revision.to_string()),
        );
        outcome.write(Write::Update(updated));
    }

    let new_name = new_rs
        .map(|rs| meta::name(rs).to_string())
        .or(plan.created.clone())
        .unwrap_or_default();
    let status = deployment_status(
        deployment,
        replicas,
        params,
        new_rs,
        &owned,
        &new_name,
        plan.created.is_some(),
        now,
        outcome,
    );
    if deployment.get("status") != Some(&status) {
        outcome.write(Write::UpdateStatus(meta::with_status(deployment, status)));
    }
    Ok(())
}

/// A ReplicaSet resized (and, for the new one, re-annotated), if anything changed.
fn resized(rs: &Value, spec: i64, annotations: &[(&str, String)]) -> Option<Write> {
    let mut updated = rs.clone();
    meta::set_path(&mut updated, &["spec", "replicas"], json!(spec));
    for (key, value) in annotations {
        meta::set_path(
            &mut updated,
            &["metadata", "annotations", key],
            json!(value),
        );
    }
    (updated != *rs).then_some(Write::Update(updated))
}

fn new_annotations(
    replicas: i64,
    params: RollingParams,
    revision: i64,
) -> Vec<(&'static str, String)> {
    vec![
        (REVISION_ANNOTATION, revision.to_string()),
        (DESIRED_REPLICAS_ANNOTATION, replicas.to_string()),
        (
            MAX_REPLICAS_ANNOTATION,
            (replicas + params.max_surge).to_string(),
        ),
    ]
}

fn plan_rolling(
    deployment: &Value,
    replicas: i64,
    params: RollingParams,
    new_rs: Option<&Value>,
    olds: &[&Value],
    revision: i64,
) -> Plan {
    let old_counts: Vec<ReplicaCounts> = olds.iter().map(|rs| counts(rs)).collect();
    let Some(new_rs) = new_rs else {
        let old_total: i64 = old_counts.iter().map(|c| c.spec).sum();
        let size = rollout::new_replica_set_size(replicas, params, 0, old_total);
        let rs = new_replica_set(deployment, size, revision, params.max_surge);
        let created = meta::name(&rs).to_string();
        return Plan {
            writes: vec![Write::Create(rs)],
            created: Some(created),
        };
    };
    let step = rollout::rolling_step(replicas, params, counts(new_rs), &old_counts);
    let mut writes: Vec<Write> = resized(
        new_rs,
        step.new_spec,
        &new_annotations(replicas, params, revision),
    )
    .into_iter()
    .collect();
    for (rs, spec) in olds.iter().zip(step.old_specs) {
        writes.extend(resized(rs, spec, &[]));
    }
    Plan {
        writes,
        created: None,
    }
}

fn plan_recreate(
    pods_by_owner: &Controlled<'_>,
    deployment: &Value,
    replicas: i64,
    new_rs: Option<&Value>,
    olds: &[&Value],
    revision: i64,
) -> Plan {
    let params = RollingParams {
        max_surge: 0,
        max_unavailable: 0,
    };
    let scale_down: Vec<Write> = olds.iter().filter_map(|rs| resized(rs, 0, &[])).collect();
    if !scale_down.is_empty() {
        return Plan {
            writes: scale_down,
            created: None,
        };
    }
    let old_pods_running = olds
        .iter()
        .any(|rs| pods_by_owner.of(rs).iter().any(|pod| pods::is_active(pod)));
    if old_pods_running {
        return Plan {
            writes: Vec::new(),
            created: None,
        };
    }
    match new_rs {
        None => {
            let rs = new_replica_set(deployment, replicas, revision, 0);
            let created = meta::name(&rs).to_string();
            Plan {
                writes: vec![Write::Create(rs)],
                created: Some(created),
            }
        }
        Some(rs) => Plan {
            writes: resized(rs, replicas, &new_annotations(replicas, params, revision))
                .into_iter()
                .collect(),
            created: None,
        },
    }
}

/// Deletes the oldest empty old ReplicaSets beyond `revisionHistoryLimit`.
fn cleanup_history(deployment: &Value, olds: &[&Value], outcome: &mut Outcome) {
    let limit = meta::i64_or(
        deployment,
        "/spec/revisionHistoryLimit",
        DEFAULT_REVISION_HISTORY_LIMIT,
    )
    .max(0);
    let empty: Vec<&&Value> = olds
        .iter()
        .filter(|rs| spec_replicas(rs) == 0 && meta::i64_at(rs, "/status/replicas") == 0)
        .collect();
    let excess =
        usize::try_from(i64::try_from(olds.len()).unwrap_or(i64::MAX) - limit).unwrap_or(0);
    for rs in empty.into_iter().take(excess) {
        outcome.write(Write::Delete(ObjectKey::of(rs)));
    }
}

/// Upserts a Deployment condition: unchanged when status and reason are unchanged (unless
/// `refresh`), `lastTransitionTime` kept while the status is.
pub(crate) fn set_deployment_condition(
    conditions: &mut Vec<Value>,
    condition: Condition,
    now: Timestamp,
    refresh: bool,
) {
    let existing = meta::find_condition(conditions, &condition.type_).cloned();
    if let Some(existing) = &existing
        && !refresh
        && meta::str_at(existing, "/status") == condition.status
        && meta::str_at(existing, "/reason") == condition.reason
    {
        return;
    }
    let transition = match &existing {
        Some(e) if meta::str_at(e, "/status") == condition.status => {
            meta::str_at(e, "/lastTransitionTime").to_string()
        }
        _ => meta::format_time(now),
    };
    let stored = json!({
        "type": condition.type_,
        "status": condition.status,
        "lastUpdateTime": meta::format_time(now),
        "lastTransitionTime": transition,
        "reason": condition.reason,
        "message": condition.message,
    });
    match conditions
        .iter()
        .position(|c| meta::str_at(c, "/type") == condition.type_)
    {
        Some(index) => conditions[index] = stored,
        None => conditions.push(stored),
    }
}

#[allow(clippy::too_many_arguments)]
fn deployment_status(
    deployment: &Value,
    replicas: i64,
    params: RollingParams,
    new_rs: Option<&Value>,
    owned: &[&Value],
    new_name: &str,
    created_now: bool,
    now: Timestamp,
    outcome: &mut Outcome,
) -> Value {
    let sum = |field: &str| -> i64 {
        owned
            .iter()
            .map(|rs| meta::i64_at(rs, &format!("/status/{field}")))
            .sum()
    };
    let total = sum("replicas");
    let updated = new_rs.map_or(0, |rs| meta::i64_at(rs, "/status/replicas"));
    let ready = sum("readyReplicas");
    let available = sum("availableReplicas");
    let old_status = deployment
        .get("status")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut status = old_status.clone();
    for (field, value) in [
        ("replicas", total),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("unavailableReplicas", (replicas - available).max(0)),
        ("observedGeneration", meta::generation(deployment)),
    ] {
        meta::set_path(&mut status, &[field], json!(value));
    }

    let mut conditions = meta::conditions(deployment);
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
    set_deployment_condition(&mut conditions, available_condition, now, false);

    if created_now {
        let message = format!("Created new replica set \"{new_name}\"");
        set_deployment_condition(
            &mut conditions,
            Condition::new("Progressing", "True", "NewReplicaSetCreated", &message),
            now,
            true,
        );
    } else if new_rs.is_some() && meta::find_condition(&conditions, "Progressing").is_none() {
        let message = format!("Found new replica set \"{new_name}\"");
        set_deployment_condition(
            &mut conditions,
            Condition::new("Progressing", "True", "FoundNewReplicaSet", &message),
            now,
            true,
        );
    }

    let complete = updated == replicas && available == replicas && total == replicas;
    let old = |field: &str| meta::i64_at(&old_status, &format!("/{field}"));
    let progressed = updated > old("updatedReplicas")
        || (total - updated) < (old("replicas") - old("updatedReplicas"))
        || ready > old("readyReplicas")
        || available > old("availableReplicas");
    let deadline = meta::i64_or(
        deployment,
        "/spec/progressDeadlineSeconds",
        DEFAULT_PROGRESS_DEADLINE_SECONDS,
    );
    let progressing = meta::find_condition(&conditions, "Progressing").cloned();
    if new_rs.is_some() && !created_now {
        if complete {
            let message = format!("ReplicaSet \"{new_name}\" has successfully progressed.");
            set_deployment_condition(
                &mut conditions,
                Condition::new("Progressing", "True", "NewReplicaSetAvailable", &message),
                now,
                false,
            );
        } else if progressed {
            let message = format!("ReplicaSet \"{new_name}\" is progressing.");
            set_deployment_condition(
                &mut conditions,
                Condition::new("Progressing", "True", "ReplicaSetUpdated", &message),
                now,
                true,
            );
        } else if let Some(current) = &progressing {
            let reason = meta::str_at(current, "/reason");
            let last_update = meta::parse_time(meta::str_at(current, "/lastUpdateTime"));
            let timeout_at = last_update.map(|t| t + SignedDuration::from_secs(deadline));
            if reason != "NewReplicaSetAvailable" && reason != "ProgressDeadlineExceeded" {
                match timeout_at {
                    Some(at) if at < now => {
                        let message =
                            format!("ReplicaSet \"{new_name}\" has timed out progressing.");
                        set_deployment_condition(
                            &mut conditions,
                            Condition::new(
                                "Progressing",
                                "False",
                                "ProgressDeadlineExceeded",
                                &message,
                            ),
                            now,
                            false,
                        );
                    }
                    Some(at) => outcome.requeue(at + SignedDuration::from_secs(1)),
                    None => {}
                }
            }
        }
    }
    // Available first, then Progressing, as kubectl shows them.
    conditions.sort_by_key(|c| match meta::str_at(c, "/type") {
        "Available" => 0,
        "Progressing" => 1,
        _ => 2,
    });
    meta::set_path(&mut status, &["conditions"], Value::Array(conditions));
    status
}

/// Whether `kubectl rollout status` would report success, and its message otherwise.
pub fn rollout_status(deployment: &Value) -> Result<bool, String> {
    let name = meta::name(deployment);
    if meta::generation(deployment) > meta::i64_at(deployment, "/status/observedGeneration") {
        return Ok(false);
    }
    let conditions = meta::conditions(deployment);
    if meta::find_condition(&conditions, "Progressing")
        .is_some_and(|c| meta::str_at(c, "/reason") == "ProgressDeadlineExceeded")
    {
        return Err(format!(
            "deployment \"{name}\" exceeded its progress deadline"
        ));
    }
    let replicas = spec_replicas(deployment);
    let status = |field: &str| meta::i64_at(deployment, &format!("/status/{field}"));
    Ok(status("updatedReplicas") >= replicas
        && status("replicas") <= status("updatedReplicas")
        && status("availableReplicas") >= status("updatedReplicas"))
}
