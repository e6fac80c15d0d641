//! What the scheduler derives from a Placement before any cluster is looked at: the division strategy, the
//! spread rules, compiled affinities and static weights — and validation of all of it, so malformed input is
//! an [`InputError`] up front rather than a surprise in a filter.
//!
//! Invariants: a [`PreparedPlacement`] only exists for a valid placement. Webhook defaults Karmada applies on
//! write are applied here too (spread constraint without field or label → `cluster`; `minGroups` 0 → 1;
//! Divided without a preference → Weighted), so a placement read straight from YAML behaves as stored.

use karmada_api::{Placement, ReplicaDivisionPreference, ReplicaSchedulingType, SpreadByField};

use crate::affinity::CompiledAffinity;
use crate::error::InputError;
use crate::framework::AffinityInForce;
use crate::select::{GroupBounds, SpreadRules};

/// How replicas are assigned (docs/karmada.md, "Replica division").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Duplicated,
    StaticWeight,
    DynamicWeight,
    Aggregated,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Duplicated => "Duplicated",
            Strategy::StaticWeight => "StaticWeight",
            Strategy::DynamicWeight => "DynamicWeight",
            Strategy::Aggregated => "Aggregated",
        }
    }
}

/// The group field that drives selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupField {
    Region,
    Zone,
    Provider,
    Label(String),
}

/// One clusterAffinities term (or the single clusterAffinity), compiled.
#[derive(Debug, Clone)]
pub struct PreparedTerm {
    pub name: Option<String>,
    pub affinity: AffinityInForce,
}

/// A validated placement.
#[derive(Debug, Clone)]
pub struct PreparedPlacement {
    pub strategy: Strategy,
    /// Whether Select ignores spread constraints (static-weight division) — Karmada's rule.
    pub select_all: bool,
    /// Whether group scores and the cluster algorithm ignore resources (no replicaScheduling or Duplicated).
    pub ignore_resources: bool,
    pub rules: SpreadRules,
    pub group_field: Option<GroupField>,
    pub terms: Vec<PreparedTerm>,
    /// staticWeightList targets and weights.
    pub static_weights: Vec<(CompiledAffinity, i64)>,
}

