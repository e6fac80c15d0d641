//! The Work conditions the execution controller writes (pure): Applied and Dispatching, with Karmada's reasons
//! and messages (docs/karmada.md, "Bindings and Works").

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::work::{
    MESSAGE_APPLIED_SUCCESSFUL, REASON_APPLIED_FAILED, REASON_APPLIED_SUCCESSFUL,
    REASON_DISPATCHING, REASON_SUSPEND_DISPATCHING, WORK_CONDITION_APPLIED,
    WORK_CONDITION_DISPATCHING,
};

fn condition(
    type_: &str,
    ok: bool,
    reason: &str,
    message: String,
    generation: i64,
    now: Timestamp,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: if ok { "True" } else { "False" }.to_string(),
        reason: reason.to_string(),
        message,
        observed_generation: (generation > 0).then_some(generation),
        last_transition_time: Time(now),
    }
}

/// Applied from the outcome of each manifest (`Err` carries the member's message).
pub fn applied(outcomes: &[Result<(), String>], generation: i64, now: Timestamp) -> Condition {
    let failures: Vec<&str> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().err().map(String::as_str))
        .collect();
    if failures.is_empty() {
        return condition(
            WORK_CONDITION_APPLIED,
            true,
            REASON_APPLIED_SUCCESSFUL,
            MESSAGE_APPLIED_SUCCESSFUL.to_string(),
            generation,
            now,
        );
    }
    failed(
        &format!(
            "Failed to apply all manifests ({}/{}): {}",
            outcomes.len() - failures.len(),
            outcomes.len(),
            failures.join("; ")
        ),
        generation,
        now,
    )
}

/// Applied=False with `message` (e.g. the cluster is not ready or unreachable).
pub fn failed(message: &str, generation: i64, now: Timestamp) -> Condition {
    condition(
        WORK_CONDITION_APPLIED,
        false,
        REASON_APPLIED_FAILED,
        message.to_string(),
        generation,
        now,
    )
}

/// Dispatching: True while dispatching, False while suspended.
pub fn dispatching(suspended: bool, generation: i64, now: Timestamp) -> Condition {
    if suspended {
        condition(
            WORK_CONDITION_DISPATCHING,
            false,
            REASON_SUSPEND_DISPATCHING,
            "Work dispatching is in a suspended state.".to_string(),
            generation,
            now,
        )
    } else {
        condition(
            WORK_CONDITION_DISPATCHING,
            true,
            REASON_DISPATCHING,
            "Work is being dispatched to member clusters.".to_string(),
            generation,
            now,
        )
    }
}

/// Sets `new` in `conditions` (keeping the transition time when the status is unchanged); whether anything
/// other than the time changed.
pub fn upsert(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            let changed = *existing != new;
            *existing = new;
            changed
        }
        None => {
            conditions.push(new);
            true
        }
    }
}

/// Whether `conditions` say every manifest was applied at `generation`: the Work's member objects said what it
/// says when execution last applied it.
pub fn applied_at(conditions: &[Condition], generation: i64) -> bool {
    conditions.iter().any(|c| {
        c.type_ == WORK_CONDITION_APPLIED
            && c.status == "True"
            && c.observed_generation == (generation > 0).then_some(generation)
    })
}

/// Execution's conditions first, in a stable order for readers: Applied, then Dispatching, then the others.
pub fn sort(conditions: &mut [Condition]) {
    conditions.sort_by_key(|c| match c.type_.as_str() {
        WORK_CONDITION_APPLIED => 0,
        WORK_CONDITION_DISPATCHING => 1,
        _ => 2,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn applied_reports_successes_over_total_and_every_message() {
        let c = applied(&[Ok(()), Err("boom".into()), Err("bang".into())], 3, at(1));
        assert_eq!(c.status, "False");
        assert_eq!(c.reason, "AppliedFailed");
        assert_eq!(c.message, "Failed to apply all manifests (1/3): boom; bang");
        assert_eq!(c.observed_generation, Some(3));
        let ok = applied(&[Ok(())], 1, at(1));
        assert_eq!(
            (ok.status.as_str(), ok.reason.as_str()),
            ("True", "AppliedSuccessful")
        );
        assert_eq!(ok.message, "Manifest has been successfully applied");
    }

    #[test]
    fn applied_at_needs_a_success_of_that_generation() {
        let ok = applied(&[Ok(())], 2, at(1));
        assert!(applied_at(std::slice::from_ref(&ok), 2));
        assert!(
            !applied_at(std::slice::from_ref(&ok), 3),
            "an older generation"
        );
        assert!(!applied_at(&[failed("down", 2, at(1))], 2), "a failure");
        assert!(
            !applied_at(&[dispatching(false, 2, at(1))], 2),
            "another condition"
        );
        assert!(!applied_at(&[], 2));
    }

    #[test]
    fn upsert_keeps_transition_time_and_reports_changes() {
        let mut conditions = vec![];
        assert!(upsert(&mut conditions, applied(&[Ok(())], 1, at(1))));
        assert!(!upsert(&mut conditions, applied(&[Ok(())], 1, at(5))));
        assert_eq!(conditions[0].last_transition_time, Time(at(1)));
        assert!(upsert(&mut conditions, failed("down", 1, at(9))));
        assert_eq!(conditions[0].last_transition_time, Time(at(9)));
        assert!(upsert(&mut conditions, dispatching(true, 1, at(9))));
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[1].reason, "SuspendDispatching");
    }
}
