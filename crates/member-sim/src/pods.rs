//! Pod facts shared by the workload controllers: activity, readiness, availability, and pods
//! built from a template.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::meta;

/// Counts toward a controller's replicas: not terminating, not finished.
pub fn is_active(pod: &Value) -> bool {
    !meta::is_terminating(pod)
        && !matches!(meta::str_at(pod, "/status/phase"), "Succeeded" | "Failed")
}

pub fn is_ready(pod: &Value) -> bool {
    meta::condition_status(pod, "Ready") == Some("True")
}

/// When the pod last turned Ready, if it is Ready.
pub fn ready_since(pod: &Value) -> Option<Timestamp> {
    if !is_ready(pod) {
        return None;
    }
    let conditions = meta::conditions(pod);
    meta::find_condition(&conditions, "Ready").and_then(meta::transition_time)
}

/// Ready for at least `min_ready_seconds` (Kubernetes' "available"). When it is Ready but not
/// yet available, returns the time it will become available.
pub fn availability(
    pod: &Value,
    min_ready_seconds: i64,
    now: Timestamp,
) -> Result<bool, Timestamp> {
    if !is_ready(pod) {
        return Ok(false);
    }
    if min_ready_seconds <= 0 {
        return Ok(true);
    }
    match ready_since(pod) {
        Some(since) => {
            let available_at = since + SignedDuration::from_secs(min_ready_seconds);
            if available_at <= now {
                Ok(true)
            } else {
                Err(available_at)
            }
        }
        None => Ok(false),
    }
}

pub fn is_available(pod: &Value, min_ready_seconds: i64, now: Timestamp) -> bool {
    availability(pod, min_ready_seconds, now) == Ok(true)
}

/// A Pod object from a pod template, controlled by `owner`.
pub fn from_template(template: &Value, owner: &Value, name: &str, generate_name: &str) -> Value {
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta::namespace(owner),
            "ownerReferences": [meta::owner_reference(owner)],
        },
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    if !generate_name.is_empty() {
        meta::set_path(
            &mut pod,
            &["metadata", "generateName"],
            json!(generate_name),
        );
    }
    for field in ["labels", "annotations"] {
        if let Some(value) = template.pointer(&format!("/metadata/{field}")) {
            meta::set_path(&mut pod, &["metadata", field], value.clone());
        }
    }
    pod
}
