//! Admission for Karmada kinds, as karmada-webhook does it but as pure functions over JSON: first defaulting
//! (mutating), then validation. Fresh ids and the current time come in through [`AdmissionContext`].
//!
//! Invariants: `admit` never panics on any input; on error the object may be partly defaulted but the caller
//! must not store it; every error names the field and says what is accepted. Legacy spellings are rewritten
//! to the current ones and reported as warnings.

mod cluster;
mod common;
mod others;
mod override_policy;
mod placement;
mod propagation;
mod work;

#[cfg(test)]
mod tests;

use apimachinery::{FieldError, GroupVersionKind};
use serde_json::Value;

pub use cluster::default_resource_models;
pub use common::decode;

/// The write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
}

/// Inputs admission needs from outside: a fresh id and the current time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionContext {
    /// A fresh UUID, used when an object needs a new permanent id.
    pub new_id: String,
    /// The current time, RFC 3339, used for timestamps admission fills in.
    pub now: String,
}

/// One admission request in flight.
pub(crate) struct Request<'a> {
    pub op: Operation,
    pub old: Option<&'a Value>,
    pub ctx: &'a AdmissionContext,
    pub warnings: Vec<String>,
}

/// Defaults and validates `obj` (a Karmada kind) in place. Returns warnings on success and field errors on
/// rejection. Kinds this crate does not own are accepted unchanged.
pub fn admit(
    gvk: &GroupVersionKind,
    op: Operation,
    obj: &mut Value,
    old: Option<&Value>,
    ctx: &AdmissionContext,
) -> Result<Vec<String>, Vec<FieldError>> {
    if !obj.is_object() {
        return Err(vec![FieldError::invalid(
            "",
            obj.clone(),
            "must be a JSON object",
        )]);
    }
    let mut req = Request {
        op,
        old,
        ctx,
        warnings: Vec::new(),
    };
    let errors = match (gvk.group.as_str(), gvk.kind.as_str()) {
        (crate::policy::GROUP, "PropagationPolicy") => {
            propagation::admit(&mut req, obj, propagation::Scope::Namespaced)
        }
        (crate::policy::GROUP, "ClusterPropagationPolicy") => {
            propagation::admit(&mut req, obj, propagation::Scope::Cluster)
        }
        (crate::policy::GROUP, "OverridePolicy") => {
            override_policy::admit::<crate::policy::OverridePolicy>(&mut req, obj, true)
        }
        (crate::policy::GROUP, "ClusterOverridePolicy") => {
            override_policy::admit::<crate::policy::ClusterOverridePolicy>(&mut req, obj, false)
        }
        (crate::policy::GROUP, "FederatedResourceQuota") => {
            others::federated_resource_quota(&mut req, obj)
        }
        (crate::policy::GROUP, "ClusterTaintPolicy") => others::cluster_taint_policy(&mut req, obj),
        (crate::cluster::GROUP, "Cluster") => cluster::admit(&mut req, obj),
        (crate::work::GROUP, "ResourceBinding") => {
            work::binding(&mut req, obj, work::BindingScope::Namespaced)
        }
        (crate::work::GROUP, "ClusterResourceBinding") => {
            work::binding(&mut req, obj, work::BindingScope::Cluster)
        }
        (crate::work::GROUP, "Work") => work::work(&mut req, obj),
        (crate::networking::GROUP, "MultiClusterService") => {
            others::multi_cluster_service(&mut req, obj)
        }
        (crate::networking::GROUP, "MultiClusterIngress") => {
            others::multi_cluster_ingress(&mut req, obj)
        }
        (crate::mcs::GROUP, "ServiceExport") => others::service_export(&mut req, obj),
        (crate::mcs::GROUP, "ServiceImport") => others::service_import(&mut req, obj),
        (crate::autoscaling::GROUP, "FederatedHPA") => others::federated_hpa(&mut req, obj),
        (crate::autoscaling::GROUP, "CronFederatedHPA") => {
            others::cron_federated_hpa(&mut req, obj)
        }
        (crate::apps::GROUP, "WorkloadRebalancer") => others::workload_rebalancer(&mut req, obj),
        (crate::config::GROUP, "ResourceInterpreterCustomization") => {
            others::interpreter_customization(&mut req, obj)
        }
        (crate::config::GROUP, "ResourceInterpreterWebhookConfiguration") => {
            others::interpreter_webhook_configuration(&mut req, obj)
        }
        (crate::remedy::GROUP, "Remedy") => others::remedy(&mut req, obj),
        (crate::scheduling::GROUP, "SchedulerProfile") => others::scheduler_profile(&mut req, obj),
        _ => Vec::new(),
    };
    if errors.is_empty() {
        Ok(req.warnings)
    } else {
        Err(errors)
    }
}
