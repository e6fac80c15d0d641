//! What metrics-server would report for this cluster's pods and nodes (`metrics.k8s.io/v1beta1`
//! PodMetrics and NodeMetrics), from the load a test or a user set (`karmada member-sim load`).
//! A load's custom metrics (`--metric rps=50`) are what [`crate::custom_metrics`] reports.
//!
//! A [`Load`] gives every running pod its selector matches in its namespace that usage (and those
//! custom metric values); the last load set for a pod wins. A pod no load matches uses nothing. A pod's usage is split evenly over
//! its containers (the first takes the remainder); a node's is the sum of its running pods'. Pods
//! that are not Running or are being deleted have no metrics, as metrics-server reports none
//! before a pod's first scrape.

use std::collections::BTreeMap;

use apimachinery::LabelSelector;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::quantity::{self, QuantityError};

/// The window metrics-server reports its rates over.
pub const WINDOW: &str = "15s";

/// Usage for the pods a selector matches in one namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Load {
    pub namespace: String,
    /// A label selector in its query form (`app=web`); empty selects every pod.
    pub selector: String,
    /// Per pod, in millicores.
    pub cpu_millis: i64,
    /// Per pod, in bytes.
    pub memory_bytes: i64,
    /// Custom metric values per pod, in thousandths, by metric name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, i64>,
}

/// Why a load cannot be set.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("--selector {selector:?}: {message}; expected the form app=web,tier in (a,b)")]
    Selector { selector: String, message: String },
    #[error("--{flag} {value:?}: {source}; expected a quantity such as 400m, 2 or 128Mi")]
    Quantity {
        flag: &'static str,
        value: String,
        source: QuantityError,
    },
    #[error("--{flag} {value:?} is negative; usage is zero or more")]
    Negative { flag: &'static str, value: String },
    #[error(
        "--metric {value:?}: {problem}; expected NAME=QUANTITY such as http_requests_per_second=50 or queue_depth=1500m"
    )]
    Metric { value: String, problem: String },
}

/// Whether `name` is a metric name as Prometheus writes them (`[a-zA-Z_:][a-zA-Z0-9_:]*`), which
/// also keeps it one path segment.
fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `NAME=QUANTITY` → (name, thousandths).
fn parse_metric(text: &str) -> Result<(String, i64), LoadError> {
    let error = |problem: String| LoadError::Metric {
        value: text.to_string(),
        problem,
    };
    let (name, value) = text.split_once('=').ok_or_else(|| error("no '='".into()))?;
    if !is_metric_name(name) {
        return Err(error(format!(
            "{name:?} is not a metric name (letters, digits, '_' and ':', not starting with a digit)"
        )));
    }
    let milli = quantity::parse_milli(value).map_err(|e| error(e.to_string()))?;
    let milli = i64::try_from(milli).map_err(|_| error("the value is too large".into()))?;
    if milli < 0 {
        return Err(error("the value is negative".into()));
    }
    Ok((name.to_string(), milli))
}

impl Load {
    /// A load from the CLI's words: `cpu` and `memory` are quantities (`400m`, `256Mi`),
    /// `metrics` are `NAME=QUANTITY`.
    pub fn parse(
        namespace: &str,
        selector: &str,
        cpu: &str,
        memory: &str,
        metrics: &[String],
    ) -> Result<Self, LoadError> {
        LabelSelector::parse(selector).map_err(|e| LoadError::Selector {
            selector: selector.to_string(),
            message: e.to_string(),
        })?;
        let amount =
            |flag: &'static str, value: &str, parse: fn(&str) -> Result<i64, QuantityError>| {
                let amount = parse(value).map_err(|source| LoadError::Quantity {
                    flag,
                    value: value.to_string(),
                    source,
                })?;
                if amount < 0 {
                    return Err(LoadError::Negative {
                        flag,
                        value: value.to_string(),
                    });
                }
                Ok(amount)
            };
        Ok(Self {
            namespace: namespace.to_string(),
            selector: selector.to_string(),
            cpu_millis: amount("cpu", cpu, quantity::cpu_millis)?,
            memory_bytes: amount("memory", memory, quantity::units)?,
            metrics: metrics
                .iter()
                .map(|m| parse_metric(m))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether this load applies to `pod`.
    pub(crate) fn applies_to(&self, pod: &Value) -> bool {
        pod.pointer("/metadata/namespace").and_then(Value::as_str) == Some(&self.namespace)
            && LabelSelector::parse(&self.selector).is_ok_and(|s| s.matches_object(pod))
    }
}

/// Whether `pod` reports metrics at all: Running and not being deleted.
pub(crate) fn is_measured(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
        && pod.pointer("/metadata/deletionTimestamp").is_none()
}

/// The load in force for `pod` (the last one set that applies to it).
pub(crate) fn load_of<'a>(pod: &Value, loads: &'a [Load]) -> Option<&'a Load> {
    loads.iter().rev().find(|load| load.applies_to(pod))
}

