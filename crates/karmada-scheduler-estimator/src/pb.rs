//! The generated protobuf code and the conversions at the wire's edge: a binding's replica requirements into a
//! request (scheduler side) and a request into a [`ReplicaClaim`] (estimator side). Kubernetes values travel as
//! Kubernetes encodes them: a Quantity as its string in field 1, a NodeSelector and each Toleration as their
//! `k8s.io.api.core.v1` messages.

#[allow(clippy::all, clippy::pedantic, missing_docs)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/protos.rs"));
}

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as api;
use karmada_api::ReplicaRequirements as BindingRequirements;
use karmada_scheduler::accurate::ReplicaClaim;
use karmada_scheduler::quantity::parse_milli;
use prost::Message;

pub use generated::github::com::karmada_io::karmada::pkg::estimator::pb as messages;
pub use generated::github::com::karmada_io::karmada::pkg::estimator::service;
/// The Kubernetes messages the `bytes` fields carry.
pub use generated::k8s::io::api::core::v1 as core;
pub use generated::k8s::io::apimachinery::pkg::api::resource::Quantity;

use messages::{NodeClaim, ReplicaRequirements};

/// A request field the estimator cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct DecodeError {
    pub field: String,
    pub message: String,
}

fn error(field: impl Into<String>, message: impl std::fmt::Display) -> DecodeError {
    DecodeError {
        field: field.into(),
        message: message.to_string(),
    }
}

fn node_selector_to_pb(selector: &api::NodeSelector) -> core::NodeSelector {
    let requirements = |list: &Option<Vec<api::NodeSelectorRequirement>>| {
        list.iter()
            .flatten()
            .map(|r| core::NodeSelectorRequirement {
                key: Some(r.key.clone()),
                operator: Some(r.operator.clone()),
                values: r.values.clone().unwrap_or_default(),
            })
            .collect()
    };
    core::NodeSelector {
        node_selector_terms: selector
            .node_selector_terms
            .iter()
            .map(|term| core::NodeSelectorTerm {
                match_expressions: requirements(&term.match_expressions),
                match_fields: requirements(&term.match_fields),
            })
            .collect(),
    }
}

fn node_selector_from_pb(selector: core::NodeSelector) -> api::NodeSelector {
    let requirements = |list: Vec<core::NodeSelectorRequirement>| {
        (!list.is_empty()).then(|| {
            list.into_iter()
                .map(|r| api::NodeSelectorRequirement {
                    key: r.key.unwrap_or_default(),
                    operator: r.operator.unwrap_or_default(),
                    values: (!r.values.is_empty()).then_some(r.values),
                })
                .collect()
        })
    };
    api::NodeSelector {
        node_selector_terms: selector
            .node_selector_terms
            .into_iter()
            .map(|term| api::NodeSelectorTerm {
                match_expressions: requirements(term.match_expressions),
                match_fields: requirements(term.match_fields),
            })
            .collect(),
    }
}

fn toleration_to_pb(toleration: &api::Toleration) -> core::Toleration {
    core::Toleration {
        key: toleration.key.clone(),
        operator: toleration.operator.clone(),
        value: toleration.value.clone(),
        effect: toleration.effect.clone(),
        toleration_seconds: toleration.toleration_seconds,
    }
}

fn toleration_from_pb(toleration: core::Toleration) -> api::Toleration {
    let text = |s: Option<String>| s.filter(|s| !s.is_empty());
    api::Toleration {
        key: text(toleration.key),
        operator: text(toleration.operator),
        value: text(toleration.value),
        effect: text(toleration.effect),
        toleration_seconds: toleration.toleration_seconds,
    }
}

