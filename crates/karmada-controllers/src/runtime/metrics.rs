//! The metrics Karmada's components get from their libraries, under the libraries' names: controller-runtime's
//! per-controller reconcile metrics (`controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_errors_total`, `controller_runtime_reconcile_time_seconds`,
//! `controller_runtime_max_concurrent_reconciles`, `controller_runtime_active_workers`), client-go's workqueue
//! metrics (`workqueue_*{name,controller}`) and its REST client's (`rest_client_requests_total{code,method,host}`,
//! `rest_client_request_duration_seconds{verb,host}`).
//!
//! Like controller-runtime's registry these are process-wide ([`global`]): the runner, the work queue and the API
//! client record into them wherever they run, and a component exposes them by [`RuntimeMetrics::register`]ing
//! them in the registry it serves. Each controller and queue takes its handles once ([`ReconcileMetrics::new`],
//! [`QueueMetrics::new`]), so recording is a few atomic operations, with no label set built per call.

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use kube::runtime::controller::Action;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// controller-runtime's reconcile-time buckets, 5 ms to 60 s.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// client-go's REST client latency buckets.
const REQUEST_DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerResult {
    controller: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    name: String,
    controller: String,
    priority: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestDurationLabels {
    verb: String,
    host: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;
type Seconds<L> = Family<L, Gauge<f64, AtomicU64>>;

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// client-go's workqueue buckets: 10 ns to 1,000 s, one per decade.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

fn request_duration_histogram() -> Histogram {
    Histogram::new(REQUEST_DURATION_BUCKETS)
}

/// Every family, shared by all clones.
#[derive(Clone)]
pub struct RuntimeMetrics {
    reconcile_total: Family<ControllerResult, Counter>,
    reconcile_errors: Family<ControllerLabel, Counter>,
    reconcile_time: Histograms<ControllerLabel>,
    max_concurrent: Family<ControllerLabel, Gauge>,
    active_workers: Family<ControllerLabel, Gauge>,
    depth: Family<DepthLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    queue_duration: Histograms<QueueLabels>,
    work_duration: Histograms<QueueLabels>,
    unfinished_work: Seconds<QueueLabels>,
    longest_running: Seconds<QueueLabels>,
    retries: Family<QueueLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    request_duration: Histograms<RequestDurationLabels>,
}

static GLOBAL: LazyLock<RuntimeMetrics> = LazyLock::new(RuntimeMetrics::new);

/// The process's runtime metrics.
pub fn global() -> &'static RuntimeMetrics {
    &GLOBAL
}

impl RuntimeMetrics {
    fn new() -> Self {
        Self {
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_time_histogram),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(queue_histogram),
            work_duration: Family::new_with_constructor(queue_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
            requests: Family::default(),
            request_duration: Family::new_with_constructor(request_duration_histogram),
        }
    }

    /// Exposes every family in `registry` (which has no prefix: the names are the libraries').
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            self.max_concurrent.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            self.active_workers.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work in progress has not been observed by work_duration yet; large values \
             indicate stuck workers",
            self.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds the longest running processor of the workqueue has been running",
            self.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of items added to the workqueue with a delay (retries and requeues after a time)",
            self.retries.clone(),
        );
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            self.requests.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds until the response headers, broken down by verb and host",
            self.request_duration.clone(),
        );
    }

    /// Records one API request: `code` is the HTTP status, or `None` when no response came.
    pub fn observe_request(&self, method: &str, host: &str, code: Option<u16>, took: Duration) {
        let code = code.map_or_else(|| "<error>".to_string(), |c| c.to_string());
        self.requests
            .get_or_create(&RequestLabels {
                code,
                method: method.to_string(),
                host: host.to_string(),
            })
            .inc();
        self.request_duration
            .get_or_create(&RequestDurationLabels {
                verb: method.to_string(),
                host: host.to_string(),
            })
            .observe(took.as_secs_f64());
    }
}

