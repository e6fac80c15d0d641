//! ResourceQuota in the accurate estimate (Karmada's ResourceQuotaEstimator, gate ResourceQuotaEstimate): a
//! quota of the workload's namespace that applies to the replica's priority class caps the replicas at what its
//! free share (`status.hard − status.used`) holds, for the compute resources it limits — `cpu`, `memory`,
//! `requests.cpu`, `requests.memory` and extended resources; `limits.*` are not counted, as a replica's
//! requirements carry requests only.
//!
//! Scopes, as Karmada reads them: a quota without scopes applies; otherwise it applies when any of its
//! PriorityClass selectors matches the replica's priority class (other scopes never match).

use k8s_openapi::api::core::v1::{ResourceQuota, ScopedResourceSelectorRequirement};

use super::claim::ReplicaClaim;
use super::times_fits;
use crate::error::InputError;
use crate::estimator::Resources;
use crate::quantity::parse_milli;

/// One ResourceQuota, digested.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaInfo {
    pub namespace: String,
    pub selectors: Vec<ScopedResourceSelectorRequirement>,
    /// hard − used per counted resource (`requests.` prefix removed), milli-units.
    pub free: Resources,
}

fn counted(name: &str) -> Option<&str> {
    let trimmed = name.strip_prefix("requests.").unwrap_or(name);
    if name.starts_with("limits.") {
        return None;
    }
    let extended = trimmed.contains('/') && !trimmed.starts_with("kubernetes.io/");
    (matches!(trimmed, "cpu" | "memory") || extended).then_some(trimmed)
}

impl QuotaInfo {
    pub fn new(quota: &ResourceQuota) -> Result<Self, InputError> {
        let name = quota.metadata.name.clone().unwrap_or_default();
        let status = quota.status.as_ref();
        let hard = status.and_then(|s| s.hard.as_ref());
        let used = status.and_then(|s| s.used.as_ref());
        let mut free = Resources::new();
        for (resource, limit) in hard.into_iter().flatten() {
            let Some(counted) = counted(resource) else {
                continue;
            };
            let Some(used) = used.and_then(|u| u.get(resource)) else {
                continue;
            };
            let parse = |text: &str, field: &str| {
                parse_milli(text).map_err(|e| {
                    InputError::new(
                        format!("ResourceQuota {name}: status.{field}.{resource}"),
                        e.to_string(),
                    )
                })
            };
            free.insert(
                counted.to_string(),
                parse(&limit.0, "hard")? - parse(&used.0, "used")?,
            );
        }
        let spec = quota.spec.as_ref();
        let mut selectors: Vec<ScopedResourceSelectorRequirement> = spec
            .and_then(|s| s.scopes.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|scope| ScopedResourceSelectorRequirement {
                scope_name: scope,
                operator: "Exists".into(),
                values: None,
            })
            .collect();
        selectors.extend(
            spec.and_then(|s| s.scope_selector.as_ref())
                .and_then(|s| s.match_expressions.clone())
                .unwrap_or_default(),
        );
        Ok(Self {
            namespace: quota.metadata.namespace.clone().unwrap_or_default(),
            selectors,
            free,
        })
    }

    fn applies_to(&self, priority_class: &str) -> bool {
        self.selectors.is_empty()
            || self.selectors.iter().any(|selector| {
                if selector.scope_name != "PriorityClass" {
                    return false;
                }
                let values = selector.values.as_deref().unwrap_or_default();
                let listed = values.iter().any(|v| v == priority_class);
                match selector.operator.as_str() {
                    "Exists" => !priority_class.is_empty(),
                    "DoesNotExist" => priority_class.is_empty(),
                    "In" => !priority_class.is_empty() && listed,
                    "NotIn" => priority_class.is_empty() || !listed,
                    _ => false,
                }
            })
    }
}

