//! CPU, memory and pod counts as the scheduler adds them up.
//!
//! A pod's request is the larger of the sum of its containers' requests and its largest init
//! container's request, plus `spec.overhead` (Kubernetes' effective request). Unparseable
//! quantities count as zero: the API server validated them, so that only happens with
//! hand-built objects.

use std::ops::{Add, Sub};

use serde_json::Value;

use crate::quantity;

/// Amounts of the resources the simulated scheduler tracks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resources {
    pub cpu_millis: i64,
    pub memory_bytes: i64,
    pub pods: i64,
}

impl Add for Resources {
    type Output = Resources;
    fn add(self, other: Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_add(other.cpu_millis),
            memory_bytes: self.memory_bytes.saturating_add(other.memory_bytes),
            pods: self.pods.saturating_add(other.pods),
        }
    }
}

impl Sub for Resources {
    type Output = Resources;
    fn sub(self, other: Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_sub(other.cpu_millis),
            memory_bytes: self.memory_bytes.saturating_sub(other.memory_bytes),
            pods: self.pods.saturating_sub(other.pods),
        }
    }
}

impl Resources {
    fn max(self, other: Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.max(other.cpu_millis),
            memory_bytes: self.memory_bytes.max(other.memory_bytes),
            pods: self.pods.max(other.pods),
        }
    }

    /// Whether every amount of `self` is within `limit`.
    pub fn fits_in(&self, limit: &Resources) -> bool {
        self.cpu_millis <= limit.cpu_millis
            && self.memory_bytes <= limit.memory_bytes
            && self.pods <= limit.pods
    }

    /// Reads a `{cpu, memory, pods}` resource list (requests, capacity, allocatable).
    pub fn from_list(list: Option<&Value>) -> Resources {
        let amount = |key: &str, parse: fn(&str) -> Result<i64, quantity::QuantityError>| {
            list.and_then(|l| l.get(key))
                .and_then(quantity::json_text)
                .and_then(|text| parse(&text).ok())
                .unwrap_or_default()
        };
        Resources {
            cpu_millis: amount("cpu", quantity::cpu_millis),
            memory_bytes: amount("memory", quantity::units),
            pods: amount("pods", quantity::units),
        }
    }
}

/// The resources a pod asks for, counting itself as one pod.
pub fn pod_requests(pod: &Value) -> Resources {
    let sum_of = |pointer: &str| -> Vec<Resources> {
        pod.pointer(pointer)
            .and_then(Value::as_array)
            .map(|containers| {
                containers
                    .iter()
                    .map(|c| Resources::from_list(c.pointer("/resources/requests")))
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = sum_of("/spec/containers")
        .into_iter()
        .fold(Resources::default(), Add::add);
    let init = sum_of("/spec/initContainers")
        .into_iter()
        .fold(Resources::default(), Resources::max);
    let overhead = Resources::from_list(pod.pointer("/spec/overhead"));
    let mut total = containers.max(init) + overhead;
    total.pods = 1;
    total
}

/// What a node offers pods: `status.allocatable`, else `status.capacity`.
pub fn node_allocatable(node: &Value) -> Resources {
    match node.pointer("/status/allocatable") {
        Some(list) => Resources::from_list(Some(list)),
        None => Resources::from_list(node.pointer("/status/capacity")),
    }
}

/// A pod that holds node resources: bound, not finished.
pub fn occupies_node(pod: &Value) -> bool {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default();
    !matches!(phase, "Succeeded" | "Failed")
}

/// The QoS class Kubernetes derives from requests and limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["/spec/containers", "/spec/initContainers"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any_set = false;
    let mut guaranteed = !containers.is_empty();
    for container in containers {
        let requests = container.pointer("/resources/requests");
        let limits = container.pointer("/resources/limits");
        let has = |list: Option<&Value>, key: &str| list.and_then(|l| l.get(key)).is_some();
        for key in ["cpu", "memory"] {
            if has(requests, key) || has(limits, key) {
                any_set = true;
            }
            let limit = limits
                .and_then(|l| l.get(key))
                .and_then(quantity::json_text);
            // A limit without a request defaults the request to the limit.
            let request = requests
                .and_then(|r| r.get(key))
                .and_then(quantity::json_text)
                .or(limit.clone());
            let same = match (&request, &limit) {
                (Some(r), Some(l)) => {
                    quantity::parse_milli(r).ok() == quantity::parse_milli(l).ok()
                }
                _ => false,
            };
            if !same {
                guaranteed = false;
            }
        }
    }
    if !any_set {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(containers: Value, init: Value) -> Value {
        json!({"spec": {"containers": containers, "initContainers": init}})
    }

    #[test]
    fn effective_request_is_max_of_sum_and_init() {
        let p = pod(
            json!([
                {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                {"resources": {"requests": {"cpu": "250m"}}}
            ]),
            json!([{"resources": {"requests": {"cpu": "1", "memory": "16Mi"}}}]),
        );
        assert_eq!(
            pod_requests(&p),
            Resources {
                cpu_millis: 1000,
                memory_bytes: 64 << 20,
                pods: 1
            }
        );
        assert_eq!(
            pod_requests(&json!({})),
            Resources {
                pods: 1,
                ..Resources::default()
            }
        );
    }

    #[test]
    fn qos_classes() {
        let cases = [
            (json!([{}]), "BestEffort"),
            (
                json!([{"resources": {"requests": {"cpu": "1"}}}]),
                "Burstable",
            ),
            (
                json!([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
                "Guaranteed",
            ),
            (
                json!([{"resources": {"requests": {"cpu": "1000m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]),
                "Guaranteed",
            ),
            (
                json!([{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]),
                "Burstable",
            ),
        ];
        for (containers, expected) in cases {
            assert_eq!(
                qos_class(&pod(containers.clone(), json!([]))),
                expected,
                "{containers}"
            );
        }
    }
}
