//! Multi-cluster Services end to end (issue 33), with real kubectl, karmadactl and dig against member-sims:
//! seed 000's export/import (its YAML as written: the api-server Deployment and Service in two providers, the
//! ServiceImport in a third cluster), answered by the consumer's `clusterset.local` DNS; conflicting exports;
//! an unreachable or scaled-down provider losing its endpoints everywhere and regaining them; deletions leaving
//! nothing behind; and MultiClusterService provider/consumer changes moving the slices.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

use crate::harness::Run;
use crate::plane::{Plane, wait_for};

const SHANGHAI: &str = "member-shanghai";
const BEIJING: &str = "member-beijing";
const CONSUMER: &str = "member-frankfurt";
const NS: &str = "microservices";

fn apply_fixture(plane: &Plane, relative: &str) {
    plane
        .kubectl(&["apply", "-f", &test_fixtures::path_str(relative)])
        .success();
}

fn apply_yaml(plane: &Plane, name: &str, yaml: &str) {
    let path = plane.karmada.file(name, yaml);
    plane
        .kubectl(&["apply", "-f", path.to_str().expect("utf8")])
        .success();
}

/// `dig @127.0.0.1 -p PORT ARGS...`; fails with an install hint when dig is missing.
fn dig(port: u16, args: &[&str]) -> Run {
    let found = Command::new("dig").arg("-v").output();
    assert!(
        found.is_ok(),
        "dig is not installed: run scripts/setup.sh (it installs Debian's bind9-dnsutils)"
    );
    Run::from(
        Command::new("dig")
            .arg("@127.0.0.1")
            .args(["-p", &port.to_string(), "+time=2", "+tries=2"])
            .args(args)
            .output()
            .expect("run dig"),
    )
}

/// The addresses `dig +short` prints for `name` (type A).
fn dig_addresses(port: u16, name: &str) -> BTreeSet<String> {
    dig(port, &[name, "A", "+short"])
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `status: X` from dig's header.
fn dig_status(output: &str) -> String {
    output
        .split("status: ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_default()
        .to_string()
}

/// Ready pod IPs of `app` in a member.
fn pod_ips(
    plane: &Plane,
    member: &str,
    namespace: &str,
    app: &str,
) -> Result<BTreeSet<String>, String> {
    let pods = plane.member_object(
        member,
        &["pods", "-n", namespace, "-l", &format!("app={app}")],
    )?;
    Ok(pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| {
            p["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        })
        .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_string))
        .collect())
}

/// Ready addresses of the EndpointSlices labelled `kubernetes.io/service-name=SERVICE` in a member.
fn slice_addresses(
    plane: &Plane,
    member: &str,
    namespace: &str,
    service: &str,
) -> Result<BTreeSet<String>, String> {
    let slices = plane.member_object(
        member,
        &[
            "endpointslices",
            "-n",
            namespace,
            "-l",
            &format!("kubernetes.io/service-name={service}"),
        ],
    )?;
    Ok(ready_addresses(&slices))
}

fn ready_addresses(list: &Value) -> BTreeSet<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["conditions"]["ready"] != false)
        .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect()
}

