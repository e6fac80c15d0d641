//! Eviction metrics with Karmada's names (docs/karmada.md, "Metrics"; unprefixed as Karmada's controller-manager
//! exports them): `eviction_queue_depth{name}` (bindings waiting for the rate limit or the budget),
//! `eviction_kind_total{member_cluster,resource_kind}` (evictions done), `eviction_processing_latency_seconds{name}`
//! and `eviction_processing_total{name,result}` (per reconcile of the failover controllers). Ours, for the
//! safety rules: `eviction_deferred_total{name,reason}` (a task kept because removing it would be unsafe, or an
//! eviction held back by the budget) and `eviction_task_removed_total{reason}`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NameLabels {
    pub name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub member_cluster: String,
    pub resource_kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub name: String,
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub name: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RemovedLabels {
    pub reason: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// `result` label values.
pub const RESULT_SUCCESS: &str = "success";
pub const RESULT_ERROR: &str = "error";

/// The failover controllers' metrics, registered once and shared.
#[derive(Clone)]
pub struct FailoverMetrics {
    queue_depth: Family<NameLabels, Gauge>,
    kind_total: Family<KindLabels, Counter>,
    latency: Histograms<NameLabels>,
    processing: Family<ResultLabels, Counter>,
    deferred: Family<ReasonLabels, Counter>,
    removed: Family<RemovedLabels, Counter>,
}

impl FailoverMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            queue_depth: Family::default(),
            kind_total: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            processing: Family::default(),
            deferred: Family::default(),
            removed: Family::default(),
        };
        registry.register(
            "eviction_queue_depth",
            "Bindings waiting to be evicted (held back by the eviction rate limit or budget)",
            metrics.queue_depth.clone(),
        );
        registry.register(
            "eviction_kind",
            "Evictions of a resource kind from a member cluster",
            metrics.kind_total.clone(),
        );
        registry.register(
            "eviction_processing_latency_seconds",
            "Time to process one binding in a failover controller",
            metrics.latency.clone(),
        );
        registry.register(
            "eviction_processing",
            "Bindings processed by a failover controller, by result",
            metrics.processing.clone(),
        );
        registry.register(
            "eviction_deferred",
            "Evictions or task removals held back by a safety rule, by reason",
            metrics.deferred.clone(),
        );
        registry.register(
            "eviction_task_removed",
            "Graceful eviction tasks removed, by reason",
            metrics.removed.clone(),
        );
        metrics
    }

    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    pub fn set_queue_depth(&self, name: &str, depth: usize) {
        self.queue_depth
            .get_or_create(&NameLabels { name: name.into() })
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    pub fn evicted(&self, cluster: &str, kind: &str) {
        self.kind_total
            .get_or_create(&KindLabels {
                member_cluster: cluster.into(),
                resource_kind: kind.into(),
            })
            .inc();
    }

    pub fn processed(&self, name: &str, ok: bool, seconds: f64) {
        self.latency
            .get_or_create(&NameLabels { name: name.into() })
            .observe(seconds);
        let result = if ok { RESULT_SUCCESS } else { RESULT_ERROR };
        self.processing
            .get_or_create(&ResultLabels {
                name: name.into(),
                result: result.into(),
            })
            .inc();
    }

    pub fn deferred(&self, name: &str, reason: &str) {
        self.deferred
            .get_or_create(&ReasonLabels {
                name: name.into(),
                reason: reason.into(),
            })
            .inc();
    }

    pub fn task_removed(&self, reason: &str) {
        self.removed
            .get_or_create(&RemovedLabels {
                reason: reason.into(),
            })
            .inc();
    }
}