/// A pod's usage `(millicores, bytes)`, or `None` when metrics-server would have none for it.
pub fn pod_usage(pod: &Value, loads: &[Load]) -> Option<(i64, i64)> {
    if !is_measured(pod) {
        return None;
    }
    let usage = load_of(pod, loads).map_or((0, 0), |load| (load.cpu_millis, load.memory_bytes));
    Some(usage)
}

/// The PodMetrics of `pod` at `now`, or `None` (see [`pod_usage`]).
pub fn pod_metrics(pod: &Value, loads: &[Load], now: Timestamp) -> Option<Value> {
    let (cpu, memory) = pod_usage(pod, loads)?;
    let names: Vec<&str> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|containers| {
            containers
                .iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let count = i64::try_from(names.len().max(1)).unwrap_or(1);
    let containers: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let share = |total: i64| total / count + if i == 0 { total % count } else { 0 };
            json!({"name": name, "usage": usage(share(cpu), share(memory))})
        })
        .collect();
    let metadata = &pod["metadata"];
    Some(json!({
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "labels": metadata.get("labels").cloned().unwrap_or_else(|| json!({})),
            "creationTimestamp": now.to_string(),
        },
        "timestamp": now.to_string(),
        "window": WINDOW,
        "containers": containers,
    }))
}

/// The NodeMetrics of `node` at `now`: the sum of the running pods bound to it.
pub fn node_metrics(node: &Value, pods: &[Value], loads: &[Load], now: Timestamp) -> Value {
    let name = node.pointer("/metadata/name").and_then(Value::as_str);
    let (cpu, memory) = pods
        .iter()
        .filter(|pod| pod.pointer("/spec/nodeName").and_then(Value::as_str) == name)
        .filter_map(|pod| pod_usage(pod, loads))
        .fold((0i64, 0i64), |(c, m), (pc, pm)| {
            (c.saturating_add(pc), m.saturating_add(pm))
        });
    json!({
        "kind": "NodeMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {
            "name": name,
            "labels": node.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({})),
            "creationTimestamp": now.to_string(),
        },
        "timestamp": now.to_string(),
        "window": WINDOW,
        "usage": usage(cpu, memory),
    })
}

