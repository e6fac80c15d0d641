//! The cluster gauges of the controller-manager's `/metrics`.
//!
//! `karmada_cluster_ready{cluster_name}` (1/0), and Karmada's `cluster_*` gauges labelled `member_cluster`.
//! `cluster_sync_status_duration_seconds{member_cluster}` times one status round (probe, collect, publish).
//! `karmada_cluster_taint{member_cluster,key,effect}` is 1 for each taint a Cluster carries (set by the cluster
//! controller every round, so a removed taint's series goes): the failover dashboard's taint timeline.
//! A cluster's series are removed when it is unjoined.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterNameLabel {
    pub cluster_name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MemberClusterLabel {
    pub member_cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TaintLabels {
    pub member_cluster: String,
    pub key: String,
    pub effect: String,
}

type IntGauges = Family<MemberClusterLabel, Gauge>;
type FloatGauges = Family<MemberClusterLabel, Gauge<f64, AtomicU64>>;
type Durations = Family<MemberClusterLabel, Histogram, fn() -> Histogram>;

/// 1 ms to ~33 s: a healthy round takes milliseconds, one that waits on an unreachable member
/// runs into the probe timeout.
fn sync_duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// One member's numbers, as the status controller last collected them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterNumbers {
    pub ready: bool,
    pub nodes: i64,
    pub ready_nodes: i64,
    pub cpu_allocatable: f64,
    pub memory_allocatable_bytes: f64,
    pub pod_allocatable: i64,
    pub cpu_allocated: f64,
    pub memory_allocated_bytes: f64,
    pub pod_allocated: i64,
}

/// The gauges, registered once.
#[derive(Clone)]
pub struct ClusterMetrics {
    karmada_cluster_ready: Family<ClusterNameLabel, Gauge>,
    ready_state: IntGauges,
    node_number: IntGauges,
    ready_node_number: IntGauges,
    memory_allocatable_bytes: FloatGauges,
    cpu_allocatable_number: FloatGauges,
    pod_allocatable_number: IntGauges,
    memory_allocated_bytes: FloatGauges,
    cpu_allocated_number: FloatGauges,
    pod_allocated_number: IntGauges,
    sync_status_duration: Durations,
    taints: Family<TaintLabels, Gauge>,
    /// The taint series the last round set.
    published_taints: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<TaintLabels>>>,
}

impl Default for ClusterMetrics {
    fn default() -> Self {
        Self {
            karmada_cluster_ready: Family::default(),
            ready_state: IntGauges::default(),
            node_number: IntGauges::default(),
            ready_node_number: IntGauges::default(),
            memory_allocatable_bytes: FloatGauges::default(),
            cpu_allocatable_number: FloatGauges::default(),
            pod_allocatable_number: IntGauges::default(),
            memory_allocated_bytes: FloatGauges::default(),
            cpu_allocated_number: FloatGauges::default(),
            pod_allocated_number: IntGauges::default(),
            sync_status_duration: Family::new_with_constructor(sync_duration_histogram),
            taints: Family::default(),
            published_taints: Default::default(),
        }
    }
}

