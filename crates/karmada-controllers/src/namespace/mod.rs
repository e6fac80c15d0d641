//! Namespace auto-propagation's pure core: which namespaces propagate ([`propagation`]) and their Works
//! ([`works`]).

pub mod applied;
pub mod propagation;
pub mod works;

pub use propagation::{NamespacePropagation, should_propagate};
pub use works::desired_namespace_works;
pub mod controller;
