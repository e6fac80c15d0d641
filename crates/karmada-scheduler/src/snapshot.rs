//! The scheduler's view of a member cluster: the shared `Cluster` object plus the numbers the estimator needs,
//! parsed once.
//!
//! Invariant: a [`ClusterSnapshot`] has a name and quantities that parsed; bad quantities are an [`InputError`]
//! naming the cluster and field, not a silent zero.

use karmada_api::Cluster;

use crate::error::InputError;
use crate::estimator::{ModelRange, ResourceModel, ResourceSummary, Resources};
use crate::quantity::parse_milli;

/// A cluster ready for scheduling.
#[derive(Debug, Clone)]
pub struct ClusterSnapshot {
    pub name: std::sync::Arc<str>,
    pub cluster: Cluster,
    /// `status.resourceSummary` in milli-units, when reported.
    pub summary: Option<ResourceSummary>,
    /// `spec.resourceModels` in milli-units (empty: Karmada's defaults apply).
    pub models: Vec<ResourceModel>,
}

fn resources(list: &karmada_api::ResourceList, path: &str) -> Result<Resources, InputError> {
    list.iter()
        .map(|(name, quantity)| {
            parse_milli(&quantity.0)
                .map(|milli| (name.clone(), milli))
                .map_err(|e| InputError::new(format!("{path}.{name}"), e.to_string()))
        })
        .collect()
}

impl ClusterSnapshot {
    /// Builds the snapshot; fails when the cluster has no name or a quantity does not parse.
    pub fn new(cluster: Cluster) -> Result<Self, InputError> {
        let name = cluster
            .metadata
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| InputError::new("Cluster metadata.name", "is required"))?;
        let at = |field: &str| format!("Cluster {name}: {field}");
        let summary = match cluster
            .status
            .as_ref()
            .and_then(|s| s.resource_summary.as_ref())
        {
            None => None,
            Some(summary) => Some(ResourceSummary::new(
                resources(
                    &summary.allocatable,
                    &at("status.resourceSummary.allocatable"),
                )?,
                resources(
                    &summary.allocating,
                    &at("status.resourceSummary.allocating"),
                )?,
                resources(&summary.allocated, &at("status.resourceSummary.allocated"))?,
                summary
                    .allocatable_modelings
                    .iter()
                    .map(|m| (m.grade, i64::from(m.count)))
                    .collect(),
            )),
        };
        let mut models = Vec::new();
        for (index, model) in cluster.spec.resource_models.iter().enumerate() {
            let mut ranges = Vec::new();
            for (range_index, range) in model.ranges.iter().enumerate() {
                let path = at(&format!(
                    "spec.resourceModels[{index}].ranges[{range_index}]"
                ));
                let min = parse_milli(&range.min.0)
                    .map_err(|e| InputError::new(format!("{path}.min"), e.to_string()))?;
                let max = parse_milli(&range.max.0)
                    .map_err(|e| InputError::new(format!("{path}.max"), e.to_string()))?;
                ranges.push(ModelRange {
                    name: range.name.clone(),
                    min,
                    max,
                });
            }
            models.push(ResourceModel {
                grade: model.grade,
                ranges,
            });
        }
        Ok(Self {
            name: name.into(),
            cluster,
            summary,
            models,
        })
    }

    /// Whether the cluster is being deleted (the scheduler skips those).
    pub fn deleting(&self) -> bool {
        self.cluster.metadata.deletion_timestamp.is_some()
    }

    /// The cluster's label value for `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.cluster
            .metadata
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    /// The cluster's annotation value for `key`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.cluster
            .metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }
}
