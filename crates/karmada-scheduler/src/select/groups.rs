//! Group selection for spread constraints on region, zone, provider or a label: Karmada's region algorithm,
//! generalised to any grouping of clusters.
//!
//! Invariant: the chosen groups satisfy the group constraint's `[minGroups, maxGroups]` and together hold at least
//! the cluster constraint's `minGroups` clusters; among feasible combinations the highest total group score wins,
//! then the most clusters, then the first found by the depth-first walk (so a combination is preferred over its
//! extensions).

use std::collections::BTreeMap;

use super::{GroupBounds, GroupTrace, SelectCandidate, SelectDemand, SelectError, SelectTrace};

/// Karmada's group-score unit: a replica (or a fitting cluster) outweighs any plugin score sum.
const WEIGHT_UNIT: i64 = 1000;

/// Inputs to a group's score.
#[derive(Debug, Clone, Copy)]
pub struct GroupScoreInput<'a> {
    /// The group's clusters in candidate order.
    pub clusters: &'a [&'a SelectCandidate<'a>],
    pub demand: SelectDemand,
    /// minGroups of the group constraint.
    pub group_min: i64,
    /// minGroups of the cluster constraint (0 when absent).
    pub cluster_min: i64,
}

/// Karmada's group score (docs/karmada.md, "Select and spread constraints").
pub fn group_score(input: GroupScoreInput<'_>) -> i64 {
    let clusters = input.clusters;
    if clusters.is_empty() {
        return 0;
    }
    let replicas = input.demand.replicas;
    if input.demand.duplicated {
        let valid: Vec<_> = clusters
            .iter()
            .filter(|c| c.available >= replicas)
            .collect();
        if valid.is_empty() {
            return 0;
        }
        let count = valid.len() as i64;
        return count * WEIGHT_UNIT + valid.iter().map(|c| c.score).sum::<i64>() / count;
    }
    let target = (replicas + input.group_min.max(1) - 1) / input.group_min.max(1);
    let cluster_min = input.cluster_min.max(input.group_min);
    let (mut available, mut score, mut count) = (0i64, 0i64, 0i64);
    for cluster in clusters {
        if count >= cluster_min && available >= target {
            break;
        }
        available += cluster.available;
        score += cluster.score;
        count += 1;
    }
    if available < target {
        let all_score: i64 = clusters.iter().map(|c| c.score).sum();
        available * WEIGHT_UNIT + all_score / clusters.len() as i64
    } else {
        target * WEIGHT_UNIT + score / count.max(1)
    }
}

struct Group<'a> {
    name: String,
    members: Vec<usize>,
    refs: Vec<&'a SelectCandidate<'a>>,
    score: i64,
}

struct Search<'g> {
    groups: &'g [Group<'g>],
    min: usize,
    max: usize,
    cluster_min: usize,
    /// For each start index, the cluster counts of `groups[start..]`, largest first (feasibility bound).
    suffix_clusters: Vec<Vec<usize>>,
    best: Option<(i64, usize, Vec<usize>)>,
}

impl Search<'_> {
    fn walk(&mut self, start: usize, path: &mut Vec<usize>, score: i64, clusters: usize) {
        if path.len() >= self.min && path.len() <= self.max && clusters >= self.cluster_min {
            let better = match &self.best {
                None => true,
                Some((best_score, best_clusters, _)) => {
                    (score, clusters) > (*best_score, *best_clusters)
                }
            };
            if better {
                self.best = Some((score, clusters, path.clone()));
            }
        }
        if path.len() >= self.max {
            return;
        }
        // Prune branches that can no longer reach the cluster constraint's minGroups.
        let room = self.max - path.len();
        let reachable: usize = self
            .suffix_clusters
            .get(start)
            .map_or(0, |counts| counts.iter().take(room).sum());
        if clusters + reachable < self.cluster_min {
            return;
        }
        for next in start..self.groups.len() {
            path.push(next);
            let group = &self.groups[next];
            self.walk(
                next + 1,
                path,
                score + group.score,
                clusters + group.members.len(),
            );
            path.pop();
        }
    }
}

