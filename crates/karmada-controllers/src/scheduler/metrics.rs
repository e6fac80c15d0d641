//! The scheduler's Prometheus metrics, with Karmada's names (docs/karmada.md, "Metrics"):
//! `karmada_scheduler_schedule_attempts_total{result,schedule_type}` (result `scheduled` or `error`),
//! `karmada_scheduler_e2e_scheduling_duration_seconds{result,schedule_type}` (from taking the binding off the
//! queue to its result written), `karmada_scheduler_scheduling_algorithm_duration_seconds{schedule_step}` and
//! `karmada_scheduler_queue_incoming_bindings_total{event}` (BindingAdd, BindingUpdate, ScheduleAttemptFailure,
//! PolicyChanged — a SchedulerProfile changed here —, ClusterChanged),
//! `karmada_scheduler_framework_extension_point_duration_seconds{extension_point,result}` (once per cluster at
//! Filter, once per decision at Score), `karmada_scheduler_plugin_execution_duration_seconds{plugin,
//! extension_point,result}` and `scheduler_pending_bindings{queue}` (active, backoff, unschedulable), with
//! Karmada's buckets.
//!
//! `schedule_step` is one of Karmada's four steps, Filter, Score, Select (which includes the wait for the
//! scheduler estimators, as Karmada asks them there) and AssignReplicas. Plugin calls are timed in one decision
//! of [`PLUGIN_SAMPLE_EVERY`] (kube-scheduler samples too; Karmada observes through a bounded buffer that drops
//! what does not fit): timing every call costs two clock reads per plugin and cluster.
//!
//! Beyond Karmada's: `karmada_scheduler_estimator_wait_duration_seconds`, how long a decision waited for the
//! scheduler estimators (observed only when they are asked), with a bucket at 2 ms.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use karmada_scheduler::recorder::{Code, ExtensionPoint, Recorder, Step};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::queue::Pending;

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
pub const EVENT_POLICY_CHANGED: &str = "PolicyChanged";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabels {
    pub schedule_step: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExtensionPointLabels {
    pub extension_point: &'static str,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    pub plugin: Arc<str>,
    pub extension_point: &'static str,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub queue: &'static str,
}

/// `result` label values.
pub const RESULT_SCHEDULED: &str = "scheduled";
pub const RESULT_ERROR: &str = "error";

/// One decision in this many times its plugin calls.
pub const PLUGIN_SAMPLE_EVERY: u64 = 10;

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // Karmada's: 1 ms × 2^0..14.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn extension_point_histogram() -> Histogram {
    // Karmada's: 0.1 ms × 2^0..11.
    Histogram::new(exponential_buckets(0.0001, 2.0, 12))
}

fn estimator_wait_histogram() -> Histogram {
    // 0.25 ms × 2^0..13: 2 ms is a bucket bound.
    Histogram::new(exponential_buckets(0.00025, 2.0, 14))
}

fn plugin_histogram() -> Histogram {
    // Karmada's: 10 µs × 1.5^0..19.
    Histogram::new(exponential_buckets(0.00001, 1.5, 20))
}

/// The scheduler's metrics, registered once.
#[derive(Clone)]
pub struct SchedulerMetrics {
    attempts: Family<AttemptLabels, Counter>,
    e2e: Histograms<AttemptLabels>,
    algorithm: Histograms<StepLabels>,
    incoming: Family<EventLabels, Counter>,
    extension_points: Histograms<ExtensionPointLabels>,
    plugins: Histograms<PluginLabels>,
    pending: Family<QueueLabels, Gauge>,
    /// The step histograms, resolved once (every decision observes all four).
    steps: Arc<[Histogram; 4]>,
    decisions: Arc<AtomicU64>,
    estimator_wait: Histogram,
}

impl SchedulerMetrics {
    /// Registers the metrics in `registry` (unprefixed: the names carry Karmada's `karmada_scheduler_`).
    pub fn register(registry: &mut Registry) -> Self {
        let algorithm: Histograms<StepLabels> = Family::new_with_constructor(latency_histogram);
        let steps = Arc::new(Step::ALL.map(|step| {
            algorithm
                .get_or_create(&StepLabels {
                    schedule_step: step.as_str().to_string(),
                })
                .clone()
        }));
        let metrics = Self {
            attempts: Family::default(),
            e2e: Family::new_with_constructor(latency_histogram),
            algorithm,
            incoming: Family::default(),
            extension_points: Family::new_with_constructor(extension_point_histogram),
            plugins: Family::new_with_constructor(plugin_histogram),
            pending: Family::default(),
            steps,
            decisions: Arc::default(),
            estimator_wait: estimator_wait_histogram(),
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
        registry.register(
            "karmada_scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point",
            metrics.extension_points.clone(),
        );
        registry.register(
            "karmada_scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point",
            metrics.plugins.clone(),
        );
        registry.register(
            "karmada_scheduler_estimator_wait_duration_seconds",
            "How long a decision waited for the scheduler estimators' answers (only decisions that asked them)",
            metrics.estimator_wait.clone(),
        );
        registry.register(
            "scheduler_pending_bindings",
            "Number of pending bindings, by the queue type: active (ready to be scheduled), backoff (waiting out a retry delay), unschedulable (no cluster fits; waiting for a change)",
            metrics.pending.clone(),
        );
        metrics
    }

    /// The scheduling queue's pool sizes now.
    pub fn pending(&self, pending: Pending) {
        for (queue, size) in [
            ("active", pending.active),
            ("backoff", pending.backoff),
            ("unschedulable", pending.unschedulable),
        ] {
            self.pending
                .get_or_create(&QueueLabels { queue })
                .set(i64::try_from(size).unwrap_or(i64::MAX));
        }
    }

    /// The `scheduler_pending_bindings` value of `queue` (active, backoff or unschedulable).
    pub fn pending_bindings(&self, queue: &'static str) -> i64 {
        self.pending.get_or_create(&QueueLabels { queue }).get()
    }

    /// A recorder for one decision; `estimator_wait` is added to its Select step.
    pub fn decision(&self, estimator_wait: Duration) -> DecisionRecorder<'_> {
        let count = self.decisions.fetch_add(1, Ordering::Relaxed);
        DecisionRecorder {
            metrics: self,
            sample: count.is_multiple_of(PLUGIN_SAMPLE_EVERY),
            estimator_wait,
            plugins: Vec::new(),
        }
    }

