//! `karmada_execution_apply_duration_seconds`: how long applying one manifest to a member took (the seed's
//! SLI, alert at P99 > 30 s), labelled by member cluster and result.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ApplyResult {
    Success,
    Error,
}

impl ApplyResult {
    fn as_str(self) -> &'static str {
        match self {
            ApplyResult::Success => "success",
            ApplyResult::Error => "error",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApplyLabels {
    pub member_cluster: String,
    pub result: String,
}

type Durations = Family<ApplyLabels, Histogram, fn() -> Histogram>;

fn new_histogram() -> Histogram {
    // 1 ms … ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The execution controller's metrics.
#[derive(Clone)]
pub struct ExecutionMetrics {
    apply_duration: Durations,
}

impl Default for ExecutionMetrics {
    fn default() -> Self {
        Self {
            apply_duration: Family::new_with_constructor(new_histogram),
        }
    }
}

impl ExecutionMetrics {
    /// Registers the metrics in `registry` (no prefix: the names are the seed's).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "karmada_execution_apply_duration_seconds",
            "Time to apply one Work manifest to a member cluster",
            metrics.apply_duration.clone(),
        );
        metrics
    }

    pub fn observe(&self, cluster: &str, result: ApplyResult, took: Duration) {
        self.apply_duration
            .get_or_create(&ApplyLabels {
                member_cluster: cluster.to_string(),
                result: result.as_str().to_string(),
            })
            .observe(took.as_secs_f64());
    }
}
