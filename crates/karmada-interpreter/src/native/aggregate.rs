//! AggregateStatus: the template's `.status` built from the per-cluster statuses of its binding.
//!
//! Workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet) sum their counters. Their `observedGeneration`
//! becomes the template's `metadata.generation` only when every cluster's item reports a status whose
//! `observedGeneration ≥ generation` (the member caught up with its own object) and whose
//! `resourceTemplateGeneration ≥` the template generation (the member object was rendered from the latest
//! template); otherwise the template's previous `observedGeneration` is kept. A Deployment also gets Available,
//! Progressing and ReplicaFailure conditions from its members' (`deployment_conditions`). Job sums its counters and
//! reports Complete when every cluster completed, Failed when any failed (a finished Job's status is final). Service (LoadBalancer) and Ingress
//! list every cluster's load-balancer ingress, an entry without hostname getting its cluster's name. Pod takes
//! the first phase present in Failed, Pending, Running, Succeeded (a member without status counts as Pending)
//! and lists each container's readiness and state. PersistentVolume likewise over Failed, Pending, Available,
//! Bound, Released; PersistentVolumeClaim is Bound unless a member reports Lost or another phase. CronJob lists
//! every member's active Jobs and keeps the latest schedule and success times. PodDisruptionBudget sums its four
//! health counters and lists disrupted pods as `cluster/pod`. HorizontalPodAutoscaler sums current and desired
//! replicas. Items without a status are skipped when summing.

use karmada_api::work::AggregatedStatusItem;
use serde_json::{Map, Value, json};

use super::deployment_conditions;
use super::{
    CRON_JOB, DAEMON_SET, DEPLOYMENT, HORIZONTAL_POD_AUTOSCALER, INGRESS, JOB, PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM, POD, POD_DISRUPTION_BUDGET, REPLICA_SET, SERVICE, STATEFUL_SET, is,
    kind_of,
};
use crate::InterpretError;
use crate::value::{array_at, int_at, int_or_zero, str_at};

const DEPLOYMENT_SUMS: &[&str] = &[
    "replicas",
    "readyReplicas",
    "updatedReplicas",
    "availableReplicas",
    "unavailableReplicas",
];
const STATEFUL_SET_SUMS: &[&str] = &[
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "availableReplicas",
];
const DAEMON_SET_SUMS: &[&str] = &[
    "currentNumberScheduled",
    "desiredNumberScheduled",
    "numberAvailable",
    "numberMisscheduled",
    "numberReady",
    "updatedNumberScheduled",
    "numberUnavailable",
];
const REPLICA_SET_SUMS: &[&str] = &[
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "fullyLabeledReplicas",
];

fn with_status(template: &Value, status: Value) -> Result<Value, InterpretError> {
    let mut result = template.clone();
    let root = result
        .as_object_mut()
        .ok_or_else(|| InterpretError::NotAnObject("template must be a JSON object".into()))?;
    root.insert("status".into(), status);
    Ok(result)
}

fn item_int(
    template: &Value,
    item: &AggregatedStatusItem,
    status: &Value,
    field: &str,
) -> Result<i64, InterpretError> {
    int_or_zero(status, &format!("/{field}")).map_err(|_| {
        InterpretError::invalid(
            template,
            format!(
                "status.aggregatedStatus[{}].status.{field}",
                item.cluster_name
            ),
            "must be an integer",
        )
    })
}

/// The sums of `fields` over the items that report a status, in `fields`' order.
fn totals(
    template: &Value,
    items: &[AggregatedStatusItem],
    fields: &[&str],
) -> Result<Vec<i64>, InterpretError> {
    let mut totals = vec![0i64; fields.len()];
    for item in items {
        let Some(status) = item.status.as_ref() else {
            continue;
        };
        for (total, field) in totals.iter_mut().zip(fields) {
            *total = total.saturating_add(item_int(template, item, status, field)?);
        }
    }
    Ok(totals)
}

