//! Replica division over plain inputs: Duplicated, static weights, dynamic weights and Aggregated, exactly as
//! Karmada v1.16+ assigns replicas (docs/karmada.md, "Replica division").
//!
//! Invariants: results list every cluster at most once, sorted by name, zero-replica entries dropped; a divided
//! result sums to the requested replicas or the call fails with a reason; dynamic modes never give a cluster more
//! than its available replicas (allocatable + what it already holds). Candidate order (score desc, available desc,
//! name asc) is the caller's; equal weights keep that order because every sort here is stable. Karmada sorts with
//! Go's `sort.Sort`, which is unstable beyond 12 elements: this is the one documented divergence, and it only
//! matters for the Aggregated prefix when weights tie.

pub mod webster;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use webster::{Party, TieBreak, fnv1a_32, webster};

/// One candidate cluster as the dynamic strategies see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaCandidate {
    pub name: String,
    /// What the estimators say the cluster can still take (not counting what it already holds).
    pub allocatable_replicas: i64,
}

/// The replicas a cluster holds or receives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterReplicas {
    pub name: String,
    pub replicas: i64,
}

/// Which of Karmada's dynamic modes ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub enum DynamicMode {
    /// A reschedule was requested (`rescheduleTriggeredAt` after `lastScheduledTime`): divide everything anew.
    Fresh,
    /// More replicas are assigned than desired: shrink the previous assignment proportionally.
    ScaleDown,
    /// Fewer are assigned than desired (includes the first schedule): divide only the difference.
    ScaleUp,
    /// The previous assignment already sums to the desired replicas: keep it.
    Steady,
}

/// The arithmetic behind one division, for the explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DivisionTrace {
    pub strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<DynamicMode>,
    /// Replicas handed out by this division (the difference when scaling up).
    pub target: i64,
    /// Weights in the order they were considered.
    pub weights: Vec<ClusterReplicas>,
    /// Replicas already held and kept (scale up) before the division's seats are added.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub kept: Vec<ClusterReplicas>,
    /// Seats the dispenser handed out, by cluster.
    pub seats: Vec<ClusterReplicas>,
    pub tie_break: TieBreak,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
}

/// Why a division could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DivisionError {
    /// Karmada's Unschedulable message when the weights (available replicas) cannot hold the target.
    #[error("Clusters available replicas {available} are not enough to schedule.")]
    NotEnoughReplicas { available: i64, needed: i64 },
    #[error("no clusters available to schedule")]
    NoClusters,
}

fn to_sorted_assignments(map: BTreeMap<String, i64>) -> Vec<ClusterReplicas> {
    map.into_iter()
        .filter(|(_, replicas)| *replicas > 0)
        .map(|(name, replicas)| ClusterReplicas { name, replicas })
        .collect()
}

/// Duplicated: every selected cluster runs all `replicas`.
pub fn duplicated(replicas: i64, clusters: &[String]) -> Vec<ClusterReplicas> {
    let mut names: Vec<&String> = clusters.iter().collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| ClusterReplicas {
            name: name.clone(),
            replicas,
        })
        .collect()
}

/// Static weights: Webster over the given per-cluster weights (0 = no rule matched), from scratch.
///
/// When every weight is 0 each cluster gets weight 1, as Karmada does.
pub fn static_weight(
    replicas: i64,
    weights: &[ClusterReplicas],
    tie_break: TieBreak,
) -> Result<(Vec<ClusterReplicas>, DivisionTrace), DivisionError> {
    if weights.is_empty() {
        return Err(DivisionError::NoClusters);
    }
    let mut notes = Vec::new();
    let all_zero = weights.iter().all(|weight| weight.replicas <= 0);
    let effective: Vec<ClusterReplicas> = if all_zero {
        notes.push(
            "no staticWeightList rule matched any candidate: every candidate weighs 1".to_string(),
        );
        weights
            .iter()
            .map(|weight| ClusterReplicas {
                name: weight.name.clone(),
                replicas: 1,
            })
            .collect()
    } else {
        weights
            .iter()
            .filter(|weight| weight.replicas > 0)
            .cloned()
            .collect()
    };
    let parties: Vec<Party> = effective
        .iter()
        .map(|weight| Party {
            name: weight.name.clone(),
            votes: weight.replicas,
            seats: 0,
        })
        .collect();
    let seats = to_sorted_assignments(webster(&parties, replicas, tie_break));
    let trace = DivisionTrace {
        strategy: "StaticWeight".into(),
        mode: None,
        target: replicas,
        weights: effective,
        kept: Vec::new(),
        seats: seats.clone(),
        tie_break,
        notes,
    };
    Ok((seats, trace))
}

