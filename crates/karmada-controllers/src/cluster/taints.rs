//! The cluster controller's taints from the Ready condition.
//!
//! Ready=True → neither `not-ready` nor `unreachable`; Ready=False because the member could not be reached, or
//! Ready=Unknown → `cluster.karmada.io/unreachable:NoSchedule`; any other Ready=False, or no Ready condition yet →
//! `cluster.karmada.io/not-ready:NoSchedule`. (Karmada taints every Ready=False `not-ready`; we single out the
//! unreachable case so that a cluster that is gone reads as unreachable.) Other taints are left as they are.
//!
//! Pure: returns the desired taint list, preserving the order and `timeAdded` of the taints that stay.

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::cluster::{
    REASON_CLUSTER_NOT_REACHABLE, TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE,
};

/// Effect of every taint the controller manages.
pub const EFFECT_NO_SCHEDULE: &str = "NoSchedule";

/// The health taint key (if any) that the Ready condition calls for.
pub fn health_taint_key(ready: Option<&Condition>) -> Option<&'static str> {
    match ready {
        None => Some(TAINT_CLUSTER_NOT_READY),
        Some(c) if c.status == "True" => None,
        Some(c) if c.status == "False" && c.reason != REASON_CLUSTER_NOT_REACHABLE => {
            Some(TAINT_CLUSTER_NOT_READY)
        }
        Some(_) => Some(TAINT_CLUSTER_UNREACHABLE),
    }
}

/// `existing` with the health taints set as the Ready condition calls for. `None` when nothing changes.
pub fn desired_taints(
    existing: &[Taint],
    ready: Option<&Condition>,
    now: Time,
) -> Option<Vec<Taint>> {
    let wanted = health_taint_key(ready);
    let is_health_no_schedule = |t: &Taint| {
        (t.key == TAINT_CLUSTER_NOT_READY || t.key == TAINT_CLUSTER_UNREACHABLE)
            && t.effect == EFFECT_NO_SCHEDULE
    };
    let mut out: Vec<Taint> = existing
        .iter()
        .filter(|t| !is_health_no_schedule(t) || Some(t.key.as_str()) == wanted)
        .cloned()
        .collect();
    if let Some(key) = wanted
        && !out
            .iter()
            .any(|t| t.key == key && t.effect == EFFECT_NO_SCHEDULE)
    {
        out.push(Taint {
            key: key.to_string(),
            effect: EFFECT_NO_SCHEDULE.to_string(),
            time_added: Some(now),
            value: None,
        });
    }
    (out != existing).then_some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use karmada_api::cluster::{
        REASON_CLUSTER_NOT_READY, REASON_CLUSTER_READY, TAINT_CLUSTER_UNSCHEDULABLE,
    };

    fn cond(status: &str, reason: &str) -> Condition {
        Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            last_transition_time: now(),
            observed_generation: None,
        }
    }

    fn taint(key: &str) -> Taint {
        Taint {
            key: key.into(),
            effect: EFFECT_NO_SCHEDULE.into(),
            ..Default::default()
        }
    }

    fn keys(taints: &[Taint]) -> Vec<&str> {
        taints.iter().map(|t| t.key.as_str()).collect()
    }

    fn now() -> Time {
        Time(jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    #[test]
    fn taints_follow_the_ready_condition() {
        let cordoned = taint(TAINT_CLUSTER_UNSCHEDULABLE);
        // (existing, ready, expected keys afterwards)
        let table: Vec<(Vec<Taint>, Option<Condition>, Vec<&str>)> = vec![
            (vec![], None, vec![TAINT_CLUSTER_NOT_READY]),
            (vec![], Some(cond("True", REASON_CLUSTER_READY)), vec![]),
            (
                vec![],
                Some(cond("False", REASON_CLUSTER_NOT_READY)),
                vec![TAINT_CLUSTER_NOT_READY],
            ),
            (
                vec![],
                Some(cond("False", REASON_CLUSTER_NOT_REACHABLE)),
                vec![TAINT_CLUSTER_UNREACHABLE],
            ),
            (
                vec![],
                Some(cond("Unknown", "ClusterStatusUnknown")),
                vec![TAINT_CLUSTER_UNREACHABLE],
            ),
            (
                vec![cordoned.clone(), taint(TAINT_CLUSTER_UNREACHABLE)],
                Some(cond("True", REASON_CLUSTER_READY)),
                vec![TAINT_CLUSTER_UNSCHEDULABLE],
            ),
            (
                vec![taint(TAINT_CLUSTER_NOT_READY), cordoned.clone()],
                Some(cond("False", REASON_CLUSTER_NOT_REACHABLE)),
                vec![TAINT_CLUSTER_UNSCHEDULABLE, TAINT_CLUSTER_UNREACHABLE],
            ),
        ];
        for (existing, ready, want) in table {
            let got = desired_taints(&existing, ready.as_ref(), now()).unwrap_or(existing.clone());
            assert_eq!(
                keys(&got),
                want,
                "existing {:?} ready {:?}",
                keys(&existing),
                ready
            );
        }
    }

    #[test]
    fn no_change_is_none_and_user_no_execute_taints_stay() {
        let mut user = taint(TAINT_CLUSTER_NOT_READY);
        user.effect = "NoExecute".into();
        let existing = vec![user.clone(), taint(TAINT_CLUSTER_UNREACHABLE)];
        let ready = cond("False", REASON_CLUSTER_NOT_REACHABLE);
        assert_eq!(desired_taints(&existing, Some(&ready), now()), None);
        let healthy = desired_taints(&existing, Some(&cond("True", REASON_CLUSTER_READY)), now());
        assert_eq!(healthy, Some(vec![user]));
    }
}
