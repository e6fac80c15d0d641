//! The API server's Prometheus metrics, served on `/metrics` in OpenMetrics text format.
//!
//! Every [`Metrics`] owns its own registry (no process-wide globals), so several servers in one
//! test process never share counters. Metric and label names follow kube-apiserver's so existing
//! dashboards and alerts keep working. Recording never fails and never blocks for long: the
//! families use short internal locks only.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The `Content-Type` of the `/metrics` response body produced by [`Metrics::encode`].
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Request latency buckets in seconds: kube-apiserver's spread, from 5ms to one minute.
const DURATION_BUCKETS: [f64; 17] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: String,
    group: String,
    resource: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: String,
    resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    operation: String,
    r#type: String,
}

/// Store call latency buckets in seconds: kube-apiserver's `etcd_request_duration_seconds` spread,
/// with finer steps below 5 ms where an embedded store's calls fall.
const STORE_DURATION_BUCKETS: [f64; 20] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0,
    5.0, 10.0, 30.0, 60.0,
];

fn store_duration_histogram() -> Histogram {
    Histogram::new(STORE_DURATION_BUCKETS)
}

type StoreDurationFamily = Family<StoreLabels, Histogram, fn() -> Histogram>;

/// The store's side of the metrics: every call the API server makes to its store, by operation
/// and resource, under kube-apiserver's `etcd_*` names (whichever backend serves them), so a slow
/// disk or a slow etcd shows apart from the request handling around it. Cheap to clone.
#[derive(Clone)]
pub struct StoreMetrics {
    duration: StoreDurationFamily,
    requests: Family<StoreLabels, Counter>,
    errors: Family<StoreLabels, Counter>,
}

impl StoreMetrics {
    /// Records one finished store call. `operation` is `get`, `list`, `count`, `create`,
    /// `update`, `delete`, ...; `resource` is the group-qualified plural (`deployments.apps`,
    /// `pods`). `failed` means the backend failed, not an expected outcome such as a conflict.
    pub fn observe(&self, operation: &str, resource: &str, duration: Duration, failed: bool) {
        let labels = StoreLabels {
            operation: operation.to_string(),
            r#type: resource.to_string(),
        };
        self.duration
            .get_or_create(&labels)
            .observe(duration.as_secs_f64());
        self.requests.get_or_create(&labels).inc();
        if failed {
            self.errors.get_or_create(&labels).inc();
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WatcherLabels {
    group: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: String,
}

type DurationFamily = Family<DurationLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The API server's metrics and the registry that exposes them.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_duration: DurationFamily,
    inflight: Gauge,
    watch_events: Family<KindLabels, Counter>,
    registered_watchers: Family<WatcherLabels, Gauge>,
    storage_objects: Family<ResourceLabels, Gauge>,
    store: StoreMetrics,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every series family registered and `karmada_build_info` set to 1
    /// for this crate's version.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, API group, resource and HTTP response code",
            requests.clone(),
        );
        let request_duration: DurationFamily = Family::new_with_constructor(duration_histogram);
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb and resource",
            request_duration.clone(),
        );
        let inflight = Gauge::default();
        registry.register(
            "apiserver_current_inflight_requests",
            "Number of requests currently being served",
            inflight.clone(),
        );
        let watch_events = Family::<KindLabels, Counter>::default();
        registry.register(
            "apiserver_watch_events",
            "Number of events sent in watch clients",
            watch_events.clone(),
        );
        let registered_watchers = Family::<WatcherLabels, Gauge>::default();
        registry.register(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resource",
            registered_watchers.clone(),
        );
        let storage_objects = Family::<ResourceLabels, Gauge>::default();
        registry.register(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind",
            storage_objects.clone(),
        );
        let store = StoreMetrics {
            duration: Family::new_with_constructor(store_duration_histogram),
            requests: Family::default(),
            errors: Family::default(),
        };
        registry.register(
            "etcd_request_duration_seconds",
            "Store call latency in seconds for each operation and resource (the embedded store or etcd)",
            store.duration.clone(),
        );
        registry.register(
            "etcd_requests",
            "Store calls for each operation and resource",
            store.requests.clone(),
        );
        registry.register(
            "etcd_request_errors",
            "Store calls that failed in the backend, for each operation and resource",
            store.errors.clone(),
        );
        let build_info = Family::<VersionLabels, Gauge>::default();
        build_info
            .get_or_create(&VersionLabels {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        registry.register(
            "karmada_build_info",
            "A metric with a constant '1' value labeled by the karmada-rs version",
            build_info,
        );
        Self {
            registry,
            requests,
            request_duration,
            inflight,
            watch_events,
            registered_watchers,
            storage_objects,
            store,
        }
    }

    /// The store-call metrics, for [`crate::metered_store::MeteredStore`].
    pub fn store(&self) -> StoreMetrics {
        self.store.clone()
    }

    /// Records one finished request. `verb` is the Kubernetes verb (`get`, `list`, `watch`,
    /// `create`, `update`, `patch`, `delete`, ...), `group` is `""` for the core group.
    pub fn observe_request(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        code: u16,
        duration: Duration,
    ) {
        self.requests
            .get_or_create(&RequestLabels {
                verb: verb.to_string(),
                group: group.to_string(),
                resource: resource.to_string(),
                code: code.to_string(),
            })
            .inc();
        self.request_duration
            .get_or_create(&DurationLabels {
                verb: verb.to_string(),
                resource: resource.to_string(),
            })
            .observe(duration.as_secs_f64());
    }

    /// A request started being served; pair with [`Metrics::request_finished`].
    pub fn request_started(&self) {
        self.inflight.inc();
    }

    /// A request finished (whatever its outcome).
    pub fn request_finished(&self) {
        self.inflight.dec();
    }

    /// A watch was opened on `group`/`kind`.
    pub fn watcher_added(&self, group: &str, kind: &str) {
        self.registered_watchers
            .get_or_create(&watcher_labels(group, kind))
            .inc();
    }

    /// A watch on `group`/`kind` ended.
    pub fn watcher_removed(&self, group: &str, kind: &str) {
        self.registered_watchers
            .get_or_create(&watcher_labels(group, kind))
            .dec();
    }

    /// One watch event of `kind` was sent to a client.
    pub fn watch_event(&self, kind: &str) {
        self.watch_events
            .get_or_create(&KindLabels {
                kind: kind.to_string(),
            })
            .inc();
    }

    /// The store currently holds `count` objects of `resource` (e.g. `deployments.apps`).
    pub fn set_storage_objects(&self, resource: &str, count: u64) {
        let value = i64::try_from(count).unwrap_or(i64::MAX);
        self.storage_objects
            .get_or_create(&ResourceLabels {
                resource: resource.to_string(),
            })
            .set(value);
    }

    /// The whole registry in OpenMetrics text format (ends with `# EOF`); serve it with
    /// [`METRICS_CONTENT_TYPE`].
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; an error here would only mean a broken encoder,
        // and a partial scrape is better than none.
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.push_str("# EOF\n");
        }
        out
    }
}

