//! The Ready condition of a cluster: what one probe observed, when that observation may be published, and when
//! a Pull cluster's silent agent makes it Unknown.
//!
//! A flip of Ready is only published once the new status has been observed continuously for the success
//! threshold (to True) or the failure threshold (to False/Unknown), so that one slow probe does not taint a
//! cluster. A cluster with no Ready condition yet gets the observation at once.
//!
//! Pure: the caller passes the clock.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::cluster::{
    CONDITION_READY, MESSAGE_CLUSTER_NOT_REACHABLE, MESSAGE_CLUSTER_READY,
    REASON_CLUSTER_NOT_REACHABLE, REASON_CLUSTER_NOT_READY, REASON_CLUSTER_READY,
    REASON_CLUSTER_STATUS_NEVER_UPDATED, REASON_CLUSTER_STATUS_UNKNOWN,
};

/// Message of Ready=False when the member answers but its health endpoints are not OK.
pub const MESSAGE_CLUSTER_NOT_HEALTHY: &str =
    "cluster is reachable but health endpoint responded without ok";

/// What probing `/readyz` (then `/healthz`) found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// An endpoint answered `ok`.
    Healthy,
    /// The member answered, but not `ok`.
    Unhealthy,
    /// No answer (connection refused, timeout, TLS failure).
    Unreachable,
}

/// The Ready condition a probe outcome stands for, stamped with `now`.
pub fn observed_ready_condition(
    outcome: ProbeOutcome,
    generation: i64,
    now: Timestamp,
) -> Condition {
    let (status, reason, message) = match outcome {
        ProbeOutcome::Healthy => ("True", REASON_CLUSTER_READY, MESSAGE_CLUSTER_READY),
        ProbeOutcome::Unhealthy => (
            "False",
            REASON_CLUSTER_NOT_READY,
            MESSAGE_CLUSTER_NOT_HEALTHY,
        ),
        ProbeOutcome::Unreachable => (
            "False",
            REASON_CLUSTER_NOT_REACHABLE,
            MESSAGE_CLUSTER_NOT_REACHABLE,
        ),
    };
    Condition {
        type_: CONDITION_READY.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_transition_time: Time(now),
        observed_generation: Some(generation),
    }
}

/// Thresholds of a flip of Ready.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// How long a healthy observation must persist before Ready turns True.
    pub success: SignedDuration,
    /// How long an unhealthy observation must persist before Ready turns False.
    pub failure: SignedDuration,
}

/// Remembers, per cluster, since when the current observation has differed from the published condition.
#[derive(Clone, Debug, Default)]
pub struct ReadyDebouncer {
    pending: Option<(String, Timestamp)>,
}

impl ReadyDebouncer {
    /// The Ready condition to publish given the published one and a fresh observation at `now`. When the
    /// status is unchanged the published transition time is kept, so `lastTransitionTime` means what it says.
    ///
    /// The observation's `lastTransitionTime` is when it was made: a probe that found the member
    /// unreachable stamps its start, since the member was failing from then on, so the threshold counts
    /// from the start of the first failing probe, not from its timeout.
    ///
    /// Calling it again with the same observation (a status write that lost a race and is redone on a
    /// fresh Cluster) gives the same answer: a flip keeps the pending window until the published status
    /// catches up.
    pub fn adjust(
        &mut self,
        published: Option<&Condition>,
        observed: Condition,
        thresholds: Thresholds,
        now: Timestamp,
    ) -> Condition {
        let Some(published) = published else {
            self.pending = None;
            return observed;
        };
        if published.status == observed.status {
            self.pending = None;
            return Condition {
                last_transition_time: published.last_transition_time.clone(),
                ..observed
            };
        }
        let observed_at = observed.last_transition_time.0;
        let since = match &self.pending {
            Some((status, since)) if *status == observed.status => *since,
            _ => {
                self.pending = Some((observed.status.clone(), observed_at));
                observed_at
            }
        };
        let threshold = if observed.status == "True" {
            thresholds.success
        } else {
            thresholds.failure
        };
        // Unknown → anything is immediate: nothing was known to debounce against.
        if published.status == "Unknown" || now.duration_since(since) >= threshold {
            observed
        } else {
            published.clone()
        }
    }
}

/// Message of Ready=Unknown when a Pull cluster's agent went silent.
pub const MESSAGE_CLUSTER_STATUS_UNKNOWN: &str =
    "Cluster status controller stopped posting cluster status.";
/// Message of Ready=Unknown when a Pull cluster's agent never posted a status.
pub const MESSAGE_CLUSTER_STATUS_NEVER_UPDATED: &str =
    "Cluster status controller never posted cluster status.";