/// How a reconcile ended, as controller-runtime's `result` label says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done; wait for the next change.
    Success,
    /// Failed (counted in `controller_runtime_reconcile_errors_total` too).
    Error,
    /// Asked to run again at once.
    Requeue,
    /// Asked to run again after a delay.
    RequeueAfter,
}

/// One controller's reconcile metrics.
#[derive(Clone)]
pub struct ReconcileMetrics {
    success: Counter,
    error: Counter,
    requeue: Counter,
    requeue_after: Counter,
    errors: Counter,
    time: Histogram,
    active: Gauge,
}

impl ReconcileMetrics {
    /// The handles of controller `name` (Karmada's controller name), which runs `workers` reconciles at most.
    pub fn new(name: &str, workers: usize) -> Self {
        let metrics = global();
        let controller = ControllerLabel {
            controller: name.to_string(),
        };
        let result = |result| {
            metrics
                .reconcile_total
                .get_or_create_owned(&ControllerResult {
                    controller: name.to_string(),
                    result,
                })
        };
        metrics
            .max_concurrent
            .get_or_create(&controller)
            .set(i64::try_from(workers).unwrap_or(i64::MAX));
        Self {
            success: result("success"),
            error: result("error"),
            requeue: result("requeue"),
            requeue_after: result("requeue_after"),
            errors: metrics.reconcile_errors.get_or_create_owned(&controller),
            time: metrics.reconcile_time.get_or_create_owned(&controller),
            active: metrics.active_workers.get_or_create_owned(&controller),
        }
    }

    /// A reconcile started; the worker counts as active until the guard is dropped or [`Reconciling::finish`]ed.
    pub fn start(&self) -> Reconciling<'_> {
        self.active.inc();
        Reconciling {
            metrics: self,
            started: tokio::time::Instant::now(),
        }
    }
}

/// A reconcile in progress (see [`ReconcileMetrics::start`]).
pub struct Reconciling<'a> {
    metrics: &'a ReconcileMetrics,
    started: tokio::time::Instant,
}

impl Reconciling<'_> {
    /// The reconcile ended with `result`.
    pub fn finish(self, result: ReconcileResult) {
        let metrics = self.metrics;
        metrics.time.observe(self.started.elapsed().as_secs_f64());
        match result {
            ReconcileResult::Success => metrics.success.inc(),
            ReconcileResult::Error => {
                metrics.errors.inc();
                metrics.error.inc()
            }
            ReconcileResult::Requeue => metrics.requeue.inc(),
            ReconcileResult::RequeueAfter => metrics.requeue_after.inc(),
        };
    }
}

impl Drop for Reconciling<'_> {
    fn drop(&mut self) {
        self.metrics.active.dec();
    }
}

impl ReconcileMetrics {
    /// Times `reconcile`, whose outcome `result_of` reads.
    pub async fn observe<T>(
        &self,
        reconcile: impl Future<Output = T>,
        result_of: impl FnOnce(&T) -> ReconcileResult,
    ) -> T {
        let reconciling = self.start();
        let outcome = reconcile.await;
        reconciling.finish(result_of(&outcome));
        outcome
    }
}

