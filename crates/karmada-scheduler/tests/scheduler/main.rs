//! The scheduler's integration tests, one binary: seed examples, every rule of docs/karmada.md, "Scheduler", as
//! tables, plugins, profiles, bad input and properties.
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod accurate;
mod bad_input;
mod common;
mod division;
mod estimator;
mod plugins;
mod profiles;
mod properties;
mod seeds;
mod select;
mod trigger;
