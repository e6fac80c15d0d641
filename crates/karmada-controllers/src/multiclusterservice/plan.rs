//! The pure parts of the MultiClusterService controllers: which clusters provide and consume, the claimed
//! Service, its binding, the provider marker Works and the dispatched slice Works.

use std::collections::BTreeSet;

use karmada_api::Work;
use karmada_api::networking::{
    ExposureType, LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID, MultiClusterService,
};
use serde_json::{Map, Value, json};

use super::{ANNOTATION_NAME, ANNOTATION_NAMESPACE, KIND, LABEL_BINDING_MANAGED_BY};
use crate::keys::{
    ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME, ANNOTATION_PROPAGATION_POLICY_NAME,
    ANNOTATION_PROPAGATION_POLICY_NAMESPACE, LABEL_CLAIMED_BY,
    LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID, LABEL_MANAGED,
    LABEL_PROPAGATION_POLICY_PERMANENT_ID, MANAGED_VALUE,
};
use crate::mcs::{
    ANNOTATION_PROVISION_CLUSTER, ENDPOINT_SLICE_DISPATCH_CONTROLLER_VALUE,
    LABEL_ENDPOINT_SLICE_MANAGED_BY, LABEL_ENDPOINT_SLICE_SERVICE_NAME, LABEL_MCS_NAME,
    LABEL_MCS_NAMESPACE, LABEL_WORK_MANAGED_BY, MANAGER_MULTI_CLUSTER_SERVICE, managers,
};
use crate::names::{binding_name, execution_namespace, work_name};

/// Whether the MultiClusterService asks for cross-cluster exposure.
pub fn cross_cluster(mcs: &MultiClusterService) -> bool {
    mcs.spec.types.contains(&ExposureType::CrossCluster)
}

/// The clusters a side names (`named`, empty: every cluster) that exist, and those named that do not.
pub fn resolve(named: &[String], existing: &BTreeSet<String>) -> (BTreeSet<String>, Vec<String>) {
    if named.is_empty() {
        return (existing.clone(), Vec::new());
    }
    let mut found = BTreeSet::new();
    let mut missing = Vec::new();
    for name in named {
        if existing.contains(name) {
            found.insert(name.clone());
        } else if !missing.contains(name) {
            missing.push(name.clone());
        }
    }
    (found, missing)
}

/// The provider and consumer names of a MultiClusterService (the deprecated fields count when the new are empty).
pub fn sides(mcs: &MultiClusterService) -> (Vec<String>, Vec<String>) {
    let providers: Vec<String> = if mcs.spec.provider_clusters.is_empty() {
        mcs.spec.service_provision_clusters.clone()
    } else {
        mcs.spec
            .provider_clusters
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    let consumers: Vec<String> = if mcs.spec.consumer_clusters.is_empty() {
        mcs.spec.service_consumption_clusters.clone()
    } else {
        mcs.spec
            .consumer_clusters
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    (providers, consumers)
}

fn permanent_id(mcs: &MultiClusterService) -> String {
    mcs.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID))
        .cloned()
        .unwrap_or_default()
}

fn map_mut<'a>(object: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let metadata = object.get_mut("metadata")?.as_object_mut()?;
    let entry = metadata.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

/// Drops a policy's claim from `object` and marks it as `mcs`'s: `owner_label: MultiClusterService`, the
/// MultiClusterService's permanent id, and its name and namespace annotations.
fn mark_as_the_services(object: &mut Value, mcs: &MultiClusterService, owner_label: &str) {
    if let Some(labels) = map_mut(object, "labels") {
        labels.remove(LABEL_PROPAGATION_POLICY_PERMANENT_ID);
        labels.remove(LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID);
        labels.insert(owner_label.into(), json!(KIND));
        labels.insert(
            LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID.into(),
            json!(permanent_id(mcs)),
        );
    }
    if let Some(annotations) = map_mut(object, "annotations") {
        for key in [
            ANNOTATION_PROPAGATION_POLICY_NAME,
            ANNOTATION_PROPAGATION_POLICY_NAMESPACE,
            ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME,
        ] {
            annotations.remove(key);
        }
        annotations.insert(
            ANNOTATION_NAME.into(),
            json!(mcs.metadata.name.clone().unwrap_or_default()),
        );
        annotations.insert(
            ANNOTATION_NAMESPACE.into(),
            json!(mcs.metadata.namespace.clone().unwrap_or_default()),
        );
    }
}

