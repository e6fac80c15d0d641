//! `karmada_execution_apply_duration_seconds{member_cluster,result}`: the seed's dispatch latency (alert at
//! P99 > 30 s). A success is timed from the first attempt to apply the Work's current generation to its
//! member until every manifest is applied there, failed attempts and waits for an unready cluster included: a
//! member that cannot take its workloads for a minute shows as a minute. A failure is the time of that one
//! attempt. (Timing only the last attempt could never pass the member clients' 5 s request timeout, and so
//! never fire the seed's alert.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

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

/// A Work's namespace and name.
type WorkKey = (String, String);

/// The execution controller's metrics.
#[derive(Clone)]
pub struct ExecutionMetrics {
    apply_duration: Durations,
    /// Works whose current generation is not applied yet: the generation, and the first attempt at it.
    waiting: Arc<Mutex<HashMap<WorkKey, (i64, Instant)>>>,
}

impl Default for ExecutionMetrics {
    fn default() -> Self {
        Self {
            apply_duration: Family::new_with_constructor(new_histogram),
            waiting: Arc::default(),
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

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<WorkKey, (i64, Instant)>> {
        // Plain numbers and instants: a panic elsewhere cannot leave the map half-written.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Generation `generation` of the Work is about to be dispatched (or waits for its cluster): its clock starts
    /// now unless it already runs for this generation.
    pub fn dispatch_wanted(&self, namespace: &str, name: &str, generation: i64) {
        let now = Instant::now();
        let mut waiting = self.waiting();
        let entry = waiting
            .entry((namespace.to_string(), name.to_string()))
            .or_insert((generation, now));
        if entry.0 != generation {
            *entry = (generation, now);
        }
    }

    /// The Work's attempt, which took `attempt`, ended with `result`: a success is recorded with the time since
    /// its generation was first wanted, a failure with the attempt's time.
    pub fn dispatched(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        result: ApplyResult,
        attempt: Duration,
    ) {
        let took = match result {
            ApplyResult::Error => attempt,
            ApplyResult::Success => self
                .waiting()
                .remove(&(namespace.to_string(), name.to_string()))
                .map_or(attempt, |(_, since)| since.elapsed().max(attempt)),
        };
        self.observe(cluster, result, took);
    }

    /// The Work is gone (or no longer dispatched): its clock stops unrecorded.
    pub fn forget(&self, namespace: &str, name: &str) {
        self.waiting()
            .remove(&(namespace.to_string(), name.to_string()));
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