fn watcher_labels(group: &str, kind: &str) -> WatcherLabels {
    WatcherLabels {
        group: group.to_string(),
        kind: kind.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The value of the sample line starting with `series` (name plus labels), if present.
    pub(crate) fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn request_observations_appear_in_the_exposition() {
        let metrics = Metrics::new();
        metrics.observe_request("get", "apps", "deployments", 200, Duration::from_millis(3));
        metrics.observe_request("get", "apps", "deployments", 200, Duration::from_millis(40));
        metrics.observe_request("create", "", "configmaps", 409, Duration::from_millis(7));
        let text = metrics.encode();
        assert_eq!(
            sample(
                &text,
                r#"apiserver_request_total{verb="get",group="apps",resource="deployments",code="200"}"#
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"apiserver_request_total{verb="create",group="",resource="configmaps",code="409"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"apiserver_request_duration_seconds_count{verb="get",resource="deployments"}"#
            ),
            Some(2.0)
        );
        // 3ms falls in the first (5ms) bucket, 40ms does not.
        assert_eq!(
            sample(
                &text,
                r#"apiserver_request_duration_seconds_bucket{le="0.005",verb="get",resource="deployments"}"#
            ),
            Some(1.0)
        );
        assert!(text.contains("# TYPE apiserver_request_duration_seconds histogram"));
        assert!(text.trim_end().ends_with("# EOF"));
    }

    #[test]
    fn gauges_follow_watchers_inflight_and_storage() {
        let metrics = Metrics::new();
        metrics.watcher_added("apps", "Deployment");
        metrics.watcher_added("apps", "Deployment");
        metrics.watcher_removed("apps", "Deployment");
        metrics.watch_event("ADDED");
        metrics.watch_event("ADDED");
        metrics.watch_event("MODIFIED");
        metrics.request_started();
        metrics.request_started();
        metrics.request_finished();
        metrics.set_storage_objects("deployments.apps", 7);
        metrics.set_storage_objects("deployments.apps", 5);
        let text = metrics.encode();
        assert_eq!(
            sample(
                &text,
                r#"apiserver_registered_watchers{group="apps",kind="Deployment"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, r#"apiserver_watch_events_total{kind="ADDED"}"#),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, r#"apiserver_watch_events_total{kind="MODIFIED"}"#),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, "apiserver_current_inflight_requests"),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"apiserver_storage_objects{resource="deployments.apps"}"#
            ),
            Some(5.0)
        );
    }

    #[test]
    fn build_info_carries_the_crate_version() {
        let text = Metrics::new().encode();
        let series = format!(
            "karmada_build_info{{version=\"{}\"}}",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(sample(&text, &series), Some(1.0));
    }

    #[test]
    fn separate_instances_do_not_share_series() {
        let first = Metrics::new();
        let second = Metrics::new();
        first.watch_event("DELETED");
        assert!(
            first
                .encode()
                .contains(r#"apiserver_watch_events_total{kind="DELETED"}"#)
        );
        assert!(!second.encode().contains(r#"kind="DELETED""#));
    }
}
