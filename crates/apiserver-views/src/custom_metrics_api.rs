//! `custom.metrics.k8s.io`, the custom metrics API (what a Prometheus adapter serves and the HPA
//! reads for `Pods` metrics), pure shapes: discovery documents and `MetricValueList`s in v1beta2
//! and v1beta1. Only pod metrics are described here; an API server serves them from a provider
//! (`karmada_apiserver::custom_metrics`).
//!
//! The resources of a version are the metrics themselves (`pods/<metric>`), so they change with
//! the data; the group itself is static.

use serde_json::{Value, json};

pub const GROUP: &str = "custom.metrics.k8s.io";
/// In preference order: v1beta2 first, as kube's HPA asks.
pub const VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];
/// The window a rate is reported over when the source gives none (kube's HPA assumes a minute).
pub const DEFAULT_WINDOW_SECONDS: i64 = 60;

pub fn is_version(version: &str) -> bool {
    VERSIONS.contains(&version)
}

/// The group's entry in an `APIGroupList`.
pub fn group_entry() -> Value {
    let versions: Vec<Value> = VERSIONS
        .iter()
        .map(|v| json!({"groupVersion": format!("{GROUP}/{v}"), "version": v}))
        .collect();
    let preferred = versions[0].clone();
    json!({"name": GROUP, "versions": versions, "preferredVersion": preferred})
}

/// `GET /apis/custom.metrics.k8s.io`.
pub fn legacy_group() -> Value {
    let mut group = group_entry();
    group["kind"] = json!("APIGroup");
    group["apiVersion"] = json!("v1");
    group
}

/// The group in an aggregated `/apis` document. Its versions list no resources: they are the
/// metrics of the moment, listed by the version documents (see docs/compat.md).
pub fn aggregated_item() -> Value {
    let versions: Vec<Value> = VERSIONS
        .iter()
        .map(|v| json!({"version": v, "resources": [], "freshness": "Current"}))
        .collect();
    json!({"metadata": {"name": GROUP, "creationTimestamp": null}, "versions": versions})
}

/// `GET /apis/custom.metrics.k8s.io/{version}`: one `pods/<metric>` resource per metric.
pub fn resource_list(version: &str, metrics: &[String]) -> Value {
    let resources: Vec<Value> = metrics
        .iter()
        .map(|metric| {
            json!({
                "name": format!("pods/{metric}"),
                "singularName": "",
                "namespaced": true,
                "kind": "MetricValueList",
                "verbs": ["get"],
            })
        })
        .collect();
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{version}"),
        "resources": resources,
    })
}

/// One pod's value of a metric.
#[derive(Clone, Debug, PartialEq)]
pub struct PodValue {
    pub namespace: String,
    pub pod: String,
    /// Thousandths of the value.
    pub milli: i64,
    /// RFC 3339.
    pub timestamp: String,
    pub window_seconds: i64,
}

/// A quantity's canonical text for `milli` thousandths: `50`, `1500m`.
pub fn quantity_text(milli: i64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

/// A `MetricValue` of `version`. `selector` is the metric label selector asked with
/// (`matchLabels`/`matchExpressions` form), `null` when none was given.
pub fn metric_value(version: &str, metric: &str, selector: &Value, value: &PodValue) -> Value {
    let described = json!({
        "kind": "Pod",
        "namespace": value.namespace,
        "name": value.pod,
        // The core group's empty name before the slash, as the adapters' library writes it.
        "apiVersion": "/v1",
    });
    if version == "v1beta1" {
        json!({
            "describedObject": described,
            "metricName": metric,
            "timestamp": value.timestamp,
            "window": value.window_seconds,
            "value": quantity_text(value.milli),
            "selector": selector,
        })
    } else {
        json!({
            "describedObject": described,
            "metric": {"name": metric, "selector": selector},
            "timestamp": value.timestamp,
            "windowSeconds": value.window_seconds,
            "value": quantity_text(value.milli),
        })
    }
}

/// The `MetricValueList` of `version` around `items`.
pub fn metric_value_list(version: &str, items: Vec<Value>) -> Value {
    json!({
        "kind": "MetricValueList",
        "apiVersion": format!("{GROUP}/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// A `MetricValue`'s pod name and value in thousandths, in either version.
pub fn pod_and_milli(item: &Value) -> Option<(&str, i64)> {
    let pod = item.pointer("/describedObject/name")?.as_str()?;
    let milli = apimachinery::quantity::milli_from_json(item.get("value")?).ok()?;
    Some((pod, i64::try_from(milli).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value() -> PodValue {
        PodValue {
            namespace: "shop".into(),
            pod: "web-1".into(),
            milli: 1500,
            timestamp: "2026-01-01T00:00:00Z".into(),
            window_seconds: 60,
        }
    }

    #[test]
    fn values_take_each_versions_shape() {
        let v2 = metric_value("v1beta2", "rps", &Value::Null, &value());
        assert_eq!(v2["metric"], json!({"name": "rps", "selector": null}));
        assert_eq!(v2["windowSeconds"], 60);
        assert_eq!(v2["value"], "1500m");
        assert_eq!(v2["describedObject"]["apiVersion"], "/v1");
        assert_eq!(v2["describedObject"]["kind"], "Pod");
        let v1 = metric_value(
            "v1beta1",
            "rps",
            &json!({"matchLabels": {"a": "b"}}),
            &value(),
        );
        assert_eq!(v1["metricName"], "rps");
        assert_eq!(v1["window"], 60);
        assert_eq!(v1["selector"]["matchLabels"]["a"], "b");
        assert_eq!(pod_and_milli(&v1), Some(("web-1", 1500)));
        assert_eq!(pod_and_milli(&v2), Some(("web-1", 1500)));
    }

    #[test]
    fn quantities_are_canonical() {
        for (milli, text) in [(50_000, "50"), (1500, "1500m"), (0, "0"), (250, "250m")] {
            assert_eq!(quantity_text(milli), text);
        }
    }

    #[test]
    fn discovery_lists_pod_metrics() {
        let list = resource_list("v1beta2", &["rps".to_string()]);
        assert_eq!(list["groupVersion"], "custom.metrics.k8s.io/v1beta2");
        assert_eq!(list["resources"][0]["name"], "pods/rps");
        assert_eq!(list["resources"][0]["kind"], "MetricValueList");
        assert_eq!(legacy_group()["preferredVersion"]["version"], "v1beta2");
    }
}