    /// A decision waited `waited` for the estimators' answers.
    pub fn estimator_wait(&self, waited: Duration) {
        self.estimator_wait.observe(waited.as_secs_f64());
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

    /// One step of the algorithm took `seconds`.
    pub fn step(&self, step: Step, seconds: f64) {
        let index = Step::ALL.iter().position(|s| *s == step).unwrap_or(0);
        self.steps[index].observe(seconds);
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

/// Times one decision into the scheduler's histograms.
pub struct DecisionRecorder<'m> {
    metrics: &'m SchedulerMetrics,
    sample: bool,
    estimator_wait: Duration,
    /// Plugin histograms resolved in this decision (a plugin is called once per cluster).
    plugins: Vec<(Arc<str>, ExtensionPoint, Code, Histogram)>,
}

impl Recorder for DecisionRecorder<'_> {
    type Mark = Instant;

    fn mark(&mut self) -> Instant {
        Instant::now()
    }

    fn times_plugins(&self) -> bool {
        self.sample
    }

    fn step(&mut self, since: Instant, step: Step) {
        let mut elapsed = since.elapsed();
        if step == Step::Select {
            elapsed += std::mem::take(&mut self.estimator_wait);
        }
        self.metrics.step(step, elapsed.as_secs_f64());
    }

    fn extension_point(&mut self, since: Instant, point: ExtensionPoint, code: Code) {
        let seconds = since.elapsed().as_secs_f64();
        self.metrics
            .extension_points
            .get_or_create(&ExtensionPointLabels {
                extension_point: point.as_str(),
                result: code.as_str(),
            })
            .observe(seconds);
    }

    fn plugin(&mut self, since: Instant, point: ExtensionPoint, plugin: &Arc<str>, code: Code) {
        let seconds = since.elapsed().as_secs_f64();
        let known = self
            .plugins
            .iter()
            .find(|(name, p, c, _)| Arc::ptr_eq(name, plugin) && *p == point && *c == code);
        let histogram = match known {
            Some((_, _, _, histogram)) => histogram.clone(),
            None => {
                let histogram = self
                    .metrics
                    .plugins
                    .get_or_create(&PluginLabels {
                        plugin: Arc::clone(plugin),
                        extension_point: point.as_str(),
                        result: code.as_str(),
                    })
                    .clone();
                self.plugins
                    .push((Arc::clone(plugin), point, code, histogram.clone()));
                histogram
            }
        };
        histogram.observe(seconds);
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
        metrics.incoming(EVENT_CLUSTER_CHANGED);
        let mut recorder = metrics.decision(Duration::from_millis(3));
        let plugin: Arc<str> = "ClusterAffinity".into();
        for _ in 0..2 {
            let mark = recorder.mark();
            recorder.plugin(mark, ExtensionPoint::Filter, &plugin, Code::Success);
        }
        let mark = recorder.mark();
        recorder.extension_point(mark, ExtensionPoint::Filter, Code::Unschedulable);
        for step in Step::ALL {
            let mark = recorder.mark();
            recorder.step(mark, step);
        }
        metrics.pending(Pending {
            active: 3,
            backoff: 1,
            unschedulable: 2,
        });
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
        for step in ["Filter", "Score", "Select", "AssignReplicas"] {
            assert!(
                text.contains(&format!("karmada_scheduler_scheduling_algorithm_duration_seconds_count{{schedule_step=\"{step}\"}} 1")),
                "{text}"
            );
        }
        // The estimators' wait counts in Select: at least 3 ms, so not in the 2 ms bucket.
        assert!(
            text.contains("karmada_scheduler_scheduling_algorithm_duration_seconds_bucket{le=\"0.002\",schedule_step=\"Select\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("karmada_scheduler_plugin_execution_duration_seconds_count{plugin=\"ClusterAffinity\",extension_point=\"Filter\",result=\"Success\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("karmada_scheduler_plugin_execution_duration_seconds_bucket{le=\"0.00001\",plugin=\"ClusterAffinity\",extension_point=\"Filter\",result=\"Success\"}"),
            "Karmada's plugin buckets start at 10 µs: {text}"
        );
        assert!(
            text.contains("karmada_scheduler_framework_extension_point_duration_seconds_count{extension_point=\"Filter\",result=\"Unschedulable\"} 1"),
            "{text}"
        );
        for (queue, size) in [("active", 3), ("backoff", 1), ("unschedulable", 2)] {
            assert!(
                text.contains(&format!(
                    "scheduler_pending_bindings{{queue=\"{queue}\"}} {size}"
                )),
                "{text}"
            );
        }
        assert!(
            text.contains(
                "karmada_scheduler_queue_incoming_bindings_total{event=\"ClusterChanged\"} 1"
            ),
            "{text}"
        );
        assert_eq!(metrics.attempts(RESULT_SCHEDULED, "ReconcileSchedule"), 1);
    }
}
