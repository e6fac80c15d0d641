//! The binding controller's pure core: per-cluster overrides ([`overrides`], with the overriders themselves
//! in [`overriders`] and image references in [`image`]), manifest pruning ([`prune`]) and the desired Works of a
//! scheduled binding ([`works`]).

pub mod controller;
pub mod image;
pub mod overriders;
pub mod overrides;
pub mod prune;
pub mod works;

pub use overrides::{
    AppliedOverrides, OverrideError, PolicyShadow, apply_overrides, cluster_affinity_matches,
};
pub use prune::prune_manifest;
pub use works::{
    BindingScope, DesiredWork, DesiredWorks, WorkError, WorkInput, desired_works, orphan_works,
    waiting_for_direct_purge,
};
