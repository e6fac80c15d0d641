//! Karmada's FederatedHPA controller (`federatedHorizontalPodAutoscaler`): kube's HPA algorithm
//! over the pods of every member the target is scheduled to, scaling the resource template's
//! replicas, which the scheduler then divides.
//!
//! - [`replica_calculator`]: the replica count one metric proposes (pure);
//! - [`normalize`]: stabilization windows, rate policies, min and max (pure);
//! - [`evaluate`]: one round for one FederatedHPA, status and conditions included (pure);
//! - [`controller`]: reads the template, the binding's clusters and each member's pods and
//!   PodMetrics, writes the template's scale and the status, every 15 s.

pub mod controller;
pub mod evaluate;
pub mod normalize;
pub mod replica_calculator;

#[cfg(test)]
mod tests;
