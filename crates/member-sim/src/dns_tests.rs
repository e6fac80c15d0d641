use serde_json::json;

use super::*;

fn service(name: &str, cluster_ip: &str, ports: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "shop"},
           "spec": {"clusterIP": cluster_ip, "ports": ports}})
}

fn slice(
    name: &str,
    service_label: (&str, &str),
    cluster: Option<&str>,
    endpoints: Value,
) -> Value {
    let mut s = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": name, "namespace": "shop", "labels": {service_label.0: service_label.1}},
           "addressType": "IPv4", "endpoints": endpoints,
           "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]});
    if let Some(cluster) = cluster {
        s["metadata"]["annotations"] =
            json!({"endpointslice.karmada.io/provision-cluster": cluster});
    }
    s
}

fn endpoint(ip: &str, pod: &str, ready: bool) -> Value {
    json!({"addresses": [ip], "conditions": {"ready": ready}, "targetRef": {"kind": "Pod", "name": pod}})
}

fn import(name: &str, type_: &str, ips: Value) -> Value {
    json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
           "metadata": {"name": name, "namespace": "shop"},
           "spec": {"type": type_, "ips": ips, "ports": [{"name": "http", "protocol": "TCP", "port": 8080}, {"port": 9000}]}})
}

fn a(ip: &str) -> RecordData {
    RecordData::A(ip.parse().expect("ipv4"))
}

fn srv(port: u16, target: &str) -> RecordData {
    RecordData::Srv {
        priority: 0,
        weight: 100,
        port,
        target: target.into(),
    }
}

fn table() -> DnsTable {
    DnsTable::build(&Objects::from_values([
        service(
            "web",
            "10.96.0.10",
            json!([{"name": "http", "port": 80}, {"port": 81}]),
        ),
        service("v6", "fd00::10", json!([])),
        service("db", "None", json!([{"name": "sql", "port": 5432}])),
        slice(
            "db-abcde",
            ("kubernetes.io/service-name", "db"),
            None,
            json!([
                endpoint("10.244.0.5", "db-0", true),
                endpoint("10.244.0.6", "db-1", false)
            ]),
        ),
        import("api", "ClusterSetIP", json!(["10.96.0.20"])),
        import("pending", "ClusterSetIP", json!([])),
        import("cache", "Headless", json!([])),
        import("empty", "Headless", json!([])),
        slice(
            "imported-member-a-cache-x",
            ("kubernetes.io/service-name", "derived-cache"),
            Some("member-a"),
            json!([endpoint("10.244.1.5", "cache-0", true)]),
        ),
        slice(
            "imported-member-b-cache-y",
            ("multicluster.kubernetes.io/service-name", "cache"),
            Some("member-b"),
            json!([
                endpoint("10.244.2.5", "cache-0", true),
                endpoint("10.244.2.6", "cache-1", false)
            ]),
        ),
        slice(
            "imported-member-a-empty-x",
            ("kubernetes.io/service-name", "derived-empty"),
            Some("member-a"),
            json!([endpoint("10.244.1.9", "empty-0", false)]),
        ),
    ]))
}

