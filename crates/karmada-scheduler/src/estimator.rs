//! Karmada's general estimator: how many more replicas a cluster can hold, from `status.resourceSummary` and
//! the cluster's resource models (docs/karmada.md, "Scheduler estimators"). Plain inputs in milli-units; no I/O.
//!
//! Invariants: the answer is never negative and never exceeds the pods the cluster still allows; a resource the
//! cluster does not report counts as 0 available; when the resource-model simulation cannot answer (a requested
//! resource the models do not cover, a grade without a model) the summary answer is used and the reason noted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Resource amounts in milli-units by resource name ("cpu", "memory", "pods", ...).
pub type Resources = BTreeMap<String, i128>;

/// The resource-model range of one resource in one grade: `[min, max)` in milli-units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRange {
    pub name: String,
    pub min: i128,
    pub max: i128,
}

/// One resource-model grade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceModel {
    pub grade: u32,
    pub ranges: Vec<ModelRange>,
}

/// A cluster's `status.resourceSummary`, in milli-units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceSummary {
    pub allocatable: Resources,
    pub allocating: Resources,
    pub allocated: Resources,
    /// (grade, node count)
    pub allocatable_modelings: Vec<(u32, i64)>,
    /// allocatable − allocated − allocating (≥ 0) per resource, computed once: every decision asks it of every
    /// candidate cluster.
    free: Resources,
}

impl ResourceSummary {
    pub fn new(
        allocatable: Resources,
        allocating: Resources,
        allocated: Resources,
        allocatable_modelings: Vec<(u32, i64)>,
    ) -> Self {
        let get = |list: &Resources, resource: &str| list.get(resource).copied().unwrap_or(0);
        let free = allocatable
            .keys()
            .map(|resource| {
                let free = get(&allocatable, resource)
                    - get(&allocated, resource)
                    - get(&allocating, resource);
                (resource.clone(), free.max(0))
            })
            .collect();
        Self {
            allocatable,
            allocating,
            allocated,
            allocatable_modelings,
            free,
        }
    }
}

/// Which path of the general estimator produced the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EstimateMethod {
    /// The cluster reports no resourceSummary: nothing can be estimated, so 0.
    NoResourceSummary,
    /// No replica requirements: the free pod count.
    Pods,
    /// Virtual nodes built from the resource models.
    ResourceModels,
    /// allocatable − allocated − allocating per requested resource.
    Summary,
}

/// The general estimator's answer and how it got there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub replicas: i64,
    pub method: EstimateMethod,
    pub allowed_pods: i64,
    /// The resource that bounds the answer in summary mode, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Pods a virtual node built from a resource model can run (Kubernetes' default kubelet maximum).
pub const VIRTUAL_NODE_PODS: i128 = 110;

const GIB_MILLI: i128 = 1024 * 1024 * 1024 * 1000;
const CORE_MILLI: i128 = 1000;

/// Karmada's default resource models (grades 0..8), used when a cluster lists none.
pub fn default_resource_models() -> Vec<ResourceModel> {
    let cpu = [0i128, 1, 2, 4, 8, 16, 32, 64, 128];
    let memory = [0i128, 4, 16, 32, 64, 128, 256, 512, 1024];
    (0..cpu.len())
        .map(|grade| {
            let upper =
                |bounds: &[i128], unit: i128| bounds.get(grade + 1).map_or(i128::MAX, |b| b * unit);
            ResourceModel {
                grade: grade as u32,
                ranges: vec![
                    ModelRange {
                        name: "cpu".into(),
                        min: cpu[grade] * CORE_MILLI,
                        max: upper(&cpu, CORE_MILLI),
                    },
                    ModelRange {
                        name: "memory".into(),
                        min: memory[grade] * GIB_MILLI,
                        max: upper(&memory, GIB_MILLI),
                    },
                ],
            }
        })
        .collect()
}

/// Free quantity of `resource`; a resource without allocatable has none.
fn free(summary: &ResourceSummary, resource: &str) -> i128 {
    summary.free.get(resource).copied().unwrap_or(0)
}

/// Replica counts are int32 in Karmada's API; estimates are clamped to `0..=i32::MAX` so sums over many
/// clusters cannot overflow.
fn clamp_i64(value: i128) -> i64 {
    i64::try_from(value.clamp(0, i128::from(i32::MAX))).unwrap_or(0)
}

