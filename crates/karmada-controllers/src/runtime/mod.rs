//! What every watch-driven controller of the control plane shares: the API resources of Karmada's kinds
//! ([`resources`]), conversion between kube's `DynamicObject` and our typed API ([`typed`]), one error type with
//! the retry rules ([`error`]), and an event recorder writing core/v1 Events that `kubectl describe` shows
//! ([`events`]).
//!
//! Controllers are level-triggered loops (watch → dedup queue → reconcile → requeue), one object key at a time,
//! conflicts requeue. Those reading the shared caches of Works, bindings and templates run on [`runner`], over a
//! [`Cache`] keyed by namespace and name, with a [`queue`] that gives its room back after a burst; controllers of
//! a few objects of their own kind (cluster taint policies, namespaces, workload rebalancers) use
//! `kube::runtime::Controller`.

pub mod cache;
pub mod changes;
pub mod client;
pub mod client_metrics;
pub mod compact;
pub mod dynamic_controller;
pub mod error;
pub mod events;
pub mod informer;
pub mod keyed;
pub mod leader_election;
pub mod members;
pub mod meta;
pub mod metrics;
pub mod own_writes;
pub mod pairs;
pub mod queue;
pub mod raw;
pub mod resources;
pub mod runner;
pub mod status_write;
pub mod sweep;
pub mod templates;
pub mod typed;
pub mod watch;

pub use cache::{Cache, CacheWriter};
pub use compact::CompactObject;
pub use error::ControllerError;
pub use events::{EventRecorder, EventType, reference_of};
pub use informer::{Informers, LabelIndex, Subscription};
pub use members::MemberClients;
pub use meta::Meta;
pub use pairs::Pairs;
pub use raw::RawObject;
pub use templates::TemplateReader;
