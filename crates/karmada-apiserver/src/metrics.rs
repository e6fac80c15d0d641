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

/// What kube-apiserver labels a request by (`dry_run` aside).
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// kube-apiserver's reported verb: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`,
    /// `DELETECOLLECTION`; the HTTP method for requests outside the resource API.
    pub verb: &'static str,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    /// `resource` (one named object), `namespace` (a namespace's objects), `cluster` (all of them), or empty
    /// outside the resource API.
    pub scope: &'static str,
    pub component: &'static str,
}

impl RequestLabels {
    /// The labels of a request outside the resource API (discovery, health, metrics, ...).
    pub fn non_resource(method: &http::Method) -> Self {
        Self {
            verb: method_verb(method),
            component: COMPONENT,
            ..Self::default()
        }
    }
}

/// kube-apiserver's `component` label.
pub const COMPONENT: &str = "apiserver";

/// kube-apiserver's reported verb of a Kubernetes verb (`get`, `list`, ...; `apply` for a server-side apply).
pub fn reported_verb(verb: &str) -> &'static str {
    match verb {
        "get" => "GET",
        "list" => "LIST",
        "watch" => "WATCH",
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "apply" => "APPLY",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        _ => "UNKNOWN",
    }
}

fn method_verb(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        http::Method::HEAD => "HEAD",
        http::Method::OPTIONS => "OPTIONS",
        _ => "UNKNOWN",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    #[prometheus(flatten)]
    request: RequestLabels,
    code: String,
}

/// Admission latency buckets in seconds: kube-apiserver's.
const ADMISSION_BUCKETS: [f64; 6] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];
const WEBHOOK_BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    operation: &'static str,
    rejected: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    name: String,
    operation: &'static str,
    rejected: &'static str,
    r#type: &'static str,
}

fn admission_histogram() -> Histogram {
    Histogram::new(ADMISSION_BUCKETS)
}

fn webhook_histogram() -> Histogram {
    Histogram::new(WEBHOOK_BUCKETS)
}

/// Response size buckets in bytes: kube-apiserver's, 1 kB to 10 GB by tens.
fn response_size_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1000.0, 10.0, 8,
    ))
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

