//! The control plane's `metrics.k8s.io` (karmada-metrics-adapter) and `karmadactl top`: a workload duplicated
//! to two members with different loads; `kubectl top pods` against the Karmada API lists the pods of both, the
//! raw API names each item's member, and `karmadactl top pod|node` prints kubectl's tables with a CLUSTER
//! column, through the control plane or (`-C`) from the named members.

use serde_json::Value;

use crate::plane::{Plane, wait_for, web_workload};

/// Whitespace-separated cells of each line.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The cpu cells of `rows` whose cluster cell (at `cluster_at`) is `cluster`.
fn cpu_of(rows: &[Vec<String>], cluster_at: usize, cpu_at: usize, cluster: &str) -> Vec<String> {
    rows.iter()
        .filter(|r| r.get(cluster_at).map(String::as_str) == Some(cluster))
        .filter_map(|r| r.get(cpu_at).cloned())
        .collect()
}

#[test]
fn kubectl_and_karmadactl_top_see_every_members_pods() {
    let plane = Plane::start(&["member1", "member2"]);
    plane.apply(
        "web",
        &web_workload(2, Some("500m"), &["member1", "member2"], false),
    );
    for member in ["member1", "member2"] {
        plane.load(
            member,
            &[
                "--selector",
                "app=web",
                "--cpu",
                if member == "member1" { "300m" } else { "100m" },
                "--memory",
                "32Mi",
            ],
        );
    }

    // kubectl top against the Karmada API: four pods, two at each member's load.
    let top = wait_for(
        "kubectl top pods on the control plane to list 4 pods",
        || {
            let out = plane.kubectl(&["top", "pods", "-n", "default", "--no-headers"]);
            let found = if out.ok() {
                rows(&out.stdout)
            } else {
                Vec::new()
            };
            let mut cpu: Vec<String> = found.iter().filter_map(|r| r.get(1).cloned()).collect();
            cpu.sort();
            if cpu == ["100m", "100m", "300m", "300m"] {
                Ok(found)
            } else {
                Err(format!("{}{}\n{}", out.stdout, out.stderr, plane.logs()))
            }
        },
    );
    assert!(top.iter().all(|r| r[2] == "32Mi"), "{top:?}");

    // The raw API: every item names its member.
    let list = plane
        .kubectl(&[
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
        ])
        .json();
    assert_eq!(list["kind"], "PodMetricsList");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 4, "{list}");
    for item in items {
        let cluster = item["metadata"]["annotations"]["resource.karmada.io/query-from-cluster"]
            .as_str()
            .unwrap_or_default();
        let expected = if cluster == "member1" { "300m" } else { "100m" };
        assert!(matches!(cluster, "member1" | "member2"), "{item}");
        assert_eq!(item["containers"][0]["usage"]["cpu"], expected, "{item}");
        assert_eq!(item["kind"], "PodMetrics");
    }
    // Selectors apply to the aggregate.
    let none = plane
        .kubectl(&[
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Ddb",
        ])
        .json();
    assert_eq!(none["items"], serde_json::json!([]), "{none}");
    // Discovery lists the group.
    let discovery = plane.kubectl(&[
        "api-resources",
        "--api-group=metrics.k8s.io",
        "--no-headers",
    ]);
    let names: Vec<String> = rows(&discovery.stdout)
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert!(
        names.contains(&"pods".to_string()) && names.contains(&"nodes".to_string()),
        "{}",
        discovery.stdout
    );

    // karmadactl top pod through the control plane: kubectl's columns with CLUSTER after NAME.
    let out = plane.karmadactl(&["top", "pod", "-n", "default"]);
    let table = rows(out.success());
    assert_eq!(
        table[0],
        ["NAME", "CLUSTER", "CPU(cores)", "MEMORY(bytes)"],
        "{table:?}"
    );
    assert_eq!(
        cpu_of(&table, 1, 2, "member1"),
        ["300m", "300m"],
        "{table:?}"
    );
    assert_eq!(
        cpu_of(&table, 1, 2, "member2"),
        ["100m", "100m"],
        "{table:?}"
    );
    // Sorted by cluster: member1's rows first.
    assert_eq!(table[1][1], "member1", "{table:?}");

    // -C: only the named member, read from it directly; --sum adds the total.
    let out = plane.karmadactl(&["top", "pods", "-C", "member2", "-n", "default", "--sum"]);
    let table = rows(out.success());
    assert_eq!(
        cpu_of(&table, 1, 2, "member2"),
        ["100m", "100m"],
        "{table:?}"
    );
    assert!(cpu_of(&table, 1, 2, "member1").is_empty(), "{table:?}");
    assert_eq!(
        table.last().map(|r| r[0].as_str()),
        Some("200m"),
        "the total: {table:?}"
    );

    // Nodes: each member's node with its cluster and a percentage of its allocatable.
    let out = plane.karmadactl(&["top", "node"]);
    let table = rows(out.success());
    assert_eq!(
        table[0],
        [
            "NAME",
            "CLUSTER",
            "CPU(cores)",
            "CPU%",
            "MEMORY(bytes)",
            "MEMORY%"
        ],
        "{table:?}"
    );
    let clusters: Vec<&str> = table[1..].iter().map(|r| r[1].as_str()).collect();
    assert!(
        clusters.contains(&"member1") && clusters.contains(&"member2"),
        "{table:?}"
    );
    assert!(table[1..].iter().all(|r| r[3].ends_with('%')), "{table:?}");
    let node_metrics: Value = plane
        .kubectl(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"])
        .json();
    let total_cpu: Vec<&str> = node_metrics["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| {
            n["metadata"]["annotations"]["resource.karmada.io/query-from-cluster"] == "member1"
        })
        .filter_map(|n| n["usage"]["cpu"].as_str())
        .collect();
    assert!(!total_cpu.is_empty(), "member1's nodes: {node_metrics}");

    // An unknown member is an error that says what to do.
    let out = plane.karmadactl(&["top", "pods", "-C", "nowhere"]);
    let message = out.failure();
    assert!(message.contains("karmadactl get clusters"), "{message}");
}
