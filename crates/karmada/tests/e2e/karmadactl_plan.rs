//! `karmadactl plan`: the seeds' placements with their explanation, from files alone and from
//! the live clusters of a control plane; infeasible requests exit non-zero with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Run, Server};

fn karmadactl(args: &[&str]) -> Run {
    let bin = Path::new(env!("CARGO_BIN_EXE_karmada"))
        .parent()
        .expect("target dir")
        .join("karmadactl");
    Run::from(
        Command::new(bin)
            .args(args)
            .output()
            .expect("run karmadactl"),
    )
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/data")
        .join(name)
}

fn fixture(name: &str) -> String {
    test_fixtures::path_str(name)
}

/// `(cluster, replicas)` rows of the first table in the output.
fn assignment(out: &str) -> Vec<(String, String)> {
    out.lines()
        .skip_while(|l| !l.starts_with("CLUSTER"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn seed_001_plans_four_and_two_with_the_arithmetic() {
    let clusters = data("clusters-seed-001.yaml");
    let run = karmadactl(&[
        "plan",
        "-f",
        &fixture("seed-001/nginx-deploy.yaml"),
        "-f",
        &fixture("seed-001/propagation-policy.yaml"),
        "-f",
        clusters.to_str().unwrap(),
    ]);
    let out = run.success();
    assert!(
        out.starts_with("Deployment production/nginx-ha → ResourceBinding nginx-ha-deployment"),
        "{out}"
    );
    assert_eq!(
        assignment(out),
        pairs(&[("cluster-aws", "4"), ("cluster-gcp", "2")])
    );
    assert!(
        out.contains("by weights cluster-aws 2, cluster-gcp 1"),
        "division arithmetic shown: {out}"
    );

    let json = karmadactl(&[
        "plan",
        "-o",
        "json",
        "-f",
        &fixture("seed-001/nginx-deploy.yaml"),
        "-f",
        &fixture("seed-001/propagation-policy.yaml"),
        "-f",
        clusters.to_str().unwrap(),
    ]);
    let binding: serde_json::Value = serde_json::from_str(json.success()).unwrap();
    assert_eq!(binding["apiVersion"], "work.karmada.io/v1alpha2");
    assert_eq!(
        binding["spec"]["clusters"],
        serde_json::json!([{"name": "cluster-aws", "replicas": 4}, {"name": "cluster-gcp", "replicas": 2}])
    );
}

#[test]
fn seed_000_api_server_plans_four_three_two() {
    let clusters = data("clusters-seed-000.yaml");
    let run = karmadactl(&[
        "plan",
        "-f",
        &fixture("seed-000/04-api-server.yaml"),
        "-f",
        clusters.to_str().unwrap(),
    ]);
    let out = run.success();
    assert!(
        out.starts_with("Deployment microservices/api-server"),
        "{out}"
    );
    assert_eq!(
        assignment(out),
        pairs(&[
            ("member-beijing", "3"),
            ("member-shanghai", "4"),
            ("member-singapore", "2")
        ])
    );
}

#[test]
fn plan_uses_live_clusters_and_fails_clearly_when_nothing_fits() {
    let s = Server::start();
    let clusters = std::fs::read_to_string(data("clusters-seed-001.yaml")).unwrap();
    for doc in clusters.split("\n---\n").filter(|d| d.contains("\"kind\"")) {
        let cluster: serde_json::Value = serde_json::from_str(
            doc.trim_start_matches("---")
                .trim()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
                .as_str(),
        )
        .unwrap();
        let name = cluster["metadata"]["name"].as_str().unwrap().to_string();
        s.kubectl_stdin(&["apply", "-f", "-"], &cluster.to_string())
            .success();
        let status = serde_json::json!({"status": cluster["status"]}).to_string();
        s.kubectl(&[
            "patch",
            "cluster",
            &name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status,
        ])
        .success();
    }
    let kubeconfig = s.kubeconfig.to_str().unwrap().to_string();
    let out = karmadactl(&[
        "plan",
        "--kubeconfig",
        &kubeconfig,
        "-f",
        &fixture("seed-001/nginx-deploy.yaml"),
        "-f",
        &fixture("seed-001/propagation-policy.yaml"),
    ]);
    assert_eq!(
        assignment(out.success()),
        pairs(&[("cluster-aws", "4"), ("cluster-gcp", "2")])
    );

    // A policy naming clusters that do not exist cannot be scheduled: non-zero exit, reason shown.
    let policy = std::fs::read_to_string(fixture("seed-001/propagation-policy.yaml"))
        .unwrap()
        .replace("cluster-aws", "cluster-nowhere")
        .replace("cluster-gcp", "cluster-gone");
    let policy_file = s.file("policy.yaml", &policy);
    let run = karmadactl(&[
        "plan",
        "--kubeconfig",
        &kubeconfig,
        "-f",
        &fixture("seed-001/nginx-deploy.yaml"),
        "-f",
        policy_file.to_str().unwrap(),
    ]);
    let err = run.failure();
    assert!(
        err.contains("not every workload could be scheduled"),
        "{err}"
    );
    assert!(
        run.stdout.contains("Scheduled: False"),
        "the binding with its reason is still printed: {}",
        run.stdout
    );
}
