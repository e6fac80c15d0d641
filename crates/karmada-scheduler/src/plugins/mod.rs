//! In-tree plugins, one module per plugin named as Karmada names it, plus the seed's ClusterPorts filter and the
//! AvailableResources score.
//!
//! Default set (Karmada's): APIEnablement, TaintToleration, ClusterAffinity, SpreadConstraint, ClusterEviction,
//! ClusterLocality. ClusterPorts and AvailableResources are registered but must be enabled by a profile.

pub mod apienablement;
pub mod availableresources;
pub mod clusteraffinity;
pub mod clustereviction;
pub mod clusterlocality;
pub mod clusterports;
pub mod spreadconstraint;
pub mod tainttoleration;

use crate::error::InputError;
use crate::framework::Registry;

/// Registers every in-tree plugin into `registry`.
pub fn register_in_tree(registry: &mut Registry) -> Result<(), InputError> {
    registry.register(apienablement::NAME, || apienablement::ApiEnablement)?;
    registry.register(tainttoleration::NAME, || tainttoleration::TaintToleration)?;
    registry.register(clusteraffinity::NAME, || clusteraffinity::ClusterAffinity)?;
    registry.register(spreadconstraint::NAME, || {
        spreadconstraint::SpreadConstraint
    })?;
    registry.register(clustereviction::NAME, || clustereviction::ClusterEviction)?;
    registry.register_with_args(clusterlocality::NAME, clusterlocality::ClusterLocality::new)?;
    registry.register(clusterports::NAME, || clusterports::ClusterPorts)?;
    registry.register(availableresources::NAME, || {
        availableresources::AvailableResources
    })?;
    Ok(())
}

impl Registry {
    /// A registry holding every in-tree plugin.
    pub fn in_tree() -> Result<Self, InputError> {
        let mut registry = Registry::new();
        register_in_tree(&mut registry)?;
        Ok(registry)
    }
}