/// Estimates how many replicas needing `requests` (milli-units per replica; `None` = no requirements) fit.
pub fn estimate(
    summary: Option<&ResourceSummary>,
    models: &[ResourceModel],
    requests: Option<&Resources>,
) -> Estimate {
    let Some(summary) = summary else {
        return Estimate {
            replicas: 0,
            method: EstimateMethod::NoResourceSummary,
            allowed_pods: 0,
            limited_by: None,
            note: Some("the cluster reports no status.resourceSummary, so the general estimator counts 0 replicas".into()),
        };
    };
    let allowed_pods = free(summary, "pods") / 1000;
    let Some(requests) = requests.filter(|r| r.values().any(|v| *v > 0)) else {
        return Estimate {
            replicas: clamp_i64(allowed_pods),
            method: EstimateMethod::Pods,
            allowed_pods: clamp_i64(allowed_pods),
            limited_by: None,
            note: None,
        };
    };
    let mut note = None;
    if !summary.allocatable_modelings.is_empty() {
        let defaults;
        let models = if models.is_empty() {
            defaults = default_resource_models();
            &defaults
        } else {
            models
        };
        match simulate_models(summary, models, requests) {
            Ok(placed) => {
                return Estimate {
                    replicas: clamp_i64(placed.min(allowed_pods)),
                    method: EstimateMethod::ResourceModels,
                    allowed_pods: clamp_i64(allowed_pods),
                    limited_by: None,
                    note: None,
                };
            }
            Err(reason) => {
                note = Some(format!(
                    "resource-model simulation skipped ({reason}); used the summary"
                ))
            }
        }
    }
    let mut replicas = allowed_pods;
    // The name is copied once, at the end: this runs per cluster per decision.
    let mut limited_by = "pods";
    for (resource, request) in requests.iter().filter(|(_, request)| **request > 0) {
        let fit = free(summary, resource) / request;
        if fit < replicas {
            replicas = fit;
            limited_by = resource;
        }
    }
    let limited_by = Some(limited_by.to_string());
    Estimate {
        replicas: clamp_i64(replicas),
        method: EstimateMethod::Summary,
        allowed_pods: clamp_i64(allowed_pods),
        limited_by,
        note,
    }
}

/// The lowest free share (0..=100 %) of cpu and memory, from the summary; `None` when neither is reported.
pub fn free_percent(summary: &ResourceSummary) -> Option<i64> {
    ["cpu", "memory"]
        .iter()
        .filter_map(|resource| {
            let allocatable = summary
                .allocatable
                .get(*resource)
                .copied()
                .filter(|a| *a > 0)?;
            Some(clamp_i64(free(summary, resource) * 100 / allocatable))
        })
        .min()
}

/// Replicas placed on virtual nodes: per grade, `count` nodes sized at the grade's minimums, 110 pods each.
fn simulate_models(
    summary: &ResourceSummary,
    models: &[ResourceModel],
    requests: &Resources,
) -> Result<i128, String> {
    let mut placed: i128 = 0;
    for (grade, count) in &summary.allocatable_modelings {
        if *count <= 0 {
            continue;
        }
        let model = models
            .iter()
            .find(|m| m.grade == *grade)
            .ok_or_else(|| format!("no resource model for grade {grade}"))?;
        let mut per_node = VIRTUAL_NODE_PODS;
        for (resource, request) in requests.iter().filter(|(_, request)| **request > 0) {
            let range = model
                .ranges
                .iter()
                .find(|range| &range.name == resource)
                .ok_or_else(|| format!("the resource models do not cover {resource}"))?;
            per_node = per_node.min(range.min.max(0) / request);
        }
        placed = placed.saturating_add(per_node.saturating_mul(i128::from(*count)));
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(list: &[(&str, i128)]) -> Resources {
        list.iter()
            .map(|(name, milli)| ((*name).to_string(), *milli))
            .collect()
    }

    #[test]
    fn default_models_cover_grade_zero_to_eight() {
        let models = default_resource_models();
        assert_eq!(models.len(), 9);
        assert_eq!(models[3].ranges[0].min, 4000);
        assert_eq!(models[8].ranges[1].max, i128::MAX);
    }

    #[test]
    fn models_fall_back_to_summary_for_uncovered_resources() {
        let summary = ResourceSummary::new(
            resources(&[("pods", 100_000), ("nvidia.com/gpu", 4000)]),
            Resources::default(),
            Resources::default(),
            vec![(1, 3)],
        );
        let estimate = estimate(
            Some(&summary),
            &[],
            Some(&resources(&[("nvidia.com/gpu", 1000)])),
        );
        assert_eq!(estimate.method, EstimateMethod::Summary);
        assert_eq!(estimate.replicas, 4);
        assert!(
            estimate
                .note
                .is_some_and(|note| note.contains("nvidia.com/gpu"))
        );
    }
}
