//! `karmada_binding_replicas{namespace, name, state}`: per binding, the declared replicas (`state="desired"`,
//! the binding's `spec.replicas`) and the replicas the members report ready (`state="ready"`, summed over the
//! aggregated status). An alert on `ready` drifting more than 20% from `desired` is the seed's use of it.
//! A binding's series are removed once the binding is gone.
//!
//! `karmada_binding_cluster_replicas{namespace, name, member_cluster}`: the replicas the scheduler placed in each
//! member (the binding's `spec.clusters`), what the seed's cross-cluster distribution heat map draws. Karmada has
//! no such series; its dashboards read the placements with kube-state-metrics. With 1,000 workloads each placed in
//! 10 members they are 10,000 series (~1 MB of exposition), so they go to a registry of their own that a component
//! serves apart (`/metrics/placements`) and Prometheus may scrape less often.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

const NAME: &str = "karmada_binding_replicas";
const HELP: &str = "Replicas of a binding: declared (state=desired) and reported ready by the members (state=ready)";
const PLACED_NAME: &str = "karmada_binding_cluster_replicas";
const PLACED_HELP: &str =
    "Replicas the scheduler placed in each member cluster for a binding (its spec.clusters)";

/// One binding's numbers: desired, ready, and the replicas placed per member cluster.
#[derive(Debug)]
struct Entry {
    desired: i64,
    ready: i64,
    placed: Box<[(Box<str>, i64)]>,
}

/// `namespace/name` (a namespace holds no `/`; a cluster-scoped binding's is empty) → its numbers.
type Replicas = BTreeMap<Box<str>, Entry>;

/// The binding gauges, registered once.
///
/// Why not a `Family`: its series keep a label set of three owned strings and a gauge allocation each, two
/// series per binding, plus a second index to know which bindings have series — about 800 bytes per binding
/// in the controller-manager's heap. Here a binding is one entry (`namespace/name` and its two numbers),
/// encoded into series when scraped.
#[derive(Clone, Debug, Default)]
pub struct BindingMetrics {
    bindings: Arc<Mutex<Replicas>>,
}

fn key(namespace: &str, name: &str) -> Box<str> {
    format!("{namespace}/{name}").into_boxed_str()
}

impl BindingMetrics {
    /// Registers `karmada_binding_replicas` in `registry` and `karmada_binding_cluster_replicas` in `placements`
    /// (no prefix: the names are the seed's and ours).
    pub fn register(registry: &mut Registry, placements: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register_collector(Box::new(ReplicaSeries(metrics.clone())));
        placements.register_collector(Box::new(PlacementSeries(metrics.clone())));
        metrics
    }

    fn bindings(&self) -> MutexGuard<'_, Replicas> {
        // The map holds plain numbers: a panic elsewhere cannot leave it half-written.
        self.bindings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a binding's desired and ready replicas and its placement (`(cluster, replicas)`).
    pub fn record<'a>(
        &self,
        namespace: &str,
        name: &str,
        desired: i64,
        ready: i64,
        placed: impl IntoIterator<Item = (&'a str, i64)>,
    ) {
        let key = key(namespace, name);
        let placed = placed
            .into_iter()
            .map(|(cluster, replicas)| (Box::from(cluster), replicas))
            .collect();
        self.bindings().insert(
            key,
            Entry {
                desired,
                ready,
                placed,
            },
        );
    }

    pub fn forget(&self, namespace: &str, name: &str) {
        self.bindings().remove(&*key(namespace, name));
    }

    /// Removes the series of every binding for which `live(namespace, name)` is false.
    pub fn retain(&self, live: impl Fn(&str, &str) -> bool) {
        self.bindings().retain(|key, _| {
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            live(namespace, name)
        });
    }
}

/// `karmada_binding_replicas`, encoded from the map at scrape time.
#[derive(Debug)]
struct ReplicaSeries(BindingMetrics);

/// `karmada_binding_cluster_replicas`, encoded from the map at scrape time.
#[derive(Debug)]
struct PlacementSeries(BindingMetrics);

impl Collector for ReplicaSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let bindings = self.0.bindings();
        let mut family = encoder.encode_descriptor(NAME, HELP, None, MetricType::Gauge)?;
        for (key, entry) in bindings.iter() {
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            for (state, value) in [("desired", entry.desired), ("ready", entry.ready)] {
                let labels = [("namespace", namespace), ("name", name), ("state", state)];
                ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

impl Collector for PlacementSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let bindings = self.0.bindings();
        let mut family =
            encoder.encode_descriptor(PLACED_NAME, PLACED_HELP, None, MetricType::Gauge)?;
        for (key, entry) in bindings.iter() {
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            for (cluster, replicas) in &entry.placed {
                let labels = [
                    ("namespace", namespace),
                    ("name", name),
                    ("member_cluster", cluster),
                ];
                ConstGauge::new(*replicas).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn encoded(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    }

    #[test]
    fn series_are_set_and_dropped_with_their_binding() {
        let mut registry = Registry::default();
        let mut placements = Registry::default();
        let metrics = BindingMetrics::register(&mut registry, &mut placements);
        metrics.record(
            "default",
            "nginx-deployment",
            6,
            4,
            [("member1", 4), ("member2", 2)],
        );
        metrics.record("", "ns-crb", 0, 0, []);
        let text = encoded(&registry);
        assert!(
            text.contains(
                "karmada_binding_replicas{namespace=\"default\",name=\"nginx-deployment\",state=\"desired\"} 6"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "karmada_binding_replicas{namespace=\"default\",name=\"nginx-deployment\",state=\"ready\"} 4"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE karmada_binding_replicas gauge"),
            "{text}"
        );
        assert!(
            text.contains(
                "karmada_binding_replicas{namespace=\"\",name=\"ns-crb\",state=\"ready\"} 0"
            ),
            "{text}"
        );
        assert!(!text.contains("karmada_binding_cluster_replicas"), "{text}");
        let placed = encoded(&placements);
        assert!(
            placed.contains(
                "karmada_binding_cluster_replicas{namespace=\"default\",name=\"nginx-deployment\",member_cluster=\"member2\"} 2"
            ),
            "{placed}"
        );
        // A binding recorded again has its series replaced, not repeated.
        metrics.record("default", "nginx-deployment", 9, 6, [("member1", 9)]);
        let text = encoded(&registry);
        assert_eq!(
            text.matches("name=\"nginx-deployment\"").count(),
            2,
            "{text}"
        );
        let placed = encoded(&placements);
        assert_eq!(
            placed.matches("name=\"nginx-deployment\"").count(),
            1,
            "{placed}"
        );
        assert!(!placed.contains("member2"), "{placed}");
        assert!(text.contains("state=\"desired\"} 9"), "{text}");
        metrics.retain(|namespace, name| (namespace, name) == ("", "ns-crb"));
        let text = encoded(&registry);
        assert!(!text.contains("nginx-deployment"), "{text}");
        assert!(text.contains("ns-crb"), "{text}");
    }
}