#[test]
fn lookup_table() {
    let table = table();
    let records = |names: Vec<RecordData>| Answer::Records(names);
    // (question, type, answer)
    let cases: Vec<(&str, QueryType, Answer)> = vec![
        (
            "web.shop.svc.cluster.local",
            QueryType::A,
            records(vec![a("10.96.0.10")]),
        ),
        (
            "WEB.shop.svc.cluster.local.",
            QueryType::A,
            records(vec![a("10.96.0.10")]),
        ),
        (
            "web.shop.svc.cluster.local",
            QueryType::Aaaa,
            records(vec![]),
        ),
        (
            "v6.shop.svc.cluster.local",
            QueryType::Aaaa,
            records(vec![RecordData::Aaaa("fd00::10".parse().expect("v6"))]),
        ),
        (
            "_http._tcp.web.shop.svc.cluster.local",
            QueryType::Srv,
            records(vec![srv(80, "web.shop.svc.cluster.local.")]),
        ),
        (
            "db.shop.svc.cluster.local",
            QueryType::A,
            records(vec![a("10.244.0.5")]),
        ),
        (
            "db-0.db.shop.svc.cluster.local",
            QueryType::A,
            records(vec![a("10.244.0.5")]),
        ),
        (
            "db-1.db.shop.svc.cluster.local",
            QueryType::A,
            Answer::NxDomain { zone: CLUSTER_ZONE },
        ),
        (
            "_http._tcp.db.shop.svc.cluster.local",
            QueryType::Srv,
            records(vec![srv(8080, "db-0.db.shop.svc.cluster.local.")]),
        ),
        (
            "api.shop.svc.clusterset.local",
            QueryType::A,
            records(vec![a("10.96.0.20")]),
        ),
        (
            "_http._tcp.api.shop.svc.clusterset.local",
            QueryType::Srv,
            records(vec![srv(8080, "api.shop.svc.clusterset.local.")]),
        ),
        (
            "pending.shop.svc.clusterset.local",
            QueryType::A,
            records(vec![]),
        ),
        (
            "cache.shop.svc.clusterset.local",
            QueryType::A,
            records(vec![a("10.244.1.5"), a("10.244.2.5")]),
        ),
        (
            "cache-0.member-b.cache.shop.svc.clusterset.local",
            QueryType::A,
            records(vec![a("10.244.2.5")]),
        ),
        (
            "_http._tcp.cache.shop.svc.clusterset.local",
            QueryType::Srv,
            records(vec![
                srv(8080, "cache-0.member-a.cache.shop.svc.clusterset.local."),
                srv(8080, "cache-0.member-b.cache.shop.svc.clusterset.local."),
            ]),
        ),
        (
            "empty.shop.svc.clusterset.local",
            QueryType::A,
            Answer::NxDomain {
                zone: CLUSTERSET_ZONE,
            },
        ),
        (
            "nope.shop.svc.clusterset.local",
            QueryType::A,
            Answer::NxDomain {
                zone: CLUSTERSET_ZONE,
            },
        ),
        ("shop.svc.cluster.local", QueryType::A, records(vec![])),
        ("cluster.local", QueryType::A, records(vec![])),
        (
            "dns-version.clusterset.local",
            QueryType::Txt,
            records(vec![RecordData::Txt("1.0.0".into())]),
        ),
        (
            "web.shop.svc.cluster.local.example.com",
            QueryType::A,
            Answer::Refused,
        ),
        ("example.com", QueryType::A, Answer::Refused),
        ("notcluster.local", QueryType::A, Answer::Refused),
        (
            "web.shop.svc.cluster.local",
            QueryType::Other,
            records(vec![]),
        ),
    ];
    for (name, query, expected) in cases {
        let mut answer = table.lookup(name, query);
        if let Answer::Records(found) = &mut answer {
            found.sort();
        }
        assert_eq!(answer, expected, "{name} {query:?}");
    }
}

#[test]
fn the_table_follows_the_objects() {
    let before = table();
    let after = DnsTable::build(&Objects::from_values([
        import("cache", "Headless", json!([])),
        slice(
            "imported-member-a-cache-x",
            ("kubernetes.io/service-name", "derived-cache"),
            Some("member-a"),
            json!([endpoint("10.244.1.7", "cache-1", true)]),
        ),
    ]));
    assert_ne!(before, after);
    assert_eq!(
        after.lookup("cache.shop.svc.clusterset.local", QueryType::A),
        Answer::Records(vec![a("10.244.1.7")])
    );
    assert_eq!(
        after.lookup("web.shop.svc.cluster.local", QueryType::A),
        Answer::NxDomain { zone: CLUSTER_ZONE }
    );
}
