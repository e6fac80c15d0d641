//! The scheduling framework: the [`Plugin`] trait, the [`Registry`] of plugin constructors, and
//! [`Framework`]s built from Karmada's defaults or a [`SchedulerProfile`].

mod plugin;
mod profile;
mod registry;
mod selection;

pub use plugin::{
    AffinityInForce, AffinityMatch, MAX_CLUSTER_SCORE, MIN_CLUSTER_SCORE, Plugin, Rejection,
    SchedulingContext, Verdict,
};
pub use profile::{
    DEFAULT_PLUGINS, DEFAULT_SCHEDULER_NAME, Framework, ProfileProblem, SchedulerProfile,
    WeightedPlugin, admission_problems,
};
pub use registry::{ArgsError, Registry};
pub use selection::PluginSelection;
