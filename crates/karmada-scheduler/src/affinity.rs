//! ClusterAffinity matching, compiled once per scheduling attempt: names, exclude, labelSelector and the
//! fieldSelector on `provider`, `region` and `zone` (docs/karmada.md, "Cluster affinity").
//!
//! Invariants: a [`CompiledAffinity`] only exists for a valid affinity (selectors parsed, field keys and operators
//! checked), so matching cannot fail; a non-match says which rule rejected the cluster. Order of checks follows
//! Karmada: exclude, labelSelector, fieldSelector, clusterNames.

use std::collections::BTreeMap;

use apimachinery::LabelSelector;
use karmada_api::{Cluster, ClusterAffinity};

use crate::error::InputError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldKey {
    Provider,
    Region,
    Zone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone)]
struct FieldRequirement {
    key: FieldKey,
    operator: FieldOperator,
    values: Vec<String>,
    text: String,
}

/// A validated ClusterAffinity, ready to match clusters.
#[derive(Debug, Clone, Default)]
pub struct CompiledAffinity {
    cluster_names: Vec<String>,
    exclude: Vec<String>,
    labels: Option<LabelSelector>,
    fields: Vec<FieldRequirement>,
}

impl CompiledAffinity {
    /// Validates and compiles `affinity`; `path` names it in errors (e.g. `placement.clusterAffinity`).
    pub fn compile(affinity: &ClusterAffinity, path: &str) -> Result<Self, InputError> {
        let labels = match &affinity.label_selector {
            None => None,
            Some(selector) => {
                let value = serde_json::to_value(selector)
                    .map_err(|e| InputError::new(format!("{path}.labelSelector"), e.to_string()))?;
                let parsed = LabelSelector::from_label_selector(&value).map_err(|e| {
                    InputError::new(
                        format!("{path}.labelSelector"),
                        format!("malformed label selector: {e}"),
                    )
                })?;
                Some(parsed)
            }
        };
        let mut fields = Vec::new();
        if let Some(selector) = &affinity.field_selector {
            for (index, requirement) in selector.match_expressions.iter().enumerate() {
                let at = format!("{path}.fieldSelector.matchExpressions[{index}]");
                let key = match requirement.key.as_str() {
                    "provider" => FieldKey::Provider,
                    "region" => FieldKey::Region,
                    "zone" => FieldKey::Zone,
                    other => {
                        return Err(InputError::new(
                            format!("{at}.key"),
                            format!(
                                "unsupported key {other:?}: supported keys are provider, region and zone"
                            ),
                        ));
                    }
                };
                let values = requirement.values.clone().unwrap_or_default();
                let operator = match requirement.operator.as_str() {
                    "In" => FieldOperator::In,
                    "NotIn" => FieldOperator::NotIn,
                    "Exists" => FieldOperator::Exists,
                    "DoesNotExist" => FieldOperator::DoesNotExist,
                    other => {
                        return Err(InputError::new(
                            format!("{at}.operator"),
                            format!(
                                "unsupported operator {other:?}: supported operators are In, NotIn, Exists and DoesNotExist"
                            ),
                        ));
                    }
                };
                let needs_values = matches!(operator, FieldOperator::In | FieldOperator::NotIn);
                if needs_values && values.is_empty() {
                    return Err(InputError::new(
                        format!("{at}.values"),
                        format!("must be non-empty for operator {}", requirement.operator),
                    ));
                }
                if !needs_values && !values.is_empty() {
                    return Err(InputError::new(
                        format!("{at}.values"),
                        format!("must be empty for operator {}", requirement.operator),
                    ));
                }
                let text = format!(
                    "{} {} [{}]",
                    requirement.key,
                    requirement.operator,
                    values.join(",")
                );
                fields.push(FieldRequirement {
                    key,
                    operator,
                    values,
                    text,
                });
            }
        }
        Ok(Self {
            cluster_names: affinity.cluster_names.clone(),
            exclude: affinity.exclude.clone(),
            labels,
            fields,
        })
    }

    /// `Ok(())` when `cluster` matches, otherwise the rule that rejected it.
    pub fn matches(&self, cluster: &Cluster) -> Result<(), String> {
        let name = cluster.metadata.name.as_deref().unwrap_or_default();
        if self.exclude.iter().any(|excluded| excluded == name) {
            return Err("listed in exclude".into());
        }
        if let Some(selector) = &self.labels {
            let empty = BTreeMap::new();
            let labels = cluster.metadata.labels.as_ref().unwrap_or(&empty);
            if !selector.matches(labels) {
                return Err(format!("labels do not match labelSelector {selector}"));
            }
        }
        for requirement in &self.fields {
            if !field_matches(requirement, cluster) {
                return Err(format!("fieldSelector {} does not hold", requirement.text));
            }
        }
        if !self.cluster_names.is_empty() && !self.cluster_names.iter().any(|listed| listed == name)
        {
            return Err("not listed in clusterNames".into());
        }
        Ok(())
    }
}

/// The zones of a cluster: `spec.zones`, or the deprecated `spec.zone` when `zones` is empty.
pub fn cluster_zones(cluster: &Cluster) -> Vec<&str> {
    if cluster.spec.zones.is_empty() {
        if cluster.spec.zone.is_empty() {
            Vec::new()
        } else {
            vec![cluster.spec.zone.as_str()]
        }
    } else {
        cluster.spec.zones.iter().map(String::as_str).collect()
    }
}

fn field_matches(requirement: &FieldRequirement, cluster: &Cluster) -> bool {
    let present: Vec<&str> = match requirement.key {
        FieldKey::Provider => Some(cluster.spec.provider.as_str())
            .filter(|p| !p.is_empty())
            .into_iter()
            .collect(),
        FieldKey::Region => Some(cluster.spec.region.as_str())
            .filter(|r| !r.is_empty())
            .into_iter()
            .collect(),
        FieldKey::Zone => cluster_zones(cluster),
    };
    let any_listed = present
        .iter()
        .any(|value| requirement.values.iter().any(|listed| listed == value));
    match requirement.operator {
        FieldOperator::In => any_listed,
        FieldOperator::NotIn => !any_listed,
        FieldOperator::Exists => !present.is_empty(),
        FieldOperator::DoesNotExist => present.is_empty(),
    }
}
