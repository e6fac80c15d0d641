//! Karmada's FederatedResourceQuota controllers (`federatedResourceQuotaSync`, `federatedResourceQuotaStatus`):
//! static assignments become ResourceQuotas in the members through Works ([`sync`]), and the status carries
//! `overall`, `overallUsed` from the namespace's scheduled bindings and `aggregatedStatus` from the members
//! ([`usage`], which also words the refusal the API server's admission gives a binding that would exceed the
//! overall quota). [`controller`] is the loop.

pub mod controller;
pub mod sync;
pub mod usage;
