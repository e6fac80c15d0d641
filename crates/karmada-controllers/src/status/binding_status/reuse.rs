//! Aggregating a binding again without decoding the Works that did not change.
//!
//! Why: a binding is aggregated again whenever one of its Works reports, and a Duplicated binding over 100
//! members has 100 Works that report one by one over the whole rollout. Decoding every Work on each of those
//! reconciles made aggregation quadratic in the members: at 100 members × 5,000 workloads it held the
//! controller-manager's CPU until execution starved and the rollout stopped.
//!
//! How: after a binding's status is written (or found already right), [`Basis`] records the binding's
//! resourceVersion and the resourceVersion of each Work its items came from. The next reconcile of the same
//! binding version takes the item of every Work still at its recorded version from the binding's stored status
//! and decodes only the others. Any other binding version (someone else wrote it, its spec changed, the cache
//! lags) is not trusted: everything is decoded, as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use karmada_api::work::{AggregatedStatusItem, ObjectReference, Work};

use super::aggregate::aggregated_status_item;
use crate::names::cluster_of_execution_namespace;
use crate::runtime::{CompactObject, ControllerError};

/// What a binding's stored items were computed from: valid while the binding is at `binding_version`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Basis {
    binding_version: String,
    /// (namespace, name) of each Work → its resourceVersion.
    works: HashMap<(String, String), String>,
}

impl Basis {
    /// The same Works, stored in the binding at `binding_version`.
    pub fn at(self, binding_version: &str) -> Basis {
        Basis {
            binding_version: binding_version.to_string(),
            ..self
        }
    }
}

/// The items of a binding and what they were computed from.
pub struct Collected {
    pub items: Vec<AggregatedStatusItem>,
    /// Valid once stored: give it the binding version that holds `items` ([`Basis::at`]).
    pub basis: Basis,
    /// Works decoded (the others were reused); for tests and the figures.
    pub decoded: usize,
}

/// The aggregated items of `works`, one per Work in an execution namespace (unsorted). `stored` is the binding's
/// current status items and `known` the basis recorded for it; `known` is trusted only at `binding_version`.
/// `decode` reads a Work's namespace and status.
pub fn collect_items(
    resource: &ObjectReference,
    works: &[Arc<CompactObject>],
    binding_version: &str,
    stored: &[AggregatedStatusItem],
    known: Option<&Basis>,
    decode: impl Fn(&CompactObject) -> Result<Work, ControllerError>,
) -> Collected {
    let known = known.filter(|basis| basis.binding_version == binding_version);
    let stored: HashMap<&str, &AggregatedStatusItem> = stored
        .iter()
        .map(|item| (item.cluster_name.as_str(), item))
        .collect();
    // A cluster with two Works of one binding (a rename in flight) has one stored item for both: decode them.
    let mut per_cluster: HashMap<&str, usize> = HashMap::new();
    for work in works {
        if let Some(cluster) = work
            .metadata()
            .namespace()
            .and_then(cluster_of_execution_namespace)
        {
            *per_cluster.entry(cluster).or_default() += 1;
        }
    }
    let mut collected = Collected {
        items: Vec::with_capacity(works.len()),
        basis: Basis::default(),
        decoded: 0,
    };
    for work in works {
        let metadata = work.metadata();
        let (Some(namespace), Some(cluster)) = (
            metadata.namespace(),
            metadata
                .namespace()
                .and_then(cluster_of_execution_namespace),
        ) else {
            continue;
        };
        let key = (namespace.to_string(), metadata.name().to_string());
        let version = metadata.resource_version.as_deref().unwrap_or_default();
        let unchanged = known
            .is_some_and(|basis| basis.works.get(&key).map(String::as_str) == Some(version))
            && per_cluster.get(cluster) == Some(&1);
        let reused = unchanged
            .then(|| stored.get(cluster))
            .flatten()
            .map(|item| (*item).clone());
        let item = match reused {
            Some(item) => Some(item),
            None => {
                collected.decoded += 1;
                match decode(work) {
                    Ok(decoded) => aggregated_status_item(resource, &decoded),
                    Err(err) => {
                        tracing::warn!(%err, work = ?metadata.name, "skipping a malformed Work");
                        continue;
                    }
                }
            }
        };
        collected.items.extend(item);
        collected.basis.works.insert(key, version.to_string());
    }
    collected
}

/// Each binding's [`Basis`], by the binding's permanent id. Bounded: when full it is forgotten, which costs one
/// full decode per binding.
#[derive(Default)]
pub struct BasisMemo(Mutex<HashMap<String, Arc<Basis>>>);

/// Bindings remembered at most.
const REMEMBERED: usize = 65_536;

impl BasisMemo {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Basis>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Basis>> {
        self.lock().get(id).cloned()
    }

    pub fn set(&self, id: &str, basis: Basis) {
        let mut memo = self.lock();
        if memo.len() >= REMEMBERED && !memo.contains_key(id) {
            memo.clear();
        }
        memo.insert(id.to_string(), Arc::new(basis));
    }

    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}

#[cfg(test)]
#[path = "reuse_tests.rs"]
mod tests;
