//! What a scheduling decision reports about its own running time, for Karmada's scheduler metrics: each step of
//! the algorithm (`scheduling_algorithm_duration_seconds{schedule_step}`), each run of an extension point
//! (`framework_extension_point_duration_seconds`) and each plugin call (`plugin_execution_duration_seconds`).
//!
//! The core reads no clock: it asks the caller's [`Recorder`] for a mark before a timed unit and hands it back
//! after, so the live runner times with `Instant` while `plan`, the tests and the property tests pass `()`, whose
//! marks are nothing and whose reports compile away.

use std::sync::Arc;

/// Karmada's `schedule_step` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Filter,
    Score,
    Select,
    AssignReplicas,
}

impl Step {
    pub const ALL: [Step; 4] = [
        Step::Filter,
        Step::Score,
        Step::Select,
        Step::AssignReplicas,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::Filter => "Filter",
            Step::Score => "Score",
            Step::Select => "Select",
            Step::AssignReplicas => "AssignReplicas",
        }
    }
}

/// Karmada's `extension_point` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtensionPoint {
    Filter,
    Score,
}

impl ExtensionPoint {
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionPoint::Filter => "Filter",
            ExtensionPoint::Score => "Score",
        }
    }
}

/// Karmada's result codes (`result` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    Success,
    Unschedulable,
    Error,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Unschedulable => "Unschedulable",
            Code::Error => "Error",
        }
    }
}

/// Receives the timings of one decision.
pub trait Recorder {
    /// A point in time, as the recorder keeps it.
    type Mark: Copy;

    /// Now.
    fn mark(&mut self) -> Self::Mark;

    /// Whether plugin calls are timed in this decision (timing every call costs two clock reads per plugin and
    /// cluster, so a recorder may sample).
    fn times_plugins(&self) -> bool;

    /// A step of the algorithm ran from `since` until now.
    fn step(&mut self, since: Self::Mark, step: Step);

    /// All plugins of `point` ran (for one cluster at Filter, for every feasible cluster at Score).
    fn extension_point(&mut self, since: Self::Mark, point: ExtensionPoint, code: Code);

    /// Plugin `plugin` ran at `point`.
    fn plugin(&mut self, since: Self::Mark, point: ExtensionPoint, plugin: &Arc<str>, code: Code);
}

/// Records nothing.
impl Recorder for () {
    type Mark = ();

    fn mark(&mut self) {}

    fn times_plugins(&self) -> bool {
        false
    }

    fn step(&mut self, _since: (), _step: Step) {}

    fn extension_point(&mut self, _since: (), _point: ExtensionPoint, _code: Code) {}

    fn plugin(&mut self, _since: (), _point: ExtensionPoint, _plugin: &Arc<str>, _code: Code) {}
}