type DurationFamily = Family<RequestLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The API server's metrics and the registry that exposes them.
pub struct Metrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    request_duration: DurationFamily,
    response_sizes: DurationFamily,
    admission_step: Family<StepLabels, Histogram, fn() -> Histogram>,
    admission_webhook: Family<WebhookLabels, Histogram, fn() -> Histogram>,
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
    /// A fresh registry with every series family registered, the process's `process_*` metrics, and
    /// `karmada_build_info` set to 1 for this crate's version.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        crate::process_metrics::ProcessCollector::register(&mut registry);
        let requests = Family::<CodeLabels, Counter>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, API group, resource and HTTP response code",
            requests.clone(),
        );
        let request_duration: DurationFamily = Family::new_with_constructor(duration_histogram);
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, version, resource, subresource, \
             scope and component",
            request_duration.clone(),
        );
        let response_sizes: DurationFamily = Family::new_with_constructor(response_size_histogram);
        registry.register(
            "apiserver_response_sizes",
            "Response size distribution in bytes for each verb, group, version, resource, subresource, scope \
             and component",
            response_sizes.clone(),
        );
        let admission_step: Family<StepLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(admission_histogram);
        registry.register(
            "apiserver_admission_step_admission_duration_seconds",
            "Admission sub-step latency in seconds, by operation, whether rejected, and type (admit or validate)",
            admission_step.clone(),
        );
        let admission_webhook: Family<WebhookLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(webhook_histogram);
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency in seconds, by webhook name, operation, whether rejected, and type; \
             Karmada's webhooks run in process here",
            admission_webhook.clone(),
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
            response_sizes,
            admission_step,
            admission_webhook,
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

    /// Records one finished request, and the size of its response body when it is known (not for a watch).
    pub fn observe_request(
        &self,
        labels: RequestLabels,
        code: u16,
        duration: Duration,
        response_size: Option<u64>,
    ) {
        self.request_duration
            .get_or_create(&labels)
            .observe(duration.as_secs_f64());
        if let Some(size) = response_size {
            self.response_sizes
                .get_or_create(&labels)
                .observe(size as f64);
        }
        self.requests
            .get_or_create(&CodeLabels {
                request: labels,
                code: code.to_string(),
            })
            .inc();
    }

    /// Records one admission of a `create` or `update` (`operation`, kube-apiserver's upper case). `webhook`
    /// names the Karmada webhook that admitted it (`propagationpolicy.karmada.io`), if one did.
    pub fn observe_admission(
        &self,
        operation: &'static str,
        webhook: Option<&str>,
        rejected: bool,
        duration: Duration,
    ) {
        let rejected = if rejected { "true" } else { "false" };
        // Defaulting and validation run as one step here; it is reported as validation, where rejections come from.
        self.admission_step
            .get_or_create(&StepLabels {
                operation,
                rejected,
                r#type: "validate",
            })
            .observe(duration.as_secs_f64());
        if let Some(name) = webhook {
            self.admission_webhook
                .get_or_create(&WebhookLabels {
                    name: name.to_string(),
                    operation,
                    rejected,
                    r#type: "validate",
                })
                .observe(duration.as_secs_f64());
        }
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
        let get = RequestLabels {
            verb: reported_verb("get"),
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            subresource: String::new(),
            scope: "resource",
            component: COMPONENT,
        };
        let create = RequestLabels {
            verb: reported_verb("create"),
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
            scope: "namespace",
            ..get.clone()
        };
        metrics.observe_request(get.clone(), 200, Duration::from_millis(3), Some(2_500));
        metrics.observe_request(get, 200, Duration::from_millis(40), Some(500));
        metrics.observe_request(create, 409, Duration::from_millis(7), None);
        let text = metrics.encode();
        let get_labels = r#"verb="GET",group="apps",version="v1",resource="deployments",subresource="",scope="resource",component="apiserver""#;
        assert_eq!(
            sample(
                &text,
                &format!("apiserver_request_total{{{get_labels},code=\"200\"}}")
            ),
            Some(2.0),
            "{text}"
        );
        assert_eq!(
            sample(
                &text,
                r#"apiserver_request_total{verb="POST",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver",code="409"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!("apiserver_request_duration_seconds_count{{{get_labels}}}")
            ),
            Some(2.0)
        );
        // 3ms falls in the first (5ms) bucket, 40ms does not.
        assert_eq!(
            sample(
                &text,
                &format!("apiserver_request_duration_seconds_bucket{{le=\"0.005\",{get_labels}}}")
            ),
            Some(1.0)
        );
        // Sizes: 500 B under 1 kB, 2.5 kB under 10 kB; the 409 without a known size is not recorded.
        assert_eq!(
            sample(
                &text,
                &format!("apiserver_response_sizes_bucket{{le=\"1000.0\",{get_labels}}}")
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!("apiserver_response_sizes_count{{{get_labels}}}")
            ),
            Some(2.0)
        );
        assert!(!text.contains(r#"apiserver_response_sizes_count{verb="POST""#));
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
    fn admissions_are_timed_as_a_step_and_per_karmada_webhook() {
        let metrics = Metrics::new();
        metrics.observe_admission("CREATE", None, false, Duration::from_millis(1));
        metrics.observe_admission(
            "UPDATE",
            Some("propagationpolicy.karmada.io"),
            true,
            Duration::from_millis(2),
        );
        let text = metrics.encode();
        assert_eq!(
            sample(
                &text,
                r#"apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="validate"}"#
            ),
            Some(1.0),
            "{text}"
        );
        assert_eq!(
            sample(
                &text,
                r#"apiserver_admission_webhook_admission_duration_seconds_bucket{le="0.005",name="propagationpolicy.karmada.io",operation="UPDATE",rejected="true",type="validate"}"#
            ),
            Some(1.0)
        );
        assert!(text.contains("process_resident_memory_bytes"), "{text}");
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
