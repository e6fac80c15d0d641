//! The execution controller's successful conditions, handed to the work status controller so that a Work's
//! Applied condition and its first manifest statuses reach the API server as one status write.
//!
//! Why: every applied Work used to cost two status patches a few hundred milliseconds apart — Applied from
//! execution right after the apply, then `manifestStatuses` from the work status controller once the member's
//! watch reported the object — and each patch is a request, a commit and a watch event to every Work watcher.
//! The member's first report of an object it just created arrives within the work status controller's gathering
//! window, so the condition waits in that window and rides along with the statuses.
//!
//! Rules that keep it level-triggered and lossless:
//! - only a successful Applied is handed over; failures (member unreachable, apply refused) are written by
//!   execution at once, and writing them first drops anything pending for the Work, so an older success can
//!   never land over a newer failure;
//! - the work status controller merges the pending conditions by type into the Work it read and writes with
//!   that Work's resourceVersion; the entry is dropped only once a write carrying it succeeded (a 409 retries);
//! - when the work status controller cannot collect statuses (a member error), it writes the conditions alone;
//! - lost on a crash, the condition is written again by execution's reconcile of every Work after a restart,
//!   which finds it missing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::SinkExt;
use futures::channel::mpsc;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::queue::REQUEUE_CAPACITY;
use crate::runtime::runner::ObjectKey;

type Pending = Arc<Mutex<HashMap<ObjectKey, Vec<Condition>>>>;

/// Execution's end: leaves conditions for a Work and wakes the work status controller for it.
#[derive(Clone)]
pub struct ConditionHandoff {
    pending: Pending,
    wake: mpsc::Sender<ObjectKey>,
}

/// The work status controller's end: the Works woken by a handoff, and the conditions waiting for each.
pub struct HandoffReceiver {
    pub(crate) pending: PendingConditions,
    pub(crate) woken: mpsc::Receiver<ObjectKey>,
}

/// The conditions waiting to be written, as the work status controller reads them.
#[derive(Clone)]
pub struct PendingConditions(Pending);

/// A connected pair: what [`super::run_with_status`] wires between the two controllers.
pub fn condition_handoff() -> (ConditionHandoff, HandoffReceiver) {
    let pending = Pending::default();
    let (wake, woken) = mpsc::channel(REQUEUE_CAPACITY);
    (
        ConditionHandoff {
            pending: pending.clone(),
            wake,
        },
        HandoffReceiver {
            pending: PendingConditions(pending),
            woken,
        },
    )
}

impl ConditionHandoff {
    /// Leaves `conditions` (the Work's whole list as execution wants it) for the work status controller's next
    /// write of the Work; waits while its wake-up channel is full.
    pub async fn leave(&self, key: ObjectKey, conditions: Vec<Condition>) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(key.clone(), conditions);
        }
        let _ = self.wake.clone().send(key).await;
    }

    /// Forgets what is pending for `key`: execution is about to write the Work's conditions itself, or the
    /// Work is going away.
    pub fn withdraw(&self, key: &ObjectKey) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(key);
        }
    }
}

impl PendingConditions {
    /// What is pending for `key`, left in place until [`Self::written`].
    pub fn peek(&self, key: &ObjectKey) -> Option<Vec<Condition>> {
        self.0.lock().ok()?.get(key).cloned()
    }

    /// A write carrying `conditions` succeeded: drops them unless execution left newer ones meanwhile.
    pub fn written(&self, key: &ObjectKey, conditions: &[Condition]) {
        if let Ok(mut pending) = self.0.lock()
            && pending.get(key).is_some_and(|p| p == conditions)
        {
            pending.remove(key);
        }
    }

    /// Forgets what is pending for a Work that is gone or being deleted.
    pub fn forget(&self, key: &ObjectKey) {
        if let Ok(mut pending) = self.0.lock() {
            pending.remove(key);
        }
    }
}

/// `current` with each of `pending` set by type (pure): the conditions a write carrying both should hold.
/// `None` when nothing would change.
pub fn merged(current: &[Condition], pending: &[Condition]) -> Option<Vec<Condition>> {
    let mut conditions = current.to_vec();
    for condition in pending {
        match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
            Some(existing) => *existing = condition.clone(),
            None => conditions.push(condition.clone()),
        }
    }
    super::conditions::sort(&mut conditions);
    (conditions != current).then_some(conditions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(type_: &str, status: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::UNIX_EPOCH,
            ),
            message: String::new(),
            observed_generation: None,
            reason: "Tested".into(),
        }
    }

    #[test]
    fn pending_conditions_are_set_by_type_in_execution_order() {
        let current = vec![condition("Dispatching", "True"), condition("Other", "True")];
        let pending = vec![
            condition("Applied", "True"),
            condition("Dispatching", "True"),
        ];
        let written = merged(&current, &pending).expect("Applied is new");
        let types: Vec<&str> = written.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Applied", "Dispatching", "Other"]);
        assert_eq!(merged(&written, &pending), None, "nothing left to change");
    }

    #[tokio::test]
    async fn a_write_drops_only_the_conditions_it_carried() {
        let (handoff, mut receiver) = condition_handoff();
        let key = ObjectKey::new(Some("karmada-es-a"), "w");
        let first = vec![condition("Applied", "True")];
        handoff.leave(key.clone(), first.clone()).await;
        assert_eq!(
            futures::StreamExt::next(&mut receiver.woken).await,
            Some(key.clone())
        );
        let newer = vec![condition("Applied", "False")];
        handoff.leave(key.clone(), newer.clone()).await;
        receiver.pending.written(&key, &first);
        assert_eq!(receiver.pending.peek(&key), Some(newer.clone()));
        receiver.pending.written(&key, &newer);
        assert_eq!(receiver.pending.peek(&key), None);
        handoff.leave(key.clone(), first).await;
        handoff.withdraw(&key);
        assert_eq!(receiver.pending.peek(&key), None);
    }
}
