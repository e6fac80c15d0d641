//! The little the scheduler needs to know about a resource template: its reference, replica count and per-replica
//! requirements (Karmada's resource interpreter `GetReplicas` for the built-in kinds).
//!
//! Invariants: Deployment, StatefulSet and ReplicaSet replicas default to 1, Job uses `parallelism` (default 1),
//! a Pod is 1; every other kind is a non-workload (0 replicas, no requirements). Requests are the sum of the
//! containers' `requests`, raised to any single init container's larger request; limits are not read.
//! Requirements are absent when there are neither requests nor node constraints.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::error::InputError;
use crate::quantity::milli_from_value;

/// What scheduling reads from a resource template.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadFacts {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub replicas: i32,
    /// `ReplicaRequirements` JSON (`resourceRequest`, `nodeClaim`, `namespace`, `priorityClassName`).
    pub replica_requirements: Option<Value>,
}

fn text(object: &Value, pointer: &str) -> Option<String> {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn format_milli(milli: i128) -> String {
    if milli % 1000 == 0 {
        format!("{}", milli / 1000)
    } else {
        format!("{milli}m")
    }
}

fn requests_of(
    containers: Option<&Value>,
    at: &str,
) -> Result<Vec<BTreeMap<String, i128>>, InputError> {
    let mut all = Vec::new();
    for (index, container) in containers
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let mut requests = BTreeMap::new();
        if let Some(Value::Object(map)) = container.pointer("/resources/requests") {
            for (name, quantity) in map {
                let milli = milli_from_value(quantity).map_err(|e| {
                    InputError::new(
                        format!("{at}[{index}].resources.requests.{name}"),
                        e.to_string(),
                    )
                })?;
                requests.insert(name.clone(), milli);
            }
        }
        all.push(requests);
    }
    Ok(all)
}

/// Reads the scheduling facts of `workload`.
pub fn interpret(workload: &Value) -> Result<WorkloadFacts, InputError> {
    let api_version = text(workload, "/apiVersion")
        .ok_or_else(|| InputError::new("workload apiVersion", "is required"))?;
    let kind =
        text(workload, "/kind").ok_or_else(|| InputError::new("workload kind", "is required"))?;
    let name = text(workload, "/metadata/name")
        .ok_or_else(|| InputError::new(format!("{kind} metadata.name"), "is required"))?;
    let at = format!("{kind} {name}");
    let count = |pointer: &str| -> Result<i32, InputError> {
        match workload.pointer(pointer) {
            None | Some(Value::Null) => Ok(1),
            Some(value) => value
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    InputError::new(
                        format!(
                            "{at}: {}",
                            pointer.trim_start_matches('/').replace('/', ".")
                        ),
                        format!("must be a non-negative integer, got {value}"),
                    )
                }),
        }
    };
    let (replicas, pod_spec) = match (api_version.as_str(), kind.as_str()) {
        ("apps/v1", "Deployment" | "StatefulSet" | "ReplicaSet") => (
            count("/spec/replicas")?,
            workload.pointer("/spec/template/spec"),
        ),
        ("batch/v1", "Job") => (
            count("/spec/parallelism")?,
            workload.pointer("/spec/template/spec"),
        ),
        ("v1", "Pod") => (1, workload.get("spec")),
        _ => (0, None),
    };
    let replica_requirements = match pod_spec {
        None => None,
        Some(pod_spec) => {
            let mut total: BTreeMap<String, i128> = BTreeMap::new();
            for requests in requests_of(pod_spec.get("containers"), &format!("{at}: containers"))? {
                for (name, milli) in requests {
                    *total.entry(name).or_insert(0) += milli;
                }
            }
            for requests in requests_of(
                pod_spec.get("initContainers"),
                &format!("{at}: initContainers"),
            )? {
                for (name, milli) in requests {
                    let entry = total.entry(name).or_insert(0);
                    *entry = (*entry).max(milli);
                }
            }
            let mut node_claim = serde_json::Map::new();
            if let Some(selector) = pod_spec
                .get("nodeSelector")
                .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
            {
                node_claim.insert("nodeSelector".into(), selector.clone());
            }
            if let Some(tolerations) = pod_spec
                .get("tolerations")
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                node_claim.insert("tolerations".into(), tolerations.clone());
            }
            if let Some(required) = pod_spec
                .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
            {
                node_claim.insert("hardNodeAffinity".into(), required.clone());
            }
            if total.is_empty() && node_claim.is_empty() {
                None
            } else {
                let mut requirements = json!({
                    "resourceRequest": total.iter().map(|(name, milli)| (name.clone(), Value::String(format_milli(*milli)))).collect::<serde_json::Map<_, _>>(),
                });
                if !node_claim.is_empty() {
                    requirements["nodeClaim"] = Value::Object(node_claim);
                }
                if let Some(namespace) = text(workload, "/metadata/namespace") {
                    requirements["namespace"] = Value::String(namespace);
                }
                if let Some(priority) = pod_spec.get("priorityClassName").and_then(Value::as_str) {
                    requirements["priorityClassName"] = Value::String(priority.to_string());
                }
                Some(requirements)
            }
        }
    };
    Ok(WorkloadFacts {
        api_version,
        kind,
        namespace: text(workload, "/metadata/namespace"),
        name,
        uid: text(workload, "/metadata/uid").unwrap_or_default(),
        resource_version: text(workload, "/metadata/resourceVersion").unwrap_or_default(),
        replicas,
        replica_requirements,
    })
}
