//! In-tree plugins and the ClusterLatency example, each through a scheduling run, table-driven.

use karmada_scheduler::custom::clusterlatency::{ANNOTATION_API_LATENCY, ClusterLatency};
use karmada_scheduler::plan::default_registry;
use karmada_scheduler::{PlanInput, plan_with};
use serde_json::{Value, json};

use super::common::*;

/// (cluster, filtered by plugin, reason) for every cluster of a plan.
fn filters(
    workload: &Value,
    policy: &Value,
    clusters: &[ClusterDoc],
    current: Option<&Value>,
) -> Vec<(String, Option<String>, Option<String>)> {
    let plan = run(workload, policy, clusters, current);
    plan.explanation
        .clusters
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.filtered_by.as_ref().map(|f| f.plugin.to_string()),
                c.filtered_by.as_ref().map(|f| f.reason.clone()),
            )
        })
        .collect()
}

fn rejected_by(plugin: &str, reason: &str) -> (Option<String>, Option<String>) {
    (Some(plugin.to_string()), Some(reason.to_string()))
}

#[test]
fn filter_plugins_table() {
    let app = deployment("app", 1, "100m", "64Mi");
    let no_affinity = policy(json!({}));
    struct Case {
        name: &'static str,
        policy: Value,
        cluster: ClusterDoc,
        current: Option<Value>,
        expected: (Option<String>, Option<String>),
    }
    let pass = (None, None);
    let cases = vec![
        Case {
            name: "API served",
            policy: no_affinity.clone(),
            cluster: cluster("x"),
            current: None,
            expected: pass.clone(),
        },
        Case {
            name: "API not listed",
            policy: no_affinity.clone(),
            cluster: cluster("x").without_api_enablements(),
            current: None,
            expected: rejected_by("APIEnablement", "cluster(s) did not have the API resource"),
        },
        Case {
            name: "API not listed but already targeted",
            policy: no_affinity.clone(),
            cluster: cluster("x").without_api_enablements(),
            current: Some(binding(&[("x", 1)])),
            expected: pass.clone(),
        },
        Case {
            name: "untolerated NoSchedule taint",
            policy: no_affinity.clone(),
            cluster: cluster("x").taint("cluster.karmada.io/not-ready", "", "NoSchedule"),
            current: None,
            expected: rejected_by(
                "TaintToleration",
                "cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoSchedule}",
            ),
        },
        Case {
            name: "untolerated taint on a cluster already targeted",
            policy: no_affinity.clone(),
            cluster: cluster("x").taint("cluster.karmada.io/not-ready", "", "NoSchedule"),
            current: Some(binding(&[("x", 1)])),
            expected: pass.clone(),
        },
        Case {
            name: "PreferNoSchedule taints are ignored",
            policy: no_affinity.clone(),
            cluster: cluster("x").taint("busy", "yes", "PreferNoSchedule"),
            current: None,
            expected: pass.clone(),
        },
        Case {
            name: "tolerated by Exists",
            policy: policy(
                json!({"clusterTolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]}),
            ),
            cluster: cluster("x").taint("dedicated", "ml", "NoSchedule"),
            current: None,
            expected: pass.clone(),
        },
        Case {
            name: "Equal toleration with another value",
            policy: policy(
                json!({"clusterTolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoExecute"}]}),
            ),
            cluster: cluster("x").taint("dedicated", "ml", "NoExecute"),
            current: None,
            expected: rejected_by(
                "TaintToleration",
                "cluster(s) had untolerated taint {dedicated=ml:NoExecute}",
            ),
        },
        Case {
            name: "excluded",
            policy: policy(json!({"clusterAffinity": {"exclude": ["x"]}})),
            cluster: cluster("x"),
            current: None,
            expected: rejected_by(
                "ClusterAffinity",
                "cluster(s) did not match the placement cluster affinity constraint",
            ),
        },
        Case {
            name: "label selector matches",
            policy: policy(
                json!({"clusterAffinity": {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}}}),
            ),
            cluster: cluster("x").label("env", "prod"),
            current: None,
            expected: pass.clone(),
        },
        Case {
            name: "label selector does not match",
            policy: policy(
                json!({"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}),
            ),
            cluster: cluster("x").label("env", "dev"),
            current: None,
            expected: rejected_by(
                "ClusterAffinity",
                "cluster(s) did not match the placement cluster affinity constraint",
            ),
        },
        Case {
            name: "field selector region In",
            policy: policy(
                json!({"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}}}),
            ),
            cluster: cluster("x").region("eu"),
            current: None,
            expected: pass.clone(),
        },
        Case {
            name: "field selector provider NotIn",
            policy: policy(
                json!({"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "NotIn", "values": ["aws"]}]}}}),
            ),
            cluster: cluster("x").provider("aws"),
            current: None,
            expected: rejected_by(
                "ClusterAffinity",
                "cluster(s) did not match the placement cluster affinity constraint",
            ),
        },
        Case {
            name: "field selector zone In matches any of spec.zones",
            policy: policy(
                json!({"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}}}),
            ),
            cluster: cluster("x").zones(&["z1", "z2"]),
            current: None,
            expected: pass.clone(),
        },
        Case {
            name: "being evicted",
            policy: no_affinity.clone(),
            cluster: cluster("x"),
            current: Some({
                let mut b = binding(&[]);
                b["spec"]["gracefulEvictionTasks"] = json!([{"fromCluster": "x", "reason": "TaintUntolerated", "producer": "TaintManager"}]);
                b
            }),
            expected: rejected_by(
                "ClusterEviction",
                "cluster(s) is in the process of eviction",
            ),
        },
        Case {
            name: "deleting clusters are skipped",
            policy: no_affinity.clone(),
            cluster: cluster("x").deleting(),
            current: None,
            expected: (Some(String::new()), Some("cluster is being deleted".into())),
        },
    ];
    for case in cases {
        let result = filters(&app, &case.policy, &[case.cluster], case.current.as_ref());
        assert_eq!(
            (result[0].1.clone(), result[0].2.clone()),
            case.expected,
            "{}",
            case.name
        );
    }
}

#[test]
fn affinity_detail_names_the_rule() {
    let plan = run(
        &deployment("app", 1, "100m", "64Mi"),
        &policy(json!({"clusterAffinity": {"clusterNames": ["y"]}})),
        &[cluster("x"), cluster("y")],
        None,
    );
    let wide = plan.render_wide();
    assert!(wide.contains("not listed in clusterNames"), "{wide}");
    assert!(wide.contains("FILTERED-BY"), "{wide}");
}

#[test]
fn cluster_locality_prefers_where_the_binding_runs() {
    let policy = policy(
        json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}),
    );
    let clusters = [
        cluster("a").capacity("10", "64Gi", 110),
        cluster("b").capacity("10", "64Gi", 110),
    ];
    let plan = run(
        &deployment("app", 4, "1", "64Mi"),
        &policy,
        &clusters,
        Some(&binding(&[("b", 2)])),
    );
    let scores: Vec<(String, Option<i64>)> = plan
        .explanation
        .clusters
        .iter()
        .map(|c| (c.name.to_string(), c.score))
        .collect();
    assert_eq!(
        scores,
        vec![("a".to_string(), Some(0)), ("b".to_string(), Some(100))]
    );
    // Aggregated keeps growing the cluster it already uses.
    assert_eq!(assignment(&plan), expect(&[("b", 4)]));
}

#[test]
fn cluster_ports_and_available_resources_via_profile() {
    let profile = json!({
        "apiVersion": "scheduling.karmada.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "ports"},
        "spec": {"plugins": {"schedule": {"enabled": [{"name": "ClusterPorts"}, {"name": "AvailableResources", "weight": 2}]}}}
    });
    let mut workload = deployment("app", 1, "100m", "64Mi");
    workload["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"containerPort": 80, "hostPort": 8080}]);
    let mut policy = policy(json!({}));
    policy["spec"]["schedulerName"] = json!("ports");
    let clusters = [
        cluster("blocked").annotation("cluster.karmada.io/unavailable-ports", "22,8000-8100").capacity("10", "10Gi", 110),
        cluster("udp-only").annotation("cluster.karmada.io/unavailable-ports", "8080/UDP").capacity("10", "10Gi", 110),
        cluster("half").summary(json!({"allocatable": {"cpu": "10", "memory": "10Gi", "pods": "110"}, "allocated": {"cpu": "5", "memory": "1Gi"}})),
    ];
    let plan = run_full(&workload, &policy, &clusters, None, &[profile]);
    let blocked = &plan.explanation.clusters[0];
    assert_eq!(
        blocked.filtered_by.as_ref().and_then(|f| f.detail.clone()),
        Some("port(s) 8080/TCP unavailable".to_string())
    );
    let half = plan
        .explanation
        .clusters
        .iter()
        .find(|c| &*c.name == "half")
        .expect("half");
    let udp = plan
        .explanation
        .clusters
        .iter()
        .find(|c| &*c.name == "udp-only")
        .expect("udp");
    // AvailableResources ×2: 50% free → 100; 100% free → 200.
    assert_eq!((half.score, udp.score), (Some(100), Some(200)));
}

#[test]
fn cluster_latency_example_plugin() {
    let mut registry = default_registry().expect("registry");
    // Registering it twice is refused: names are unique.
    assert!(ClusterLatency::register(&mut registry).is_err());
    let profile = json!({
        "apiVersion": "scheduling.karmada.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "latency"},
        "spec": {"plugins": {"schedule": {"enabled": [{"name": "ClusterLatency"}]}}}
    });
    let mut policy = policy(json!({}));
    policy["spec"]["schedulerName"] = json!("latency");
    let clusters = docs(&[
        cluster("fast").annotation(ANNOTATION_API_LATENCY, "5ms"),
        cluster("ok").annotation(ANNOTATION_API_LATENCY, "40"),
        cluster("slow").annotation(ANNOTATION_API_LATENCY, "0.25s"),
        cluster("unknown"),
        cluster("garbage").annotation(ANNOTATION_API_LATENCY, "fast"),
    ]);
    let workload = deployment("app", 1, "100m", "64Mi");
    let profiles = [profile];
    let input = PlanInput {
        workload: &workload,
        policy: &policy,
        clusters: &clusters,
        binding: None,
        profiles: &profiles,
        now: None,
        plugins: None,
    };
    let plan = plan_with(&input, &registry).expect("plan");
    let outcome: Vec<(String, Option<i64>, Option<String>)> = plan
        .explanation
        .clusters
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.score,
                c.filtered_by.as_ref().and_then(|f| f.detail.clone()),
            )
        })
        .collect();
    assert_eq!(
        outcome,
        vec![
            ("fast".into(), Some(100), None),
            ("garbage".into(), None, Some("annotation cluster.karmada.io/api-latency=\"fast\" is not a latency (accepted: 35, 35ms, 0.2s)".into())),
            ("ok".into(), Some(25), None),
            ("slow".into(), None, Some("latency 250ms > threshold 100ms".into())),
            ("unknown".into(), None, Some("annotation cluster.karmada.io/api-latency is missing".into())),
        ]
    );
    // The threshold is a typed arg.
    let strict = json!({
        "apiVersion": "scheduling.karmada.io/v1alpha1", "kind": "SchedulerProfile", "metadata": {"name": "latency"},
        "spec": {"plugins": {"schedule": {"enabled": [{"name": "ClusterLatency"}]}},
                 "pluginConfig": [{"name": "ClusterLatency", "args": {"thresholdMilliseconds": 20}}]}
    });
    let profiles = [strict];
    let input = PlanInput {
        profiles: &profiles,
        ..input
    };
    let plan = plan_with(&input, &registry).expect("plan");
    let ok = plan
        .explanation
        .clusters
        .iter()
        .find(|c| &*c.name == "ok")
        .expect("ok");
    assert_eq!(
        ok.filtered_by.as_ref().and_then(|f| f.detail.clone()),
        Some("latency 40ms > threshold 20ms".to_string())
    );
}
