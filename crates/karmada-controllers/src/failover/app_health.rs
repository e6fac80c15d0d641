//! Application failover, pure (docs/karmada.md, "Application failover"): from `aggregatedStatus` health per cluster and
//! `failover.application.decisionConditions.tolerationSeconds` (default 300, 0 = at once), which clusters'
//! copies have been Unhealthy long enough to be evicted.
//!
//! When a copy first turned Unhealthy is tracked on the binding itself, in the annotation
//! [`ANNOTATION_UNHEALTHY_SINCE`] (a JSON map cluster → RFC 3339 time), not in memory: a controller restart
//! neither resets the clock (failover would never happen for a workload that crashes just slower than the
//! controller restarts) nor starts it over. Only `Unhealthy` counts: `Unknown` (no status yet, or the member out
//! of reach) is cluster failover's business, and a copy that is Healthy or Unknown again leaves the map.
//! Clusters already being evicted are not tracked.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use karmada_api::policy::{ApplicationFailoverBehavior, PurgeMode};
use karmada_api::work::EVICTION_REASON_APPLICATION_FAILURE;
use karmada_api::{ResourceBindingSpec, ResourceBindingStatus};

use super::preservation::{PreservationError, preserved_label_state};
use super::replicas::is_unhealthy;
use super::tasks::EvictionRequest;

/// Binding annotation: when each target's copy was first seen Unhealthy.
pub const ANNOTATION_UNHEALTHY_SINCE: &str = "failover.karmada.io/application-unhealthy-since";
/// Karmada's default `decisionConditions.tolerationSeconds`.
pub const DEFAULT_TOLERATION_SECONDS: i32 = 300;
/// Karmada's default `gracePeriodSeconds` for Gracefully application failover.
pub const DEFAULT_GRACE_PERIOD_SECONDS: i32 = 600;
/// Producer of the tasks, as Karmada names its controllers.
pub const PRODUCER_RESOURCE_BINDING: &str = "resource-binding-application-failover-controller";
pub const PRODUCER_CLUSTER_RESOURCE_BINDING: &str =
    "cluster-resource-binding-application-failover-controller";

/// The tracked first-unhealthy times from the annotation; a malformed annotation counts as empty (the clocks
/// start over, which only delays a failover).
pub fn parse_tracked(text: Option<&str>) -> BTreeMap<String, Timestamp> {
    text.and_then(|t| serde_json::from_str::<BTreeMap<String, String>>(t).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(cluster, at)| Some((cluster, at.parse().ok()?)))
        .collect()
}

/// The annotation value for `tracked`; `None` when nothing is tracked (the annotation is removed).
pub fn render_tracked(tracked: &BTreeMap<String, Timestamp>) -> Option<String> {
    if tracked.is_empty() {
        return None;
    }
    let text: BTreeMap<&String, String> = tracked
        .iter()
        .map(|(c, t)| (c, t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()))
        .collect();
    serde_json::to_string(&text).ok()
}

/// What application failover decides for one binding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppDecision {
    /// The new first-unhealthy times.
    pub tracked: BTreeMap<String, Timestamp>,
    /// Clusters to evict now.
    pub evict: Vec<String>,
    /// When the next tracked copy runs out of toleration.
    pub recheck_at: Option<Timestamp>,
}

