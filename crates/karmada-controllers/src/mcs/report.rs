//! What a member reports about one Service, as Works in its execution namespace (pure): Karmada's service-export
//! controller and the MultiClusterService endpointslice-collect controller share these Works.
//!
//! - One Work per member EndpointSlice of the Service (not one Karmada wrote), named like any Work of an
//!   EndpointSlice (`names::work_name("EndpointSlice", slice, namespace)`), `suspendDispatching: true` so it is
//!   never applied back. Its managers: `ServiceExport` while the member has a live ServiceExport of the Service
//!   (labels `endpointslice.karmada.io/namespace|name`, finalizer `karmada.io/endpointslice-controller`),
//!   `MultiClusterService` while a MultiClusterService collects from this cluster (labels
//!   `multiclusterservice.karmada.io/namespace|name`, finalizer `karmada.io/mcs-endpointslice-dispatch-controller`);
//!   `endpointslice.karmada.io/managed-by` lists them `.`-joined. A manager that lets go removes its labels and
//!   name from the list and leaves its finalizer to the controller downstream; without managers the Work is
//!   deleted (its finalizers hold it until the imported or dispatched copies are gone).
//! - While exported, one Work reporting the Service itself ([`EXPORTED_SERVICE_WORK_KIND`]): its type, ports and
//!   session affinity, or no manifest when the member has no such Service — what the export conditions read.
//!
//! A Work being deleted is left alone; a slice whose Work is still terminating is reported once it is gone.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::Work;
use karmada_api::work::{GROUP, WORK_VERSION, WorkSpec, WorkloadTemplate};
use serde_json::{Map, Value, json};

use super::{
    EXPORTED_SERVICE_WORK_KIND, FINALIZER_ENDPOINT_SLICE_CONTROLLER, FINALIZER_MCS_DISPATCH,
    LABEL_MCS_NAME, LABEL_MCS_NAMESPACE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE,
    LABEL_WORK_MANAGED_BY, MANAGER_MULTI_CLUSTER_SERVICE, MANAGER_SERVICE_EXPORT, managers,
};
use crate::names::{execution_namespace, work_name};

/// What is known about one Service of one member.
#[derive(Clone, Debug, Default)]
pub struct ReportInput<'a> {
    pub cluster: &'a str,
    pub namespace: &'a str,
    pub service: &'a str,
    /// The member has a ServiceExport of the Service that is not being deleted.
    pub exported: bool,
    /// A MultiClusterService collects the Service's slices from this cluster.
    pub collected: bool,
    /// The member's Service, if it has one.
    pub member_service: Option<&'a Value>,
    /// The member's EndpointSlices of the Service that Karmada did not write.
    pub member_slices: Vec<&'a Value>,
    /// The Works already reported for the Service in the cluster's execution namespace (found by either
    /// manager's labels).
    pub reported: Vec<&'a Work>,
}

/// A write to a reported Work.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkWrite {
    Create(Box<Work>),
    /// The Work as read, changed; sent with its resourceVersion.
    Update(Box<Work>),
    Delete {
        name: String,
        uid: Option<String>,
        resource_version: Option<String>,
    },
}

impl WorkWrite {
    pub fn name(&self) -> &str {
        match self {
            WorkWrite::Create(work) | WorkWrite::Update(work) => {
                work.metadata.name.as_deref().unwrap_or_default()
            }
            WorkWrite::Delete { name, .. } => name,
        }
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The slice as reported: identity, labels and what the endpoints are.
pub fn reported_slice(slice: &Value) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(text(slice, "/metadata/name")));
    metadata.insert(
        "namespace".into(),
        json!(text(slice, "/metadata/namespace")),
    );
    if let Some(labels) = slice.pointer("/metadata/labels").filter(|l| l.is_object()) {
        metadata.insert("labels".into(), labels.clone());
    }
    let mut reported = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": metadata,
        "addressType": slice.get("addressType").cloned().unwrap_or(json!("IPv4")),
    });
    for field in ["endpoints", "ports"] {
        if let Some(value) = slice.get(field).filter(|v| !v.is_null()) {
            reported[field] = value.clone();
        }
    }
    reported
}