/// metrics-server's forms: CPU in nanocores once above a millicore's precision is not needed,
/// so millicores (`400m`), memory in kibibytes when whole (`131072Ki`), else bytes.
fn usage(cpu_millis: i64, memory_bytes: i64) -> Value {
    let memory = if memory_bytes % 1024 == 0 {
        format!("{}Ki", memory_bytes / 1024)
    } else {
        memory_bytes.to_string()
    };
    json!({"cpu": format!("{cpu_millis}m"), "memory": memory})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, labels: Value, phase: &str, node: &str, containers: usize) -> Value {
        let containers: Vec<Value> = (0..containers)
            .map(|i| json!({"name": format!("c{i}"), "image": "nginx"}))
            .collect();
        json!({
            "metadata": {"name": name, "namespace": "shop", "labels": labels},
            "spec": {"nodeName": node, "containers": containers},
            "status": {"phase": phase},
        })
    }

    fn load(selector: &str, cpu: &str, memory: &str) -> Load {
        Load::parse("shop", selector, cpu, memory, &[]).expect("valid load")
    }

    #[test]
    fn usage_follows_the_matching_load() {
        let web = pod("web-1", json!({"app": "web"}), "Running", "n1", 1);
        let db = pod("db-1", json!({"app": "db"}), "Running", "n1", 1);
        let pending = pod("web-2", json!({"app": "web"}), "Pending", "", 1);
        let loads = vec![load("app=web", "400m", "128Mi")];
        let cases = [
            (&web, Some((400, 128 << 20))),
            (&db, Some((0, 0))),
            (&pending, None),
        ];
        for (pod, expected) in cases {
            assert_eq!(
                pod_usage(pod, &loads),
                expected,
                "{}",
                pod["metadata"]["name"]
            );
        }
        let later = vec![load("app=web", "400m", "0"), load("", "50m", "0")];
        assert_eq!(
            pod_usage(&web, &later),
            Some((50, 0)),
            "the last load set wins"
        );
        let other_namespace = vec![Load::parse("other", "app=web", "1", "0", &[]).expect("valid")];
        assert_eq!(pod_usage(&web, &other_namespace), Some((0, 0)));
    }

    #[test]
    fn pod_metrics_split_usage_over_containers() {
        let web = pod("web-1", json!({"app": "web"}), "Running", "n1", 2);
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let metrics =
            pod_metrics(&web, &[load("app=web", "401m", "1Mi")], now).expect("running pod");
        assert_eq!(metrics["containers"][0]["usage"]["cpu"], "201m");
        assert_eq!(metrics["containers"][1]["usage"]["cpu"], "200m");
        assert_eq!(metrics["containers"][0]["usage"]["memory"], "512Ki");
        assert_eq!(metrics["metadata"]["labels"]["app"], "web");
        assert_eq!(metrics["timestamp"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn node_metrics_sum_the_pods_on_the_node() {
        let pods = vec![
            pod("a", json!({"app": "web"}), "Running", "n1", 1),
            pod("b", json!({"app": "web"}), "Running", "n1", 1),
            pod("c", json!({"app": "web"}), "Running", "n2", 1),
            pod("d", json!({"app": "web"}), "Failed", "n1", 1),
        ];
        let node = json!({"metadata": {"name": "n1"}});
        let metrics = node_metrics(
            &node,
            &pods,
            &[load("app=web", "300m", "0")],
            Timestamp::UNIX_EPOCH,
        );
        assert_eq!(metrics["usage"]["cpu"], "600m");
    }

    #[test]
    fn bad_loads_say_what_is_accepted() {
        let cases = [
            (("app in (a", "1", "0"), "expected the form"),
            (("app=web", "lots", "0"), "expected a quantity"),
            (("app=web", "-1", "0"), "negative"),
            (("app=web", "1", "12XB"), "--memory"),
        ];
        for ((selector, cpu, memory), needle) in cases {
            let error = Load::parse("shop", selector, cpu, memory, &[]).expect_err("invalid");
            assert!(error.to_string().contains(needle), "{error}");
        }
        let metric_cases = [
            ("rps", "no '='"),
            ("9lives=1", "not a metric name"),
            ("a/b=1", "not a metric name"),
            ("rps=lots", "expected NAME=QUANTITY"),
            ("rps=-1", "negative"),
        ];
        for (metric, needle) in metric_cases {
            let error = Load::parse("shop", "", "0", "0", &[metric.to_string()])
                .expect_err("invalid metric");
            assert!(error.to_string().contains(needle), "{metric}: {error}");
        }
        let load = Load::parse(
            "shop",
            "",
            "0",
            "0",
            &["rps=50".into(), "lag:ms=1500m".into()],
        )
        .expect("valid metrics");
        assert_eq!(
            load.metrics,
            BTreeMap::from([("rps".into(), 50_000), ("lag:ms".into(), 1500)])
        );
    }
}
