//! The Select phase: which of the scored candidates the replicas go to, under spread constraints
//! (docs/karmada.md, "Select and spread constraints"). Karmada implements `cluster` and `region`; the same group
//! algorithm is applied here to `zone`, `provider` and `spreadByLabel`, which Karmada leaves as filters only.
//!
//! Invariants: input candidates come in candidate order (overflow order asc, score desc, available desc, name asc)
//! and the selection keeps that order; the result never holds a cluster twice; an impossible constraint yields a
//! [`SelectError`] that says which constraint and by how much, never an empty success.
//! When several group constraints are given only one drives the selection, in the order region, zone, provider,
//! label; the others still filter (the SpreadConstraint plugin requires the property).
//! A cluster listing several zones is grouped by the first one (`spec.zones[0]`, or the deprecated `spec.zone`).

mod groups;

use serde::{Deserialize, Serialize};

pub use groups::{GroupScoreInput, group_score};

/// A scored candidate as the Select phase sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectCandidate<'a> {
    pub name: std::sync::Arc<str>,
    pub score: i64,
    pub available: i64,
    /// The value of the group field that drives selection (region, zone, provider or the label), if any.
    pub group: Option<&'a str>,
}

/// A `[minGroups, maxGroups]` bound of one spread constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupBounds {
    pub min_groups: i64,
    pub max_groups: i64,
}

/// The constraints the Select phase honours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpreadRules {
    /// The `spreadByField: cluster` constraint.
    pub cluster: Option<GroupBounds>,
    /// The group constraint that drives selection: its name (e.g. "region", "label app.kubernetes.io/tier")
    /// and bounds.
    pub group: Option<(String, GroupBounds)>,
}

/// What the Select phase must satisfy besides the constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectDemand {
    /// Replicas the selection must be able to hold; `None` ignores resources (Duplicated or no replicaScheduling).
    pub need_replicas: Option<i64>,
    /// The binding's desired replicas (group scores use them).
    pub replicas: i64,
    /// Duplicated (or no placement): group scores count clusters able to hold every replica.
    pub duplicated: bool,
}

/// How a group fared in the Select phase, for the explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupTrace {
    pub name: String,
    pub clusters: Vec<std::sync::Arc<str>>,
    pub score: i64,
    pub chosen: bool,
}

/// The Select phase's reasoning.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectTrace {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_field: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub groups: Vec<GroupTrace>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
}

/// Why no selection satisfies the spread constraints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error(
        "the number of feasible clusters {available} is less than spreadConstraint (cluster) minGroups {min_groups}"
    )]
    TooFewClusters { available: usize, min_groups: i64 },
    #[error(
        "the number of feasible {field} groups {available} is less than spreadConstraint ({field}) minGroups {min_groups}"
    )]
    TooFewGroups {
        field: String,
        available: usize,
        min_groups: i64,
    },
    #[error(
        "spreadConstraint ({field}) has maxGroups 0, so nothing can be selected; set maxGroups to at least minGroups"
    )]
    ZeroMaxGroups { field: String },
    #[error(
        "no enough resource when selecting {count} clusters: they hold {available} replicas, {needed} are needed"
    )]
    NotEnoughResource {
        count: usize,
        available: i64,
        needed: i64,
    },
    #[error(
        "no combination of {field} groups within minGroups {min_groups} and maxGroups {max_groups} holds the {cluster_min} clusters spreadConstraint (cluster) requires"
    )]
    NoGroupCombination {
        field: String,
        min_groups: i64,
        max_groups: i64,
        cluster_min: i64,
    },
}

