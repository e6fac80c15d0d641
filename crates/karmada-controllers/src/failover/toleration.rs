//! The taint manager's decision (docs/karmada.md, "Taint manager"), pure: for a binding's target clusters, their
//! `NoExecute` taints and the placement's `clusterTolerations`, which clusters must be evicted now and when to
//! look again.
//!
//! Per cluster, with Kubernetes' toleration semantics: a `NoExecute` taint no toleration tolerates → evict now;
//! all tolerated, the smallest `tolerationSeconds` among the tolerations used bounds how long the binding may
//! stay, counted from the earliest `timeAdded` of the cluster's NoExecute taints (a taint without `timeAdded`
//! counts from `now`); no `tolerationSeconds` anywhere → stay for ever. A zero or negative `tolerationSeconds`
//! means at once.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use karmada_api::{Placement, TargetCluster};
use karmada_scheduler::plugins::tainttoleration::{describe_taint, tolerates};

/// The effect the taint manager acts on.
pub const EFFECT_NO_EXECUTE: &str = "NoExecute";

/// What the taint manager does about one cluster of one binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaintVerdict {
    /// No NoExecute taint, or all tolerated for ever.
    Keep,
    /// Evict now; the text names the taint(s) responsible, Karmada style (`{key=value:NoExecute}`).
    EvictNow(String),
    /// Tolerated until this moment.
    EvictAt(Timestamp),
}

/// The verdict for one cluster's taints.
pub fn verdict(tolerations: &[Toleration], taints: &[Taint], now: Timestamp) -> TaintVerdict {
    let no_execute: Vec<&Taint> = taints
        .iter()
        .filter(|t| t.effect == EFFECT_NO_EXECUTE)
        .collect();
    if no_execute.is_empty() {
        return TaintVerdict::Keep;
    }
    let untolerated: Vec<String> = no_execute
        .iter()
        .filter(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
        .map(|taint| describe_taint(taint))
        .collect();
    if !untolerated.is_empty() {
        return TaintVerdict::EvictNow(untolerated.join(","));
    }
    let min_seconds = no_execute
        .iter()
        .flat_map(|taint| tolerations.iter().filter(|t| tolerates(t, taint)))
        .filter_map(|t| t.toleration_seconds)
        .min();
    let Some(seconds) = min_seconds else {
        return TaintVerdict::Keep;
    };
    let added = no_execute
        .iter()
        .map(|t| t.time_added.as_ref().map_or(now, |time| time.0))
        .min()
        .unwrap_or(now);
    let deadline = added
        .checked_add(SignedDuration::from_secs(seconds.max(0)))
        .unwrap_or(Timestamp::MAX);
    if deadline <= now {
        let names: Vec<String> = no_execute.iter().map(|t| describe_taint(t)).collect();
        TaintVerdict::EvictNow(names.join(","))
    } else {
        TaintVerdict::EvictAt(deadline)
    }
}

/// The taint manager's decision for one binding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaintDecision {
    /// Clusters to evict now, with the taints responsible, in `spec.clusters` order.
    pub evict: Vec<(String, String)>,
    /// The earliest moment a tolerated taint runs out (look again then).
    pub recheck_at: Option<Timestamp>,
}

/// The decision for a binding's `targets`, given each cluster's taints by name (clusters not in the map have no
/// taints as far as the taint manager knows: they are kept).
pub fn decide(
    targets: &[TargetCluster],
    tolerations: &[Toleration],
    taints: &BTreeMap<String, Vec<Taint>>,
    now: Timestamp,
) -> TaintDecision {
    let mut decision = TaintDecision::default();
    for target in targets {
        let Some(cluster_taints) = taints.get(&target.name) else {
            continue;
        };
        match verdict(tolerations, cluster_taints, now) {
            TaintVerdict::Keep => {}
            TaintVerdict::EvictNow(why) => decision.evict.push((target.name.clone(), why)),
            TaintVerdict::EvictAt(at) => {
                decision.recheck_at = Some(decision.recheck_at.map_or(at, |r| r.min(at)));
            }
        }
    }
    decision
}

