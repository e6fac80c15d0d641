//! Multi-cluster services: ServiceExports with their Valid/Conflict conditions, ServiceImports with the clusters
//! whose endpoints back them (the imported EndpointSlices of `derived-<svc>`), and MultiClusterServices with
//! their providers, consumers, the endpoints collected from each provider (the reported slice Works) and those
//! dispatched into each consumer (the Works carrying the provider's name).

use std::collections::BTreeMap;

use karmada_api::mcs::derived_service_name;
use karmada_controllers::mcs::backing::{self, Endpoints};
use karmada_controllers::mcs::{
    ANNOTATION_PROVISION_CLUSTER, ENDPOINT_SLICE_CONTROLLER_VALUE, LABEL_ENDPOINT_SLICE_MANAGED_BY,
    LABEL_ENDPOINT_SLICE_SERVICE_NAME, LABEL_MCS_NAME, LABEL_MCS_NAMESPACE,
};
use karmada_controllers::names::cluster_of_execution_namespace;
use serde_json::Value;

use crate::api::{self, ApiError, paths};
use crate::html::{esc, query_value, table};
use crate::views::View;

/// Objects read per kind.
const READ: usize = 1000;

/// The label selector of the EndpointSlices the endpointslice controller imports into the control plane.
pub fn imported_slices_path() -> String {
    let selector = format!("{LABEL_ENDPOINT_SLICE_MANAGED_BY}={ENDPOINT_SLICE_CONTROLLER_VALUE}");
    format!(
        "{}?labelSelector={}",
        paths::ENDPOINT_SLICES,
        query_value(&selector)
    )
}

/// The Works reporting member slices a MultiClusterService collects.
pub fn collected_works_path() -> String {
    format!(
        "{}?labelSelector={}",
        paths::WORKS,
        query_value(LABEL_MCS_NAME)
    )
}

pub async fn render(client: &kube::Client) -> Result<View, ApiError> {
    let exports = api::list_page(client, paths::SERVICE_EXPORTS, READ, None).await?;
    let imports = api::list_page(client, paths::SERVICE_IMPORTS, READ, None).await?;
    let services = api::list_page(client, paths::MULTI_CLUSTER_SERVICES, READ, None).await?;
    let slices = api::list_page(client, &imported_slices_path(), 5000, None).await?;
    let works = api::list_page(client, &collected_works_path(), 5000, None).await?;
    let mut content = String::from("<h1>Multi-cluster services</h1><h2>ServiceExports</h2>");
    let rows: Vec<Vec<String>> = exports.items.iter().map(export_row).collect();
    content.push_str(&table(
        "service-exports",
        &["Service", "Valid", "Conflict", "Message"],
        &rows,
    ));
    content.push_str("<h2>ServiceImports</h2>");
    let rows: Vec<Vec<String>> = imports
        .items
        .iter()
        .map(|import| import_row(import, &slices.items))
        .collect();
    content.push_str(&table(
        "service-imports",
        &[
            "Service",
            "Type",
            "Ports",
            "Endpoints (ready/total per cluster)",
        ],
        &rows,
    ));
    content.push_str("<h2>MultiClusterServices</h2>");
    let collected = collected_endpoints(&works.items);
    let rows: Vec<Vec<String>> = services
        .items
        .iter()
        .map(|mcs| mcs_row(mcs, &collected))
        .collect();
    content.push_str(&table(
        "multicluster-services",
        &[
            "Service",
            "Types",
            "Providers",
            "Consumers",
            "Endpoints (ready/total per provider)",
            "Dispatched (ready/total per consumer)",
            "Conditions",
        ],
        &rows,
    ));
    Ok(View {
        title: "Services".into(),
        content,
        live: Some("/live/services".into()),
    })
}

fn namespaced_name(object: &Value) -> String {
    format!(
        "{}/{}",
        api::text(object, "/metadata/namespace"),
        api::text(object, "/metadata/name")
    )
}

fn condition_status(object: &Value, kind: &str) -> String {
    api::condition(object, kind)
        .map(|c| api::text(c, "/status").to_string())
        .unwrap_or_default()
}