/// How long a Pull cluster's agent may stay silent (docs/karmada.md, "Cluster health and taints").
#[derive(Clone, Copy, Debug)]
pub struct MonitorGrace {
    /// `--cluster-monitor-grace-period` (40 s): silence after the agent has posted a status.
    pub grace: SignedDuration,
    /// `--cluster-startup-grace-period` (60 s): silence of an agent that never posted one.
    pub startup: SignedDuration,
}

impl Default for MonitorGrace {
    fn default() -> Self {
        Self {
            grace: SignedDuration::from_secs(40),
            startup: SignedDuration::from_secs(60),
        }
    }
}

/// The Ready condition the cluster controller must write for a Pull cluster, if any: Unknown once
/// neither the status (Ready's last transition) nor the Lease (its renew time) moved within the
/// grace period, measured from the Cluster's creation when nothing was ever posted. `None` when
/// the agent is alive or Ready is Unknown already (the write would change nothing).
pub fn pull_monitor_condition(
    published: Option<&Condition>,
    lease_renewed: Option<Timestamp>,
    created: Timestamp,
    generation: i64,
    grace: MonitorGrace,
    now: Timestamp,
) -> Option<Condition> {
    let (since, limit, reason, message) = match published {
        None => (
            lease_renewed.map_or(created, |renewed| renewed.max(created)),
            grace.startup,
            REASON_CLUSTER_STATUS_NEVER_UPDATED,
            MESSAGE_CLUSTER_STATUS_NEVER_UPDATED,
        ),
        Some(ready) if ready.status == "Unknown" => return None,
        Some(ready) => {
            let posted = ready.last_transition_time.0;
            (
                lease_renewed.map_or(posted, |renewed| renewed.max(posted)),
                grace.grace,
                REASON_CLUSTER_STATUS_UNKNOWN,
                MESSAGE_CLUSTER_STATUS_UNKNOWN,
            )
        }
    };
    (now.duration_since(since) >= limit).then(|| Condition {
        type_: CONDITION_READY.to_string(),
        status: "Unknown".to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_transition_time: Time(now),
        observed_generation: Some(generation),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pull_monitor_turns_silent_agents_unknown() {
        let grace = MonitorGrace {
            grace: SignedDuration::from_secs(40),
            startup: SignedDuration::from_secs(60),
        };
        let ready = observed_ready_condition(ProbeOutcome::Healthy, 1, at(0));
        let mut unknown = ready.clone();
        unknown.status = "Unknown".into();
        // (published, lease renewed, now, expected reason)
        type Case<'a> = (Option<&'a Condition>, Option<i64>, i64, Option<&'a str>);
        let cases: Vec<Case<'_>> = vec![
            (Some(&ready), Some(30), 60, None),
            (
                Some(&ready),
                Some(30),
                70,
                Some(REASON_CLUSTER_STATUS_UNKNOWN),
            ),
            (Some(&ready), None, 39, None),
            (Some(&ready), None, 40, Some(REASON_CLUSTER_STATUS_UNKNOWN)),
            (Some(&unknown), None, 1000, None),
            (None, None, 59, None),
            (None, None, 60, Some(REASON_CLUSTER_STATUS_NEVER_UPDATED)),
            (None, Some(50), 100, None),
            (
                None,
                Some(50),
                110,
                Some(REASON_CLUSTER_STATUS_NEVER_UPDATED),
            ),
        ];
        for (published, renewed, now, want) in cases {
            let got = pull_monitor_condition(published, renewed.map(at), at(0), 1, grace, at(now));
            assert_eq!(
                got.as_ref().map(|c| c.reason.as_str()),
                want,
                "{published:?} {renewed:?} {now}"
            );
            if let Some(c) = got {
                assert_eq!(c.status, "Unknown");
                assert_eq!(c.last_transition_time, Time(at(now)));
            }
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    const T: Thresholds = Thresholds {
        success: SignedDuration::from_secs(30),
        failure: SignedDuration::from_secs(30),
    };

    #[test]
    fn first_observation_is_published_at_once() {
        let mut d = ReadyDebouncer::default();
        let got = d.adjust(
            None,
            observed_ready_condition(ProbeOutcome::Unreachable, 1, at(0)),
            T,
            at(0),
        );
        assert_eq!(
            (got.status.as_str(), got.reason.as_str()),
            ("False", REASON_CLUSTER_NOT_REACHABLE)
        );
    }

    #[test]
    fn flip_waits_for_the_threshold() {
        let mut d = ReadyDebouncer::default();
        let ready = observed_ready_condition(ProbeOutcome::Healthy, 1, at(0));
        // (probe time, outcome, expected published status)
        let table = [
            (10, ProbeOutcome::Unreachable, "True"),
            (25, ProbeOutcome::Unhealthy, "True"),
            (39, ProbeOutcome::Unreachable, "True"),
            (40, ProbeOutcome::Unreachable, "False"),
        ];
        let mut published = ready;
        for (second, outcome, want) in table {
            let observed = observed_ready_condition(outcome, 1, at(second));
            published = d.adjust(Some(&published), observed, T, at(second));
            assert_eq!(published.status, want, "at {second}s");
        }
        assert_eq!(published.last_transition_time, Time(at(40)));
    }

    #[test]
    fn a_healthy_probe_resets_a_pending_failure() {
        let mut d = ReadyDebouncer::default();
        let ready = observed_ready_condition(ProbeOutcome::Healthy, 1, at(0));
        let p = d.adjust(
            Some(&ready),
            observed_ready_condition(ProbeOutcome::Unreachable, 1, at(10)),
            T,
            at(10),
        );
        let p = d.adjust(
            Some(&p),
            observed_ready_condition(ProbeOutcome::Healthy, 1, at(20)),
            T,
            at(20),
        );
        assert_eq!(
            p.last_transition_time,
            Time(at(0)),
            "unchanged status keeps its transition time"
        );
        let p = d.adjust(
            Some(&p),
            observed_ready_condition(ProbeOutcome::Unreachable, 1, at(45)),
            T,
            at(45),
        );
        assert_eq!(p.status, "True", "the failure window restarted at 45s");
    }

    const FAST: Thresholds = Thresholds {
        success: SignedDuration::from_secs(5),
        failure: SignedDuration::from_secs(5),
    };

    #[test]
    fn failure_is_counted_from_the_start_of_the_failing_probe() {
        let mut d = ReadyDebouncer::default();
        let ready = observed_ready_condition(ProbeOutcome::Healthy, 1, at(0));
        // (probe start, probe end, outcome, expected published status)
        let table = [
            // Timed out after 4 s: failing for 4 s only.
            (10, 14, ProbeOutcome::Unreachable, "True"),
            // The next probe: failing since 10, i.e. 11 s by its end.
            (20, 21, ProbeOutcome::Unreachable, "False"),
        ];
        let mut published = ready.clone();
        for (start, end, outcome, want) in table {
            let observed = observed_ready_condition(outcome, 1, at(start));
            published = d.adjust(Some(&published), observed, FAST, at(end));
            assert_eq!(published.status, want, "probe {start}..{end}s");
        }
        assert_eq!(published.last_transition_time, Time(at(20)));

        // A probe that started at 10 and timed out at 15 already covers the whole 5 s threshold.
        let mut d = ReadyDebouncer::default();
        let observed = observed_ready_condition(ProbeOutcome::Unreachable, 1, at(10));
        let got = d.adjust(Some(&ready), observed, FAST, at(15));
        assert_eq!(
            (got.status.as_str(), got.reason.as_str()),
            ("False", REASON_CLUSTER_NOT_REACHABLE)
        );
        assert_eq!(got.last_transition_time, Time(at(10)));
    }

    #[test]
    fn redoing_a_lost_write_gives_the_same_answer() {
        let mut d = ReadyDebouncer::default();
        let ready = observed_ready_condition(ProbeOutcome::Healthy, 1, at(0));
        let failing = |s| observed_ready_condition(ProbeOutcome::Unreachable, 1, at(s));
        let first = d.adjust(Some(&ready), failing(10), FAST, at(11));
        assert_eq!(first.status, "True");
        let flipped = d.adjust(Some(&ready), failing(20), FAST, at(21));
        assert_eq!(flipped.status, "False");
        // The write of `flipped` conflicted; the round is redone on a re-read Cluster still saying True.
        let again = d.adjust(Some(&ready), failing(20), FAST, at(22));
        assert_eq!(again, flipped);
        // Once published, the window is closed.
        let settled = d.adjust(Some(&flipped), failing(30), FAST, at(31));
        assert_eq!(settled.last_transition_time, Time(at(20)));
    }

    #[test]
    fn unknown_flips_immediately() {
        let mut d = ReadyDebouncer::default();
        let mut unknown = observed_ready_condition(ProbeOutcome::Healthy, 1, at(0));
        unknown.status = "Unknown".into();
        let p = d.adjust(
            Some(&unknown),
            observed_ready_condition(ProbeOutcome::Unreachable, 1, at(1)),
            T,
            at(1),
        );
        assert_eq!(p.status, "False");
    }
}