/// The summed status of a workload kind, and for each item whether that member has not caught up with the
/// template yet (or reported no status).
fn workload(
    template: &Value,
    items: &[AggregatedStatusItem],
    sums: &[&str],
    track_generation: bool,
) -> Result<(Map<String, Value>, Vec<bool>), InterpretError> {
    let totals = totals(template, items, sums)?;
    let template_generation = int_or_zero(template, "/metadata/generation")?;
    let mut lagging = vec![true; items.len()];
    for (item, lagging) in items.iter().zip(lagging.iter_mut()) {
        let Some(status) = item.status.as_ref() else {
            continue;
        };
        let observed = item_int(template, item, status, "observedGeneration")?;
        let generation = item_int(template, item, status, "generation")?;
        let rendered_from = item_int(template, item, status, "resourceTemplateGeneration")?;
        *lagging = observed < generation || rendered_from < template_generation;
    }
    let mut status = Map::new();
    for (total, field) in totals.into_iter().zip(sums) {
        if total != 0 {
            status.insert((*field).to_string(), json!(total));
        }
    }
    let previous = int_at(template, "/status/observedGeneration")?;
    let observed_generation = if track_generation && !lagging.contains(&true) {
        Some(template_generation)
    } else {
        previous
    };
    if let Some(generation) = observed_generation.filter(|g| *g != 0) {
        status.insert("observedGeneration".into(), json!(generation));
    }
    Ok((status, lagging))
}

fn deployment(template: &Value, items: &[AggregatedStatusItem]) -> Result<Value, InterpretError> {
    let (mut status, lagging) = workload(template, items, DEPLOYMENT_SUMS, true)?;
    let conditions = deployment_conditions::aggregated(items, &lagging);
    if !conditions.is_empty() {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    with_status(template, Value::Object(status))
}

fn summed(
    template: &Value,
    items: &[AggregatedStatusItem],
    sums: &[&str],
    track_generation: bool,
) -> Result<Value, InterpretError> {
    let (status, _) = workload(template, items, sums, track_generation)?;
    with_status(template, Value::Object(status))
}

fn condition_true(status: &Value, condition_type: &str) -> bool {
    array_at(status, "/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == condition_type && str_at(c, "/status") == "True")
}

fn job(template: &Value, items: &[AggregatedStatusItem]) -> Result<Value, InterpretError> {
    // A finished Job's status is final.
    if let Some(status) = template.get("status")
        && (condition_true(status, "Complete") || condition_true(status, "Failed"))
    {
        return Ok(template.clone());
    }
    let mut active = 0i64;
    let mut succeeded = 0i64;
    let mut failed = 0i64;
    let mut start_time: Option<String> = None;
    let mut completion_time: Option<String> = None;
    let mut latest_transition: Option<String> = None;
    let mut failed_clusters = Vec::new();
    let mut completed = 0usize;
    for item in items {
        let Some(status) = item.status.as_ref() else {
            continue;
        };
        active = active.saturating_add(item_int(template, item, status, "active")?);
        succeeded = succeeded.saturating_add(item_int(template, item, status, "succeeded")?);
        failed = failed.saturating_add(item_int(template, item, status, "failed")?);
        // RFC 3339 timestamps in UTC compare correctly as strings.
        let start = str_at(status, "/startTime");
        if !start.is_empty() && start_time.as_deref().is_none_or(|s| start < s) {
            start_time = Some(start.to_string());
        }
        let completion = str_at(status, "/completionTime");
        if !completion.is_empty() && completion_time.as_deref().is_none_or(|c| completion > c) {
            completion_time = Some(completion.to_string());
        }
        for condition in array_at(status, "/conditions") {
            let time = str_at(condition, "/lastTransitionTime");
            if !time.is_empty() && latest_transition.as_deref().is_none_or(|t| time > t) {
                latest_transition = Some(time.to_string());
            }
        }
        if condition_true(status, "Failed") {
            failed_clusters.push(item.cluster_name.clone());
        } else if condition_true(status, "Complete") {
            completed += 1;
        }
    }
    let mut status = Map::new();
    for (field, value) in [
        ("active", active),
        ("succeeded", succeeded),
        ("failed", failed),
    ] {
        if value != 0 {
            status.insert(field.into(), json!(value));
        }
    }
    if let Some(start) = start_time {
        status.insert("startTime".into(), json!(start));
    }
    let condition = |condition_type: &str, reason: &str, message: String| {
        let mut condition =
            json!({"type": condition_type, "status": "True", "reason": reason, "message": message});
        if let (Some(time), Some(map)) = (&latest_transition, condition.as_object_mut()) {
            map.insert("lastProbeTime".into(), json!(time));
            map.insert("lastTransitionTime".into(), json!(time));
        }
        condition
    };
    if !failed_clusters.is_empty() {
        status.insert(
            "conditions".into(),
            json!([condition(
                "Failed",
                "JobFailed",
                format!(
                    "Job executed failed in member cluster {}",
                    failed_clusters.join(", ")
                )
            )]),
        );
    } else if !items.is_empty() && completed == items.len() {
        status.insert(
            "conditions".into(),
            json!([condition(
                "Complete",
                "Completed",
                "Job completed".to_string()
            )]),
        );
        if let Some(completion) = completion_time {
            status.insert("completionTime".into(), json!(completion));
        }
    }
    with_status(template, Value::Object(status))
}

fn load_balancer(
    template: &Value,
    items: &[AggregatedStatusItem],
) -> Result<Value, InterpretError> {
    let mut ingress: Vec<Value> = Vec::new();
    for item in items {
        let Some(status) = item.status.as_ref() else {
            continue;
        };
        for entry in array_at(status, "/loadBalancer/ingress") {
            let mut entry = entry.clone();
            // An entry without a hostname is labelled with its cluster, so readers can tell where it came from.
            if str_at(&entry, "/hostname").is_empty()
                && let Some(map) = entry.as_object_mut()
            {
                map.insert("hostname".into(), json!(item.cluster_name));
            }
            ingress.push(entry);
        }
    }
    let status = if ingress.is_empty() {
        json!({"loadBalancer": {}})
    } else {
        json!({"loadBalancer": {"ingress": ingress}})
    };
    with_status(template, status)
}

/// The first of `order` present among `phases`, if any.
fn first_phase<'a>(phases: &[&str], order: &[&'a str]) -> Option<&'a str> {
    order.iter().find(|phase| phases.contains(phase)).copied()
}

