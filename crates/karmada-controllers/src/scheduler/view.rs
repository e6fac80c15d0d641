//! A binding as the scheduler reads it: everything but `status.aggregatedStatus`, which no decision looks at.
//!
//! Why: a Duplicated binding is scheduled again on every event and by every fresh scheduler (docs/karmada.md,
//! "Scheduling triggers", step 4), and its aggregated status (one member's workload status per cluster) is most of its
//! text. Reading past it without building it, and leaving it out of the JSON the decision is computed on, keeps such a
//! reconcile to the few fields it uses. The writes are merge patches of the decided fields, so nothing left out here is
//! written back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use karmada_api::{ResourceBinding, ResourceBindingSpec, ResourceBindingStatus};
use kube::api::ApiResource;
use serde::Deserialize;
use serde_json::Value;

use crate::runtime::{CompactObject, ControllerError};

#[derive(Deserialize)]
struct BindingView {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: ResourceBindingSpec,
    #[serde(default)]
    status: Option<StatusView>,
}

/// [`ResourceBindingStatus`] without `aggregatedStatus` (an unknown field to serde, skipped unbuilt).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusView {
    #[serde(default)]
    scheduler_observed_generation: i64,
    #[serde(rename = "schedulerObservingAffinityName", default)]
    scheduler_observed_affinity_name: String,
    #[serde(default)]
    last_scheduled_time: Option<Time>,
    #[serde(default)]
    conditions: Vec<Condition>,
}

/// The cached binding, typed, with an empty `aggregatedStatus` and `resource`'s apiVersion and kind.
pub fn read(
    object: &CompactObject,
    resource: &ApiResource,
) -> Result<ResourceBinding, ControllerError> {
    let view: BindingView = object.decode()?;
    Ok(ResourceBinding {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        metadata: view.metadata,
        spec: view.spec,
        status: view.status.map(|status| ResourceBindingStatus {
            scheduler_observed_generation: status.scheduler_observed_generation,
            scheduler_observed_affinity_name: status.scheduler_observed_affinity_name,
            last_scheduled_time: status.last_scheduled_time,
            conditions: status.conditions,
            aggregated_status: Vec::new(),
        }),
    })
}

/// The JSON a decision is computed on.
pub fn to_json(binding: &ResourceBinding) -> Result<Value, ControllerError> {
    Ok(serde_json::to_value(binding)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::DynamicObject;
    use serde_json::json;

    #[test]
    fn reads_everything_a_decision_uses_and_not_the_aggregated_status() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "default", "generation": 3,
                         "resourceVersion": "12", "annotations": {"policy.karmada.io/applied-placement": "{}"}},
            "spec": {"replicas": 6, "clusters": [{"name": "a", "replicas": 6}],
                     "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
            "status": {"schedulerObservedGeneration": 3, "schedulerObservingAffinityName": "primary",
                       "lastScheduledTime": "2026-11-29T09:00:00Z",
                       "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
                                       "message": "ok", "lastTransitionTime": "2026-11-29T09:00:00Z"}],
                       "aggregatedStatus": [{"clusterName": "a", "applied": true,
                                             "status": {"readyReplicas": 6}}]}
        }))
        .expect("binding");
        let compact = CompactObject::from_dynamic(&object).expect("compact");
        let binding = read(&compact, &crate::runtime::resources::resource_binding()).expect("view");
        let status = binding.status.as_ref().expect("status");
        assert_eq!(status.scheduler_observed_generation, 3);
        assert_eq!(status.scheduler_observed_affinity_name, "primary");
        assert!(status.last_scheduled_time.is_some());
        assert_eq!(status.conditions[0].reason, "Success");
        assert!(status.aggregated_status.is_empty());
        assert_eq!(binding.spec.clusters[0].replicas, 6);
        assert_eq!(binding.metadata.resource_version.as_deref(), Some("12"));
        let json = to_json(&binding).expect("json");
        assert_eq!(json["kind"], "ResourceBinding");
        assert_eq!(
            json["spec"]["clusters"],
            json!([{"name": "a", "replicas": 6}])
        );
        assert!(json["status"].get("aggregatedStatus").is_none());
        assert_eq!(
            json["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-29T09:00:00Z"
        );
    }
}
