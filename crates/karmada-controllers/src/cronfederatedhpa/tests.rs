//! The planner and the history against fixed times.

#![allow(clippy::unwrap_used)]

use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference;
use karmada_api::autoscaling::{CronFederatedHPARule, CronFederatedHPAStatus};

use super::history;
use super::plan::{RuleState, Step, step, wait_until_next};

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn rule(schedule: &str) -> CronFederatedHPARule {
    CronFederatedHPARule {
        name: "r".into(),
        schedule: schedule.into(),
        target_replicas: Some(3),
        ..CronFederatedHPARule::default()
    }
}

fn deployment(name: &str) -> CrossVersionObjectReference {
    CrossVersionObjectReference {
        api_version: Some("apps/v1".into()),
        kind: "Deployment".into(),
        name: name.into(),
    }
}

fn started(rule: &CronFederatedHPARule, next: Option<&str>) -> RuleState {
    RuleState {
        rule: rule.clone(),
        target: deployment("web"),
        next: next.map(at),
    }
}

#[test]
fn steps_at_fixed_times() {
    let every_5 = rule("*/5 * * * *");
    let mut suspended = every_5.clone();
    suspended.suspend = Some(true);
    let mut changed = every_5.clone();
    changed.target_replicas = Some(7);
    let mut tokyo = rule("0 9 * * *");
    tokyo.time_zone = Some("Asia/Tokyo".into());
    let mut bad_zone = every_5.clone();
    bad_zone.time_zone = Some("Nowhere/Land".into());
    let known = started(&every_5, Some("2026-03-01T10:05:00Z"));
    let cases: Vec<(&str, &CronFederatedHPARule, Option<RuleState>, &str, Step)> = vec![
        (
            "first sight: starts from now, nothing runs",
            &every_5,
            None,
            "2026-03-01T10:03:10Z",
            Step::Start {
                next: Some(at("2026-03-01T10:05:00Z")),
            },
        ),
        (
            "before its time: waits",
            &every_5,
            Some(known.clone()),
            "2026-03-01T10:04:59Z",
            Step::Wait {
                next: Some(at("2026-03-01T10:05:00Z")),
            },
        ),
        (
            "at its time: fires, next from now",
            &every_5,
            Some(known.clone()),
            "2026-03-01T10:05:00.010Z",
            Step::Fire {
                scheduled: at("2026-03-01T10:05:00Z"),
                next: Some(at("2026-03-01T10:10:00Z")),
            },
        ),
        (
            "overslept three fire times: one run, the missed ones skipped",
            &every_5,
            Some(known.clone()),
            "2026-03-01T10:21:00Z",
            Step::Fire {
                scheduled: at("2026-03-01T10:05:00Z"),
                next: Some(at("2026-03-01T10:25:00Z")),
            },
        ),
        (
            "after a restart (no state): the missed time is skipped",
            &every_5,
            None,
            "2026-03-01T10:21:00Z",
            Step::Start {
                next: Some(at("2026-03-01T10:25:00Z")),
            },
        ),
        (
            "rule changed: restarts from now, even when the old time was due",
            &changed,
            Some(known.clone()),
            "2026-03-01T10:06:00Z",
            Step::Start {
                next: Some(at("2026-03-01T10:10:00Z")),
            },
        ),
        (
            "suspended: nothing planned",
            &suspended,
            Some(known.clone()),
            "2026-03-01T10:06:00Z",
            Step::Suspended,
        ),
        (
            "09:00 in Tokyo is 00:00 UTC",
            &tokyo,
            None,
            "2026-03-01T01:00:00Z",
            Step::Start {
                next: Some(at("2026-03-02T00:00:00Z")),
            },
        ),
    ];
    for (what, rule, state, now, expected) in cases {
        assert_eq!(
            step(
                rule,
                &deployment("web"),
                state.as_ref(),
                &TimeZone::UTC,
                at(now)
            ),
            expected,
            "{what}"
        );
    }
    assert!(matches!(
        step(
            &bad_zone,
            &deployment("web"),
            None,
            &TimeZone::UTC,
            at("2026-03-01T10:00:00Z")
        ),
        Step::Invalid(_)
    ));
    // A new target restarts every rule.
    assert_eq!(
        step(
            &every_5,
            &deployment("api"),
            Some(&known),
            &TimeZone::UTC,
            at("2026-03-01T10:06:00Z")
        ),
        Step::Start {
            next: Some(at("2026-03-01T10:10:00Z"))
        }
    );
    // Without timeZone the controller's zone applies.
    let shanghai = karmada_api::cron_schedule::zone("Asia/Shanghai").unwrap();
    assert_eq!(
        step(
            &rule("0 8 * * *"),
            &deployment("web"),
            None,
            &shanghai,
            at("2026-03-01T01:00:00Z")
        ),
        Step::Start {
            next: Some(at("2026-03-02T00:00:00Z"))
        }
    );
}