/// The Service as reported: what the export conditions compare (type, headlessness, ports, affinity).
pub fn reported_service(service: &Value) -> Value {
    let ports: Vec<Value> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|port| {
            let mut kept = Map::new();
            for field in ["name", "protocol", "port", "appProtocol"] {
                if let Some(value) = port.get(field).filter(|v| !v.is_null()) {
                    kept.insert(field.into(), value.clone());
                }
            }
            Value::Object(kept)
        })
        .collect();
    let mut spec = Map::new();
    for field in ["type", "sessionAffinity"] {
        if let Some(value) = service.pointer(&format!("/spec/{field}")) {
            spec.insert(field.into(), value.clone());
        }
    }
    if text(service, "/spec/clusterIP") == "None" {
        spec.insert("clusterIP".into(), json!("None"));
    }
    spec.insert("ports".into(), Value::Array(ports));
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": text(service, "/metadata/name"), "namespace": text(service, "/metadata/namespace")},
        "spec": spec,
    })
}

/// Name of the Work reporting the exported Service itself.
pub fn service_work_name(service: &str, namespace: &str) -> String {
    work_name(EXPORTED_SERVICE_WORK_KIND, service, namespace)
}

/// Name of the Work reporting one member EndpointSlice.
pub fn slice_work_name(slice: &str, namespace: &str) -> String {
    work_name("EndpointSlice", slice, namespace)
}

/// Whether a reported Work carries the exported Service rather than a slice.
pub fn is_service_report(work: &Work) -> bool {
    work.metadata.name.as_deref().is_some_and(|name| {
        let namespace = work
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_SERVICE_NAMESPACE));
        let service = work
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_SERVICE_NAME));
        matches!((namespace, service), (Some(ns), Some(svc)) if name == service_work_name(svc, ns))
    }) && work
        .spec
        .workload
        .manifests
        .iter()
        .all(|m| text(m, "/kind") == "Service")
}

fn new_work(name: String, namespace: String) -> Work {
    Work {
        api_version: format!("{GROUP}/{WORK_VERSION}"),
        kind: "Work".into(),
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace),
            ..ObjectMeta::default()
        },
        spec: WorkSpec {
            workload: WorkloadTemplate::default(),
            suspend_dispatching: Some(true),
            preserve_resources_on_deletion: None,
        },
        status: None,
    }
}

/// `work` carrying `manifests`, managed by `active` (labels, managed-by, finalizers) on top of what it had.
fn desired_work(
    existing: Option<&Work>,
    name: String,
    input: &ReportInput<'_>,
    active: &BTreeSet<&str>,
    manifests: Vec<Value>,
    with_finalizers: bool,
) -> Work {
    let mut work = existing
        .cloned()
        .unwrap_or_else(|| new_work(name, execution_namespace(input.cluster)));
    let labels = work.metadata.labels.get_or_insert_with(BTreeMap::new);
    let mut names = managers(labels.get(LABEL_WORK_MANAGED_BY).map(String::as_str));
    for (manager, namespace_label, name_label) in [
        (
            MANAGER_SERVICE_EXPORT,
            LABEL_SERVICE_NAMESPACE,
            LABEL_SERVICE_NAME,
        ),
        (
            MANAGER_MULTI_CLUSTER_SERVICE,
            LABEL_MCS_NAMESPACE,
            LABEL_MCS_NAME,
        ),
    ] {
        if active.contains(manager) {
            labels.insert(namespace_label.into(), input.namespace.into());
            labels.insert(name_label.into(), input.service.into());
            names.insert(manager.into());
        } else {
            labels.remove(namespace_label);
            labels.remove(name_label);
            names.remove(manager);
        }
    }
    labels.insert(
        LABEL_WORK_MANAGED_BY.into(),
        names.into_iter().collect::<Vec<_>>().join("."),
    );
    if with_finalizers {
        let finalizers = work.metadata.finalizers.get_or_insert_with(Vec::new);
        for (manager, finalizer) in [
            (MANAGER_SERVICE_EXPORT, FINALIZER_ENDPOINT_SLICE_CONTROLLER),
            (MANAGER_MULTI_CLUSTER_SERVICE, FINALIZER_MCS_DISPATCH),
        ] {
            if active.contains(manager) && !finalizers.iter().any(|f| f == finalizer) {
                finalizers.push(finalizer.into());
            }
        }
    }
    work.spec.workload.manifests = manifests;
    work.spec.suspend_dispatching = Some(true);
    work
}

