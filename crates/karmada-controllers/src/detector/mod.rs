//! The resource detector's pure core: which templates are propagated at all ([`skip`]), which
//! (Cluster)PropagationPolicy claims a template ([`matching`]), the claim metadata written on the template
//! ([`claim`]) and the (Cluster)ResourceBinding it produces ([`binding`]).

pub mod binding;
pub mod claim;
pub mod controller;
pub mod decide;
pub mod finalizer;
pub mod matching;
pub mod policies;
pub mod skip;
pub mod templates;

pub use binding::{DetectorError, desired_binding, keep_recorded_resource_version, update_binding};
pub use claim::{Claim, claim, current_claim, policy_id, unclaim};
pub use decide::{Decision, decide, missing_dependent_overrides};
pub use matching::{
    ImplicitPriority, PolicyRef, can_preempt, implicit_priority, select_policy, selector_priority,
};
pub use skip::{DetectorFilter, SkipReason};
