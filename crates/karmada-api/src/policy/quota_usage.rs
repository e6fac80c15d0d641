//! FederatedResourceQuota arithmetic shared by the API server's admission and the quota controllers, pure:
//! what a ResourceBinding's scheduled replicas request (Σ over `spec.clusters` of replicas × the per-replica
//! `replicaRequirements.resourceRequest`, as Karmada counts) and whether adding it would pass a quota's
//! `overall`, worded with the resource and what remains.

use std::collections::BTreeMap;

use apimachinery::{Quantity as ParsedQuantity, QuantityFormat};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;

use super::FederatedResourceQuota;

/// Thousandths of a quantity, `None` when it does not parse.
pub fn milli(quantity: &str) -> Option<i128> {
    apimachinery::quantity::parse_milli(quantity).ok()
}

/// Thousandths back to a quantity in the form Kubernetes prints.
pub fn quantity(milli: i128) -> Quantity {
    let nanos = milli.saturating_mul(1_000_000);
    Quantity(ParsedQuantity::from_nanos(nanos, QuantityFormat::DecimalSI).to_string())
}

/// A binding's scheduled requests: Σ over `spec.clusters` of replicas × the per-replica request.
pub fn binding_usage(binding: &Value) -> BTreeMap<String, i128> {
    let replicas: i128 = binding
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .map(|clusters| {
            clusters
                .iter()
                .filter_map(|c| c["replicas"].as_i64())
                .map(i128::from)
                .sum()
        })
        .unwrap_or(0);
    let mut usage = BTreeMap::new();
    if let Some(requests) = binding
        .pointer("/spec/replicaRequirements/resourceRequest")
        .and_then(Value::as_object)
    {
        for (resource, amount) in requests {
            if let Some(per_replica) = amount.as_str().and_then(milli) {
                usage.insert(resource.clone(), per_replica.saturating_mul(replicas));
            }
        }
    }
    usage
}

/// Adds `b` into `a`.
pub fn add(a: &mut BTreeMap<String, i128>, b: &BTreeMap<String, i128>) {
    for (resource, amount) in b {
        let entry = a.entry(resource.clone()).or_insert(0);
        *entry = entry.saturating_add(*amount);
    }
}

/// Why a binding would exceed `quota`: the first resource whose overall use would pass the limit, with what
/// remains of it. `current` is the namespace's use without the binding, `requested` the binding's.
pub fn exceeded(
    quota: &FederatedResourceQuota,
    current: &BTreeMap<String, i128>,
    requested: &BTreeMap<String, i128>,
) -> Option<String> {
    for (resource, limit) in &quota.spec.overall {
        let Some(limit) = milli(&limit.0) else {
            continue;
        };
        let wanted = requested.get(resource).copied().unwrap_or(0);
        if wanted == 0 {
            continue;
        }
        let used = current.get(resource).copied().unwrap_or(0);
        let sum = used.saturating_add(wanted);
        if sum > limit {
            let remaining = (limit - used).max(0);
            return Some(format!(
                "FederatedResourceQuota({}/{}) exceeded for resource {resource}: requested sum {}, limit {}, remaining {}",
                quota.metadata.namespace.as_deref().unwrap_or_default(),
                quota.metadata.name.as_deref().unwrap_or_default(),
                quantity(sum).0,
                quantity(limit).0,
                quantity(remaining).0,
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn binding(cpu: &str, replicas: &[i64]) -> Value {
        let clusters: Vec<Value> = replicas
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"name": format!("member{}", i + 1), "replicas": r}))
            .collect();
        json!({"spec": {"replicaRequirements": {"resourceRequest": {"cpu": cpu}}, "clusters": clusters}})
    }

    fn quota() -> FederatedResourceQuota {
        serde_json::from_value(json!({
            "metadata": {"name": "team", "namespace": "shop"},
            "spec": {"overall": {"cpu": "4"}},
        }))
        .expect("quota")
    }

    #[test]
    fn a_binding_requests_its_replicas_times_the_per_replica_request() {
        assert_eq!(
            binding_usage(&binding("500m", &[2, 3])).get("cpu"),
            Some(&2500)
        );
        assert_eq!(binding_usage(&binding("1", &[])).get("cpu"), Some(&0));
        assert_eq!(quantity(2500).0, "2500m");
        assert_eq!(quantity(3000).0, "3");
    }

    #[test]
    fn exceeding_names_the_resource_and_what_remains() {
        let current = binding_usage(&binding("1", &[3]));
        let fits = binding_usage(&binding("1", &[1]));
        let too_much = binding_usage(&binding("1", &[2]));
        assert_eq!(exceeded(&quota(), &current, &fits), None);
        assert_eq!(
            exceeded(&quota(), &current, &too_much).as_deref(),
            Some(
                "FederatedResourceQuota(shop/team) exceeded for resource cpu: requested sum 5, limit 4, remaining 1"
            )
        );
    }
}
