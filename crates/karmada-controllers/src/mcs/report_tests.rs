use serde_json::json;

use super::*;

fn slice(name: &str, ips: &[&str]) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "shop", "uid": "u", "resourceVersion": "7",
                     "labels": {"kubernetes.io/service-name": "api", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                     "ownerReferences": [{"kind": "Service", "name": "api"}]},
        "addressType": "IPv4",
        "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>(),
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
}

fn service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "api", "namespace": "shop", "uid": "s"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.4", "selector": {"app": "api"},
                 "sessionAffinity": "None",
                 "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]},
    })
}

fn input<'a>(slices: Vec<&'a Value>, reported: Vec<&'a Work>) -> ReportInput<'a> {
    ReportInput {
        cluster: "member-a",
        namespace: "shop",
        service: "api",
        exported: true,
        collected: false,
        member_service: None,
        member_slices: slices,
        reported,
    }
}

fn created(writes: &[WorkWrite]) -> Vec<Work> {
    writes
        .iter()
        .filter_map(|w| match w {
            WorkWrite::Create(work) | WorkWrite::Update(work) => Some((**work).clone()),
            WorkWrite::Delete { .. } => None,
        })
        .collect()
}

fn label<'a>(work: &'a Work, key: &str) -> Option<&'a str> {
    work.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

#[test]
fn an_export_reports_each_slice_and_the_service_never_applied_back() {
    let s = slice("api-abcde", &["10.244.1.5"]);
    let svc = service();
    let mut i = input(vec![&s], vec![]);
    i.member_service = Some(&svc);
    let writes = report(&i);
    let works = created(&writes);
    assert_eq!(works.len(), 2, "{writes:?}");
    let slice_work = works
        .iter()
        .find(|w| !is_service_report(w))
        .expect("slice work");
    assert_eq!(
        slice_work.metadata.name.as_deref(),
        Some(slice_work_name("api-abcde", "shop").as_str())
    );
    assert_eq!(
        slice_work.metadata.namespace.as_deref(),
        Some("karmada-es-member-a")
    );
    assert_eq!(slice_work.spec.suspend_dispatching, Some(true));
    assert_eq!(label(slice_work, LABEL_SERVICE_NAME), Some("api"));
    assert_eq!(label(slice_work, LABEL_SERVICE_NAMESPACE), Some("shop"));
    assert_eq!(
        label(slice_work, LABEL_WORK_MANAGED_BY),
        Some("ServiceExport")
    );
    assert_eq!(
        slice_work.metadata.finalizers.as_deref(),
        Some(&["karmada.io/endpointslice-controller".to_string()][..])
    );
    let manifest = &slice_work.spec.workload.manifests[0];
    assert_eq!(manifest["endpoints"][0]["addresses"][0], "10.244.1.5");
    assert!(manifest["metadata"].get("uid").is_none());
    assert!(manifest["metadata"].get("ownerReferences").is_none());
    let service_work = works
        .iter()
        .find(|w| is_service_report(w))
        .expect("service work");
    assert_eq!(service_work.spec.suspend_dispatching, Some(true));
    assert_eq!(
        service_work.spec.workload.manifests[0]["spec"],
        json!({"type": "ClusterIP", "sessionAffinity": "None", "ports": [{"name": "http", "protocol": "TCP", "port": 80}]})
    );
    assert!(service_work.metadata.finalizers.is_none());
}

#[test]
fn a_missing_service_is_reported_as_a_work_without_manifest() {
    let i = input(vec![], vec![]);
    let works = created(&report(&i));
    assert_eq!(works.len(), 1);
    assert!(is_service_report(&works[0]));
    assert!(works[0].spec.workload.manifests.is_empty());
}

#[test]
fn reporting_again_changes_nothing_and_a_changed_slice_updates_its_work() {
    let s = slice("api-abcde", &["10.244.1.5"]);
    let first = created(&report(&input(vec![&s], vec![])));
    let reported: Vec<&Work> = first.iter().collect();
    assert!(report(&input(vec![&s], reported.clone())).is_empty());
    let moved = slice("api-abcde", &["10.244.1.5", "10.244.1.6"]);
    let writes = report(&input(vec![&moved], reported));
    assert!(
        matches!(&writes[..], [WorkWrite::Update(w)] if w.spec.workload.manifests[0]["endpoints"].as_array().map(Vec::len) == Some(2)),
        "{writes:?}"
    );
}

#[test]
fn a_gone_slice_or_export_deletes_its_works() {
    let s = slice("api-abcde", &["10.244.1.5"]);
    let first = created(&report(&input(vec![&s], vec![])));
    let reported: Vec<&Work> = first.iter().collect();
    let names = |writes: Vec<WorkWrite>| -> Vec<String> {
        writes
            .iter()
            .filter(|w| matches!(w, WorkWrite::Delete { .. }))
            .map(|w| w.name().to_string())
            .collect()
    };
    assert_eq!(
        names(report(&input(vec![], reported.clone()))),
        [slice_work_name("api-abcde", "shop")]
    );
    let mut unexported = input(vec![&s], reported.clone());
    unexported.exported = false;
    let mut deleted = names(report(&unexported));
    deleted.sort();
    let mut expected = vec![
        slice_work_name("api-abcde", "shop"),
        service_work_name("api", "shop"),
    ];
    expected.sort();
    assert_eq!(deleted, expected);
}

#[test]
fn export_and_collection_share_a_slice_work_and_let_go_one_at_a_time() {
    let s = slice("api-abcde", &["10.244.1.5"]);
    let mut both = input(vec![&s], vec![]);
    both.collected = true;
    let works = created(&report(&both));
    let shared = works
        .iter()
        .find(|w| !is_service_report(w))
        .expect("slice work");
    assert_eq!(
        label(shared, LABEL_WORK_MANAGED_BY),
        Some("MultiClusterService.ServiceExport")
    );
    assert_eq!(label(shared, LABEL_MCS_NAME), Some("api"));
    assert_eq!(shared.metadata.finalizers.as_ref().map(Vec::len), Some(2));

    // The export goes: the Work stays for the collection, without the export's labels; its finalizer is left
    // for the endpointslice controller to remove.
    let reported: Vec<&Work> = works.iter().collect();
    let mut only_collected = input(vec![&s], reported);
    only_collected.exported = false;
    only_collected.collected = true;
    let writes = report(&only_collected);
    let updated = created(&writes);
    assert_eq!(updated.len(), 1, "{writes:?}");
    assert_eq!(
        label(&updated[0], LABEL_WORK_MANAGED_BY),
        Some("MultiClusterService")
    );
    assert_eq!(label(&updated[0], LABEL_SERVICE_NAME), None);
    assert_eq!(
        updated[0].metadata.finalizers.as_ref().map(Vec::len),
        Some(2)
    );
    assert!(writes.iter().any(
        |w| matches!(w, WorkWrite::Delete { name, .. } if *name == service_work_name("api", "shop"))
    ));
}

#[test]
fn terminating_works_are_left_to_finish() {
    let s = slice("api-abcde", &["10.244.1.5"]);
    let mut works = created(&report(&input(vec![&s], vec![])));
    for work in &mut works {
        work.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
    }
    let reported: Vec<&Work> = works.iter().collect();
    assert!(report(&input(vec![&s], reported.clone())).is_empty());
    assert!(report(&input(vec![], reported)).is_empty());
}