/// The combination the depth-first walk would pick, found directly when it is feasible.
///
/// Scores are never negative and every group adds at least one cluster, so extending a feasible combination
/// makes it strictly better: the best one has exactly `min(maxGroups, groups)` groups. Among those, the highest
/// (Σscore, Σclusters) is the set of groups with the largest (score, clusters) keys; groups with equal keys are
/// taken in walk order, which is what "first found" means. If that set misses the cluster constraint's minGroups
/// the exhaustive (pruned) walk decides instead.
fn best_directly(groups: &[Group<'_>], count: usize, cluster_min: usize) -> Option<Vec<usize>> {
    let mut indices: Vec<usize> = (0..groups.len()).collect();
    indices.sort_by(|a, b| {
        let key = |g: &Group<'_>| (g.score, g.members.len());
        key(&groups[*b]).cmp(&key(&groups[*a])).then(a.cmp(b))
    });
    let mut chosen: Vec<usize> = indices.into_iter().take(count).collect();
    chosen.sort_unstable();
    let clusters: usize = chosen.iter().map(|g| groups[*g].members.len()).sum();
    (clusters >= cluster_min).then_some(chosen)
}

pub(super) fn select_by_group(
    candidates: &[SelectCandidate],
    field: &str,
    bounds: GroupBounds,
    cluster_bounds: Option<GroupBounds>,
    demand: SelectDemand,
    mut trace: SelectTrace,
) -> Result<(Vec<usize>, SelectTrace), SelectError> {
    trace.group_field = Some(field.to_string());
    if bounds.max_groups <= 0 {
        return Err(SelectError::ZeroMaxGroups {
            field: field.into(),
        });
    }
    if let Some(cluster) = cluster_bounds
        && cluster.max_groups <= 0
    {
        return Err(SelectError::ZeroMaxGroups {
            field: "cluster".into(),
        });
    }
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, candidate) in candidates.iter().enumerate() {
        if let Some(group) = &candidate.group {
            by_name.entry(*group).or_default().push(index);
        }
    }
    if (by_name.len() as i64) < bounds.min_groups {
        return Err(SelectError::TooFewGroups {
            field: field.into(),
            available: by_name.len(),
            min_groups: bounds.min_groups,
        });
    }
    let cluster_min = cluster_bounds.map_or(0, |c| c.min_groups);
    let mut groups: Vec<Group<'_>> = by_name
        .into_iter()
        .map(|(name, members)| {
            let refs: Vec<&SelectCandidate> = members.iter().map(|i| &candidates[*i]).collect();
            let score = group_score(GroupScoreInput {
                clusters: &refs,
                demand,
                group_min: bounds.min_groups,
                cluster_min,
            });
            Group {
                name: name.to_string(),
                members,
                refs,
                score,
            }
        })
        .collect();
    groups.sort_by(|a, b| {
        a.members
            .len()
            .cmp(&b.members.len())
            .then(b.score.cmp(&a.score))
            .then_with(|| a.name.cmp(&b.name))
    });
    let max = usize::try_from(bounds.max_groups)
        .unwrap_or(usize::MAX)
        .min(groups.len());
    let min = usize::try_from(bounds.min_groups.max(0)).unwrap_or(0);
    let cluster_min_count = usize::try_from(cluster_min.max(0)).unwrap_or(0);
    let direct = if max >= min {
        best_directly(&groups, max, cluster_min_count)
    } else {
        None
    };
    let path = match direct {
        Some(path) => Some(path),
        None => {
            let suffix_clusters = (0..groups.len())
                .map(|start| {
                    let mut counts: Vec<usize> =
                        groups[start..].iter().map(|g| g.members.len()).collect();
                    counts.sort_unstable_by(|a, b| b.cmp(a));
                    counts
                })
                .collect();
            let mut search = Search {
                groups: &groups,
                min,
                max,
                cluster_min: cluster_min_count,
                suffix_clusters,
                best: None,
            };
            search.walk(0, &mut Vec::new(), 0, 0);
            search.best.map(|(_, _, path)| path)
        }
    };
    let Some(path) = path else {
        return Err(SelectError::NoGroupCombination {
            field: field.into(),
            min_groups: bounds.min_groups,
            max_groups: bounds.max_groups,
            cluster_min,
        });
    };
    // The best cluster of each chosen group first, then the rest of the chosen groups by score, available, name.
    let mut selected: Vec<usize> = path
        .iter()
        .filter_map(|g| groups[*g].members.first().copied())
        .collect();
    let mut rest: Vec<usize> = path
        .iter()
        .flat_map(|g| groups[*g].members.iter().skip(1).copied())
        .collect();
    rest.sort_by(|a, b| {
        let (ca, cb) = (&candidates[*a], &candidates[*b]);
        cb.score
            .cmp(&ca.score)
            .then(cb.available.cmp(&ca.available))
            .then_with(|| ca.name.cmp(&cb.name))
    });
    let total = selected.len() + rest.len();
    // One cluster per chosen group always stays, even if the cluster constraint's maxGroups is smaller.
    let limit = cluster_bounds
        .map_or(total, |c| {
            usize::try_from(c.max_groups)
                .unwrap_or(usize::MAX)
                .min(total)
        })
        .max(selected.len());
    selected.extend(rest.into_iter().take(limit - selected.len()));
    for (index, group) in groups.iter().enumerate() {
        trace.groups.push(GroupTrace {
            name: group.name.clone(),
            clusters: group.refs.iter().map(|c| c.name.clone()).collect(),
            score: group.score,
            chosen: path.contains(&index),
        });
    }
    trace.notes.push(format!(
        "{field} constraint: chose {} of {} groups; {} cluster(s) selected",
        path.len(),
        groups.len(),
        selected.len()
    ));
    Ok((selected, trace))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn exhaustive(
        groups: &[Group<'_>],
        min: usize,
        max: usize,
        cluster_min: usize,
    ) -> Option<Vec<usize>> {
        // No pruning: every combination is visited.
        let suffix_clusters = vec![vec![usize::MAX / 4]; groups.len()];
        let mut search = Search {
            groups,
            min,
            max,
            cluster_min,
            suffix_clusters,
            best: None,
        };
        search.walk(0, &mut Vec::new(), 0, 0);
        search.best.map(|(_, _, path)| path)
    }

    proptest! {
        #[test]
        fn direct_choice_equals_the_exhaustive_walk(
            shape in prop::collection::vec((0i64..4, 1usize..4), 1..9),
            min in 1usize..4,
            extra in 0usize..3,
            cluster_min in 0usize..8,
        ) {
            let candidate = SelectCandidate { name: "x".into(), score: 0, available: 0, group: None };
            let mut groups: Vec<Group<'_>> = shape
                .iter()
                .enumerate()
                .map(|(i, (score, size))| Group { name: format!("g{i}"), members: (0..*size).collect(), refs: vec![&candidate], score: score * 1000 })
                .collect();
            groups.sort_by(|a, b| a.members.len().cmp(&b.members.len()).then(b.score.cmp(&a.score)).then_with(|| a.name.cmp(&b.name)));
            let max = (min + extra).min(groups.len());
            prop_assume!(max >= min);
            let walked = exhaustive(&groups, min, max, cluster_min);
            if let Some(direct) = best_directly(&groups, max, cluster_min) {
                prop_assert_eq!(Some(direct), walked.clone());
            }
            let suffix_clusters = (0..groups.len())
                .map(|start| {
                    let mut counts: Vec<usize> = groups[start..].iter().map(|g| g.members.len()).collect();
                    counts.sort_unstable_by(|a, b| b.cmp(a));
                    counts
                })
                .collect();
            let mut pruned = Search { groups: &groups, min, max, cluster_min, suffix_clusters, best: None };
            pruned.walk(0, &mut Vec::new(), 0, 0);
            prop_assert_eq!(pruned.best.map(|(_, _, path)| path), walked);
        }
    }
}
