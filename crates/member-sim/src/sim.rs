//! Runs every controller over one snapshot, and (for tests and in-process use) drives a
//! snapshot to a fixed point or forward in time.
//!
//! Each controller sees the same snapshot; their writes are applied together. Because every
//! controller is level-triggered and idempotent, repeating passes at a fixed `now` reaches a
//! state where a pass writes nothing; [`settle`] reports an error if that takes more than
//! `max_passes` (a controller that never converges) or if writes conflict.

use jiff::Timestamp;

use crate::config::SimConfig;
use crate::faults::Faults;
use crate::naming::Randomness;
use crate::objects::{ApplyError, Objects, Write};
use crate::outcome::Outcome;
use crate::{
    daemonset, deployment, job, kubelet, mcs, nodes, replicaset, scheduler, services, statefulset,
    volumes,
};

/// One pass of every controller.
pub fn reconcile_all(
    objects: &Objects,
    config: &SimConfig,
    faults: &Faults,
    now: Timestamp,
    randomness: &mut dyn Randomness,
) -> Outcome {
    let mut outcome = nodes::reconcile(objects, config, faults, now);
    outcome.merge(scheduler::reconcile(objects, now));
    outcome.merge(kubelet::reconcile(objects, config, faults, now));
    outcome.merge(deployment::reconcile(objects, now));
    outcome.merge(replicaset::reconcile(objects, now, randomness));
    outcome.merge(statefulset::reconcile(objects, now));
    outcome.merge(volumes::reconcile(objects));
    outcome.merge(daemonset::reconcile(objects, now, randomness));
    outcome.merge(job::reconcile(objects, now, randomness));
    outcome.merge(services::reconcile(objects, config));
    outcome.merge(mcs::reconcile(objects));
    outcome
}

/// A simulation that did not converge or whose writes conflicted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SettleError {
    #[error("controllers still writing after {passes} passes; last writes: {last:?}")]
    NoFixedPoint { passes: usize, last: Vec<Write> },
    #[error("write {write:?} failed: {error}")]
    Conflict {
        write: Box<Write>,
        error: ApplyError,
    },
}

/// What a settled state asks for next.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settled {
    pub passes: usize,
    pub requeue_at: Option<Timestamp>,
    pub errors: Vec<String>,
}

/// Applies passes at `now` until one writes nothing.
pub fn settle(
    objects: &mut Objects,
    config: &SimConfig,
    faults: &Faults,
    now: Timestamp,
    randomness: &mut dyn Randomness,
    max_passes: usize,
) -> Result<Settled, SettleError> {
    settle_with(objects, now, max_passes, |objects| {
        reconcile_all(objects, config, faults, now, randomness)
    })
}

/// [`settle`] with any pass function (for driving a subset of controllers).
pub fn settle_with(
    objects: &mut Objects,
    now: Timestamp,
    max_passes: usize,
    mut pass: impl FnMut(&Objects) -> Outcome,
) -> Result<Settled, SettleError> {
    let mut last = Vec::new();
    for passes in 0..=max_passes {
        let outcome = pass(objects);
        if outcome.writes.is_empty() {
            return Ok(Settled {
                passes,
                requeue_at: outcome.requeue_at,
                errors: outcome.errors,
            });
        }
        for write in &outcome.writes {
            objects
                .apply(write, now)
                .map_err(|error| SettleError::Conflict {
                    write: Box::new(write.clone()),
                    error,
                })?;
        }
        last = outcome.writes;
    }
    Err(SettleError::NoFixedPoint {
        passes: max_passes,
        last,
    })
}

/// Settles at `start`, then at every requested wake-up time up to `until`; returns the time of
/// the last settled pass.
pub fn run_until(
    objects: &mut Objects,
    config: &SimConfig,
    faults: &Faults,
    start: Timestamp,
    until: Timestamp,
    randomness: &mut dyn Randomness,
) -> Result<Timestamp, SettleError> {
    let mut now = start;
    loop {
        let settled = settle(objects, config, faults, now, randomness, 50)?;
        match settled.requeue_at {
            Some(next) if next <= until && next > now => now = next,
            _ => return Ok(now),
        }
    }
}