/// The Service claimed by `mcs`: Karmada's claim label and the MultiClusterService's id and name, with any
/// policy's claim removed. `None` when it already says so.
pub fn claimed_service(service: &Value, mcs: &MultiClusterService) -> Option<Value> {
    let mut claimed = service.clone();
    mark_as_the_services(&mut claimed, mcs, LABEL_CLAIMED_BY);
    (claimed != *service).then_some(claimed)
}

/// The Service released by its MultiClusterService (claim label, id and names removed); `None` when unclaimed.
pub fn released_service(service: &Value) -> Option<Value> {
    let mut released = service.clone();
    if let Some(labels) = map_mut(&mut released, "labels") {
        labels.remove(LABEL_CLAIMED_BY);
        labels.remove(LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID);
    }
    if let Some(annotations) = map_mut(&mut released, "annotations") {
        annotations.remove(ANNOTATION_NAME);
        annotations.remove(ANNOTATION_NAMESPACE);
    }
    (released != *service).then_some(released)
}

/// The Service's ResourceBinding as the MultiClusterService wants it: placed on `clusters` (providers and
/// consumers), owned by the Service, managed by the MultiClusterService. Fields of `existing` the controller
/// does not own (the schedule, status, other labels) are kept.
pub fn service_binding(
    service: &Value,
    mcs: &MultiClusterService,
    clusters: &BTreeSet<String>,
    existing: Option<&Value>,
) -> Value {
    let text = |pointer: &str| {
        service
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (namespace, name) = (text("/metadata/namespace"), text("/metadata/name"));
    let mut binding = existing.cloned().unwrap_or_else(|| {
        json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": binding_name("Service", &name), "namespace": namespace},
            "spec": {},
        })
    });
    mark_as_the_services(&mut binding, mcs, LABEL_BINDING_MANAGED_BY);
    binding["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "v1", "kind": "Service", "name": name, "uid": text("/metadata/uid"),
    }]);
    let finalizers = binding["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !finalizers
        .iter()
        .any(|f| f == karmada_api::work::FINALIZER_BINDING_CONTROLLER)
    {
        let mut with = finalizers;
        with.push(json!(karmada_api::work::FINALIZER_BINDING_CONTROLLER));
        binding["metadata"]["finalizers"] = json!(with);
    }
    binding["spec"]["resource"] = json!({
        "apiVersion": "v1", "kind": "Service", "namespace": namespace, "name": name,
        "uid": text("/metadata/uid"), "resourceVersion": text("/metadata/resourceVersion"),
    });
    binding["spec"]["placement"] =
        json!({"clusterAffinity": {"clusterNames": clusters.iter().collect::<Vec<_>>()}});
    binding["spec"]["conflictResolution"] = json!("Overwrite");
    binding
}

/// Whether a binding already has what [`service_binding`] would write (the resource's resourceVersion aside).
pub fn binding_up_to_date(existing: &Value, desired: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(resource) = v
            .pointer_mut("/spec/resource")
            .and_then(Value::as_object_mut)
        {
            resource.remove("resourceVersion");
        }
        v
    };
    strip(existing) == strip(desired)
}

