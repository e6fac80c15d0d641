//! A CronFederatedHPA's `status.executionHistories` (pure): one entry per rule, in the order the
//! rules were first seen, with the next execution time and the newest runs first, trimmed to the
//! rule's limits (Karmada's defaults: 3 of each).

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::autoscaling::{
    CronFederatedHPARule, CronFederatedHPAStatus, ExecutionHistory, FailedExecution,
    SuccessfulExecution,
};

const DEFAULT_HISTORY_LIMIT: i32 = 3;

/// A status time at `t`, to whole seconds as the API stores it.
pub fn time(t: Timestamp) -> Time {
    let seconds = t.as_second();
    Time(Timestamp::from_second(seconds).unwrap_or(t))
}

fn entry<'a>(status: &'a mut CronFederatedHPAStatus, rule: &str) -> &'a mut ExecutionHistory {
    let position = status
        .execution_histories
        .iter()
        .position(|h| h.rule_name == rule);
    let index = match position {
        Some(index) => index,
        None => {
            status.execution_histories.push(ExecutionHistory {
                rule_name: rule.to_string(),
                ..ExecutionHistory::default()
            });
            status.execution_histories.len() - 1
        }
    };
    &mut status.execution_histories[index]
}

/// Sets each rule's next execution time (adding entries for new rules) and drops the entries of
/// rules the object no longer has.
pub fn sync_rules(status: &mut CronFederatedHPAStatus, nexts: &[(&str, Option<Timestamp>)]) {
    status
        .execution_histories
        .retain(|h| nexts.iter().any(|(name, _)| *name == h.rule_name));
    for (rule, next) in nexts {
        entry(status, rule).next_execution_time = next.map(time);
    }
}

fn limit(value: Option<i32>) -> usize {
    usize::try_from(value.unwrap_or(DEFAULT_HISTORY_LIMIT)).unwrap_or(0)
}

/// Records a successful run of `rule` (what it applied is what the rule asks for).
pub fn record_success(
    status: &mut CronFederatedHPAStatus,
    rule: &CronFederatedHPARule,
    scheduled: Timestamp,
    executed: Timestamp,
    next: Option<Timestamp>,
) {
    let history = entry(status, &rule.name);
    history.successful_executions.insert(
        0,
        SuccessfulExecution {
            schedule_time: Some(time(scheduled)),
            execution_time: Some(time(executed)),
            applied_replicas: rule.target_replicas,
            applied_min_replicas: rule.target_min_replicas,
            applied_max_replicas: rule.target_max_replicas,
        },
    );
    history
        .successful_executions
        .truncate(limit(rule.successful_history_limit).max(1));
    history.next_execution_time = next.map(time);
}

/// Records a failed run of `rule` with why it failed.
pub fn record_failure(
    status: &mut CronFederatedHPAStatus,
    rule: &CronFederatedHPARule,
    scheduled: Timestamp,
    executed: Timestamp,
    next: Option<Timestamp>,
    message: &str,
) {
    let history = entry(status, &rule.name);
    history.failed_executions.insert(
        0,
        FailedExecution {
            schedule_time: Some(time(scheduled)),
            execution_time: Some(time(executed)),
            message: message.to_string(),
        },
    );
    history
        .failed_executions
        .truncate(limit(rule.failed_history_limit));
    history.next_execution_time = next.map(time);
}
