//! Karmada's CronFederatedHPA controller (`cronFederatedHorizontalPodAutoscaler`): rules with cron
//! schedules in time zones that set a workload's replicas or a FederatedHPA's bounds, with the
//! execution history in status.
//!
//! - [`plan`]: which rules are due now and when each fires next (pure);
//! - [`history`]: `status.executionHistories` (pure);
//! - [`controller`]: runs the due rules and writes the status, requeued for the next fire time.
//!
//! Schedules and zones are read by `karmada_api::cron_schedule`, which admission validates with.

pub mod controller;
pub mod history;
pub mod plan;

#[cfg(test)]
mod tests;