/// The replicas `quota` leaves room for, or `None` when it does not constrain `claim` (another namespace, a
/// scope that does not apply, no counted resource requested).
pub fn quota_replicas(quota: &QuotaInfo, claim: &ReplicaClaim) -> Option<i64> {
    if quota.namespace != claim.namespace || !quota.applies_to(&claim.priority_class_name) {
        return None;
    }
    let constrained: Resources = claim
        .requests
        .iter()
        .filter(|(name, _)| quota.free.contains_key(*name))
        .map(|(name, amount)| (name.clone(), *amount))
        .collect();
    times_fits(&quota.free, &constrained).map(|fits| fits.max(0))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn quota(
        spec: serde_json::Value,
        hard: serde_json::Value,
        used: serde_json::Value,
    ) -> QuotaInfo {
        let quota: ResourceQuota = serde_json::from_value(json!({
            "metadata": {"name": "q", "namespace": "shop"},
            "spec": spec,
            "status": {"hard": hard, "used": used},
        }))
        .expect("quota");
        QuotaInfo::new(&quota).expect("digest")
    }

    fn claim(cpu: i128, memory: i128, priority_class: &str) -> ReplicaClaim {
        ReplicaClaim {
            requests: [("cpu".to_string(), cpu), ("memory".to_string(), memory)].into(),
            namespace: "shop".into(),
            priority_class_name: priority_class.into(),
            ..ReplicaClaim::default()
        }
    }

    const GI: i128 = 1024 * 1024 * 1024 * 1000;

    #[test]
    fn quota_table() {
        let cases = [
            (
                "cpu bounds: 10 − 4 cores free, 2 per replica",
                quota(
                    json!({}),
                    json!({"requests.cpu": "10", "requests.memory": "100Gi"}),
                    json!({"requests.cpu": "4", "requests.memory": "1Gi"}),
                ),
                claim(2000, GI, ""),
                Some(3),
            ),
            (
                "plain names count like requests.*",
                quota(
                    json!({}),
                    json!({"cpu": "10", "memory": "4Gi"}),
                    json!({"cpu": "0", "memory": "1Gi"}),
                ),
                claim(1000, GI, ""),
                Some(3),
            ),
            (
                "limits are not counted",
                quota(
                    json!({}),
                    json!({"limits.cpu": "1"}),
                    json!({"limits.cpu": "0"}),
                ),
                claim(2000, GI, ""),
                None,
            ),
            (
                "used missing: the quota does not count",
                quota(json!({}), json!({"requests.cpu": "1"}), json!({})),
                claim(2000, GI, ""),
                None,
            ),
            (
                "over quota already: 0",
                quota(
                    json!({}),
                    json!({"requests.cpu": "1"}),
                    json!({"requests.cpu": "3"}),
                ),
                claim(500, GI, ""),
                Some(0),
            ),
            (
                "priority-class scope that matches",
                quota(
                    json!({"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}),
                    json!({"requests.cpu": "4"}),
                    json!({"requests.cpu": "0"}),
                ),
                claim(1000, GI, "high"),
                Some(4),
            ),
            (
                "priority-class scope that does not match",
                quota(
                    json!({"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}),
                    json!({"requests.cpu": "4"}),
                    json!({"requests.cpu": "0"}),
                ),
                claim(1000, GI, "low"),
                None,
            ),
            (
                "a Terminating scope never matches",
                quota(
                    json!({"scopes": ["Terminating"]}),
                    json!({"requests.cpu": "4"}),
                    json!({"requests.cpu": "0"}),
                ),
                claim(1000, GI, ""),
                None,
            ),
        ];
        for (name, quota, claim, expected) in cases {
            assert_eq!(quota_replicas(&quota, &claim), expected, "{name}");
        }
        let other_namespace = ReplicaClaim {
            namespace: "elsewhere".into(),
            ..claim(1, 1, "")
        };
        let any = quota(
            json!({}),
            json!({"requests.cpu": "4"}),
            json!({"requests.cpu": "0"}),
        );
        assert_eq!(quota_replicas(&any, &other_namespace), None);
    }
}