fn pod(template: &Value, items: &[AggregatedStatusItem]) -> Result<Value, InterpretError> {
    // A member without a status yet counts as Pending.
    let phases: Vec<&str> = items
        .iter()
        .map(|i| i.status.as_ref().map_or("Pending", |s| str_at(s, "/phase")))
        .collect();
    let mut status = Map::new();
    if let Some(phase) = first_phase(&phases, &["Failed", "Pending", "Running", "Succeeded"]) {
        status.insert("phase".into(), json!(phase));
    }
    let containers: Vec<Value> = items
        .iter()
        .filter_map(|i| i.status.as_ref())
        .flat_map(|s| array_at(s, "/containerStatuses").iter())
        .map(|c| {
            let mut summary = Map::new();
            summary.insert(
                "ready".into(),
                c.get("ready").cloned().unwrap_or(json!(false)),
            );
            if let Some(state) = c.get("state") {
                summary.insert("state".into(), state.clone());
            }
            Value::Object(summary)
        })
        .collect();
    status.insert("containerStatuses".into(), Value::Array(containers));
    with_status(template, Value::Object(status))
}

fn persistent_volume(
    template: &Value,
    items: &[AggregatedStatusItem],
) -> Result<Value, InterpretError> {
    let phases: Vec<&str> = items
        .iter()
        .map(|i| i.status.as_ref().map_or("Pending", |s| str_at(s, "/phase")))
        .collect();
    let order = ["Failed", "Pending", "Available", "Bound", "Released"];
    let status = match first_phase(&phases, &order) {
        Some(phase) => json!({"phase": phase}),
        None => json!({}),
    };
    with_status(template, status)
}

fn persistent_volume_claim(
    template: &Value,
    items: &[AggregatedStatusItem],
) -> Result<Value, InterpretError> {
    let mut phase = "Bound";
    for status in items.iter().filter_map(|i| i.status.as_ref()) {
        match str_at(status, "/phase") {
            "Lost" => {
                phase = "Lost";
                break;
            }
            "Bound" => {}
            other => phase = other,
        }
    }
    with_status(template, json!({"phase": phase}))
}