/// Dynamic weights (by available replicas) or Aggregated, with Karmada's fresh / scale-down / scale-up semantics.
///
/// `candidates` are the selected clusters in candidate order; `previous` is the binding's current `spec.clusters`.
pub fn dynamic(
    replicas: i64,
    candidates: &[ReplicaCandidate],
    previous: &[ClusterReplicas],
    fresh: bool,
    aggregated: bool,
    tie_break: TieBreak,
) -> Result<(Vec<ClusterReplicas>, DivisionTrace), DivisionError> {
    if candidates.is_empty() {
        return Err(DivisionError::NoClusters);
    }
    let strategy = if aggregated {
        "Aggregated"
    } else {
        "DynamicWeight"
    };
    let mut held: BTreeMap<&str, i64> = BTreeMap::new();
    for entry in previous {
        if candidates
            .iter()
            .any(|candidate| candidate.name == entry.name)
        {
            *held.entry(entry.name.as_str()).or_insert(0) += entry.replicas.max(0);
        }
    }
    let assigned: i64 = held.values().sum();
    let held_of = |name: &str| held.get(name).copied().unwrap_or(0);

    let (mode, target, weights, kept) = if fresh {
        let weights = sorted_desc(
            candidates
                .iter()
                .map(|c| ClusterReplicas {
                    name: c.name.clone(),
                    replicas: c.allocatable_replicas.max(0) + held_of(&c.name),
                })
                .collect(),
        );
        (DynamicMode::Fresh, replicas, weights, Vec::new())
    } else if assigned > replicas {
        // Previous entries in their binding order, then by replicas descending (stable).
        let mut seen = Vec::new();
        for entry in previous {
            if held.contains_key(entry.name.as_str())
                && !seen.iter().any(|s: &ClusterReplicas| s.name == entry.name)
            {
                seen.push(ClusterReplicas {
                    name: entry.name.clone(),
                    replicas: held_of(&entry.name),
                });
            }
        }
        (
            DynamicMode::ScaleDown,
            replicas,
            sorted_desc(seen),
            Vec::new(),
        )
    } else if assigned < replicas {
        let weights = sorted_desc(
            candidates
                .iter()
                .map(|c| ClusterReplicas {
                    name: c.name.clone(),
                    replicas: c.allocatable_replicas.max(0),
                })
                .collect(),
        );
        let kept = held
            .iter()
            .map(|(name, replicas)| ClusterReplicas {
                name: (*name).to_string(),
                replicas: *replicas,
            })
            .collect();
        (DynamicMode::ScaleUp, replicas - assigned, weights, kept)
    } else {
        let kept: Vec<ClusterReplicas> =
            to_sorted_assignments(held.iter().map(|(n, r)| ((*n).to_string(), *r)).collect());
        let trace = DivisionTrace {
            strategy: strategy.into(),
            mode: Some(DynamicMode::Steady),
            target: 0,
            weights: Vec::new(),
            kept: kept.clone(),
            seats: Vec::new(),
            tie_break,
            notes: vec![format!(
                "the current assignment already sums to {replicas}: kept unchanged"
            )],
        };
        return Ok((kept, trace));
    };

    let mut notes = Vec::new();
    let total: i64 = weights.iter().map(|w| w.replicas).sum();
    if total < target {
        return Err(DivisionError::NotEnoughReplicas {
            available: total,
            needed: target,
        });
    }
    let mut considered = weights;
    if aggregated {
        // Clusters that already hold replicas go first so Aggregated keeps using them.
        let (mut front, back): (Vec<_>, Vec<_>) =
            considered.into_iter().partition(|w| held_of(&w.name) > 0);
        front.extend(back);
        let mut sum = 0;
        let mut prefix = Vec::new();
        for weight in front {
            if sum >= target {
                break;
            }
            sum += weight.replicas;
            prefix.push(weight);
        }
        notes.push(format!(
            "Aggregated: clusters already holding replicas first, then the shortest prefix whose available replicas reach {target}: {}",
            prefix.iter().map(|w| w.name.as_str()).collect::<Vec<_>>().join(", ")
        ));
        considered = prefix;
    }
    let parties: Vec<Party> = considered
        .iter()
        .map(|w| Party {
            name: w.name.clone(),
            votes: w.replicas,
            seats: 0,
        })
        .collect();
    let seats = webster(&parties, target, tie_break);
    let mut result: BTreeMap<String, i64> = BTreeMap::new();
    for entry in &kept {
        *result.entry(entry.name.clone()).or_insert(0) += entry.replicas;
    }
    for (name, won) in &seats {
        *result.entry(name.clone()).or_insert(0) += won;
    }
    let trace = DivisionTrace {
        strategy: strategy.into(),
        mode: Some(mode),
        target,
        weights: considered,
        kept,
        seats: to_sorted_assignments(seats),
        tie_break,
        notes,
    };
    Ok((to_sorted_assignments(result), trace))
}

fn sorted_desc(mut weights: Vec<ClusterReplicas>) -> Vec<ClusterReplicas> {
    weights.sort_by_key(|weight| std::cmp::Reverse(weight.replicas));
    weights
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(list: &[(&str, i64)]) -> Vec<ReplicaCandidate> {
        list.iter()
            .map(|(name, allocatable)| ReplicaCandidate {
                name: (*name).into(),
                allocatable_replicas: *allocatable,
            })
            .collect()
    }

    fn replicas(list: &[(&str, i64)]) -> Vec<ClusterReplicas> {
        list.iter()
            .map(|(name, replicas)| ClusterReplicas {
                name: (*name).into(),
                replicas: *replicas,
            })
            .collect()
    }

    #[test]
    fn steady_keeps_the_previous_assignment() {
        let (result, trace) = dynamic(
            5,
            &candidates(&[("a", 10), ("b", 10)]),
            &replicas(&[("a", 3), ("b", 2)]),
            false,
            false,
            TieBreak::NameAscending,
        )
        .expect("steady");
        assert_eq!(result, replicas(&[("a", 3), ("b", 2)]));
        assert_eq!(trace.mode, Some(DynamicMode::Steady));
    }

    #[test]
    fn not_enough_available_replicas_is_reported_with_karmadas_message() {
        let error = dynamic(
            10,
            &candidates(&[("a", 3), ("b", 2)]),
            &[],
            false,
            false,
            TieBreak::NameAscending,
        )
        .expect_err("must fail");
        assert_eq!(
            error.to_string(),
            "Clusters available replicas 5 are not enough to schedule."
        );
    }
}
