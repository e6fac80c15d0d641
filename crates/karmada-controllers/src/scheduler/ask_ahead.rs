//! Asking the scheduler estimators ahead of a decision: when a binding that needs scheduling is queued, the
//! estimators of its feasible clusters are asked about its replica requirements in the background, once per
//! kind of binding (requirements, placement, scheduler and resource kind) and estimator answer ttl. The
//! decision then finds the answers kept, or waits for the round already under way rather than starting it;
//! a fresh scheduler asks for the bindings waiting at its start before its workers take any (bounded by
//! `--scheduler-estimator-timeout`), as it waits for its caches.
//!
//! Only bindings whose spec the scheduler has not observed yet (new, or changed: generation ahead of
//! `status.schedulerObservedGeneration`) are asked for: a restart over scheduled bindings asks nothing.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::runtime::CompactObject;

/// What of a binding decides which estimators are asked about what, read without building the rest.
#[derive(Deserialize)]
struct AskView {
    #[serde(default)]
    spec: Option<SpecView>,
    #[serde(default)]
    status: Option<StatusView>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecView {
    #[serde(default)]
    replica_requirements: Option<Box<RawValue>>,
    #[serde(default)]
    placement: Option<Box<RawValue>>,
    #[serde(default)]
    scheduler_name: Option<String>,
    #[serde(default)]
    resource: Option<ResourceView>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceView {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusView {
    #[serde(default)]
    scheduler_observed_generation: i64,
}

/// The kind of `binding` for asking ahead, if its spec has not been observed by the scheduler yet.
pub fn unobserved_kind(binding: &CompactObject) -> Option<u64> {
    let view: AskView = binding.decode().ok()?;
    let observed = view
        .status
        .map_or(0, |status| status.scheduler_observed_generation);
    if binding.metadata().generation.unwrap_or(0) <= observed {
        return None;
    }
    let spec = view.spec?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    spec.replica_requirements
        .map(|r| r.get().to_string())
        .hash(&mut hasher);
    spec.placement
        .map(|p| p.get().to_string())
        .hash(&mut hasher);
    spec.scheduler_name.hash(&mut hasher);
    spec.resource
        .map(|r| (r.api_version, r.kind))
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// The kinds of binding asked about lately.
#[derive(Debug, Default)]
pub struct AskedKinds {
    at: Mutex<HashMap<u64, Instant>>,
}

/// Kept kinds beyond which the old ones are dropped.
const KEPT: usize = 4096;

impl AskedKinds {
    /// Whether `kind` is to be asked about now (not asked within `ttl`); if so it counts as asked at `now`.
    pub fn claim(&self, kind: u64, now: Instant, ttl: Duration) -> bool {
        let mut at = self.at.lock().unwrap_or_else(PoisonError::into_inner);
        if at
            .get(&kind)
            .is_some_and(|asked| now.saturating_duration_since(*asked) < ttl)
        {
            return false;
        }
        if at.len() >= KEPT {
            at.retain(|_, asked| now.saturating_duration_since(*asked) < ttl);
        }
        at.insert(kind, now);
        true
    }

    /// `kind` was not asked about after all (nothing to ask yet): the next binding of it tries again.
    pub fn unclaim(&self, kind: u64) {
        self.at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::DynamicObject;
    use serde_json::json;

    fn binding(value: serde_json::Value) -> CompactObject {
        let object: DynamicObject = serde_json::from_value(value).expect("binding");
        CompactObject::from_dynamic(&object).expect("compact")
    }

    fn web(generation: i64, observed: Option<i64>, cpu: &str) -> CompactObject {
        let mut value = json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web", "namespace": "default", "generation": generation},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "replicas": 3, "replicaRequirements": {"resourceRequest": {"cpu": cpu}},
                     "placement": {"clusterAffinity": {"clusterNames": ["a"]}}}});
        if let Some(observed) = observed {
            value["status"] = json!({"schedulerObservedGeneration": observed});
        }
        binding(value)
    }

    #[test]
    fn only_unobserved_specs_are_asked_for_and_alike_bindings_share_a_kind() {
        let fresh = unobserved_kind(&web(1, None, "1")).expect("new binding");
        assert_eq!(unobserved_kind(&web(2, Some(1), "1")), Some(fresh));
        assert_ne!(unobserved_kind(&web(1, None, "2")), Some(fresh));
        assert_eq!(unobserved_kind(&web(2, Some(2), "1")), None, "observed");
    }

    #[test]
    fn a_kind_is_asked_once_per_ttl() {
        let asked = AskedKinds::default();
        let start = Instant::now();
        let ttl = Duration::from_secs(1);
        assert!(asked.claim(7, start, ttl));
        assert!(!asked.claim(7, start + Duration::from_millis(500), ttl));
        assert!(
            asked.claim(7, start + ttl, ttl),
            "asked again after the ttl"
        );
        asked.unclaim(7);
        assert!(asked.claim(7, start + ttl, ttl), "given back");
    }
}