/// Validates `placement` and derives what scheduling needs. `at` names the placement in errors.
pub fn prepare(placement: &Placement, at: &str) -> Result<PreparedPlacement, InputError> {
    if placement.cluster_affinity.is_some() && !placement.cluster_affinities.is_empty() {
        return Err(InputError::new(
            format!("{at}.clusterAffinities"),
            "cannot be used together with clusterAffinity; use one of them",
        ));
    }
    let strategy = match &placement.replica_scheduling {
        None => Strategy::Duplicated,
        Some(scheduling)
            if scheduling.replica_scheduling_type == ReplicaSchedulingType::Duplicated =>
        {
            Strategy::Duplicated
        }
        Some(scheduling) => match scheduling
            .replica_division_preference
            .unwrap_or(ReplicaDivisionPreference::Weighted)
        {
            ReplicaDivisionPreference::Aggregated => Strategy::Aggregated,
            ReplicaDivisionPreference::Weighted => {
                if scheduling
                    .weight_preference
                    .as_ref()
                    .is_some_and(|w| w.dynamic_weight.is_some())
                {
                    Strategy::DynamicWeight
                } else {
                    Strategy::StaticWeight
                }
            }
        },
    };
    let weight_preference = placement
        .replica_scheduling
        .as_ref()
        .and_then(|s| s.weight_preference.as_ref());
    let select_all = strategy == Strategy::StaticWeight
        && weight_preference
            .is_none_or(|w| !w.static_weight_list.is_empty() && w.dynamic_weight.is_none());
    let ignore_resources = strategy == Strategy::Duplicated;

    let mut static_weights = Vec::new();
    if strategy == Strategy::StaticWeight
        && let Some(preference) = weight_preference
    {
        for (index, rule) in preference.static_weight_list.iter().enumerate() {
            let path = format!("{at}.replicaScheduling.weightPreference.staticWeightList[{index}]");
            if rule.weight < 1 {
                return Err(InputError::new(
                    format!("{path}.weight"),
                    format!(
                        "must be at least 1, got {}; remove the entry to give its clusters no replicas",
                        rule.weight
                    ),
                ));
            }
            static_weights.push((
                CompiledAffinity::compile(&rule.target_cluster, &format!("{path}.targetCluster"))?,
                rule.weight,
            ));
        }
    }

    let (rules, group_field) = spread_rules(placement, at)?;

    let mut terms = Vec::new();
    if placement.cluster_affinities.is_empty() {
        let primary = placement
            .cluster_affinity
            .as_ref()
            .map(|a| CompiledAffinity::compile(a, &format!("{at}.clusterAffinity")))
            .transpose()?;
        terms.push(PreparedTerm {
            name: None,
            affinity: AffinityInForce::new(primary, Vec::new()),
        });
    } else {
        for (index, term) in placement.cluster_affinities.iter().enumerate() {
            let path = format!("{at}.clusterAffinities[{index}]");
            if term.affinity_name.is_empty() || term.affinity_name.len() > 32 {
                return Err(InputError::new(
                    format!("{path}.affinityName"),
                    "must be 1 to 32 characters",
                ));
            }
            if terms
                .iter()
                .any(|t: &PreparedTerm| t.name.as_deref() == Some(term.affinity_name.as_str()))
            {
                return Err(InputError::new(
                    format!("{path}.affinityName"),
                    format!(
                        "{:?} is used twice; names must be unique",
                        term.affinity_name
                    ),
                ));
            }
            if !term.overflow_affinities.is_empty()
                && !matches!(strategy, Strategy::DynamicWeight | Strategy::Aggregated)
            {
                return Err(InputError::new(
                    format!("{path}.overflowAffinities"),
                    "are only allowed with Divided replicas and dynamicWeight or Aggregated division",
                ));
            }
            let primary = CompiledAffinity::compile(&term.cluster_affinity, &path)?;
            let overflow = term
                .overflow_affinities
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    CompiledAffinity::compile(
                        &o.cluster_affinity,
                        &format!("{path}.overflowAffinities[{i}]"),
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            terms.push(PreparedTerm {
                name: Some(term.affinity_name.clone()),
                affinity: AffinityInForce::new(Some(primary), overflow),
            });
        }
    }
    Ok(PreparedPlacement {
        strategy,
        select_all,
        ignore_resources,
        rules,
        group_field,
        terms,
        static_weights,
    })
}

fn spread_rules(
    placement: &Placement,
    at: &str,
) -> Result<(SpreadRules, Option<GroupField>), InputError> {
    let mut rules = SpreadRules::default();
    let mut groups: Vec<(GroupField, GroupBounds)> = Vec::new();
    let mut uses_field = false;
    for (index, constraint) in placement.spread_constraints.iter().enumerate() {
        let path = format!("{at}.spreadConstraints[{index}]");
        if constraint.spread_by_field.is_some() && !constraint.spread_by_label.is_empty() {
            return Err(InputError::new(
                path,
                "spreadByField and spreadByLabel are exclusive; set one",
            ));
        }
        if constraint.min_groups < 0 || constraint.max_groups < 0 {
            return Err(InputError::new(
                path,
                "minGroups and maxGroups must be 0 or more",
            ));
        }
        let min_groups = if constraint.min_groups == 0 {
            1
        } else {
            i64::from(constraint.min_groups)
        };
        let max_groups = i64::from(constraint.max_groups);
        if max_groups > 0 && max_groups < min_groups {
            return Err(InputError::new(
                path,
                format!("maxGroups {max_groups} is lower than minGroups {min_groups}"),
            ));
        }
        let bounds = GroupBounds {
            min_groups,
            max_groups,
        };
        let field = if constraint.spread_by_label.is_empty() {
            uses_field = true;
            match constraint.spread_by_field.unwrap_or(SpreadByField::Cluster) {
                SpreadByField::Cluster => {
                    if rules.cluster.is_some() {
                        return Err(InputError::new(
                            path,
                            "spreadByField cluster is given twice; each field at most once",
                        ));
                    }
                    rules.cluster = Some(bounds);
                    continue;
                }
                SpreadByField::Region => GroupField::Region,
                SpreadByField::Zone => GroupField::Zone,
                SpreadByField::Provider => GroupField::Provider,
            }
        } else {
            GroupField::Label(constraint.spread_by_label.clone())
        };
        if groups.iter().any(|(existing, _)| existing == &field) {
            return Err(InputError::new(
                path,
                "the same spread field or label is given twice; each at most once",
            ));
        }
        groups.push((field, bounds));
    }
    if uses_field && rules.cluster.is_none() && !groups.is_empty() {
        return Err(InputError::new(
            format!("{at}.spreadConstraints"),
            "a spreadByField constraint needs a spreadByField: cluster constraint beside it",
        ));
    }
    let priority = |field: &GroupField| match field {
        GroupField::Region => 0,
        GroupField::Zone => 1,
        GroupField::Provider => 2,
        GroupField::Label(_) => 3,
    };
    groups.sort_by_key(|(field, _)| priority(field));
    let group_field = groups.first().map(|(field, _)| field.clone());
    rules.group = groups.into_iter().next().map(|(field, bounds)| {
        let name = match &field {
            GroupField::Region => "region".to_string(),
            GroupField::Zone => "zone".to_string(),
            GroupField::Provider => "provider".to_string(),
            GroupField::Label(key) => format!("label {key}"),
        };
        (name, bounds)
    });
    Ok((rules, group_field))
}
