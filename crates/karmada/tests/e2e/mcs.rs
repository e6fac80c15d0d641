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

/// Seed 000 §3.3 with its YAML as written: 04's Deployment and Service land in the two providers that exist
/// among the three its policy names, 05's ServiceExport goes to them and its ServiceImport to a third cluster,
/// whose DNS then answers for the clusterset name and whose EndpointSlices list the providers' pod IPs.
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