fn export_row(export: &Value) -> Vec<String> {
    let valid = condition_status(export, karmada_api::mcs::CONDITION_VALID);
    let class = if valid == "True" { "ok" } else { "bad" };
    let messages: Vec<&str> = export
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["status"] != "True" || c["type"] == karmada_api::mcs::CONDITION_CONFLICT)
        .map(|c| api::text(c, "/message"))
        .filter(|m| !m.is_empty())
        .collect();
    vec![
        esc(&namespaced_name(export)),
        format!("<span class=\"{class}\">{}</span>", esc(&valid)),
        esc(&condition_status(
            export,
            karmada_api::mcs::CONDITION_CONFLICT,
        )),
        format!("<span class=\"wrap\">{}</span>", esc(&messages.join("; "))),
    ]
}

fn ports(object: &Value) -> String {
    object
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "{}/{}",
                p["port"].as_i64().unwrap_or(0),
                match api::text(p, "/protocol") {
                    "" => "TCP",
                    protocol => protocol,
                }
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Endpoint cells: `cluster ready/total`, each marked with its cluster for the page's readers.
fn endpoint_cells(clusters: &BTreeMap<String, Endpoints>) -> String {
    if clusters.is_empty() {
        return "<span class=\"muted\">none</span>".into();
    }
    clusters
        .iter()
        .map(|(cluster, e)| {
            format!(
                "<span class=\"endpoints\" data-cluster=\"{c}\">{c} {}/{}</span>",
                e.ready,
                e.total,
                c = esc(cluster)
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// One ServiceImport: the imported slices of its derived Service in its namespace back it.
pub fn import_row(import: &Value, slices: &[Value]) -> Vec<String> {
    let namespace = api::text(import, "/metadata/namespace");
    let derived = derived_service_name(api::text(import, "/metadata/name"));
    let own = slices.iter().filter(|s| {
        api::text(s, "/metadata/namespace") == namespace
            && s.pointer("/metadata/labels")
                .and_then(|l| l.get(LABEL_ENDPOINT_SLICE_SERVICE_NAME))
                .and_then(Value::as_str)
                == Some(derived.as_str())
    });
    vec![
        esc(&namespaced_name(import)),
        esc(api::text(import, "/spec/type")),
        esc(&ports(import)),
        endpoint_cells(&backing::backing_clusters(own)),
    ]
}

/// A MultiClusterService's endpoints: collected from each provider, and dispatched into each consumer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct McsEndpoints {
    pub collected: BTreeMap<String, Endpoints>,
    pub dispatched: BTreeMap<String, Endpoints>,
}

/// Per MultiClusterService (namespace, name), its endpoints from the Works labelled with it: a reported slice
/// in a provider's execution namespace, or (carrying the provider's name) a copy dispatched to a consumer's.
pub fn collected_endpoints(works: &[Value]) -> BTreeMap<(String, String), McsEndpoints> {
    let mut collected: BTreeMap<(String, String), McsEndpoints> = BTreeMap::new();
    for work in works {
        let labels = &work["metadata"]["labels"];
        let (Some(namespace), Some(name)) = (
            labels[LABEL_MCS_NAMESPACE].as_str(),
            labels[LABEL_MCS_NAME].as_str(),
        ) else {
            continue;
        };
        let Some(cluster) = cluster_of_execution_namespace(api::text(work, "/metadata/namespace"))
        else {
            continue;
        };
        let endpoints = collected
            .entry((namespace.to_string(), name.to_string()))
            .or_default();
        let dispatched = work
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION_PROVISION_CLUSTER))
            .is_some();
        let entry = if dispatched {
            &mut endpoints.dispatched
        } else {
            &mut endpoints.collected
        }
        .entry(cluster.to_string())
        .or_default();
        for manifest in work
            .pointer("/spec/workload/manifests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m["kind"] == "EndpointSlice")
        {
            for endpoint in manifest["endpoints"].as_array().into_iter().flatten() {
                entry.total += 1;
                if backing::is_ready(endpoint) {
                    entry.ready += 1;
                }
            }
        }
    }
    collected
}

fn cluster_names(mcs: &Value, field: &str) -> String {
    let names: Vec<&str> = mcs
        .pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| api::text(c, "/name"))
        .collect();
    if names.is_empty() {
        "all clusters".into()
    } else {
        names.join(",")
    }
}

fn mcs_row(mcs: &Value, collected: &BTreeMap<(String, String), McsEndpoints>) -> Vec<String> {
    let key = (
        api::text(mcs, "/metadata/namespace").to_string(),
        api::text(mcs, "/metadata/name").to_string(),
    );
    let types: Vec<&str> = mcs
        .pointer("/spec/types")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let conditions: Vec<String> = mcs
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| format!("{}={}", api::text(c, "/type"), api::text(c, "/status")))
        .collect();
    let none = McsEndpoints::default();
    let endpoints = collected.get(&key).unwrap_or(&none);
    vec![
        esc(&namespaced_name(mcs)),
        esc(&types.join(",")),
        esc(&cluster_names(mcs, "providerClusters")),
        esc(&cluster_names(mcs, "consumerClusters")),
        endpoint_cells(&endpoints.collected),
        endpoint_cells(&endpoints.dispatched)
            .replace("class=\"endpoints\"", "class=\"dispatched\""),
        format!(
            "<span class=\"wrap\">{}</span>",
            esc(&conditions.join(", "))
        ),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn imports_are_backed_by_their_derived_slices_per_cluster() {
        let import = json!({"metadata": {"namespace": "default", "name": "web"},
            "spec": {"type": "ClusterSetIP", "ports": [{"port": 80}]}});
        let slice = |ns: &str, service: &str, cluster: &str, ready: &[bool]| {
            json!({"metadata": {"namespace": ns,
                "labels": {"kubernetes.io/service-name": service},
                "annotations": {"endpointslice.karmada.io/provision-cluster": cluster}},
              "endpoints": ready.iter().map(|r| json!({"conditions": {"ready": r}})).collect::<Vec<_>>()})
        };
        let slices = [
            slice("default", "derived-web", "member1", &[true, false]),
            slice("default", "derived-web", "member2", &[true]),
            slice("default", "derived-api", "member3", &[true]),
            slice("other", "derived-web", "member3", &[true]),
        ];
        let row = import_row(&import, &slices);
        assert_eq!(row[1], "ClusterSetIP");
        assert_eq!(row[2], "80/TCP");
        assert!(
            row[3].contains("data-cluster=\"member1\">member1 1/2<")
                && row[3].contains("member2 1/1")
                && !row[3].contains("member3"),
            "{}",
            row[3]
        );
    }

    #[test]
    fn multicluster_services_count_what_each_provider_reported() {
        let work = json!({"metadata": {"namespace": "karmada-es-member1",
            "labels": {"multiclusterservice.karmada.io/namespace": "default",
                       "multiclusterservice.karmada.io/name": "web"}},
            "spec": {"workload": {"manifests": [{"kind": "EndpointSlice",
                "endpoints": [{"conditions": {"ready": true}}, {}]}]}}});
        let dispatched = json!({"metadata": {"namespace": "karmada-es-member3",
            "annotations": {"endpointslice.karmada.io/provision-cluster": "member1"},
            "labels": {"multiclusterservice.karmada.io/namespace": "default",
                       "multiclusterservice.karmada.io/name": "web"}},
            "spec": {"workload": {"manifests": [{"kind": "EndpointSlice",
                "endpoints": [{"conditions": {"ready": true}}, {"conditions": {"ready": false}}]}]}}});
        let collected = collected_endpoints(&[work, dispatched]);
        let mcs = json!({"metadata": {"namespace": "default", "name": "web"},
            "spec": {"types": ["CrossCluster"], "providerClusters": [{"name": "member1"}]},
            "status": {"conditions": [{"type": "ServiceApplied", "status": "True"}]}});
        let row = mcs_row(&mcs, &collected);
        assert_eq!(row[2], "member1");
        assert_eq!(row[3], "all clusters");
        assert!(
            row[4].contains("member1 2/2") && !row[4].contains("member3"),
            "{}",
            row[4]
        );
        assert!(
            row[5].contains("class=\"dispatched\" data-cluster=\"member3\">member3 1/2<"),
            "{}",
            row[5]
        );
        assert_eq!(row[6], "<span class=\"wrap\">ServiceApplied=True</span>");
    }
}