fn condition(object: &Value, type_: &str) -> (String, String, String) {
    let found = object["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or(Value::Null);
    (
        found["status"].as_str().unwrap_or_default().to_string(),
        found["reason"].as_str().unwrap_or_default().to_string(),
        found["message"].as_str().unwrap_or_default().to_string(),
    )
}

fn placement(name: &str, kind: &str, target: &str, clusters: &[&str]) -> String {
    let api_version = "multicluster.x-k8s.io/v1alpha1";
    format!(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: {name}\n  namespace: {NS}\n\
         spec:\n  resourceSelectors:\n    - apiVersion: {api_version}\n      kind: {kind}\n      name: {target}\n\
         \x20 placement:\n    clusterAffinity:\n      clusterNames: [{}]\n",
        clusters.join(", ")
    )
}

/// Seed 000 step 3.3 (`tests/fixtures/seed-000`, files 04 and 05) with its YAML as written: 04's Deployment and
/// Service land in the two providers that exist among the three its policy names, 05's ServiceExport goes to them
/// and its ServiceImport to a third cluster, whose DNS then answers for the clusterset name and whose EndpointSlices
/// list the providers' pod IPs.
#[test]
fn seed_000_export_import_answers_in_the_consumers_dns() {
    let plane = Plane::start(&[SHANGHAI, BEIJING, CONSUMER]);
    plane.kubectl(&["create", "namespace", NS]).success();
    apply_fixture(&plane, "seed-000/04-api-server.yaml");
    apply_fixture(&plane, "seed-000/05-multicluster-service.yaml");
    apply_yaml(
        &plane,
        "export-policy.yaml",
        &placement(
            "api-server-export",
            "ServiceExport",
            "api-server",
            &[SHANGHAI, BEIJING],
        ),
    );
    apply_yaml(
        &plane,
        "import-policy.yaml",
        &placement(
            "api-server-import",
            "ServiceImport",
            "api-server",
            &[CONSUMER],
        ),
    );

    // Every Ready api-server pod of both providers, as the consumer's EndpointSlices list them.
    let providers = wait_for("the consumer's slices to list both providers' pods", || {
        let mut expected = pod_ips(&plane, SHANGHAI, NS, "api-server")?;
        let beijing = pod_ips(&plane, BEIJING, NS, "api-server")?;
        if expected.len() < 5 || beijing.len() < 4 {
            return Err(format!("providers not ready yet: {expected:?} {beijing:?}"));
        }
        expected.extend(beijing);
        let imported = slice_addresses(&plane, CONSUMER, NS, "derived-api-server")?;
        if imported == expected {
            Ok(expected)
        } else {
            Err(format!(
                "consumer lists {imported:?}, providers run {expected:?}\n{}",
                plane.logs()
            ))
        }
    });
    assert_eq!(providers.len(), 9);

    // The consumer's clusterset name resolves to its ServiceImport's clusterset IP, the derived Service's
    // clusterIP there.
    let port = plane.dns_port(CONSUMER);
    let clusterset_ip = wait_for(
        "the consumer's ServiceImport to get its clusterset IP",
        || {
            let import =
                plane.member_object(CONSUMER, &["serviceimport", "api-server", "-n", NS])?;
            let derived =
                plane.member_object(CONSUMER, &["service", "derived-api-server", "-n", NS])?;
            let ip = import["spec"]["ips"][0]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if !ip.is_empty() && derived["spec"]["clusterIP"] == ip.as_str() {
                Ok(ip)
            } else {
                Err(format!("import {import}, derived {derived}"))
            }
        },
    );
    let name = "api-server.microservices.svc.clusterset.local";
    wait_for("dig to answer with the clusterset IP", || {
        let answer = dig_addresses(port, name);
        if answer == BTreeSet::from([clusterset_ip.clone()]) {
            Ok(())
        } else {
            Err(format!("dig answered {answer:?}"))
        }
    });
    // Over TCP too, and SRV for the named port.
    let tcp = dig(port, &["+tcp", name, "A", "+short"]);
    assert_eq!(tcp.stdout.trim(), clusterset_ip);
    let srv = dig(port, &[&format!("_http._tcp.{name}"), "SRV", "+short"]);
    assert_eq!(srv.stdout.trim(), format!("0 100 8080 {name}."));

    // The control plane: imported slices per provider, the derived Service, the import's backing clusters and
    // the export's conditions.
    wait_for(
        "the control-plane ServiceImport to list both providers",
        || {
            let import = plane.object(&["serviceimport", "api-server", "-n", NS])?;
            let clusters: BTreeSet<&str> = import["status"]["clusters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["cluster"].as_str())
                .collect();
            if clusters == BTreeSet::from([BEIJING, SHANGHAI]) {
                Ok(())
            } else {
                Err(format!("{import}"))
            }
        },
    );
    plane
        .object(&["service", "derived-api-server", "-n", NS])
        .expect("the derived Service in the control plane");
    let imported = plane
        .object(&[
            "endpointslices",
            "-n",
            NS,
            "-l",
            "kubernetes.io/service-name=derived-api-server",
        ])
        .expect("imported slices");
    let names: BTreeSet<&str> = imported["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["metadata"]["name"].as_str())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("imported-member-shanghai-api-server-"))
            && names
                .iter()
                .any(|n| n.starts_with("imported-member-beijing-api-server-")),
        "{names:?}"
    );
    assert_eq!(ready_addresses(&imported), providers);
    wait_for("the ServiceExport to be Valid without conflicts", || {
        let export = plane.object(&["serviceexport", "api-server", "-n", NS])?;
        let valid = condition(&export, "Valid");
        let conflict = condition(&export, "Conflict");
        if valid.0 == "True" && conflict.0 == "False" {
            Ok(())
        } else {
            Err(format!("{valid:?} {conflict:?}"))
        }
    });
    let wide = plane
        .karmadactl(&["get", "serviceimports", "-n", NS, "-o", "wide"])
        .success()
        .to_string();
    assert!(
        wide.contains("member-beijing=4/4") && wide.contains("member-shanghai=5/5"),
        "{wide}"
    );
    let described = plane
        .karmadactl(&["describe", "serviceimports", "api-server", "-n", NS])
        .success()
        .to_string();
    assert!(described.contains("Backing Clusters:"), "{described}");
}

const SHOP: &str = "shop";

/// A Deployment of `replicas` and a headless Service `cache` with a named port, both placed (Duplicated) on
/// `clusters`; the ServiceExport on `clusters`, a Headless ServiceImport on `consumer`.
fn headless_cache(plane: &Plane, replicas: u32, clusters: &[&str], consumer: &str) {
    plane.kubectl(&["create", "namespace", SHOP]).success();
    let list = clusters.join(", ");
    apply_yaml(
        plane,
        "cache.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cache\n  namespace: {SHOP}\nspec:\n  replicas: {replicas}\n\
             \x20 selector:\n    matchLabels: {{app: cache}}\n  template:\n    metadata:\n      labels: {{app: cache}}\n\
             \x20   spec:\n      containers:\n        - name: cache\n          image: redis:7\n          ports: [{{containerPort: 6379}}]\n\
             ---\napiVersion: v1\nkind: Service\nmetadata:\n  name: cache\n  namespace: {SHOP}\nspec:\n  clusterIP: None\n\
             \x20 selector: {{app: cache}}\n  ports: [{{name: redis, port: 6379, targetPort: 6379}}]\n\
             ---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: cache\n  namespace: {SHOP}\n\
             spec:\n  resourceSelectors:\n    - {{apiVersion: apps/v1, kind: Deployment, name: cache}}\n\
             \x20   - {{apiVersion: v1, kind: Service, name: cache}}\n\
             \x20   - {{apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceExport, name: cache}}\n\
             \x20 placement:\n    clusterAffinity: {{clusterNames: [{list}]}}\n\
             ---\napiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ServiceExport\nmetadata:\n  name: cache\n  namespace: {SHOP}\n\
             ---\napiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ServiceImport\nmetadata:\n  name: cache\n  namespace: {SHOP}\n\
             spec:\n  type: Headless\n  ports: [{{name: redis, protocol: TCP, port: 6379}}]\n\
             ---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: cache-import\n  namespace: {SHOP}\n\
             spec:\n  resourceSelectors:\n    - {{apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceImport, name: cache}}\n\
             \x20 placement:\n    clusterAffinity: {{clusterNames: [{consumer}]}}\n"
        ),
    );
}

/// Waits until the consumer's headless clusterset name answers exactly `expected` (NXDOMAIN when empty), and its
/// imported slices list the same addresses.
fn wait_answers(plane: &Plane, consumer: &str, expected: &BTreeSet<String>, what: &str) {
    let port = plane.dns_port(consumer);
    let name = "cache.shop.svc.clusterset.local";
    wait_for(what, || {
        let answer = dig(port, &[name, "A"]);
        let status = dig_status(&answer.stdout);
        let addresses = dig_addresses(port, name);
        let slices = slice_addresses(plane, consumer, SHOP, "derived-cache")?;
        let status_ok = if expected.is_empty() {
            status == "NXDOMAIN"
        } else {
            status == "NOERROR"
        };
        if status_ok && &addresses == expected && &slices == expected {
            Ok(())
        } else {
            Err(format!(
                "dig {status} {addresses:?}, slices {slices:?}, expected {expected:?}"
            ))
        }
    });
}

/// An unreachable provider, then one scaled to 0, loses its endpoints from the consumer's slices and DNS, and
/// regains them; deleting the import, the export and the Service leaves nothing behind anywhere. On the way:
/// truncated UDP answers retried over TCP, malformed queries, and questions about other zones.
#[test]
fn failure_recovery_and_deletion_leave_nothing_stale() {
    let (a, b, consumer) = ("member-a", "member-b", "member-c");
    let plane = Plane::start(&[a, b, consumer]);
    headless_cache(&plane, 30, &[a, b], consumer);
    let ips = |member: &str| pod_ips(&plane, member, SHOP, "cache");
    let both = wait_for("30 ready pods in each provider", || {
        let (in_a, in_b) = (ips(a)?, ips(b)?);
        if in_a.len() == 30 && in_b.len() == 30 {
            Ok((in_a, in_b))
        } else {
            Err(format!("{} and {} ready", in_a.len(), in_b.len()))
        }
    });
    let all: BTreeSet<String> = both.0.union(&both.1).cloned().collect();
    wait_answers(
        &plane,
        consumer,
        &all,
        "the consumer to answer with both providers' 60 pods",
    );

    // 60 A records do not fit in 512 bytes: without EDNS the UDP answer is truncated (TC), and dig, asking
    // again over TCP, gets all of them.
    let port = plane.dns_port(consumer);
    let name = "cache.shop.svc.clusterset.local";
    let truncated = dig(port, &["+noedns", "+ignore", name, "A"]);
    assert!(truncated.stdout.contains(" tc"), "{}", truncated.stdout);
    let retried = dig(port, &["+noedns", name, "A"]);
    assert!(
        retried.stdout.contains("Truncated, retrying in TCP mode"),
        "{}",
        retried.stdout
    );
    assert_eq!(
        retried.stdout.matches("\tA\t").count(),
        60,
        "{}",
        retried.stdout
    );
    // SRV per ready endpoint and named port; the zone's SOA with NXDOMAIN; other zones refused.
    let srv = dig(
        port,
        &["+tcp", &format!("_redis._tcp.{name}"), "SRV", "+short"],
    );
    assert_eq!(srv.stdout.lines().count(), 60, "{}", srv.stdout);
    assert!(
        srv.stdout
            .lines()
            .all(|l| l.starts_with("0 100 6379 ") && l.contains(".member-")),
        "{}",
        srv.stdout
    );
    let missing = dig(port, &["nothing.shop.svc.clusterset.local", "A"]);
    assert_eq!(dig_status(&missing.stdout), "NXDOMAIN");
    assert!(
        missing.stdout.contains("clusterset.local.\t5\tIN\tSOA"),
        "{}",
        missing.stdout
    );
    assert_eq!(
        dig_status(&dig(port, &["example.com", "A"]).stdout),
        "REFUSED"
    );
    // Garbage on the DNS port does not take the server down.
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp socket");
    for garbage in [
        &b"\x00"[..],
        &[0xff; 12][..],
        &[
            0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0xc0, 0xff,
        ][..],
    ] {
        socket.send_to(garbage, ("127.0.0.1", port)).expect("send");
    }
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("tcp connect");
    std::io::Write::write_all(&mut stream, &[0x00, 0x05, 1, 2, 3, 4, 5]).expect("tcp garbage");
    drop(stream);
    assert_eq!(
        dig_addresses(port, name),
        all,
        "the server answers after malformed queries"
    );

    // Provider a unreachable: its endpoints leave the consumer once the cluster is no longer Ready.
    plane.fault(a, &["unreachable"]);
    wait_answers(
        &plane,
        consumer,
        &both.1,
        "a's endpoints to leave the consumer",
    );
    plane.fault(a, &["clear"]);
    wait_answers(&plane, consumer, &all, "a's endpoints to come back");

    // Provider b scaled to 0 (an override for b only): its endpoints leave; back at 30, they return.
    apply_yaml(
        &plane,
        "scale-b.yaml",
        &format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata:\n  name: cache-b\n  namespace: {SHOP}\n\
             spec:\n  resourceSelectors:\n    - {{apiVersion: apps/v1, kind: Deployment, name: cache}}\n\
             \x20 overrideRules:\n    - targetCluster: {{clusterNames: [{b}]}}\n\
             \x20     overriders:\n        plaintext:\n          - {{path: /spec/replicas, operator: replace, value: 0}}\n"
        ),
    );
    let only_a = wait_for("a's pods alone", || {
        let in_a = ips(a)?;
        if in_a.len() == 30 {
            Ok(in_a)
        } else {
            Err(format!("{in_a:?}"))
        }
    });
    wait_answers(
        &plane,
        consumer,
        &only_a,
        "b's endpoints to leave the consumer",
    );
    plane
        .kubectl(&["delete", "overridepolicy", "cache-b", "-n", SHOP])
        .success();
    let back = wait_for("b's pods back", || {
        let (in_a, in_b) = (ips(a)?, ips(b)?);
        if in_a.len() == 30 && in_b.len() == 30 {
            Ok(in_a.union(&in_b).cloned().collect::<BTreeSet<_>>())
        } else {
            Err(format!("{} and {}", in_a.len(), in_b.len()))
        }
    });
    wait_answers(&plane, consumer, &back, "b's endpoints to return");

    // Deleting the import: the consumer loses the ServiceImport and every slice; the name no longer exists.
    plane
        .kubectl(&["delete", "serviceimport", "cache", "-n", SHOP])
        .success();
    wait_answers(
        &plane,
        consumer,
        &BTreeSet::new(),
        "the consumer to lose the import's endpoints",
    );
    wait_for("the consumer's ServiceImport to go", || {
        match plane.member_object(consumer, &["serviceimport", "cache", "-n", SHOP]) {
            Err(e) if e.contains("NotFound") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    // Deleting the export: no reported Work and no imported slice stays in the control plane.
    plane
        .kubectl(&["delete", "serviceexport", "cache", "-n", SHOP])
        .success();
    wait_for("reported Works and imported slices to go", || {
        let works = plane.object(&["works", "-A", "-l", "endpointslice.karmada.io/managed-by"])?;
        let slices = plane.object(&[
            "endpointslices",
            "-n",
            SHOP,
            "-l",
            "kubernetes.io/service-name=derived-cache",
        ])?;
        let count = |v: &Value| v["items"].as_array().map_or(0, Vec::len);
        if count(&works) == 0 && count(&slices) == 0 {
            Ok(())
        } else {
            Err(format!(
                "{} works, {} slices",
                count(&works),
                count(&slices)
            ))
        }
    });
    for member in [a, b] {
        wait_for(&format!("{member}'s ServiceExport to go"), || {
            match plane.member_object(member, &["serviceexport", "cache", "-n", SHOP]) {
                Err(e) if e.contains("NotFound") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        });
    }
    // The Service: gone from the providers, and from the consumer's cluster.local.
    plane
        .kubectl(&["delete", "service", "cache", "-n", SHOP])
        .success();
    wait_for(
        "the consumer's and providers' DNS to forget the Service",
        || {
            for member in [a, b, consumer] {
                let out = dig(
                    plane.dns_port(member),
                    &["cache.shop.svc.cluster.local", "A"],
                );
                if dig_status(&out.stdout) != "NXDOMAIN" {
                    return Err(format!("{member}: {}", out.stdout));
                }
            }
            Ok(())
        },
    );
}

/// Exports that disagree, an export of a Service a cluster does not have, and an import nothing exports: each
/// is a condition and an event naming the cluster and what is wrong.
#[test]
fn conflicting_exports_and_bad_input_are_named() {
    let (a, b, c) = ("member-a", "member-b", "member-c");
    let plane = Plane::start(&[a, b, c]);
    plane.kubectl(&["create", "namespace", SHOP]).success();
    apply_yaml(
        &plane,
        "web.yaml",
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: {SHOP}\nspec:\n  selector: {{app: web}}\n\
             \x20 ports: [{{name: http, port: 80, targetPort: 8080}}]\n\
             ---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: web\n  namespace: {SHOP}\n\
             spec:\n  resourceSelectors:\n    - {{apiVersion: v1, kind: Service, name: web}}\n\
             \x20 placement:\n    clusterAffinity: {{clusterNames: [{a}, {b}]}}\n\
             ---\napiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata:\n  name: web-b\n  namespace: {SHOP}\n\
             spec:\n  resourceSelectors:\n    - {{apiVersion: v1, kind: Service, name: web}}\n\
             \x20 overrideRules:\n    - targetCluster: {{clusterNames: [{b}]}}\n\
             \x20     overriders:\n        plaintext:\n          - {{path: /spec/ports/0/port, operator: replace, value: 81}}\n"
        ),
    );
    wait_for("b's Service with port 81", || {
        let service = plane.member_object(b, &["service", "web", "-n", SHOP])?;
        if service["spec"]["ports"][0]["port"] == 81 {
            Ok(())
        } else {
            Err(format!("{service}"))
        }
    });
    apply_yaml(
        &plane,
        "export.yaml",
        &format!(
            "apiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ServiceExport\nmetadata:\n  name: web\n  namespace: {SHOP}\n---\n{}\
             ---\napiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ServiceImport\nmetadata:\n  name: ghost\n  namespace: {SHOP}\n\
             spec:\n  type: ClusterSetIP\n  ports: [{{port: 80}}]\n",
            placement("web-export", "ServiceExport", "web", &[a, b, c])
                .replace("namespace: microservices", &format!("namespace: {SHOP}"))
        ),
    );
    let (valid, conflict) = wait_for(
        "the export's conditions to name c and the port conflict",
        || {
            let export = plane.object(&["serviceexport", "web", "-n", SHOP])?;
            let valid = condition(&export, "Valid");
            let conflict = condition(&export, "Conflict");
            if valid.1 == "NoService" && conflict.1 == "PortConflict" {
                Ok((valid, conflict))
            } else {
                Err(format!("{valid:?} {conflict:?}\n{}", plane.logs()))
            }
        },
    );
    assert_eq!(valid.0, "False");
    assert!(
        valid.2.contains("does not exist in member-c"),
        "{}",
        valid.2
    );
    assert_eq!(conflict.0, "True");
    assert!(
        conflict
            .2
            .contains("port \"http\" is 81/TCP where the oldest export (member-a) has 80/TCP")
            || conflict
                .2
                .contains("port \"http\" is 80/TCP where the oldest export (member-b) has 81/TCP"),
        "{}",
        conflict.2
    );
    let events = |name: &str| {
        plane
            .kubectl(&[
                "get",
                "events",
                "-n",
                SHOP,
                "--field-selector",
                &format!("involvedObject.name={name}"),
                "-o",
                "json",
            ])
            .json()
    };
    wait_for(
        "warning events on the export and on the unbacked import",
        || {
            let reasons = |v: Value| -> BTreeSet<String> {
                v["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e["reason"].as_str().map(str::to_string))
                    .collect()
            };
            let export = reasons(events("web"));
            let ghost = reasons(events("ghost"));
            if export.contains("NoService")
                && export.contains("PortConflict")
                && ghost.contains("ServiceNotExported")
            {
                Ok(())
            } else {
                Err(format!("{export:?} {ghost:?}"))
            }
        },
    );
    // The exported slices keep flowing from the valid clusters: the control plane imports a's and b's.
    wait_for("a's and b's slices imported", || {
        let slices = plane.object(&[
            "endpointslices",
            "-n",
            SHOP,
            "-l",
            "kubernetes.io/service-name=derived-web",
        ])?;
        let clusters: BTreeSet<String> = slices["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| {
                s["metadata"]["annotations"]["endpointslice.karmada.io/provision-cluster"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        if clusters == BTreeSet::from([a.to_string(), b.to_string()]) {
            Ok(())
        } else {
            Err(format!("{clusters:?}"))
        }
    });
}

/// A MultiClusterService (CrossCluster) places the Service in providers and consumers and dispatches the
/// providers' slices into the consumers; moving a cluster between the lists moves the slices, and a named
/// cluster that does not exist is reported.
#[test]
fn multicluster_service_moves_slices_with_its_lists() {
    let (a, b, c) = ("member-a", "member-b", "member-c");
    let plane = Plane::start(&[a, b, c]);
    plane.kubectl(&["create", "namespace", SHOP]).success();
    let mcs = |providers: &[&str], consumers: &[&str]| {
        let list = |names: &[&str]| {
            names
                .iter()
                .map(|n| format!("{{name: {n}}}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "apiVersion: networking.karmada.io/v1alpha1\nkind: MultiClusterService\nmetadata:\n  name: web\n  namespace: {SHOP}\n\
             spec:\n  types: [CrossCluster]\n  providerClusters: [{}]\n  consumerClusters: [{}]\n",
            list(providers),
            list(consumers)
        )
    };
    apply_yaml(
        &plane,
        "web.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {SHOP}\nspec:\n  replicas: 2\n\
             \x20 selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n\
             \x20   spec:\n      containers: [{{name: web, image: nginx}}]\n\
             ---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: web\n  namespace: {SHOP}\n\
             spec:\n  resourceSelectors:\n    - {{apiVersion: apps/v1, kind: Deployment, name: web}}\n\
             \x20 placement:\n    clusterAffinity: {{clusterNames: [{a}, {b}]}}\n\
             ---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: {SHOP}\nspec:\n  clusterIP: None\n\
             \x20 selector: {{app: web}}\n  ports: [{{name: http, port: 80}}]\n---\n{}",
            mcs(&[a], &[c, "member-nowhere"])
        ),
    );
    let ips = |member: &str| pod_ips(&plane, member, SHOP, "web");
    let dispatched = |member: &str| -> Result<BTreeSet<String>, String> {
        let slices = plane.member_object(
            member,
            &["endpointslices", "-n", SHOP, "-l", "endpointslice.kubernetes.io/managed-by=endpointslice-dispatch-controller.karmada.io"],
        )?;
        Ok(ready_addresses(&slices))
    };
    let from_a = wait_for("a's pods dispatched into c", || {
        let in_a = ips(a)?;
        let in_c = dispatched(c)?;
        if in_a.len() == 2 && in_c == in_a {
            Ok(in_a)
        } else {
            Err(format!("a {in_a:?}, c {in_c:?}\n{}", plane.logs()))
        }
    });
    // c's own DNS for the Service (headless) answers with a's pods: the dispatched slices carry its name.
    wait_for("c's cluster.local to answer with a's pods", || {
        let answer = dig_addresses(plane.dns_port(c), "web.shop.svc.cluster.local");
        if answer == from_a {
            Ok(())
        } else {
            Err(format!("{answer:?}"))
        }
    });
    let object = plane
        .object(&["multiclusterservice", "web", "-n", SHOP])
        .expect("mcs");
    assert_eq!(
        condition(&object, "EndpointSliceDispatched").0,
        "True",
        "{object}"
    );
    let applied = condition(&object, "ServiceApplied");
    assert_eq!(applied.0, "True", "{object}");
    assert!(
        applied
            .2
            .contains("Consumer cluster member-nowhere is not found"),
        "{}",
        applied.2
    );
    let service = plane
        .object(&["service", "web", "-n", SHOP])
        .expect("service");
    assert_eq!(
        service["metadata"]["labels"]["resourcetemplate.karmada.io/claimed-by"],
        "MultiClusterService"
    );

    // b becomes a provider and a consumer too: c gets b's pods as well, b gets a's; a consumes nothing.
    apply_yaml(&plane, "mcs-2.yaml", &mcs(&[a, b], &[b, c]));
    wait_for("slices moved to the new lists", || {
        let (in_a, in_b) = (ips(a)?, ips(b)?);
        let all: BTreeSet<String> = in_a.union(&in_b).cloned().collect();
        let (at_b, at_c, at_a) = (dispatched(b)?, dispatched(c)?, dispatched(a)?);
        if in_b.len() == 2 && at_c == all && at_b == in_a && at_a.is_empty() {
            Ok(())
        } else {
            let works = plane
                .kubectl(&["get", "works", "-A", "--show-labels"])
                .stdout;
            Err(format!(
                "a {in_a:?} b {in_b:?}; at a {at_a:?} b {at_b:?} c {at_c:?}\n{works}"
            ))
        }
    });
    // c leaves the consumers: its dispatched slices go.
    apply_yaml(&plane, "mcs-3.yaml", &mcs(&[a, b], &[b]));
    wait_for("c's dispatched slices to go", || {
        let at_c = dispatched(c)?;
        if at_c.is_empty() {
            Ok(())
        } else {
            let works = plane
                .kubectl(&["get", "works", "-A", "-o", "wide", "--show-labels"])
                .stdout;
            let mcs = plane
                .kubectl(&["get", "multiclusterservice", "-n", SHOP, "-o", "yaml"])
                .stdout;
            Err(format!("{at_c:?}\n{works}\n{mcs}\n{}", plane.logs()))
        }
    });
    // Deleting the MultiClusterService releases the Service and leaves no dispatched slice or marker Work.
    plane
        .kubectl(&["delete", "multiclusterservice", "web", "-n", SHOP])
        .success();
    wait_for("nothing of the MultiClusterService left", || {
        let works = plane.object(&[
            "works",
            "-A",
            "-l",
            "multiclusterservice.karmada.io/name=web",
        ])?;
        let left = works["items"].as_array().map_or(0, Vec::len);
        let at_b = dispatched(b)?;
        let service = plane.object(&["service", "web", "-n", SHOP])?;
        let claimed =
            !service["metadata"]["labels"]["resourcetemplate.karmada.io/claimed-by"].is_null();
        if left == 0 && at_b.is_empty() && !claimed {
            Ok(())
        } else {
            Err(format!("{left} works, b {at_b:?}, claimed {claimed}"))
        }
    });
}
