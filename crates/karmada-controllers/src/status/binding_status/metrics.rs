//! `karmada_binding_replicas{namespace, name, state}`: per binding, the declared replicas (`state="desired"`,
//! the binding's `spec.replicas`) and the replicas the members report ready (`state="ready"`, summed over the
//! aggregated status). An alert on `ready` drifting more than 20% from `desired` is the seed's use of it.
//! A binding's series are removed once the binding is gone.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BindingReplicasLabels {
    pub namespace: String,
    pub name: String,
    pub state: String,
}

const DESIRED: &str = "desired";
const READY: &str = "ready";

/// The binding gauges, registered once.
#[derive(Clone, Default)]
pub struct BindingMetrics {
    replicas: Family<BindingReplicasLabels, Gauge>,
    /// Bindings with series (a Family cannot be iterated), for [`Self::retain`].
    known: Arc<Mutex<BTreeSet<(String, String)>>>,
}

fn labels(namespace: &str, name: &str, state: &str) -> BindingReplicasLabels {
    BindingReplicasLabels {
        namespace: namespace.to_string(),
        name: name.to_string(),
        state: state.to_string(),
    }
}

impl BindingMetrics {
    /// Registers the gauge in `registry` (which has no prefix: the name is the seed's).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "karmada_binding_replicas",
            "Replicas of a binding: declared (state=desired) and reported ready by the members (state=ready)",
            metrics.replicas.clone(),
        );
        metrics
    }

    pub fn record(&self, namespace: &str, name: &str, desired: i64, ready: i64) {
        self.replicas
            .get_or_create(&labels(namespace, name, DESIRED))
            .set(desired);
        self.replicas
            .get_or_create(&labels(namespace, name, READY))
            .set(ready);
        if let Ok(mut known) = self.known.lock() {
            known.insert((namespace.to_string(), name.to_string()));
        }
    }

    pub fn forget(&self, namespace: &str, name: &str) {
        self.replicas.remove(&labels(namespace, name, DESIRED));
        self.replicas.remove(&labels(namespace, name, READY));
        if let Ok(mut known) = self.known.lock() {
            known.remove(&(namespace.to_string(), name.to_string()));
        }
    }

    /// Removes the series of every binding not in `live` (namespace, name).
    pub fn retain(&self, live: &BTreeSet<(String, String)>) {
        let stale: Vec<(String, String)> = match self.known.lock() {
            Ok(known) => known.difference(live).cloned().collect(),
            Err(_) => return,
        };
        for (namespace, name) in stale {
            self.forget(&namespace, &name);
        }
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
        let metrics = BindingMetrics::register(&mut registry);
        metrics.record("default", "nginx-deployment", 6, 4);
        metrics.record("", "ns-crb", 0, 0);
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
        metrics.retain(&BTreeSet::from([("".to_string(), "ns-crb".to_string())]));
        let text = encoded(&registry);
        assert!(!text.contains("nginx-deployment"), "{text}");
        assert!(text.contains("ns-crb"), "{text}");
    }
}
