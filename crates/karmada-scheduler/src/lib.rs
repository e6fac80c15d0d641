//! Karmada's scheduler as a pure core: Filter → Score → Select → AssignReplicas over a binding and a snapshot of
//! clusters, with in-tree plugins, scheduler profiles, the general estimator and Karmada v1.16+ replica division —
//! and an explanation of every decision. [`plan()`] and [`plan_documents()`] are the what-if behind
//! `karmadactl plan`; [`scheduler::schedule`] is what a live runner calls with its cluster cache.
//!
//! Invariants: nothing here does I/O, reads the clock or draws randomness (time comes in as an argument, the only
//! tie-break is the resource uid hash) — except [`mod@bench`], which times the core; the same inputs in any order
//! give the same result; bad input is an [`error::InputError`] that says what is accepted, an infeasible
//! request is an unscheduled result with its reason, and nothing panics.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod accurate;
pub mod affinity;
pub mod bench;
pub mod custom;
pub mod division;
pub mod documents;
pub mod error;
pub mod estimator;
pub mod explain;
pub mod framework;
pub mod patch;
pub mod placement;
pub mod plan;
pub mod plugins;
pub mod quantity;
pub mod recorder;
pub mod render;
pub mod scheduler;
pub mod select;
pub mod snapshot;
pub mod trigger;
pub mod workload;

pub use documents::{plan_documents, plan_documents_with};
pub use plan::{Plan, PlanInput, default_registry, plan, plan_with};
