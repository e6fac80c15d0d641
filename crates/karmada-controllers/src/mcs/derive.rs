//! The endpointslice controller's core (pure): what a reported slice Work becomes in the control plane.
//!
//! A Work reporting a member EndpointSlice of an exported Service (label `endpointslice.karmada.io/name`)
//! becomes `imported-<cluster>-<slice>` in the Service's namespace: the member's addresses, ports and endpoints
//! under Karmada's labels — `kubernetes.io/service-name: derived-<svc>`,
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.karmada.io` and the Work's permanent id —
//! and annotations naming the Work and the cluster it came from. While the cluster is not Ready its slices are
//! withdrawn (an unreachable provider's endpoints must not be served), and come back when it is. A Work being
//! deleted, or no longer exported, loses its imported slice, then the finalizer that waited for it.

use std::collections::BTreeMap;

use karmada_api::Work;
use karmada_api::mcs::{derived_service_name, imported_endpoint_slice_name};
use karmada_api::work::LABEL_WORK_PERMANENT_ID;
use serde_json::{Value, json};

use super::{
    ANNOTATION_PROVISION_CLUSTER, ENDPOINT_SLICE_CONTROLLER_VALUE,
    FINALIZER_ENDPOINT_SLICE_CONTROLLER, LABEL_ENDPOINT_SLICE_MANAGED_BY,
    LABEL_ENDPOINT_SLICE_SERVICE_NAME, LABEL_SERVICE_NAME,
};
use crate::keys::{ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE};
use crate::names::cluster_of_execution_namespace;

/// What the endpointslice controller does for one reported Work.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportPlan {
    /// The imported slice to create or update; `None`: delete it if present.
    pub desired: Option<Value>,
    /// Remove `karmada.io/endpointslice-controller` from the Work once the imported slice is gone.
    pub release: bool,
}

fn label<'a>(work: &'a Work, key: &str) -> Option<&'a str> {
    work.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// Whether the Work carries the endpointslice controller's finalizer.
pub fn holds_finalizer(work: &Work) -> bool {
    work.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER_ENDPOINT_SLICE_CONTROLLER)
}

/// The reported member slice of a Work, if it reports one.
fn reported_slice(work: &Work) -> Option<&Value> {
    work.spec
        .workload
        .manifests
        .iter()
        .find(|m| m.get("kind").and_then(Value::as_str) == Some("EndpointSlice"))
}

/// The imported slice for `work` (which reports a slice of `cluster`).
pub fn imported_slice(work: &Work, cluster: &str) -> Option<Value> {
    let service = label(work, LABEL_SERVICE_NAME)?;
    let original = reported_slice(work)?;
    let name = original.pointer("/metadata/name").and_then(Value::as_str)?;
    let namespace = original
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut labels: BTreeMap<String, Value> = original
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|l| l.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    labels.insert(
        LABEL_ENDPOINT_SLICE_SERVICE_NAME.into(),
        json!(derived_service_name(service)),
    );
    labels.insert(
        LABEL_ENDPOINT_SLICE_MANAGED_BY.into(),
        json!(ENDPOINT_SLICE_CONTROLLER_VALUE),
    );
    if let Some(id) = label(work, LABEL_WORK_PERMANENT_ID) {
        labels.insert(LABEL_WORK_PERMANENT_ID.into(), json!(id));
    }
    let mut slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": imported_endpoint_slice_name(cluster, name),
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                ANNOTATION_WORK_NAMESPACE: work.metadata.namespace.clone().unwrap_or_default(),
                ANNOTATION_WORK_NAME: work.metadata.name.clone().unwrap_or_default(),
                ANNOTATION_PROVISION_CLUSTER: cluster,
            },
        },
        "addressType": original.get("addressType").cloned().unwrap_or(json!("IPv4")),
        "endpoints": original.get("endpoints").filter(|v| !v.is_null()).cloned().unwrap_or(json!([])),
    });
    if let Some(ports) = original.get("ports").filter(|v| !v.is_null()) {
        slice["ports"] = ports.clone();
    }
    Some(slice)
}

/// The plan for one Work of the endpointslice controller; `None` when the Work is not its business (not a slice
/// report, not in an execution namespace, and not holding its finalizer).
pub fn plan(work: &Work, cluster_ready: bool) -> Option<ImportPlan> {
    let cluster = work
        .metadata
        .namespace
        .as_deref()
        .and_then(cluster_of_execution_namespace)?;
    let reports_slice = reported_slice(work).is_some();
    if !reports_slice && !holds_finalizer(work) {
        return None;
    }
    let exported = label(work, LABEL_SERVICE_NAME).is_some();
    if work.metadata.deletion_timestamp.is_some() || !exported {
        return Some(ImportPlan {
            desired: None,
            release: holds_finalizer(work),
        });
    }
    Some(ImportPlan {
        desired: cluster_ready
            .then(|| imported_slice(work, cluster))
            .flatten(),
        release: false,
    })
}

/// Whether an imported slice already says what `desired` says (labels, annotations and the endpoint fields).
pub fn up_to_date(existing: &Value, desired: &Value) -> bool {
    let covers = |pointer: &str| {
        let Some(wanted) = desired.pointer(pointer).and_then(Value::as_object) else {
            return true;
        };
        let have = existing.pointer(pointer).and_then(Value::as_object);
        wanted
            .iter()
            .all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v))
    };
    covers("/metadata/labels")
        && covers("/metadata/annotations")
        && ["addressType", "endpoints", "ports"]
            .iter()
            .all(|field| existing.get(*field).filter(|v| !v.is_null()) == desired.get(*field))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::mcs::report::{ReportInput, WorkWrite, report};

    fn reported_work(ips: &[&str]) -> Work {
        let slice = json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "api-abcde", "namespace": "shop",
                         "labels": {"kubernetes.io/service-name": "api", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>(),
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        });
        let input = ReportInput {
            cluster: "member-a",
            namespace: "shop",
            service: "api",
            exported: true,
            member_slices: vec![&slice],
            ..ReportInput::default()
        };
        let mut work = report(&input)
            .into_iter()
            .find_map(|w| match w {
                WorkWrite::Create(w)
                    if w.spec
                        .workload
                        .manifests
                        .first()
                        .is_some_and(|m| m["kind"] == "EndpointSlice") =>
                {
                    Some(*w)
                }
                _ => None,
            })
            .expect("a slice work");
        work.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(LABEL_WORK_PERMANENT_ID.into(), "id-1".into());
        work
    }

    #[test]
    fn a_reported_slice_becomes_an_imported_slice_of_the_derived_service() {
        let work = reported_work(&["10.244.1.5"]);
        let plan = plan(&work, true).expect("ours");
        assert!(!plan.release);
        let slice = plan.desired.expect("a slice");
        assert_eq!(slice["metadata"]["name"], "imported-member-a-api-abcde");
        assert_eq!(slice["metadata"]["namespace"], "shop");
        let labels = &slice["metadata"]["labels"];
        assert_eq!(labels["kubernetes.io/service-name"], "derived-api");
        assert_eq!(
            labels["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.karmada.io"
        );
        assert_eq!(labels["work.karmada.io/permanent-id"], "id-1");
        let annotations = &slice["metadata"]["annotations"];
        assert_eq!(
            annotations["endpointslice.karmada.io/provision-cluster"],
            "member-a"
        );
        assert_eq!(
            annotations["work.karmada.io/namespace"],
            "karmada-es-member-a"
        );
        assert_eq!(slice["endpoints"][0]["addresses"][0], "10.244.1.5");
        assert_eq!(slice["ports"][0]["port"], 8080);
        assert!(up_to_date(&slice, &slice));
        let moved = imported_slice(&reported_work(&["10.244.1.6"]), "member-a").expect("slice");
        assert!(!up_to_date(&slice, &moved));
    }

    #[test]
    fn withdrawn_while_not_ready_removed_when_unexported_or_deleted() {
        let work = reported_work(&["10.244.1.5"]);
        assert_eq!(
            plan(&work, false),
            Some(ImportPlan {
                desired: None,
                release: false
            })
        );
        let mut unexported = work.clone();
        if let Some(labels) = unexported.metadata.labels.as_mut() {
            labels.remove(LABEL_SERVICE_NAME);
        }
        assert_eq!(
            plan(&unexported, true),
            Some(ImportPlan {
                desired: None,
                release: true
            })
        );
        let mut deleted = work.clone();
        deleted.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(plan(&deleted, true).map(|p| p.release), Some(true));
        deleted.metadata.finalizers = None;
        deleted.spec.workload.manifests.clear();
        assert_eq!(plan(&deleted, true), None);
        let mut elsewhere = work;
        elsewhere.metadata.namespace = Some("default".into());
        assert_eq!(plan(&elsewhere, true), None);
    }
}
