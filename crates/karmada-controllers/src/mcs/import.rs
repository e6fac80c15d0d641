//! The service-import controller's core (pure): the derived Service of a ServiceImport and its status.
//!
//! A ClusterSetIP import gets `derived-<svc>` in its namespace: type ClusterIP, the import's ports (name,
//! protocol, appProtocol, port), no selector (its endpoints are the imported slices), owned by the import so it
//! goes with it; its `status.loadBalancer.ingress` lists the import's `spec.ips`, as Karmada writes it. A Headless
//! import gets none (Karmada derives only for ClusterSetIP; one left from an earlier type is deleted).
//! `status.clusters` lists the clusters whose imported slices back the import.

use std::collections::BTreeMap;

use karmada_api::mcs::{ClusterStatus, ServiceImport, ServiceImportType, derived_service_name};
use serde_json::{Value, json};

use super::backing::Endpoints;

/// The derived Service the import wants, if any.
pub fn derived_service(import: &ServiceImport) -> Option<Value> {
    if import.spec.type_ != ServiceImportType::ClusterSetIP {
        return None;
    }
    let name = import.metadata.name.as_deref()?;
    let ports: Vec<Value> = import
        .spec
        .ports
        .iter()
        .map(|port| {
            let mut p = json!({"port": port.port, "protocol": if port.protocol.is_empty() { "TCP" } else { port.protocol.as_str() }});
            if !port.name.is_empty() {
                p["name"] = json!(port.name);
            }
            if !port.app_protocol.is_empty() {
                p["appProtocol"] = json!(port.app_protocol);
            }
            p
        })
        .collect();
    let mut metadata = json!({
        "name": derived_service_name(name),
        "namespace": import.metadata.namespace.clone().unwrap_or_default(),
    });
    if let Some(uid) = import.metadata.uid.as_deref() {
        metadata["ownerReferences"] = json!([{
            "apiVersion": format!("{}/{}", karmada_api::mcs::GROUP, karmada_api::mcs::VERSION),
            "kind": "ServiceImport",
            "name": name,
            "uid": uid,
        }]);
    }
    Some(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {"type": "ClusterIP", "ports": ports},
    }))
}

/// `status.loadBalancer.ingress` of the derived Service: one entry per clusterset IP of the import.
pub fn derived_service_status(import: &ServiceImport) -> Value {
    let ingress: Vec<Value> = import.spec.ips.iter().map(|ip| json!({"ip": ip})).collect();
    json!({"loadBalancer": if ingress.is_empty() { json!({}) } else { json!({"ingress": ingress}) }})
}

/// Whether the existing derived Service already has what `desired` asks for (ports and type; the clusterIP the
/// server allocated is the existing one's).
pub fn derived_service_up_to_date(existing: &Value, desired: &Value) -> bool {
    let port_key = |p: &Value| {
        (
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            p.get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP")
                .to_string(),
            p.get("port").and_then(Value::as_i64),
            p.get("appProtocol")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        )
    };
    let ports = |v: &Value| -> Vec<_> {
        v.pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(port_key)
            .collect()
    };
    let selector_empty = existing
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .is_none_or(|s| s.is_empty());
    ports(existing) == ports(desired)
        && existing.pointer("/spec/type") == desired.pointer("/spec/type")
        && selector_empty
}

/// `status.clusters` from the backing clusters.
pub fn status_clusters(backing: &BTreeMap<String, Endpoints>) -> Vec<ClusterStatus> {
    backing
        .keys()
        .map(|cluster| ClusterStatus {
            cluster: cluster.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use karmada_api::mcs::{ServiceImportSpec, ServicePort};

    use super::*;

    fn import(type_: ServiceImportType, ips: Vec<String>) -> ServiceImport {
        let mut import = ServiceImport {
            spec: ServiceImportSpec {
                type_,
                ips,
                ports: vec![
                    ServicePort {
                        name: "http".into(),
                        protocol: "TCP".into(),
                        port: 8080,
                        ..ServicePort::default()
                    },
                    ServicePort {
                        name: "grpc".into(),
                        app_protocol: "grpc".into(),
                        port: 9090,
                        ..ServicePort::default()
                    },
                ],
                ..ServiceImportSpec::default()
            },
            ..ServiceImport::default()
        };
        import.metadata.name = Some("api-server".into());
        import.metadata.namespace = Some("microservices".into());
        import.metadata.uid = Some("u1".into());
        import
    }

    #[test]
    fn a_clusterset_ip_import_derives_a_selectorless_service_with_its_ports() {
        let service =
            derived_service(&import(ServiceImportType::ClusterSetIP, vec![])).expect("derived");
        assert_eq!(service["metadata"]["name"], "derived-api-server");
        assert_eq!(service["metadata"]["namespace"], "microservices");
        assert_eq!(
            service["metadata"]["ownerReferences"][0]["kind"],
            "ServiceImport"
        );
        assert_eq!(service["spec"]["type"], "ClusterIP");
        assert!(service["spec"].get("selector").is_none());
        assert_eq!(
            service["spec"]["ports"],
            json!([
                {"name": "http", "protocol": "TCP", "port": 8080},
                {"name": "grpc", "protocol": "TCP", "port": 9090, "appProtocol": "grpc"},
            ])
        );
        let mut allocated = service.clone();
        allocated["spec"]["clusterIP"] = json!("10.96.0.3");
        assert!(derived_service_up_to_date(&allocated, &service));
        allocated["spec"]["ports"][0]["port"] = json!(80);
        assert!(!derived_service_up_to_date(&allocated, &service));
        assert!(derived_service(&import(ServiceImportType::Headless, vec![])).is_none());
    }

    #[test]
    fn the_derived_status_lists_the_clusterset_ips() {
        assert_eq!(
            derived_service_status(&import(
                ServiceImportType::ClusterSetIP,
                vec!["10.1.0.1".into()]
            )),
            json!({"loadBalancer": {"ingress": [{"ip": "10.1.0.1"}]}})
        );
        let backing = BTreeMap::from([
            ("b".to_string(), Endpoints::default()),
            ("a".to_string(), Endpoints { ready: 1, total: 1 }),
        ]);
        let clusters: Vec<String> = status_clusters(&backing)
            .into_iter()
            .map(|c| c.cluster)
            .collect();
        assert_eq!(clusters, ["a", "b"]);
    }
}
