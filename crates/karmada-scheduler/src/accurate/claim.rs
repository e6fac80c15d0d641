//! What one replica asks of a node — requests, node selector, required node affinity, tolerations — and
//! whether a node gives it (Kubernetes' rules: selector labels equal; affinity terms ORed, expressions in a term
//! ANDed, an empty term or an invalid expression matching nothing; every NoSchedule and NoExecute taint
//! tolerated, and a cordoned node only with a toleration of `node.kubernetes.io/unschedulable:NoSchedule`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, Taint, Toleration};
use karmada_api::ReplicaRequirements;

use super::nodes::NodeInfo;
use crate::error::InputError;
use crate::estimator::Resources;
use crate::plugins::tainttoleration::tolerates;
use crate::quantity::parse_milli;

/// One replica's needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaClaim {
    /// Requests in milli-units.
    pub requests: Resources,
    pub node_selector: BTreeMap<String, String>,
    pub affinity: Option<NodeSelector>,
    pub tolerations: Vec<Toleration>,
    /// The workload's namespace (for quotas).
    pub namespace: String,
    pub priority_class_name: String,
}

impl ReplicaClaim {
    /// From a binding's `spec.replicaRequirements`.
    pub fn from_requirements(requirements: &ReplicaRequirements) -> Result<Self, InputError> {
        let requests = requirements
            .resource_request
            .iter()
            .map(|(name, quantity)| {
                parse_milli(&quantity.0)
                    .map(|milli| (name.clone(), milli))
                    .map_err(|e| {
                        InputError::new(
                            format!("replicaRequirements.resourceRequest.{name}"),
                            e.to_string(),
                        )
                    })
            })
            .collect::<Result<Resources, _>>()?;
        let claim = requirements.node_claim.as_ref();
        Ok(Self {
            requests,
            node_selector: claim.map(|c| c.node_selector.clone()).unwrap_or_default(),
            affinity: claim.and_then(|c| c.hard_node_affinity.clone()),
            tolerations: claim.map(|c| c.tolerations.clone()).unwrap_or_default(),
            namespace: requirements.namespace.clone(),
            priority_class_name: requirements.priority_class_name.clone(),
        })
    }
}

const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// Whether a replica with `claim` may run on `node` (resources apart).
pub fn node_matches(node: &NodeInfo, claim: &ReplicaClaim) -> bool {
    let tolerated = |taint: &Taint| claim.tolerations.iter().any(|t| tolerates(t, taint));
    if node.unschedulable {
        let cordon = Taint {
            key: UNSCHEDULABLE_TAINT_KEY.to_string(),
            effect: "NoSchedule".to_string(),
            ..Taint::default()
        };
        if !tolerated(&cordon) {
            return false;
        }
    }
    let repelled = node
        .taints
        .iter()
        .filter(|taint| taint.effect == "NoSchedule" || taint.effect == "NoExecute")
        .any(|taint| !tolerated(taint));
    if repelled {
        return false;
    }
    let selected = claim
        .node_selector
        .iter()
        .all(|(key, value)| node.labels.get(key) == Some(value));
    selected
        && claim
            .affinity
            .as_ref()
            .is_none_or(|affinity| affinity_matches(affinity, node))
}

fn affinity_matches(affinity: &NodeSelector, node: &NodeInfo) -> bool {
    affinity.node_selector_terms.iter().any(|term| {
        let expressions = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        if expressions.is_empty() && fields.is_empty() {
            return false;
        }
        expressions
            .iter()
            .all(|e| requirement_matches(e, node.labels.get(&e.key).map(String::as_str)))
            && fields.iter().all(|f| {
                f.key == "metadata.name" && requirement_matches(f, Some(node.name.as_str()))
            })
    })
}

fn requirement_matches(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = requirement.values.as_deref().unwrap_or_default();
    let number = |text: &str| text.parse::<i64>().ok();
    match requirement.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|w| w == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|w| w == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(found), [bound]) = (value.and_then(number), values) else {
                return false;
            };
            let Some(bound) = number(bound) else {
                return false;
            };
            if requirement.operator == "Gt" {
                found > bound
            } else {
                found < bound
            }
        }
        _ => false,
    }
}
