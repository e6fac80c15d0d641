//! The member's side of multi-cluster Services, what a cluster's MCS implementation does with the ServiceImports
//! Karmada places in it: a ClusterSetIP import's `spec.ips` is its clusterset IP in this cluster — the clusterIP
//! of the derived Service (`derived-<svc>`) propagated beside it — and `status.clusters` lists the clusters its
//! imported EndpointSlices came from (their `endpointslice.karmada.io/provision-cluster` annotation). The DNS
//! ([`crate::dns`]) answers from both.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::meta;
use crate::objects::{Objects, Write};
use crate::outcome::Outcome;
use crate::services::SERVICE_NAME_LABEL;

/// Annotation naming the cluster an imported EndpointSlice came from.
pub const PROVISION_CLUSTER_ANNOTATION: &str = "endpointslice.karmada.io/provision-cluster";
/// The MCS API's label naming the multi-cluster Service of an EndpointSlice.
pub const MCS_SERVICE_NAME_LABEL: &str = "multicluster.kubernetes.io/service-name";

/// Karmada's derived Service of an import: `derived-<svc>`.
pub fn derived_name(import: &str) -> String {
    format!("derived-{import}")
}

/// The EndpointSlices behind the import `name` in `namespace`: those of its derived Service, or labelled with
/// the MCS API's service-name label.
pub fn import_slices<'a>(
    objects: &'a Objects,
    namespace: &'a str,
    name: &'a str,
) -> impl Iterator<Item = &'a Value> + 'a {
    let derived = derived_name(name);
    objects
        .list_in("EndpointSlice", namespace)
        .filter(move |slice| {
            let labels = meta::labels(slice);
            labels.get(SERVICE_NAME_LABEL).and_then(Value::as_str) == Some(derived.as_str())
                || labels.get(MCS_SERVICE_NAME_LABEL).and_then(Value::as_str) == Some(name)
        })
}

/// One pass over the ServiceImports.
pub fn reconcile(objects: &Objects) -> Outcome {
    let mut outcome = Outcome::default();
    for import in objects.list("ServiceImport") {
        if meta::is_terminating(import) {
            continue;
        }
        let (namespace, name) = (meta::namespace(import), meta::name(import));
        if meta::str_at(import, "/spec/type") != "Headless" {
            let ip = objects
                .get_named("Service", namespace, &derived_name(name))
                .map(|s| meta::str_at(s, "/spec/clusterIP"))
                .filter(|ip| !ip.is_empty() && *ip != "None");
            let current = import.pointer("/spec/ips").cloned().unwrap_or(json!([]));
            if let Some(ip) = ip
                && current != json!([ip])
            {
                let mut updated = import.clone();
                meta::set_path(&mut updated, &["spec", "ips"], json!([ip]));
                outcome.write(Write::Update(updated));
                continue;
            }
        }
        let clusters: BTreeSet<&str> = import_slices(objects, namespace, name)
            .filter_map(|slice| meta::annotation(slice, PROVISION_CLUSTER_ANNOTATION))
            .collect();
        let wanted: Vec<Value> = clusters.iter().map(|c| json!({"cluster": c})).collect();
        let current = import
            .pointer("/status/clusters")
            .cloned()
            .unwrap_or(json!([]));
        if current != json!(wanted) {
            let mut updated = import.clone();
            meta::set_path(&mut updated, &["status", "clusters"], json!(wanted));
            outcome.write(Write::UpdateStatus(updated));
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(type_: &str, ips: Value) -> Value {
        json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
               "metadata": {"name": "api", "namespace": "shop"},
               "spec": {"type": type_, "ips": ips, "ports": [{"name": "http", "port": 80}]}})
    }

    fn derived(ip: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "derived-api", "namespace": "shop"},
               "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": 80}]}})
    }

    fn slice(name: &str, cluster: &str) -> Value {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": name, "namespace": "shop",
                            "labels": {"kubernetes.io/service-name": "derived-api"},
                            "annotations": {"endpointslice.karmada.io/provision-cluster": cluster}},
               "endpoints": []})
    }

    #[test]
    fn the_clusterset_ip_is_the_derived_services_cluster_ip() {
        let objects =
            Objects::from_values([import("ClusterSetIP", json!([])), derived("10.96.0.12")]);
        let outcome = reconcile(&objects);
        assert!(
            matches!(&outcome.writes[..], [Write::Update(i)] if i["spec"]["ips"] == json!(["10.96.0.12"])),
            "{:?}",
            outcome.writes
        );
        // Without a derived Service yet there is nothing to give.
        let objects = Objects::from_values([import("ClusterSetIP", json!([]))]);
        assert!(reconcile(&objects).writes.is_empty());
        let objects = Objects::from_values([import("Headless", json!([])), derived("10.96.0.12")]);
        assert!(reconcile(&objects).writes.is_empty());
    }

    #[test]
    fn status_lists_the_clusters_behind_the_import() {
        let objects = Objects::from_values([
            import("ClusterSetIP", json!(["10.96.0.12"])),
            derived("10.96.0.12"),
            slice("imported-b-x", "b"),
            slice("imported-a-y", "a"),
            slice("imported-a-z", "a"),
        ]);
        let outcome = reconcile(&objects);
        assert!(
            matches!(&outcome.writes[..], [Write::UpdateStatus(i)] if i["status"]["clusters"] == json!([{"cluster": "a"}, {"cluster": "b"}])),
            "{:?}",
            outcome.writes
        );
    }
}