impl ClusterMetrics {
    /// Registers every gauge in `registry` (which has no prefix: the names are Karmada's).
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "karmada_cluster_ready",
            "Whether the cluster is Ready (1) or not (0)",
            m.karmada_cluster_ready.clone(),
        );
        registry.register(
            "cluster_ready_state",
            "State of the cluster (1 ready, 0 not)",
            m.ready_state.clone(),
        );
        registry.register(
            "cluster_node_number",
            "Number of nodes in the cluster",
            m.node_number.clone(),
        );
        registry.register(
            "cluster_ready_node_number",
            "Number of ready nodes in the cluster",
            m.ready_node_number.clone(),
        );
        registry.register(
            "cluster_memory_allocatable_bytes",
            "Allocatable memory of the cluster in bytes",
            m.memory_allocatable_bytes.clone(),
        );
        registry.register(
            "cluster_cpu_allocatable_number",
            "Allocatable CPU cores of the cluster",
            m.cpu_allocatable_number.clone(),
        );
        registry.register(
            "cluster_pod_allocatable_number",
            "Allocatable pods of the cluster",
            m.pod_allocatable_number.clone(),
        );
        registry.register(
            "cluster_memory_allocated_bytes",
            "Memory requested by scheduled pods in bytes",
            m.memory_allocated_bytes.clone(),
        );
        registry.register(
            "cluster_cpu_allocated_number",
            "CPU cores requested by scheduled pods",
            m.cpu_allocated_number.clone(),
        );
        registry.register(
            "cluster_pod_allocated_number",
            "Number of scheduled pods",
            m.pod_allocated_number.clone(),
        );
        registry.register(
            "cluster_sync_status_duration_seconds",
            "Duration in seconds of one status collection round for the cluster",
            m.sync_status_duration.clone(),
        );
        registry.register(
            "karmada_cluster_taint",
            "A taint on the cluster (1), by key and effect",
            m.taints.clone(),
        );
        m
    }

    /// Replaces the taint series with the taints of `clusters` (name, (key, effect) pairs): the whole set, so a
    /// taint removed since the last round loses its series.
    pub fn record_taints<'a, T>(&self, clusters: impl IntoIterator<Item = (&'a str, T)>)
    where
        T: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut current = std::collections::HashSet::new();
        for (cluster, taints) in clusters {
            for (key, effect) in taints {
                current.insert(TaintLabels {
                    member_cluster: cluster.to_string(),
                    key: key.to_string(),
                    effect: effect.to_string(),
                });
            }
        }
        // Series of taints gone go; the others are set (a clear and refill would let a scrape see none).
        let mut published = self
            .published_taints
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for gone in published.difference(&current) {
            self.taints.remove(gone);
        }
        for labels in &current {
            self.taints.get_or_create(labels).set(1);
        }
        *published = current;
    }

    /// Times one status round of `cluster` (whatever its outcome).
    pub fn observe_sync_status(&self, cluster: &str, elapsed: Duration) {
        self.sync_status_duration
            .get_or_create(&MemberClusterLabel {
                member_cluster: cluster.to_string(),
            })
            .observe(elapsed.as_secs_f64());
    }

    pub fn record(&self, cluster: &str, n: &ClusterNumbers) {
        let name = ClusterNameLabel {
            cluster_name: cluster.to_string(),
        };
        let member = MemberClusterLabel {
            member_cluster: cluster.to_string(),
        };
        self.karmada_cluster_ready
            .get_or_create(&name)
            .set(i64::from(n.ready));
        self.ready_state
            .get_or_create(&member)
            .set(i64::from(n.ready));
        self.node_number.get_or_create(&member).set(n.nodes);
        self.ready_node_number
            .get_or_create(&member)
            .set(n.ready_nodes);
        self.memory_allocatable_bytes
            .get_or_create(&member)
            .set(n.memory_allocatable_bytes);
        self.cpu_allocatable_number
            .get_or_create(&member)
            .set(n.cpu_allocatable);
        self.pod_allocatable_number
            .get_or_create(&member)
            .set(n.pod_allocatable);
        self.memory_allocated_bytes
            .get_or_create(&member)
            .set(n.memory_allocated_bytes);
        self.cpu_allocated_number
            .get_or_create(&member)
            .set(n.cpu_allocated);
        self.pod_allocated_number
            .get_or_create(&member)
            .set(n.pod_allocated);
    }

    /// Only the Ready gauges, when the member could not be asked for more.
    pub fn record_ready(&self, cluster: &str, ready: bool) {
        let name = ClusterNameLabel {
            cluster_name: cluster.to_string(),
        };
        let member = MemberClusterLabel {
            member_cluster: cluster.to_string(),
        };
        self.karmada_cluster_ready
            .get_or_create(&name)
            .set(i64::from(ready));
        self.ready_state
            .get_or_create(&member)
            .set(i64::from(ready));
    }

    pub fn forget(&self, cluster: &str) {
        let name = ClusterNameLabel {
            cluster_name: cluster.to_string(),
        };
        let member = MemberClusterLabel {
            member_cluster: cluster.to_string(),
        };
        self.karmada_cluster_ready.remove(&name);
        for f in [
            &self.ready_state,
            &self.node_number,
            &self.ready_node_number,
            &self.pod_allocatable_number,
            &self.pod_allocated_number,
        ] {
            f.remove(&member);
        }
        for f in [
            &self.memory_allocatable_bytes,
            &self.cpu_allocatable_number,
            &self.memory_allocated_bytes,
            &self.cpu_allocated_number,
        ] {
            f.remove(&member);
        }
        self.sync_status_duration.remove(&member);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn taint_series_follow_the_clusters_taints() {
        let mut registry = Registry::default();
        let m = ClusterMetrics::register(&mut registry);
        let encoded = |registry: &Registry| {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
            text
        };
        let not_ready = ("cluster.karmada.io/not-ready", "NoExecute");
        m.record_taints([("member1", vec![not_ready]), ("member2", vec![])]);
        let text = encoded(&registry);
        assert!(
            text.contains(r#"karmada_cluster_taint{member_cluster="member1",key="cluster.karmada.io/not-ready",effect="NoExecute"} 1"#),
            "{text}"
        );
        assert!(!text.contains(r#"member_cluster="member2""#), "{text}");
        // The taint removed, its series goes.
        m.record_taints([("member1", vec![])]);
        assert!(!encoded(&registry).contains("not-ready"));
    }

    #[test]
    fn gauges_are_exposed_and_forgotten() {
        let mut registry = Registry::default();
        let m = ClusterMetrics::register(&mut registry);
        m.record(
            "member1",
            &ClusterNumbers {
                ready: true,
                nodes: 3,
                cpu_allocatable: 12.5,
                ..Default::default()
            },
        );
        m.observe_sync_status("member1", Duration::from_millis(3));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("karmada_cluster_ready{cluster_name=\"member1\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("cluster_node_number{member_cluster=\"member1\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("cluster_cpu_allocatable_number{member_cluster=\"member1\"} 12.5"),
            "{text}"
        );
        assert!(
            text.contains(
                "cluster_sync_status_duration_seconds_bucket{le=\"0.004\",member_cluster=\"member1\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "cluster_sync_status_duration_seconds_count{member_cluster=\"member1\"} 1"
            ),
            "{text}"
        );
        m.forget("member1");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(!text.contains("member1"), "{text}");
    }
}