/// `reconcile` of a `kube::runtime::Controller`, its reconciles counted under controller `name` (which runs
/// `workers` at once; 0 for no limit).
pub fn instrumented<K, C, E, F, Fut>(
    name: &str,
    workers: usize,
    reconcile: F,
) -> impl Fn(Arc<K>, Arc<C>) -> futures::future::BoxFuture<'static, Result<Action, E>>
where
    F: Fn(Arc<K>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Send + 'static,
{
    let metrics = ReconcileMetrics::new(name, workers);
    move |object, context| {
        let metrics = metrics.clone();
        let reconciled = reconcile(object, context);
        Box::pin(async move {
            metrics
                .observe(reconciled, |result| match result {
                    Ok(action) if *action == Action::await_change() => ReconcileResult::Success,
                    Ok(_) => ReconcileResult::RequeueAfter,
                    Err(_) => ReconcileResult::Error,
                })
                .await
        })
    }
}

/// One work queue's metrics (client-go's, labelled `name` and `controller` with the queue's name, as
/// controller-runtime does).
#[derive(Clone)]
pub struct QueueMetrics {
    pub(crate) depth: Gauge,
    pub(crate) adds: Counter,
    pub(crate) queue_duration: Histogram,
    pub(crate) work_duration: Histogram,
    pub(crate) unfinished_work: Gauge<f64, AtomicU64>,
    pub(crate) longest_running: Gauge<f64, AtomicU64>,
    pub(crate) retries: Counter,
}

impl QueueMetrics {
    pub fn new(name: &str) -> Self {
        let metrics = global();
        let labels = QueueLabels {
            name: name.to_string(),
            controller: name.to_string(),
        };
        Self {
            depth: metrics.depth.get_or_create_owned(&DepthLabels {
                name: name.to_string(),
                controller: name.to_string(),
                priority: "",
            }),
            adds: metrics.adds.get_or_create_owned(&labels),
            queue_duration: metrics.queue_duration.get_or_create_owned(&labels),
            work_duration: metrics.work_duration.get_or_create_owned(&labels),
            unfinished_work: metrics.unfinished_work.get_or_create_owned(&labels),
            longest_running: metrics.longest_running.get_or_create_owned(&labels),
            retries: metrics.retries.get_or_create_owned(&labels),
        }
    }
}

/// The text exposition of a registry filled by `register` (for tests).
#[cfg(test)]
pub(crate) fn exposition_of(register: impl FnOnce(&mut Registry)) -> String {
    let mut registry = Registry::default();
    register(&mut registry);
    let mut text = String::new();
    // Encoding into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn exposition() -> String {
        exposition_of(|registry| global().register(registry))
    }

    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn reconciles_are_counted_by_result_under_controller_runtimes_names() {
        let metrics = ReconcileMetrics::new("test-controller", 4);
        metrics.start().finish(ReconcileResult::Success);
        metrics.start().finish(ReconcileResult::Error);
        metrics.start().finish(ReconcileResult::RequeueAfter);
        let running = metrics.start();
        let text = exposition();
        let series = |result: &str| {
            sample(
                &text,
                &format!(
                    "controller_runtime_reconcile_total{{controller=\"test-controller\",result=\"{result}\"}}"
                ),
            )
        };
        assert_eq!(series("success"), Some(1.0), "{text}");
        assert_eq!(series("error"), Some(1.0));
        assert_eq!(series("requeue_after"), Some(1.0));
        assert_eq!(series("requeue"), Some(0.0));
        assert_eq!(
            sample(
                &text,
                "controller_runtime_reconcile_errors_total{controller=\"test-controller\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "controller_runtime_reconcile_time_seconds_count{controller=\"test-controller\"}"
            ),
            Some(3.0)
        );
        assert_eq!(
            sample(
                &text,
                "controller_runtime_active_workers{controller=\"test-controller\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "controller_runtime_max_concurrent_reconciles{controller=\"test-controller\"}"
            ),
            Some(4.0)
        );
        drop(running);
        assert_eq!(
            sample(
                &exposition(),
                "controller_runtime_active_workers{controller=\"test-controller\"}"
            ),
            Some(0.0)
        );
    }

    #[test]
    fn requests_are_counted_by_code_method_and_host() {
        global().observe_request("GET", "127.0.0.1:6443", Some(200), Duration::from_millis(3));
        global().observe_request("GET", "127.0.0.1:6443", None, Duration::from_millis(30));
        let text = exposition();
        assert_eq!(
            sample(
                &text,
                "rest_client_requests_total{code=\"200\",method=\"GET\",host=\"127.0.0.1:6443\"}"
            ),
            Some(1.0),
            "{text}"
        );
        assert_eq!(
            sample(
                &text,
                "rest_client_requests_total{code=\"<error>\",method=\"GET\",host=\"127.0.0.1:6443\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "rest_client_request_duration_seconds_bucket{le=\"0.005\",verb=\"GET\",host=\"127.0.0.1:6443\"}"
            ),
            Some(1.0)
        );
    }
}
