//! What a Prometheus adapter would report for this cluster's pods through
//! `custom.metrics.k8s.io`, from the loads a test or a user set (`karmada member-sim load
//! --metric http_requests_per_second=50`).
//!
//! A metric exists once a load names it (discovery lists it, and a query for it is answered,
//! possibly with no items); any other metric is unknown (404). A pod has a value when it is
//! Running, not being deleted, and the load in force for it (the last one set that applies, as
//! for CPU) names the metric — a pod the application exports nothing for has no series. The
//! series carry no labels, so a `metricLabelSelector` is matched against an empty label set.

use std::collections::BTreeMap;

use apimachinery::LabelSelector;
use apiserver_views::custom_metrics_api::{DEFAULT_WINDOW_SECONDS, PodValue};
use jiff::Timestamp;
use serde_json::Value;

use crate::resource_metrics::{Load, is_measured, load_of};

/// The metrics any load names, sorted.
pub fn metric_names(loads: &[Load]) -> Vec<String> {
    let mut names: Vec<String> = loads
        .iter()
        .flat_map(|load| load.metrics.keys().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether a load names `metric`.
pub fn is_known(loads: &[Load], metric: &str) -> bool {
    loads.iter().any(|load| load.metrics.contains_key(metric))
}

/// What selects the values of one query.
#[derive(Clone, Copy, Debug)]
pub struct Selection<'a> {
    pub metric: &'a str,
    /// Which pods (their labels).
    pub labels: &'a LabelSelector,
    /// Which series (they have no labels).
    pub metric_labels: &'a LabelSelector,
    /// One pod, or all the label selector matches.
    pub name: Option<&'a str>,
}

/// The values of `selection.metric` for `pods` (one namespace's) at `now`.
pub fn pod_values(
    pods: &[Value],
    loads: &[Load],
    selection: Selection<'_>,
    now: Timestamp,
) -> Vec<PodValue> {
    if !selection
        .metric_labels
        .matches(&BTreeMap::<String, String>::new())
    {
        return Vec::new();
    }
    pods.iter()
        .filter(|pod| {
            selection.name.is_none_or(|name| {
                pod.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            })
        })
        .filter(|pod| is_measured(pod) && selection.labels.matches_object(pod))
        .filter_map(|pod| {
            let milli = *load_of(pod, loads)?.metrics.get(selection.metric)?;
            let text = |pointer: &str| {
                pod.pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Some(PodValue {
                namespace: text("/metadata/namespace"),
                pod: text("/metadata/name"),
                milli,
                timestamp: now.to_string(),
                window_seconds: DEFAULT_WINDOW_SECONDS,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, app: &str, phase: &str) -> Value {
        json!({
            "metadata": {"name": name, "namespace": "shop", "labels": {"app": app}},
            "status": {"phase": phase},
        })
    }

    fn load(selector: &str, metrics: &[&str]) -> Load {
        let metrics: Vec<String> = metrics.iter().map(|m| m.to_string()).collect();
        Load::parse("shop", selector, "0", "0", &metrics).expect("valid load")
    }

    #[test]
    fn values_come_from_the_load_in_force() {
        let pods = vec![
            pod("web-1", "web", "Running"),
            pod("web-2", "web", "Pending"),
            pod("db-1", "db", "Running"),
            pod("api-1", "api", "Running"),
        ];
        let loads = vec![
            load("app=web", &["rps=50"]),
            load("app=db", &["rps=1500m", "lag=2"]),
            load("app=api", &["lag=1"]),
        ];
        let everything = LabelSelector::everything();
        let selection = |labels, metric_labels, name| Selection {
            metric: "rps",
            labels,
            metric_labels,
            name,
        };
        let found = |selection| -> Vec<(String, i64)> {
            pod_values(&pods, &loads, selection, Timestamp::UNIX_EPOCH)
                .into_iter()
                .map(|v| (v.pod, v.milli))
                .collect()
        };
        let web = LabelSelector::parse("app=web").expect("selector");
        let prod = LabelSelector::parse("env=prod").expect("selector");
        let no_env = LabelSelector::parse("!env").expect("selector");
        let cases = [
            // Pending pods and pods whose load does not name the metric have no value.
            (
                selection(&everything, &everything, None),
                vec![("web-1".to_string(), 50_000), ("db-1".to_string(), 1500)],
            ),
            (
                selection(&web, &everything, None),
                vec![("web-1".to_string(), 50_000)],
            ),
            (
                selection(&everything, &everything, Some("db-1")),
                vec![("db-1".to_string(), 1500)],
            ),
            (selection(&everything, &prod, None), vec![]),
            (
                selection(&everything, &no_env, Some("web-1")),
                vec![("web-1".to_string(), 50_000)],
            ),
        ];
        for (selection, want) in cases {
            assert_eq!(found(selection), want, "{selection:?}");
        }
        assert_eq!(metric_names(&loads), ["lag", "rps"]);
        assert!(is_known(&loads, "lag") && !is_known(&loads, "cpu"));
    }
}
