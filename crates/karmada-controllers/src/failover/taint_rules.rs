//! ClusterTaintPolicy, pure: the taints a cluster should carry given the policies that target it and its status
//! conditions (docs/karmada.md, "Cluster health and taints").
//!
//! Per policy whose `targetClusters` matches the cluster (absent = every cluster): when every `addOnConditions`
//! entry matches, each of its taints is added (if no taint with the same key and effect is there; `timeAdded` is
//! `now`); otherwise, when every `removeOnConditions` entry matches, taints with the same key and effect are
//! removed. An empty condition list never matches. A condition the cluster does not report matches neither `In`
//! nor `NotIn`: a cluster that has not reported yet is not tainted on a guess. Taints no policy names are left as
//! they are, in order.

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::Cluster;
use karmada_api::policy::{ClusterTaintPolicy, MatchCondition, MatchConditionOperator};

use crate::binding::overrides::cluster_affinity_matches;

fn matches(condition: &MatchCondition, conditions: &[Condition]) -> bool {
    let Some(observed) = conditions
        .iter()
        .find(|c| c.type_ == condition.condition_type)
    else {
        return false;
    };
    let listed = condition.status_values.contains(&observed.status);
    match condition.operator {
        MatchConditionOperator::In => listed,
        MatchConditionOperator::NotIn => !listed,
    }
}

fn all_match(conditions: &[MatchCondition], observed: &[Condition]) -> bool {
    !conditions.is_empty() && conditions.iter().all(|c| matches(c, observed))
}

/// The cluster's taints as the policies want them; `None` when nothing changes. A policy whose target affinity
/// is invalid is skipped (its admission should have rejected it) and reported in the error list.
pub fn desired_taints(
    cluster: &Cluster,
    policies: &[ClusterTaintPolicy],
    now: Time,
) -> (Option<Vec<Taint>>, Vec<String>) {
    let observed: &[Condition] = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let mut taints = cluster.spec.taints.clone();
    let mut errors = Vec::new();
    let mut sorted: Vec<&ClusterTaintPolicy> = policies.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for policy in sorted {
        if let Some(affinity) = &policy.spec.target_clusters {
            match cluster_affinity_matches(affinity, cluster) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(err) => {
                    errors.push(format!(
                        "ClusterTaintPolicy {}: {err}",
                        policy.metadata.name.as_deref().unwrap_or_default()
                    ));
                    continue;
                }
            }
        }
        let same = |t: &Taint, key: &str, effect: &str| t.key == key && t.effect == effect;
        if all_match(&policy.spec.add_on_conditions, observed) {
            for template in &policy.spec.taints {
                if !taints
                    .iter()
                    .any(|t| same(t, &template.key, &template.effect))
                {
                    taints.push(Taint {
                        key: template.key.clone(),
                        effect: template.effect.clone(),
                        value: template.value.clone(),
                        time_added: Some(now.clone()),
                    });
                }
            }
        } else if all_match(&policy.spec.remove_on_conditions, observed) {
            taints.retain(|t| {
                !policy
                    .spec
                    .taints
                    .iter()
                    .any(|template| same(t, &template.key, &template.effect))
            });
        }
    }
    ((taints != cluster.spec.taints).then_some(taints), errors)
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use karmada_api::policy::{ClusterTaintPolicySpec, TaintTemplate};
    use serde_json::json;

    use super::*;

    fn cluster(ready: Option<&str>, taints: serde_json::Value) -> Cluster {
        let conditions = match ready {
            Some(status) => {
                json!([{"type": "Ready", "status": status, "reason": "R", "message": "",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}])
            }
            None => json!([]),
        };
        serde_json::from_value(json!({
            "metadata": {"name": "m1", "labels": {"env": "prod"}},
            "spec": {"syncMode": "Push", "taints": taints},
            "status": {"conditions": conditions},
        }))
        .expect("cluster")
    }

    fn policy(name: &str, target_env: Option<&str>) -> ClusterTaintPolicy {
        let cond = |statuses: &[&str], operator| MatchCondition {
            condition_type: "Ready".into(),
            operator,
            status_values: statuses.iter().map(|s| s.to_string()).collect(),
        };
        ClusterTaintPolicy {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: ClusterTaintPolicySpec {
                target_clusters: target_env.map(|env| {
                    serde_json::from_value(json!({"labelSelector": {"matchLabels": {"env": env}}}))
                        .expect("affinity")
                }),
                add_on_conditions: vec![cond(&["False", "Unknown"], MatchConditionOperator::In)],
                remove_on_conditions: vec![cond(&["True"], MatchConditionOperator::In)],
                taints: vec![TaintTemplate {
                    key: "cluster.karmada.io/not-ready".into(),
                    effect: "NoExecute".into(),
                    value: None,
                }],
            },
            ..Default::default()
        }
    }

    #[test]
    fn conditions_to_taints() {
        let now = Time(Timestamp::from_second(1_800_000_000).expect("t"));
        let no_execute = json!([{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute",
                                 "timeAdded": "2026-01-01T00:00:00Z"}]);
        let other = json!([{"key": "x", "effect": "NoSchedule"}]);
        let cases = [
            (
                "not ready → taint",
                cluster(Some("False"), other.clone()),
                vec![policy("p", None)],
                Some(2),
            ),
            (
                "unknown → taint",
                cluster(Some("Unknown"), json!([])),
                vec![policy("p", None)],
                Some(1),
            ),
            (
                "already tainted",
                cluster(Some("False"), no_execute.clone()),
                vec![policy("p", None)],
                None,
            ),
            (
                "ready → untaint",
                cluster(Some("True"), no_execute.clone()),
                vec![policy("p", None)],
                Some(0),
            ),
            (
                "ready, nothing to remove",
                cluster(Some("True"), other.clone()),
                vec![policy("p", None)],
                None,
            ),
            (
                "no condition: no guess",
                cluster(None, json!([])),
                vec![policy("p", None)],
                None,
            ),
            (
                "not targeted",
                cluster(Some("False"), json!([])),
                vec![policy("p", Some("dev"))],
                None,
            ),
            (
                "targeted",
                cluster(Some("False"), json!([])),
                vec![policy("p", Some("prod"))],
                Some(1),
            ),
        ];
        for (name, cluster, policies, expected_len) in cases {
            let (taints, errors) = desired_taints(&cluster, &policies, now.clone());
            assert!(errors.is_empty(), "{name}");
            assert_eq!(taints.as_ref().map(Vec::len), expected_len, "{name}");
            if let Some(taints) = taints
                && let Some(added) = taints.iter().find(|t| t.effect == "NoExecute")
            {
                assert_eq!(added.time_added, Some(now.clone()), "{name}");
            }
        }
    }
}
