//! The estimator's metrics, with Karmada's names (docs/karmada.md, "Metrics"): `karmada_scheduler_estimator_
//! estimating_request_total{result,type}` and `karmada_scheduler_estimator_estimating_algorithm_duration_seconds
//! {result,type,step}` (buckets 1 ms × 2^0..9, Karmada's).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `type` label values.
pub const TYPE_MAX_AVAILABLE_REPLICAS: &str = "MaxAvailableReplicas";
pub const TYPE_GET_UNSCHEDULABLE_REPLICAS: &str = "GetUnschedulableReplicas";
pub const TYPE_MAX_AVAILABLE_COMPONENT_SETS: &str = "MaxAvailableComponentSets";
/// `step` label values.
pub const STEP_TOTAL: &str = "Total";
pub const STEP_MAX_AVAILABLE_REPLICAS: &str = "MaxAvailableReplicas";
pub const STEP_GET_OBJECT: &str = "GetObjectFromCache";
pub const STEP_UNSCHEDULABLE_PODS: &str = "GetWorkloadUnschedulablePods";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    result: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    result: &'static str,
    r#type: &'static str,
    step: &'static str,
}

/// The estimator's metrics, registered once.
#[derive(Clone)]
pub struct EstimatorMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<StepLabels, Histogram, fn() -> Histogram>,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 10))
}

fn result(ok: bool) -> &'static str {
    if ok { "success" } else { "error" }
}

impl EstimatorMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        };
        registry.register(
            "karmada_scheduler_estimator_estimating_request",
            "Number of scheduler estimator requests",
            metrics.requests.clone(),
        );
        registry.register(
            "karmada_scheduler_estimator_estimating_algorithm_duration_seconds",
            "Estimating algorithm latency in seconds for each step",
            metrics.latency.clone(),
        );
        metrics
    }

    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    /// One request of `kind` ended (`ok` or not).
    pub fn request(&self, kind: &'static str, ok: bool) {
        self.requests
            .get_or_create(&RequestLabels {
                result: result(ok),
                r#type: kind,
            })
            .inc();
    }

    /// A step of a request took `seconds`.
    pub fn step(&self, kind: &'static str, step: &'static str, ok: bool, seconds: f64) {
        self.latency
            .get_or_create(&StepLabels {
                result: result(ok),
                r#type: kind,
                step,
            })
            .observe(seconds);
    }
}