/// The later of two RFC 3339 times (UTC timestamps in Kubernetes' form compare correctly as strings).
fn later(current: Option<String>, candidate: &str) -> Option<String> {
    if candidate.is_empty() {
        return current;
    }
    match current {
        Some(current) if current.as_str() >= candidate => Some(current),
        _ => Some(candidate.to_string()),
    }
}

fn cron_job(template: &Value, items: &[AggregatedStatusItem]) -> Result<Value, InterpretError> {
    let mut active = Vec::new();
    let mut last_schedule = None;
    let mut last_successful = None;
    for status in items.iter().filter_map(|i| i.status.as_ref()) {
        active.extend(array_at(status, "/active").iter().cloned());
        last_schedule = later(last_schedule, str_at(status, "/lastScheduleTime"));
        last_successful = later(last_successful, str_at(status, "/lastSuccessfulTime"));
    }
    let mut status = Map::new();
    if !active.is_empty() {
        status.insert("active".into(), Value::Array(active));
    }
    if let Some(time) = last_schedule {
        status.insert("lastScheduleTime".into(), json!(time));
    }
    if let Some(time) = last_successful {
        status.insert("lastSuccessfulTime".into(), json!(time));
    }
    with_status(template, Value::Object(status))
}

const PDB_SUMS: &[&str] = &[
    "currentHealthy",
    "desiredHealthy",
    "expectedPods",
    "disruptionsAllowed",
];