/// The tolerations in force: those of the placement the binding was last scheduled with (the applied-placement
/// annotation, as Karmada reads them), else of `spec.placement`.
pub fn tolerations_in_force(
    applied_placement: Option<&str>,
    placement: Option<&Placement>,
) -> Vec<Toleration> {
    applied_placement
        .and_then(|text| serde_json::from_str::<Placement>(text).ok())
        .map(|p| p.cluster_tolerations)
        .or_else(|| placement.map(|p| p.cluster_tolerations.clone()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).expect("timestamp")
    }

    fn taint(key: &str, effect: &str, added: Option<i64>) -> Taint {
        Taint {
            key: key.into(),
            effect: effect.into(),
            value: None,
            time_added: added.map(|s| Time(at(s))),
        }
    }

    fn toleration(key: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(EFFECT_NO_EXECUTE.into()),
            toleration_seconds: seconds,
            value: None,
        }
    }

    const DOWN: &str = "cluster.karmada.io/not-ready";

    #[test]
    #[allow(clippy::type_complexity)] // table rows are plain tuples
    fn verdicts() {
        let cases: Vec<(&str, Vec<Toleration>, Vec<Taint>, i64, TaintVerdict)> = vec![
            ("no taints", vec![], vec![], 0, TaintVerdict::Keep),
            (
                "NoSchedule is not the taint manager's",
                vec![],
                vec![taint(DOWN, "NoSchedule", Some(0))],
                0,
                TaintVerdict::Keep,
            ),
            (
                "untolerated NoExecute",
                vec![],
                vec![taint(DOWN, EFFECT_NO_EXECUTE, Some(0))],
                0,
                TaintVerdict::EvictNow(format!("{{{DOWN}:NoExecute}}")),
            ),
            (
                "tolerated for ever",
                vec![toleration(DOWN, None)],
                vec![taint(DOWN, EFFECT_NO_EXECUTE, Some(0))],
                1_000_000,
                TaintVerdict::Keep,
            ),
            (
                "tolerated for 60 s, 10 s in",
                vec![toleration(DOWN, Some(60))],
                vec![taint(DOWN, EFFECT_NO_EXECUTE, Some(0))],
                10,
                TaintVerdict::EvictAt(at(60)),
            ),
            (
                "tolerated for 60 s, 60 s in",
                vec![toleration(DOWN, Some(60))],
                vec![taint(DOWN, EFFECT_NO_EXECUTE, Some(0))],
                60,
                TaintVerdict::EvictNow(format!("{{{DOWN}:NoExecute}}")),
            ),
            (
                "smallest toleration wins",
                vec![toleration(DOWN, Some(300)), toleration(DOWN, Some(30))],
                vec![taint(DOWN, EFFECT_NO_EXECUTE, Some(0))],
                10,
                TaintVerdict::EvictAt(at(30)),
            ),
            (
                "negative seconds means at once",
                vec![toleration(DOWN, Some(-5))],
                vec![taint(DOWN, EFFECT_NO_EXECUTE, Some(0))],
                0,
                TaintVerdict::EvictNow(format!("{{{DOWN}:NoExecute}}")),
            ),
            (
                "one of two taints untolerated",
                vec![toleration(DOWN, None)],
                vec![
                    taint(DOWN, EFFECT_NO_EXECUTE, Some(0)),
                    taint("other", EFFECT_NO_EXECUTE, Some(0)),
                ],
                0,
                TaintVerdict::EvictNow("{other:NoExecute}".into()),
            ),
            (
                "no timeAdded counts from now",
                vec![toleration(DOWN, Some(60))],
                vec![taint(DOWN, EFFECT_NO_EXECUTE, None)],
                100,
                TaintVerdict::EvictAt(at(160)),
            ),
        ];
        for (name, tolerations, taints, now, expected) in cases {
            assert_eq!(verdict(&tolerations, &taints, at(now)), expected, "{name}");
        }
    }

    #[test]
    fn decide_over_targets() {
        let targets: Vec<TargetCluster> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| TargetCluster {
                name: n.to_string(),
                replicas: 1,
                components: vec![],
            })
            .collect();
        let mut taints = BTreeMap::new();
        taints.insert(
            "a".to_string(),
            vec![taint(DOWN, EFFECT_NO_EXECUTE, Some(0))],
        );
        taints.insert(
            "b".to_string(),
            vec![taint("slow", EFFECT_NO_EXECUTE, Some(0))],
        );
        taints.insert(
            "c".to_string(),
            vec![taint("slower", EFFECT_NO_EXECUTE, Some(5))],
        );
        let tolerations = vec![
            toleration("slow", Some(100)),
            toleration("slower", Some(50)),
        ];
        let decision = decide(&targets, &tolerations, &taints, at(1));
        assert_eq!(
            decision.evict,
            vec![("a".to_string(), format!("{{{DOWN}:NoExecute}}"))]
        );
        assert_eq!(decision.recheck_at, Some(at(55)));
    }

    #[test]
    fn tolerations_prefer_the_applied_placement() {
        let spec = Placement {
            cluster_tolerations: vec![toleration("spec", None)],
            ..Placement::default()
        };
        let applied = serde_json::to_string(&Placement {
            cluster_tolerations: vec![toleration("applied", None)],
            ..Placement::default()
        })
        .expect("json");
        let key = |t: Vec<Toleration>| t[0].key.clone();
        assert_eq!(
            key(tolerations_in_force(Some(&applied), Some(&spec))),
            Some("applied".into())
        );
        assert_eq!(
            key(tolerations_in_force(Some("not json"), Some(&spec))),
            Some("spec".into())
        );
        assert_eq!(
            key(tolerations_in_force(None, Some(&spec))),
            Some("spec".into())
        );
        assert!(tolerations_in_force(None, None).is_empty());
    }
}