/// A binding's `spec.replicaRequirements` as the request's `replicaRequirements`.
pub fn requirements_to_pb(requirements: &BindingRequirements) -> ReplicaRequirements {
    let resource_request_bytes = requirements
        .resource_request
        .iter()
        .map(|(name, quantity)| {
            let encoded = Quantity {
                string: Some(quantity.0.clone()),
            }
            .encode_to_vec();
            (name.clone(), encoded)
        })
        .collect();
    let node_claim = requirements.node_claim.as_ref().map(|claim| NodeClaim {
        node_selector: claim
            .node_selector
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        node_affinity_bytes: claim
            .hard_node_affinity
            .as_ref()
            .map(|affinity| node_selector_to_pb(affinity).encode_to_vec())
            .unwrap_or_default(),
        tolerations_bytes: claim
            .tolerations
            .iter()
            .map(|t| toleration_to_pb(t).encode_to_vec())
            .collect(),
    });
    ReplicaRequirements {
        node_claim,
        namespace: requirements.namespace.clone(),
        priority_class_name: requirements.priority_class_name.clone(),
        resource_request_bytes,
    }
}

/// A request's `replicaRequirements` (absent: a replica that asks for nothing) as the estimator's claim.
pub fn claim_from_pb(
    requirements: Option<&ReplicaRequirements>,
) -> Result<ReplicaClaim, DecodeError> {
    let Some(requirements) = requirements else {
        return Ok(ReplicaClaim::default());
    };
    let mut requests = BTreeMap::new();
    for (name, bytes) in &requirements.resource_request_bytes {
        let field = format!("replicaRequirements.resourceRequestBytes[{name}]");
        let quantity = Quantity::decode(bytes.as_slice()).map_err(|e| error(&field, e))?;
        let text = quantity.string.unwrap_or_default();
        let milli = parse_milli(&text).map_err(|e| error(&field, e))?;
        requests.insert(name.clone(), milli);
    }
    let mut claim = ReplicaClaim {
        requests,
        namespace: requirements.namespace.clone(),
        priority_class_name: requirements.priority_class_name.clone(),
        ..ReplicaClaim::default()
    };
    if let Some(node_claim) = &requirements.node_claim {
        claim.node_selector = node_claim
            .node_selector
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !node_claim.node_affinity_bytes.is_empty() {
            let selector = core::NodeSelector::decode(node_claim.node_affinity_bytes.as_slice())
                .map_err(|e| error("replicaRequirements.nodeClaim.nodeAffinityBytes", e))?;
            claim.affinity = Some(node_selector_from_pb(selector));
        }
        for (index, bytes) in node_claim.tolerations_bytes.iter().enumerate() {
            let toleration = core::Toleration::decode(bytes.as_slice()).map_err(|e| {
                error(
                    format!("replicaRequirements.nodeClaim.tolerationsBytes[{index}]"),
                    e,
                )
            })?;
            claim.tolerations.push(toleration_from_pb(toleration));
        }
    }
    Ok(claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_survive_the_wire() {
        let requirements: BindingRequirements = serde_json::from_value(serde_json::json!({
            "resourceRequest": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
            "namespace": "shop",
            "priorityClassName": "high",
            "nodeClaim": {
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
                                {"operator": "Exists"}],
                "hardNodeAffinity": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}
                ]}
            }
        }))
        .expect("requirements");
        let wire = requirements_to_pb(&requirements).encode_to_vec();
        let decoded = ReplicaRequirements::decode(wire.as_slice()).expect("decode");
        let claim = claim_from_pb(Some(&decoded)).expect("claim");
        let expected = ReplicaClaim::from_requirements(&requirements).expect("claim");
        assert_eq!(claim, expected);
        assert_eq!(claim.requests.get("cpu"), Some(&500));
    }

    #[test]
    fn a_quantity_is_encoded_as_kubernetes_does() {
        // Field 1, length-delimited: tag 0x0a, length, the canonical string.
        let bytes = Quantity {
            string: Some("500m".into()),
        }
        .encode_to_vec();
        assert_eq!(bytes, b"\x0a\x04500m");
    }

    #[test]
    fn undecodable_bytes_name_the_field() {
        let requirements = ReplicaRequirements {
            resource_request_bytes: [("cpu".to_string(), vec![0xff, 0xff])].into(),
            ..Default::default()
        };
        let err = claim_from_pb(Some(&requirements)).expect_err("garbage");
        assert_eq!(err.field, "replicaRequirements.resourceRequestBytes[cpu]");
    }
}