fn pod_disruption_budget(
    template: &Value,
    items: &[AggregatedStatusItem],
) -> Result<Value, InterpretError> {
    let totals = totals(template, items, PDB_SUMS)?;
    let mut disrupted = Map::new();
    for item in items {
        let Some(pods) = item
            .status
            .as_ref()
            .and_then(|status| status.get("disruptedPods"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        // Pod names repeat across clusters, so each is prefixed with its cluster's.
        for (pod, time) in pods {
            disrupted.insert(format!("{}/{pod}", item.cluster_name), time.clone());
        }
    }
    // The four counters are required fields of the status: present even when zero.
    let mut status: Map<String, Value> = PDB_SUMS
        .iter()
        .zip(totals)
        .map(|(field, total)| ((*field).to_string(), json!(total)))
        .collect();
    if !disrupted.is_empty() {
        status.insert("disruptedPods".into(), Value::Object(disrupted));
    }
    with_status(template, Value::Object(status))
}

/// Sums the members' current and desired replicas; the rest of the template's status stays.
fn horizontal_pod_autoscaler(
    template: &Value,
    items: &[AggregatedStatusItem],
) -> Result<Value, InterpretError> {
    let sums = totals(template, items, &["currentReplicas", "desiredReplicas"])?;
    let current = sums.first().copied().unwrap_or(0);
    let desired = sums.get(1).copied().unwrap_or(0);
    let mut status = template
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if current == 0 {
        status.remove("currentReplicas");
    } else {
        status.insert("currentReplicas".into(), json!(current));
    }
    status.insert("desiredReplicas".into(), json!(desired));
    with_status(template, Value::Object(status))
}

pub(super) fn aggregate_status(
    template: &Value,
    items: &[AggregatedStatusItem],
) -> Result<Value, InterpretError> {
    let kind = kind_of(template)?;
    if is(&kind, DEPLOYMENT) {
        deployment(template, items)
    } else if is(&kind, STATEFUL_SET) {
        summed(template, items, STATEFUL_SET_SUMS, true)
    } else if is(&kind, DAEMON_SET) {
        summed(template, items, DAEMON_SET_SUMS, true)
    } else if is(&kind, REPLICA_SET) {
        summed(template, items, REPLICA_SET_SUMS, false)
    } else if is(&kind, JOB) {
        job(template, items)
    } else if is(&kind, SERVICE) {
        if str_at(template, "/spec/type") != "LoadBalancer" {
            return Ok(template.clone());
        }
        load_balancer(template, items)
    } else if is(&kind, INGRESS) {
        load_balancer(template, items)
    } else if is(&kind, POD) {
        pod(template, items)
    } else if is(&kind, PERSISTENT_VOLUME) {
        persistent_volume(template, items)
    } else if is(&kind, PERSISTENT_VOLUME_CLAIM) {
        persistent_volume_claim(template, items)
    } else if is(&kind, CRON_JOB) {
        cron_job(template, items)
    } else if is(&kind, POD_DISRUPTION_BUDGET) {
        pod_disruption_budget(template, items)
    } else if is(&kind, HORIZONTAL_POD_AUTOSCALER) {
        horizontal_pod_autoscaler(template, items)
    } else {
        Ok(template.clone())
    }
}

#[cfg(test)]
mod tests {
    use karmada_api::work::AggregatedStatusItem;
    use serde_json::{Value, json};

    use crate::Interpreter;

    fn item(cluster: &str, status: Option<Value>) -> AggregatedStatusItem {
        AggregatedStatusItem {
            cluster_name: cluster.into(),
            status,
            applied: true,
            ..Default::default()
        }
    }

    fn deployment(generation: i64, previous_observed: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "nginx-ha", "namespace": "production", "generation": generation},
               "spec": {"replicas": 6},
               "status": {"observedGeneration": previous_observed, "replicas": 1}})
    }

    fn member(replicas: i64, observed: i64, generation: i64, template_generation: i64) -> Value {
        json!({"replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas,
               "availableReplicas": replicas, "observedGeneration": observed, "generation": generation,
               "resourceTemplateGeneration": template_generation})
    }

    #[test]
    fn deployment_sums_and_observed_generation_rule() {
        let interpreter = Interpreter::native();
        // (name, items, expected status)
        let cases = vec![
            (
                "all members caught up: observedGeneration = template generation",
                vec![
                    item("cluster-aws", Some(member(4, 2, 2, 3))),
                    item("cluster-gcp", Some(member(2, 1, 1, 3))),
                ],
                json!({"replicas": 6, "readyReplicas": 6, "updatedReplicas": 6, "availableReplicas": 6, "observedGeneration": 3}),
            ),
            (
                "a member has not observed its own generation: previous value kept",
                vec![
                    item("cluster-aws", Some(member(4, 1, 2, 3))),
                    item("cluster-gcp", Some(member(2, 1, 1, 3))),
                ],
                json!({"replicas": 6, "readyReplicas": 6, "updatedReplicas": 6, "availableReplicas": 6, "observedGeneration": 2}),
            ),
            (
                "a member was rendered from an older template: previous value kept",
                vec![
                    item("cluster-aws", Some(member(4, 2, 2, 2))),
                    item("cluster-gcp", Some(member(2, 1, 1, 3))),
                ],
                json!({"replicas": 6, "readyReplicas": 6, "updatedReplicas": 6, "availableReplicas": 6, "observedGeneration": 2}),
            ),
            (
                "a member without status blocks the generation but not the sums",
                vec![
                    item("cluster-aws", Some(member(4, 2, 2, 3))),
                    item("cluster-gcp", None),
                ],
                json!({"replicas": 4, "readyReplicas": 4, "updatedReplicas": 4, "availableReplicas": 4, "observedGeneration": 2}),
            ),
        ];
        for (name, items, expected) in cases {
            let mut aggregated = interpreter
                .aggregate_status(&deployment(3, 2), &items)
                .expect("aggregatable");
            // Conditions have their own tests (deployment_conditions).
            if let Some(status) = aggregated["status"].as_object_mut() {
                status.remove("conditions");
            }
            assert_eq!(aggregated.get("status"), Some(&expected), "{name}");
            assert_eq!(
                aggregated.get("spec"),
                deployment(3, 2).get("spec"),
                "{name}: spec untouched"
            );
        }
    }

    #[test]
    fn deployment_conditions_travel_from_member_objects_to_the_template() {
        let interpreter = Interpreter::native();
        let member = |available: &str, progressing: (&str, &str)| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "generation": 1,
                                "annotations": {"resourcetemplate.karmada.io/generation": "3"}},
                   "status": {"replicas": 2, "availableReplicas": 2, "observedGeneration": 1, "conditions": [
                       {"type": "Available", "status": available, "reason": "MinimumReplicasAvailable",
                        "message": "Deployment has minimum availability.",
                        "lastTransitionTime": "2026-12-02T00:07:44Z"},
                       {"type": "Progressing", "status": progressing.0, "reason": progressing.1,
                        "message": "ReplicaSet \"web-1\" has timed out progressing.",
                        "lastUpdateTime": "2026-12-02T00:07:44Z"}]}})
        };
        let aggregate = |members: Vec<Value>| {
            let items: Vec<AggregatedStatusItem> = members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    item(
                        &format!("m{i}"),
                        interpreter.reflect_status(m).expect("reflectable"),
                    )
                })
                .collect();
            interpreter
                .aggregate_status(&deployment(3, 2), &items)
                .expect("aggregatable")["status"]["conditions"]
                .clone()
        };
        let healthy = member("True", ("True", "NewReplicaSetAvailable"));
        assert_eq!(
            aggregate(vec![healthy.clone(), healthy.clone()]),
            json!([
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                 "message": "Deployment has minimum availability in every member cluster."},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": "Deployment has successfully progressed in every member cluster."}])
        );
        let stalled = member("False", ("False", "ProgressDeadlineExceeded"));
        assert_eq!(
            aggregate(vec![healthy, stalled])[1],
            json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                   "message": "m1: ReplicaSet \"web-1\" has timed out progressing."})
        );
    }

    #[test]
    fn other_kinds_table() {
        let interpreter = Interpreter::native();
        let cases = vec![
            (
                "statefulset sums",
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "generation": 1}}),
                vec![
                    item(
                        "a",
                        Some(
                            json!({"replicas": 2, "readyReplicas": 1, "currentReplicas": 2, "observedGeneration": 1, "generation": 1, "resourceTemplateGeneration": 1}),
                        ),
                    ),
                    item(
                        "b",
                        Some(
                            json!({"replicas": 3, "readyReplicas": 3, "currentReplicas": 3, "observedGeneration": 4, "generation": 4, "resourceTemplateGeneration": 1}),
                        ),
                    ),
                ],
                json!({"replicas": 5, "readyReplicas": 4, "currentReplicas": 5, "observedGeneration": 1}),
            ),
            (
                "daemonset sums",
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "generation": 2}}),
                vec![
                    item(
                        "a",
                        Some(
                            json!({"numberReady": 3, "desiredNumberScheduled": 3, "observedGeneration": 1, "generation": 1, "resourceTemplateGeneration": 2}),
                        ),
                    ),
                    item(
                        "b",
                        Some(
                            json!({"numberReady": 1, "desiredNumberScheduled": 2, "observedGeneration": 1, "generation": 1, "resourceTemplateGeneration": 2}),
                        ),
                    ),
                ],
                json!({"numberReady": 4, "desiredNumberScheduled": 5, "observedGeneration": 2}),
            ),
            (
                "replicaset sums",
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"}}),
                vec![
                    item("a", Some(json!({"replicas": 1, "readyReplicas": 1}))),
                    item("b", Some(json!({"replicas": 2}))),
                ],
                json!({"replicas": 3, "readyReplicas": 1}),
            ),
            (
                "job complete everywhere",
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}),
                vec![
                    item(
                        "a",
                        Some(
                            json!({"succeeded": 2, "startTime": "2026-01-01T00:00:05Z", "completionTime": "2026-01-01T00:01:00Z",
                                          "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}),
                        ),
                    ),
                    item(
                        "b",
                        Some(
                            json!({"succeeded": 1, "startTime": "2026-01-01T00:00:01Z", "completionTime": "2026-01-01T00:02:00Z",
                                          "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:02:00Z"}]}),
                        ),
                    ),
                ],
                json!({"succeeded": 3, "startTime": "2026-01-01T00:00:01Z", "completionTime": "2026-01-01T00:02:00Z",
                       "conditions": [{"type": "Complete", "status": "True", "reason": "Completed", "message": "Job completed",
                                       "lastProbeTime": "2026-01-01T00:02:00Z", "lastTransitionTime": "2026-01-01T00:02:00Z"}]}),
            ),
            (
                "job failed somewhere",
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}),
                vec![
                    item(
                        "a",
                        Some(
                            json!({"failed": 1, "conditions": [{"type": "Failed", "status": "True"}]}),
                        ),
                    ),
                    item("b", Some(json!({"active": 1}))),
                ],
                json!({"active": 1, "failed": 1,
                       "conditions": [{"type": "Failed", "status": "True", "reason": "JobFailed", "message": "Job executed failed in member cluster a"}]}),
            ),
            (
                "load balancer service lists every ingress",
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "LoadBalancer"}}),
                vec![
                    item(
                        "a",
                        Some(json!({"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}})),
                    ),
                    item(
                        "b",
                        Some(json!({"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}})),
                    ),
                ],
                json!({"loadBalancer": {"ingress": [{"ip": "1.1.1.1", "hostname": "a"}, {"hostname": "lb.example"}]}}),
            ),
            (
                "ingress lists every ingress",
                json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"}}),
                vec![item(
                    "a",
                    Some(json!({"loadBalancer": {"ingress": [{"ip": "2.2.2.2"}]}})),
                )],
                json!({"loadBalancer": {"ingress": [{"ip": "2.2.2.2", "hostname": "a"}]}}),
            ),
            (
                "pod running everywhere",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
                vec![
                    item(
                        "a",
                        Some(json!({"phase": "Running", "containerStatuses": [{"ready": true}]})),
                    ),
                    item("b", Some(json!({"phase": "Running"}))),
                ],
                json!({"phase": "Running", "containerStatuses": [{"ready": true}]}),
            ),
            (
                "pod failed somewhere",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
                vec![
                    item("a", Some(json!({"phase": "Failed"}))),
                    item("b", Some(json!({"phase": "Pending"}))),
                ],
                json!({"phase": "Failed", "containerStatuses": []}),
            ),
            (
                "pod without a member status is pending",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
                vec![
                    item("a", Some(json!({"phase": "Running"}))),
                    item("b", None),
                ],
                json!({"phase": "Pending", "containerStatuses": []}),
            ),
            (
                "pv phase order",
                json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"}}),
                vec![
                    item("a", Some(json!({"phase": "Bound"}))),
                    item("b", Some(json!({"phase": "Available"}))),
                ],
                json!({"phase": "Available"}),
            ),
            (
                "cronjob lists active jobs and keeps the latest times",
                json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}}),
                vec![
                    item(
                        "a",
                        Some(json!({"active": [{"kind": "Job", "name": "c-1"}],
                                    "lastScheduleTime": "2026-01-01T00:05:00Z", "lastSuccessfulTime": "2026-01-01T00:01:00Z"})),
                    ),
                    item("b", None),
                    item(
                        "c",
                        Some(json!({"active": [{"kind": "Job", "name": "c-2"}],
                                    "lastScheduleTime": "2026-01-01T00:04:00Z", "lastSuccessfulTime": "2026-01-01T00:03:00Z"})),
                    ),
                    item("d", Some(json!({}))),
                ],
                json!({"active": [{"kind": "Job", "name": "c-1"}, {"kind": "Job", "name": "c-2"}],
                       "lastScheduleTime": "2026-01-01T00:05:00Z", "lastSuccessfulTime": "2026-01-01T00:03:00Z"}),
            ),
            (
                "cronjob that never ran",
                json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                       "status": {"active": [{"kind": "Job", "name": "gone"}]}}),
                vec![item("a", Some(json!({})))],
                json!({}),
            ),
            (
                "pdb sums its counters and names disrupted pods by cluster",
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p", "generation": 3},
                       "status": {"observedGeneration": 3, "conditions": [{"type": "DisruptionAllowed", "status": "True"}]}}),
                vec![
                    item(
                        "a",
                        Some(
                            json!({"currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1,
                                    "disruptedPods": {"web-0": "2026-01-01T00:00:00Z"}}),
                        ),
                    ),
                    item(
                        "b",
                        Some(
                            json!({"currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1, "disruptionsAllowed": 0,
                                    "disruptedPods": {"web-0": "2026-01-01T00:00:09Z"}}),
                        ),
                    ),
                    item("c", None),
                ],
                json!({"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "disruptionsAllowed": 1,
                       "disruptedPods": {"a/web-0": "2026-01-01T00:00:00Z", "b/web-0": "2026-01-01T00:00:09Z"}}),
            ),
            (
                "pdb without member status reports zero counters",
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}}),
                vec![item("a", None)],
                json!({"currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0, "disruptionsAllowed": 0}),
            ),
            (
                "hpa sums current and desired replicas, keeping the rest",
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
                       "status": {"currentReplicas": 9, "desiredReplicas": 9, "lastScaleTime": "2026-01-01T00:00:00Z"}}),
                vec![
                    item(
                        "a",
                        Some(json!({"currentReplicas": 2, "desiredReplicas": 3})),
                    ),
                    item(
                        "b",
                        Some(json!({"currentReplicas": 4, "desiredReplicas": 4})),
                    ),
                ],
                json!({"currentReplicas": 6, "desiredReplicas": 7, "lastScaleTime": "2026-01-01T00:00:00Z"}),
            ),
            (
                "hpa with nothing running",
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
                       "status": {"currentReplicas": 2, "desiredReplicas": 2}}),
                vec![item("a", Some(json!({"desiredReplicas": 0})))],
                json!({"desiredReplicas": 0}),
            ),
            (
                "pvc lost wins",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pvc"}}),
                vec![
                    item("a", Some(json!({"phase": "Pending"}))),
                    item("b", Some(json!({"phase": "Lost"}))),
                ],
                json!({"phase": "Lost"}),
            ),
        ];
        for (name, template, items, expected) in cases {
            let aggregated = interpreter
                .aggregate_status(&template, &items)
                .expect("aggregatable");
            assert_eq!(aggregated.get("status"), Some(&expected), "{name}");
        }
        let cluster_ip = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"}});
        assert_eq!(
            interpreter
                .aggregate_status(&cluster_ip, &[item("a", Some(json!({})))])
                .expect("ok"),
            cluster_ip
        );
    }

    #[test]
    fn finished_job_status_is_final() {
        let finished = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                              "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}});
        let items = vec![item("a", Some(json!({"active": 3})))];
        assert_eq!(
            Interpreter::native()
                .aggregate_status(&finished, &items)
                .expect("ok"),
            finished
        );
    }

    #[test]
    fn malformed_member_status_is_an_error() {
        let items = vec![item("cluster-aws", Some(json!({"replicas": "four"})))];
        let error = Interpreter::native()
            .aggregate_status(&deployment(1, 1), &items)
            .expect_err("rejected");
        assert!(error.to_string().contains("cluster-aws"), "{error}");
        for (template, status) in [
            (
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}}),
                json!({"currentHealthy": "two"}),
            ),
            (
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"}}),
                json!({"desiredReplicas": 1.5}),
            ),
        ] {
            let error = Interpreter::native()
                .aggregate_status(&template, &[item("cluster-gcp", Some(status))])
                .expect_err("rejected");
            assert!(error.to_string().contains("cluster-gcp"), "{error}");
        }
    }

    proptest::proptest! {
        #[test]
        fn deployment_counters_are_the_member_sums(members in proptest::collection::vec((0i64..100, 0i64..100), 0..6)) {
            let items: Vec<AggregatedStatusItem> = members
                .iter()
                .enumerate()
                .map(|(i, (replicas, ready))| item(&format!("m{i}"), Some(json!({"replicas": replicas, "readyReplicas": ready}))))
                .collect();
            let aggregated = Interpreter::native()
                .aggregate_status(&deployment(1, 0), &items)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let total: i64 = members.iter().map(|(r, _)| r).sum();
            let ready: i64 = members.iter().map(|(_, r)| r).sum();
            let read = |field: &str| aggregated["status"].get(field).and_then(Value::as_i64).unwrap_or(0);
            proptest::prop_assert_eq!(read("replicas"), total);
            proptest::prop_assert_eq!(read("readyReplicas"), ready);
        }
    }
}
