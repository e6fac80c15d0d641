//! Karmada's resource interpreter: the per-kind knowledge the control plane needs about resource templates and
//! member objects — how many replicas a workload has and what each needs, how to change its replica count, which
//! member-side fields survive an update, which status to collect and how to merge it back, whether it is healthy,
//! and which objects it depends on.
//!
//! Invariants: pure (no I/O, no clock; the webhook layer reaches its webhooks through a caller the embedding
//! supplies); every operation takes JSON objects and returns new JSON, never mutating
//! its input; malformed objects give an [`InterpretError`] that names the field, never a panic.
//!
//! Layers, highest precedence first: customizations (Lua `ResourceInterpreterCustomization`, [`declarative`]),
//! interpreter webhooks ([`webhook`]), third-party built-ins, then the native interpreter in [`native`]. For each operation the first layer whose
//! [`ResourceInterpreter::handles`] says yes answers; when none does, the operation's documented default applies
//! (see [`Interpreter`]).
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod declarative;
mod error;
mod interpreter;
pub mod native;
mod target;
pub mod thirdparty;
mod value;
pub mod webhook;

pub use declarative::ConfigurableInterpreter;
pub use error::InterpretError;
pub use interpreter::{
    Component, DependencyLabelSelector, DependentObjectReference, Interpreter, Operation,
    ReplicaInfo, ResourceInterpreter,
};
pub use native::NativeInterpreter;
pub use target::Target;

/// Template label asking Karmada to keep the member's replica count (set when an HPA owns replicas).
pub const LABEL_RETAIN_REPLICAS: &str = "resourcetemplate.karmada.io/retain-replicas";
/// Member-object annotation holding the template generation the manifest was rendered from.
pub const ANNOTATION_RESOURCE_TEMPLATE_GENERATION: &str = "resourcetemplate.karmada.io/generation";
/// Member-object annotation listing the label keys Karmada manages (sorted, comma-separated).
pub const ANNOTATION_MANAGED_LABELS: &str = "resourcetemplate.karmada.io/managed-labels";
/// Member-object annotation listing the annotation keys Karmada manages (sorted, comma-separated).
pub const ANNOTATION_MANAGED_ANNOTATIONS: &str = "resourcetemplate.karmada.io/managed-annotations";
