//! The web dashboard (`karmada dashboard`): federation overview, a workload's placement with the scheduler's
//! reasons, policies, and a failover timeline — server-rendered HTML over HTTPS, live through server-sent
//! events.
//!
//! Invariant: the dashboard holds no credentials of its own for the API. Each login builds a client with the
//! user's token or client certificate ([`session`]); every read, watch and action goes through that client, so
//! the user's RBAC decides what the pages show and what the actions may do, and nothing is shared across
//! users. A 401 from the API ends the session.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]
#![warn(clippy::print_stdout)]

pub mod api;
pub mod assets;
pub mod control_plane;
pub mod html;
pub mod live;
pub mod router;
pub mod server;
pub mod session;
pub mod tls;
pub mod views;

pub use control_plane::ControlPlane;
pub use server::serve;