/// The decision; `None` when the binding has no application failover.
pub fn decide(
    spec: &ResourceBindingSpec,
    status: Option<&ResourceBindingStatus>,
    tracked: &BTreeMap<String, Timestamp>,
    now: Timestamp,
) -> Option<AppDecision> {
    let behavior = spec.failover.as_ref()?.application.as_ref()?;
    let toleration = SignedDuration::from_secs(i64::from(
        behavior
            .decision_conditions
            .toleration_seconds
            .unwrap_or(DEFAULT_TOLERATION_SECONDS)
            .max(0),
    ));
    let evicting: BTreeSet<&str> = spec
        .graceful_eviction_tasks
        .iter()
        .map(|t| t.from_cluster.as_str())
        .collect();
    let mut decision = AppDecision::default();
    for target in &spec.clusters {
        let name = target.name.as_str();
        if evicting.contains(name) || !is_unhealthy(status, name) {
            continue;
        }
        let since = tracked.get(name).copied().unwrap_or(now).min(now);
        decision.tracked.insert(name.to_string(), since);
        let deadline = since.checked_add(toleration).unwrap_or(Timestamp::MAX);
        if deadline <= now {
            decision.evict.push(name.to_string());
        } else {
            decision.recheck_at = Some(decision.recheck_at.map_or(deadline, |r| r.min(deadline)));
        }
    }
    Some(decision)
}

/// The eviction of `cluster` for an application failure, with the policy's purge mode, grace period and
/// preserved state (read from the cluster's reflected status).
pub fn eviction_request(
    behavior: &ApplicationFailoverBehavior,
    status: Option<&ResourceBindingStatus>,
    cluster: &str,
    producer: &str,
) -> Result<EvictionRequest, PreservationError> {
    let mode = behavior.purge_mode.unwrap_or(PurgeMode::Gracefully);
    let rules = behavior
        .state_preservation
        .as_ref()
        .map(|p| p.rules.as_slice())
        .unwrap_or_default();
    let preserved = if rules.is_empty() {
        BTreeMap::new()
    } else {
        let copy_status = status.and_then(|s| {
            s.aggregated_status
                .iter()
                .find(|i| i.cluster_name == cluster)
                .and_then(|i| i.status.as_ref())
        });
        preserved_label_state(rules, copy_status)?
    };
    Ok(EvictionRequest {
        from_cluster: cluster.to_string(),
        reason: EVICTION_REASON_APPLICATION_FAILURE.to_string(),
        message: format!(
            "The application in cluster {cluster} stayed unhealthy beyond its toleration"
        ),
        producer: producer.to_string(),
        purge_mode: mode,
        grace_period_seconds: Some(
            behavior
                .grace_period_seconds
                .unwrap_or(DEFAULT_GRACE_PERIOD_SECONDS),
        ),
        preserved_label_state: preserved,
    })
}