/// The suspended Work telling `cluster`'s member side that `mcs` collects its slices of the Service.
pub fn marker_work(mcs: &MultiClusterService, cluster: &str) -> Value {
    let name = mcs.metadata.name.clone().unwrap_or_default();
    let namespace = mcs.metadata.namespace.clone().unwrap_or_default();
    let manifest = json!({
        "apiVersion": format!("{}/{}", karmada_api::networking::GROUP, karmada_api::networking::VERSION),
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": serde_json::to_value(&mcs.spec).unwrap_or(Value::Null),
    });
    json!({
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {
            "name": work_name(KIND, &name, &namespace),
            "namespace": execution_namespace(cluster),
            "labels": {
                LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID: permanent_id(mcs),
                LABEL_MCS_NAMESPACE: namespace,
                LABEL_MCS_NAME: name,
            },
        },
        "spec": {"suspendDispatching": true, "workload": {"manifests": [manifest]}},
    })
}

/// Whether a Work is a marker Work of a MultiClusterService.
pub fn is_marker(work: &Work) -> bool {
    work.spec
        .workload
        .manifests
        .iter()
        .any(|m| m.get("kind").and_then(Value::as_str) == Some(KIND))
}

/// Whether a Work reports a provider's slice collected for a MultiClusterService.
pub fn is_collected_slice(work: &Work) -> bool {
    let labels = work.metadata.labels.as_ref();
    managers(
        labels
            .and_then(|l| l.get(LABEL_WORK_MANAGED_BY))
            .map(String::as_str),
    )
    .contains(MANAGER_MULTI_CLUSTER_SERVICE)
        && work
            .spec
            .workload
            .manifests
            .iter()
            .any(|m| m.get("kind").and_then(Value::as_str) == Some("EndpointSlice"))
}

/// The Work carrying `provider`'s collected slice (`reported`) to `consumer`, under the Service's own name.
pub fn dispatched_work(
    mcs_namespace: &str,
    mcs_name: &str,
    reported: &Work,
    provider: &str,
    consumer: &str,
) -> Option<Value> {
    let original = reported
        .spec
        .workload
        .manifests
        .iter()
        .find(|m| m.get("kind").and_then(Value::as_str) == Some("EndpointSlice"))?;
    let slice_name = original.pointer("/metadata/name").and_then(Value::as_str)?;
    let mut slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": format!("{provider}-{slice_name}"),
            "namespace": mcs_namespace,
            "labels": {
                LABEL_ENDPOINT_SLICE_SERVICE_NAME: mcs_name,
                LABEL_ENDPOINT_SLICE_MANAGED_BY: ENDPOINT_SLICE_DISPATCH_CONTROLLER_VALUE,
                // As every manifest Karmada writes: the member object is Karmada's to update and delete.
                LABEL_MANAGED: MANAGED_VALUE,
            },
            "annotations": {ANNOTATION_PROVISION_CLUSTER: provider},
        },
        "addressType": original.get("addressType").cloned().unwrap_or(json!("IPv4")),
        "endpoints": original.get("endpoints").filter(|v| !v.is_null()).cloned().unwrap_or(json!([])),
    });
    if let Some(ports) = original.get("ports").filter(|v| !v.is_null()) {
        slice["ports"] = ports.clone();
    }
    Some(json!({
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {
            "name": reported.metadata.name.clone().unwrap_or_default(),
            "namespace": execution_namespace(consumer),
            "finalizers": [karmada_api::work::FINALIZER_EXECUTION_CONTROLLER],
            "annotations": {ANNOTATION_PROVISION_CLUSTER: provider},
            "labels": {LABEL_MCS_NAME: mcs_name, LABEL_MCS_NAMESPACE: mcs_namespace},
        },
        "spec": {"workload": {"manifests": [slice]}},
    }))
}

/// Whether a dispatched Work already carries what `desired` does.
pub fn dispatched_up_to_date(existing: &Value, desired: &Value) -> bool {
    existing.pointer("/spec/workload") == desired.pointer("/spec/workload")
        && existing
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION_PROVISION_CLUSTER))
            == desired
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(ANNOTATION_PROVISION_CLUSTER))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
