//! When each rule of a CronFederatedHPA runs (pure: the time and the zone of rules without
//! `timeZone` are arguments).
//!
//! Karmada starts an in-process cron scheduler per rule when it first sees the rule (or the rule,
//! or the object's target, changed) and stops it when the rule is suspended or removed. A scheduler
//! starts from the present: times that passed while no scheduler ran (the controller was down, the
//! rule was suspended) are skipped, never caught up. A scheduler that fires computes its next time
//! from the moment it ran, so a run that comes late skips the fire times it overslept too. The
//! planner keeps the same contract with one [`RuleState`] per running rule.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference;
use karmada_api::autoscaling::CronFederatedHPARule;
use karmada_api::cron_schedule::{RuleSchedule, ScheduleError};

/// A started rule: what it was started with and when it fires next.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleState {
    pub rule: CronFederatedHPARule,
    pub target: CrossVersionObjectReference,
    /// `None`: the schedule never fires again.
    pub next: Option<Timestamp>,
}

/// What to do with one rule now.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// (Re)start: nothing runs now; the first fire is `next`.
    Start { next: Option<Timestamp> },
    /// Not due yet.
    Wait { next: Option<Timestamp> },
    /// Due: run the rule for the fire time `scheduled`; the one after is `next`.
    Fire {
        scheduled: Timestamp,
        next: Option<Timestamp>,
    },
    /// Suspended: no scheduler, no next time.
    Suspended,
    /// The schedule or zone cannot be read (admission refuses these; an object stored before
    /// validation existed can still have one).
    Invalid(ScheduleError),
}

impl Step {
    /// The rule's state after this step (`None`: not running).
    pub fn state(
        &self,
        rule: &CronFederatedHPARule,
        target: &CrossVersionObjectReference,
    ) -> Option<RuleState> {
        let next = match self {
            Step::Start { next } | Step::Wait { next } | Step::Fire { next, .. } => *next,
            Step::Suspended | Step::Invalid(_) => return None,
        };
        Some(RuleState {
            rule: rule.clone(),
            target: target.clone(),
            next,
        })
    }

    /// The next execution time the status shows.
    pub fn next(&self) -> Option<Timestamp> {
        match self {
            Step::Start { next } | Step::Wait { next } | Step::Fire { next, .. } => *next,
            Step::Suspended | Step::Invalid(_) => None,
        }
    }
}

/// The step of `rule` (of an object targeting `target`) at `now`, given its state so far.
pub fn step(
    rule: &CronFederatedHPARule,
    target: &CrossVersionObjectReference,
    state: Option<&RuleState>,
    local_zone: &TimeZone,
    now: Timestamp,
) -> Step {
    if rule.suspend.unwrap_or(false) {
        return Step::Suspended;
    }
    let schedule = match RuleSchedule::parse(&rule.schedule, rule.time_zone.as_deref(), local_zone)
    {
        Ok(schedule) => schedule,
        Err(error) => return Step::Invalid(error),
    };
    match state {
        Some(state) if state.rule == *rule && state.target == *target => match state.next {
            Some(due) if due <= now => Step::Fire {
                scheduled: due,
                next: schedule.next_after(now),
            },
            next => Step::Wait { next },
        },
        // New, changed, or retargeted: a fresh scheduler, from now.
        _ => Step::Start {
            next: schedule.next_after(now),
        },
    }
}

/// How long until the earliest of `nexts`, at least `floor` (so a timer that wakes a little early
/// does not spin); `None` when nothing is planned.
pub fn wait_until_next(
    nexts: impl IntoIterator<Item = Option<Timestamp>>,
    now: Timestamp,
    floor: std::time::Duration,
) -> Option<std::time::Duration> {
    let earliest = nexts.into_iter().flatten().min()?;
    let wait = earliest
        .duration_since(now)
        .try_into()
        .unwrap_or(std::time::Duration::ZERO);
    Some(wait.max(floor))
}