fn delete(work: &Work) -> WorkWrite {
    WorkWrite::Delete {
        name: work.metadata.name.clone().unwrap_or_default(),
        uid: work.metadata.uid.clone(),
        resource_version: work.metadata.resource_version.clone(),
    }
}

fn write(existing: Option<&Work>, desired: Work) -> Option<WorkWrite> {
    match existing {
        None => Some(WorkWrite::Create(Box::new(desired))),
        Some(existing) if *existing == desired => None,
        Some(_) => Some(WorkWrite::Update(Box::new(desired))),
    }
}

/// The writes that make the reported Works of one Service say what `input` says.
pub fn report(input: &ReportInput<'_>) -> Vec<WorkWrite> {
    let mut active = BTreeSet::new();
    if input.exported {
        active.insert(MANAGER_SERVICE_EXPORT);
    }
    if input.collected {
        active.insert(MANAGER_MULTI_CLUSTER_SERVICE);
    }
    let by_name: BTreeMap<&str, &Work> = input
        .reported
        .iter()
        .map(|w| (w.metadata.name.as_deref().unwrap_or_default(), *w))
        .collect();
    let terminating = |work: &Work| work.metadata.deletion_timestamp.is_some();
    let mut wanted: BTreeMap<String, Work> = BTreeMap::new();
    if !active.is_empty() {
        for slice in &input.member_slices {
            let name = slice_work_name(text(slice, "/metadata/name"), input.namespace);
            let existing = by_name.get(name.as_str()).copied();
            let work = desired_work(
                existing,
                name.clone(),
                input,
                &active,
                vec![reported_slice(slice)],
                true,
            );
            wanted.insert(name, work);
        }
    }
    let service_work = service_work_name(input.service, input.namespace);
    if input.exported {
        let existing = by_name.get(service_work.as_str()).copied();
        let only_export = BTreeSet::from([MANAGER_SERVICE_EXPORT]);
        let manifests = input
            .member_service
            .map(reported_service)
            .into_iter()
            .collect();
        let work = desired_work(
            existing,
            service_work.clone(),
            input,
            &only_export,
            manifests,
            false,
        );
        wanted.insert(service_work, work);
    }
    let mut writes = Vec::new();
    for (name, existing) in &by_name {
        if terminating(existing) {
            continue;
        }
        if !wanted.contains_key(*name) {
            // A shared Work another manager still holds keeps living without this one's labels.
            let kept: BTreeSet<String> = managers(
                existing
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(LABEL_WORK_MANAGED_BY))
                    .map(String::as_str),
            );
            let still = kept
                .iter()
                .any(|m| !active.contains(m.as_str()) && !is_known_manager(m));
            if still {
                continue;
            }
            writes.push(delete(existing));
        }
    }
    for (name, work) in wanted {
        let existing = by_name.get(name.as_str()).copied();
        if existing.is_some_and(terminating) {
            continue;
        }
        writes.extend(write(existing, work));
    }
    writes
}

/// Managers this function decides about; any other name in `managed-by` belongs to someone else.
fn is_known_manager(manager: &str) -> bool {
    manager == MANAGER_SERVICE_EXPORT || manager == MANAGER_MULTI_CLUSTER_SERVICE
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