/// Selects clusters from `candidates` (candidate order); returns indices into `candidates`. The order is
/// candidate order except where the cluster algorithm swapped a cluster into a slot, as Karmada does.
pub fn select(
    candidates: &[SelectCandidate<'_>],
    rules: &SpreadRules,
    demand: SelectDemand,
) -> Result<(Vec<usize>, SelectTrace), SelectError> {
    let mut trace = SelectTrace::default();
    if let Some((field, bounds)) = &rules.group {
        return groups::select_by_group(candidates, field, *bounds, rules.cluster, demand, trace);
    }
    let Some(bounds) = rules.cluster else {
        trace
            .notes
            .push("no spread constraints: every feasible cluster is selected".into());
        return Ok(((0..candidates.len()).collect(), trace));
    };
    let selected = select_by_cluster(candidates, bounds, demand.need_replicas, &mut trace)?;
    Ok((selected, trace))
}

/// Karmada's cluster algorithm: the first `min(n, maxGroups)` candidates, swapping in larger ones from the rest
/// (walking the selection backwards) until they can hold the needed replicas.
fn select_by_cluster(
    candidates: &[SelectCandidate<'_>],
    bounds: GroupBounds,
    need: Option<i64>,
    trace: &mut SelectTrace,
) -> Result<Vec<usize>, SelectError> {
    if bounds.max_groups <= 0 {
        return Err(SelectError::ZeroMaxGroups {
            field: "cluster".into(),
        });
    }
    if (candidates.len() as i64) < bounds.min_groups {
        return Err(SelectError::TooFewClusters {
            available: candidates.len(),
            min_groups: bounds.min_groups,
        });
    }
    let count = candidates
        .len()
        .min(usize::try_from(bounds.max_groups).unwrap_or(usize::MAX));
    let mut selected: Vec<usize> = (0..count).collect();
    let Some(need) = need else {
        trace.notes.push(format!(
            "cluster constraint: the first {count} candidates (resources ignored)"
        ));
        return Ok(selected);
    };
    let mut rest: Vec<usize> = (count..candidates.len()).collect();
    let held = |selected: &[usize]| {
        selected
            .iter()
            .map(|i| candidates[*i].available)
            .sum::<i64>()
    };
    let mut slot = count;
    while held(&selected) < need && slot > 0 && !rest.is_empty() {
        slot -= 1;
        let slot_available = candidates[selected[slot]].available;
        // The first candidate (in candidate order) with the largest available replicas among the rest.
        let best = rest.iter().enumerate().max_by(|(ia, a), (ib, b)| {
            candidates[**a]
                .available
                .cmp(&candidates[**b].available)
                .then_with(|| ib.cmp(ia))
        });
        if let Some((position, index)) = best.map(|(p, i)| (p, *i))
            && candidates[index].available > slot_available
        {
            trace.notes.push(format!(
                "swapped {} (available {}) for {} (available {}) to reach {need} replicas",
                candidates[selected[slot]].name,
                slot_available,
                candidates[index].name,
                candidates[index].available
            ));
            selected[slot] = index;
            rest.remove(position);
        }
    }
    let available = held(&selected);
    if available < need {
        return Err(SelectError::NotEnoughResource {
            count,
            available,
            needed: need,
        });
    }
    trace.notes.push(format!(
        "cluster constraint: {count} of {} candidates, holding {available} ≥ {need} replicas",
        candidates.len()
    ));
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &str, score: i64, available: i64) -> SelectCandidate<'static> {
        SelectCandidate {
            name: name.into(),
            score,
            available,
            group: None,
        }
    }

    #[test]
    fn swaps_in_the_largest_remaining_cluster_from_the_back() {
        let candidates = vec![
            candidate("a", 100, 2),
            candidate("b", 100, 1),
            candidate("c", 0, 9),
            candidate("d", 0, 3),
        ];
        let rules = SpreadRules {
            cluster: Some(GroupBounds {
                min_groups: 1,
                max_groups: 2,
            }),
            group: None,
        };
        let demand = SelectDemand {
            need_replicas: Some(10),
            replicas: 10,
            duplicated: false,
        };
        let (selected, _) = select(&candidates, &rules, demand).expect("feasible");
        assert_eq!(selected, vec![0, 2]);
    }
}