#[cfg(test)]
mod tests {
    use karmada_api::policy::{DecisionConditions, StatePreservation, StatePreservationRule};
    use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
    use karmada_api::{FailoverBehavior, GracefulEvictionTask, TargetCluster};
    use serde_json::json;

    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).expect("t")
    }

    fn spec(toleration: Option<i32>, tasks: &[&str]) -> ResourceBindingSpec {
        ResourceBindingSpec {
            replicas: 2,
            clusters: ["a", "b", "c"]
                .iter()
                .map(|n| TargetCluster {
                    name: n.to_string(),
                    replicas: 1,
                    components: vec![],
                })
                .collect(),
            failover: Some(FailoverBehavior {
                application: Some(ApplicationFailoverBehavior {
                    decision_conditions: DecisionConditions {
                        toleration_seconds: toleration,
                    },
                    ..Default::default()
                }),
                cluster: None,
            }),
            graceful_eviction_tasks: tasks
                .iter()
                .map(|n| GracefulEvictionTask {
                    from_cluster: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn status(health: &[(&str, ResourceHealth)]) -> ResourceBindingStatus {
        ResourceBindingStatus {
            aggregated_status: health
                .iter()
                .map(|(n, h)| AggregatedStatusItem {
                    cluster_name: n.to_string(),
                    health: Some(*h),
                    status: Some(json!({"readyReplicas": 0, "leader": format!("{n}-0")})),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    #[allow(clippy::type_complexity)] // table rows are plain tuples
    fn decisions() {
        use ResourceHealth::*;
        let st = status(&[("a", Unhealthy), ("b", Unhealthy), ("c", Unknown)]);
        let cases: Vec<(
            &str,
            ResourceBindingSpec,
            Vec<(&str, i64)>,
            i64,
            Vec<&str>,
            Vec<(&str, i64)>,
            Option<i64>,
        )> = vec![
            (
                "first sight starts the clocks",
                spec(Some(60), &[]),
                vec![],
                0,
                vec![],
                vec![("a", 0), ("b", 0)],
                Some(60),
            ),
            (
                "a ran out",
                spec(Some(60), &[]),
                vec![("a", 0), ("b", 30)],
                60,
                vec!["a"],
                vec![("a", 0), ("b", 30)],
                Some(90),
            ),
            (
                "default 300",
                spec(None, &[]),
                vec![("a", 0)],
                299,
                vec![],
                vec![("a", 0), ("b", 299)],
                Some(300),
            ),
            (
                "zero is at once",
                spec(Some(0), &[]),
                vec![],
                0,
                vec!["a", "b"],
                vec![("a", 0), ("b", 0)],
                None,
            ),
            (
                "healthy or unknown copies leave the map",
                spec(Some(60), &[]),
                vec![("c", 0)],
                10,
                vec![],
                vec![("a", 10), ("b", 10)],
                Some(70),
            ),
            (
                "evicting clusters are skipped",
                spec(Some(60), &["a"]),
                vec![("a", 0)],
                100,
                vec![],
                vec![("b", 100)],
                Some(160),
            ),
        ];
        for (name, spec, tracked, now, evict, expected_tracked, recheck) in cases {
            let tracked = tracked
                .into_iter()
                .map(|(c, s)| (c.to_string(), t(s)))
                .collect();
            let decision = decide(&spec, Some(&st), &tracked, t(now)).expect("configured");
            assert_eq!(decision.evict, evict, "{name}");
            let expected: BTreeMap<String, Timestamp> = expected_tracked
                .into_iter()
                .map(|(c, s)| (c.to_string(), t(s)))
                .collect();
            assert_eq!(decision.tracked, expected, "{name}");
            assert_eq!(decision.recheck_at, recheck.map(t), "{name}");
        }
        let mut off = spec(Some(1), &[]);
        off.failover = None;
        assert!(decide(&off, Some(&st), &BTreeMap::new(), t(0)).is_none());
    }

    #[test]
    fn tracked_annotation_round_trip() {
        let tracked: BTreeMap<String, Timestamp> = [("a".to_string(), t(5))].into();
        let text = render_tracked(&tracked).expect("text");
        assert_eq!(parse_tracked(Some(&text)), tracked);
        assert!(render_tracked(&BTreeMap::new()).is_none());
        assert!(parse_tracked(Some("{bad")).is_empty());
    }

    #[test]
    fn requests_carry_policy_and_state() {
        let behavior = ApplicationFailoverBehavior {
            purge_mode: Some(PurgeMode::Never),
            state_preservation: Some(StatePreservation {
                rules: vec![StatePreservationRule {
                    alias_label_name: "leader".into(),
                    json_path: "{.leader}".into(),
                }],
            }),
            ..Default::default()
        };
        let st = status(&[("a", ResourceHealth::Unhealthy)]);
        let request = eviction_request(&behavior, Some(&st), "a", PRODUCER_RESOURCE_BINDING)
            .expect("request");
        assert_eq!(request.purge_mode, PurgeMode::Never);
        assert_eq!(request.reason, "ApplicationFailure");
        assert_eq!(
            request
                .preserved_label_state
                .get("leader")
                .map(String::as_str),
            Some("a-0")
        );
        assert!(eviction_request(&behavior, Some(&st), "b", PRODUCER_RESOURCE_BINDING).is_err());
        let plain = eviction_request(&ApplicationFailoverBehavior::default(), None, "a", "p")
            .expect("request");
        assert_eq!(plain.purge_mode, PurgeMode::Gracefully);
        assert_eq!(plain.grace_period_seconds, Some(600));
    }
}
