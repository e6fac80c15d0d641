//! The scheduler's Prometheus metrics, with Karmada's names (reference/karmada.md §7):
//! `karmada_scheduler_schedule_attempts_total{result,schedule_type}` (result `scheduled` or `error`),
//! `karmada_scheduler_e2e_scheduling_duration_seconds{result,schedule_type}` (from taking the binding off the
//! queue to its result written), `karmada_scheduler_scheduling_algorithm_duration_seconds{schedule_step}` and
//! `karmada_scheduler_queue_incoming_bindings_total{event}` (BindingAdd, BindingUpdate, ScheduleAttemptFailure,
//! ClusterChanged).
//!
//! The scheduler core runs Filter → Score → Select → AssignReplicas in one call, so the algorithm histogram has
//! one step, `Schedule`, covering all four (Karmada splits them; the total is the same quantity).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AttemptLabels {
    pub result: String,
    pub schedule_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EventLabels {
    pub event: String,
}

/// `event` label values of the incoming-bindings counter.
pub const EVENT_BINDING_ADD: &str = "BindingAdd";
pub const EVENT_BINDING_UPDATE: &str = "BindingUpdate";
pub const EVENT_SCHEDULE_ATTEMPT_FAILURE: &str = "ScheduleAttemptFailure";
pub const EVENT_CLUSTER_CHANGED: &str = "ClusterChanged";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabels {
    pub schedule_step: String,
}

/// `result` label values.
pub const RESULT_SCHEDULED: &str = "scheduled";
pub const RESULT_ERROR: &str = "error";
/// The one `schedule_step` value (see the module docs).
pub const STEP_SCHEDULE: &str = "Schedule";

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms … ~16 s, as Karmada's scheduler buckets start at a millisecond.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The scheduler's metrics, registered once.
#[derive(Clone)]
pub struct SchedulerMetrics {
    attempts: Family<AttemptLabels, Counter>,
    e2e: Histograms<AttemptLabels>,
    algorithm: Histograms<StepLabels>,
    incoming: Family<EventLabels, Counter>,
}

impl SchedulerMetrics {
    /// Registers the metrics in `registry` (unprefixed: the names carry Karmada's `karmada_scheduler_`).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            attempts: Family::default(),
            e2e: Family::new_with_constructor(latency_histogram),
            algorithm: Family::new_with_constructor(latency_histogram),
            incoming: Family::default(),
        };
        registry.register(
            "karmada_scheduler_schedule_attempts",
            "Number of attempts to schedule a binding, by result (scheduled or error) and schedule type",
            metrics.attempts.clone(),
        );
        registry.register(
            "karmada_scheduler_e2e_scheduling_duration_seconds",
            "End-to-end scheduling latency of a binding: from the queue to its result written",
            metrics.e2e.clone(),
        );
        registry.register(
            "karmada_scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency (filter, score, select and assign replicas)",
            metrics.algorithm.clone(),
        );
        registry.register(
            "karmada_scheduler_queue_incoming_bindings",
            "Number of bindings added to the scheduling queue, by event",
            metrics.incoming.clone(),
        );
        metrics
    }

    /// A binding entered the queue because of `event`.
    pub fn incoming(&self, event: &str) {
        self.incoming
            .get_or_create(&EventLabels {
                event: event.to_string(),
            })
            .inc();
    }

    /// A metrics set that is not registered anywhere (for embedders that do not serve /metrics).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    pub fn attempt(&self, result: &str, schedule_type: &str) {
        self.attempts
            .get_or_create(&AttemptLabels {
                result: result.to_string(),
                schedule_type: schedule_type.to_string(),
            })
            .inc();
    }

    pub fn e2e(&self, result: &str, schedule_type: &str, seconds: f64) {
        self.e2e
            .get_or_create(&AttemptLabels {
                result: result.to_string(),
                schedule_type: schedule_type.to_string(),
            })
            .observe(seconds);
    }

    pub fn algorithm(&self, seconds: f64) {
        self.algorithm
            .get_or_create(&StepLabels {
                schedule_step: STEP_SCHEDULE.to_string(),
            })
            .observe(seconds);
    }

    /// Current value of the attempts counter (for tests and diagnostics).
    pub fn attempts(&self, result: &str, schedule_type: &str) -> u64 {
        self.attempts
            .get_or_create(&AttemptLabels {
                result: result.to_string(),
                schedule_type: schedule_type.to_string(),
            })
            .get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_karmadas_names() {
        let mut registry = Registry::default();
        let metrics = SchedulerMetrics::register(&mut registry);
        metrics.attempt(RESULT_SCHEDULED, "ReconcileSchedule");
        metrics.e2e(RESULT_SCHEDULED, "ReconcileSchedule", 0.004);
        metrics.algorithm(0.0002);
        metrics.incoming(EVENT_CLUSTER_CHANGED);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        assert!(
            text.contains(
                "karmada_scheduler_schedule_attempts_total{result=\"scheduled\",schedule_type=\"ReconcileSchedule\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("karmada_scheduler_e2e_scheduling_duration_seconds_count{result=\"scheduled\",schedule_type=\"ReconcileSchedule\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("karmada_scheduler_scheduling_algorithm_duration_seconds_count{schedule_step=\"Schedule\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "karmada_scheduler_queue_incoming_bindings_total{event=\"ClusterChanged\"} 1"
            ),
            "{text}"
        );
        assert_eq!(metrics.attempts(RESULT_SCHEDULED, "ReconcileSchedule"), 1);
    }
}