#[test]
fn a_fired_rule_keeps_its_state_and_a_suspended_one_drops_it() {
    let r = rule("*/5 * * * *");
    let fire = Step::Fire {
        scheduled: at("2026-03-01T10:05:00Z"),
        next: Some(at("2026-03-01T10:10:00Z")),
    };
    assert_eq!(
        fire.state(&r, &deployment("web")),
        Some(started(&r, Some("2026-03-01T10:10:00Z")))
    );
    assert_eq!(Step::Suspended.state(&r, &deployment("web")), None);
    assert_eq!(Step::Suspended.next(), None);
}

#[test]
fn the_wait_is_until_the_earliest_fire_time() {
    let now = at("2026-03-01T10:00:00Z");
    let floor = std::time::Duration::from_millis(10);
    assert_eq!(
        wait_until_next(
            [
                Some(at("2026-03-01T10:05:00Z")),
                None,
                Some(at("2026-03-01T10:00:30Z"))
            ],
            now,
            floor
        ),
        Some(std::time::Duration::from_secs(30))
    );
    assert_eq!(
        wait_until_next([Some(at("2026-03-01T09:59:00Z"))], now, floor),
        Some(floor)
    );
    assert_eq!(wait_until_next([None, None], now, floor), None);
}

#[test]
fn history_newest_first_within_limits() {
    let mut r = rule("*/5 * * * *");
    r.successful_history_limit = Some(2);
    r.failed_history_limit = Some(0);
    let mut status = CronFederatedHPAStatus::default();
    history::sync_rules(
        &mut status,
        &[("r", Some(at("2026-03-01T10:05:00Z"))), ("s", None)],
    );
    assert_eq!(status.execution_histories.len(), 2);
    for minute in [5, 10, 15] {
        let scheduled = at(&format!("2026-03-01T10:{minute:02}:00Z"));
        let executed = at(&format!("2026-03-01T10:{minute:02}:00.400Z"));
        let next = at(&format!("2026-03-01T10:{:02}:00Z", minute + 5));
        history::record_success(&mut status, &r, scheduled, executed, Some(next));
    }
    history::record_failure(
        &mut status,
        &r,
        at("2026-03-01T10:20:00Z"),
        at("2026-03-01T10:20:01Z"),
        None,
        "boom",
    );
    let entry = &status.execution_histories[0];
    assert_eq!(entry.rule_name, "r");
    let scheduled: Vec<String> = entry
        .successful_executions
        .iter()
        .map(|e| e.schedule_time.as_ref().unwrap().0.to_string())
        .collect();
    assert_eq!(scheduled, ["2026-03-01T10:15:00Z", "2026-03-01T10:10:00Z"]);
    assert_eq!(entry.successful_executions[0].applied_replicas, Some(3));
    // whole seconds, as the API stores times
    assert_eq!(
        entry.successful_executions[0]
            .execution_time
            .as_ref()
            .unwrap()
            .0,
        at("2026-03-01T10:15:00Z")
    );
    assert!(
        entry.failed_executions.is_empty(),
        "failedHistoryLimit 0 keeps none"
    );
    assert_eq!(entry.next_execution_time, None);

    r.failed_history_limit = Some(3);
    for i in 0..4 {
        history::record_failure(
            &mut status,
            &r,
            at("2026-03-01T10:25:00Z"),
            at("2026-03-01T10:25:01Z"),
            None,
            &format!("e{i}"),
        );
    }
    let messages: Vec<&str> = status.execution_histories[0]
        .failed_executions
        .iter()
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(messages, ["e3", "e2", "e1"]);

    // A removed rule's history goes; a kept one keeps its runs.
    history::sync_rules(&mut status, &[("r", Some(at("2026-03-01T10:30:00Z")))]);
    assert_eq!(status.execution_histories.len(), 1);
    assert_eq!(status.execution_histories[0].successful_executions.len(), 2);
    assert_eq!(
        status.execution_histories[0]
            .next_execution_time
            .as_ref()
            .unwrap()
            .0,
        at("2026-03-01T10:30:00Z")
    );
}
