//! The control plane's `custom.metrics.k8s.io` (karmada-metrics-adapter's custom metrics) and a
//! FederatedHPA with a `Pods` metric: a custom metric raised on one member's pods
//! (`karmada member-sim load --metric`) scales the workload up, the new replicas are divided, and
//! the control plane's list shows every member's pods, each naming its cluster. Bad input and RBAC
//! are answered as kube-apiserver would answer them for an aggregated adapter.

use serde_json::Value;

use crate::federatedhpa::{HPA_ARGS, condition, wait_divided};
use crate::plane::{Plane, wait_for, web_workload};

/// The documents after the shared workload ([`web_workload`]).
const AUTOSCALER: &str = r#"---
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata:
  name: web
  namespace: default
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 2
  maxReplicas: 4
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "50"}
"#;

const METRIC_PATH: &str =
    "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/http_requests_per_second";

/// `(cluster, value)` of each item of the control plane's list, sorted.
fn values_by_cluster(list: &Value) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            (
                item["metadata"]["annotations"]["resource.karmada.io/query-from-cluster"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                item["value"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    found.sort();
    found
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(c, v)| (c.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_custom_metric_on_one_member_scales_a_pods_metric_federatedhpa() {
    let plane = Plane::start_with(&["member1", "member2"], HPA_ARGS);
    plane.apply(
        "web",
        &format!(
            "{}{AUTOSCALER}",
            web_workload(2, Some("100m"), &["member1", "member2"], true)
        ),
    );
    wait_divided(&plane, 2, &[("member1", 1), ("member2", 1)]);
    for member in ["member1", "member2"] {
        plane.load(
            member,
            &[
                "--selector",
                "app=web",
                "--metric",
                "http_requests_per_second=10",
            ],
        );
    }
    // 10 of a 50 target wants 1; the minimum keeps 2.
    wait_for("the FederatedHPA to find its pods metric", || {
        let hpa = plane.object(&["federatedhpa", "web", "-n", "default"])?;
        match condition(&hpa, "ScalingActive") {
            (s, r) if s == "True" && r == "ValidMetricFound" => Ok(hpa),
            other => Err(format!("{other:?}: {}\n{}", hpa["status"], plane.logs())),
        }
    });
    let list = plane
        .kubectl(&[
            "get",
            "--raw",
            &format!("{METRIC_PATH}?labelSelector=app%3Dweb"),
        ])
        .json();
    assert_eq!(list["kind"], "MetricValueList", "{list}");
    assert_eq!(
        values_by_cluster(&list),
        pairs(&[("member1", "10"), ("member2", "10")]),
        "{list}"
    );

    // member1's pod at 190, member2's at 10: 100 on average, twice the target.
    plane.load(
        "member1",
        &[
            "--selector",
            "app=web",
            "--metric",
            "http_requests_per_second=190",
        ],
    );
    wait_divided(&plane, 4, &[("member1", 2), ("member2", 2)]);
    let hpa = wait_for("the status to report the pods metric", || {
        let hpa = plane.object(&["federatedhpa", "web", "-n", "default"])?;
        let current = &hpa["status"]["currentMetrics"][0];
        if current["type"] == "Pods" && current["pods"]["current"]["averageValue"].is_string() {
            Ok(hpa)
        } else {
            Err(format!("{}", hpa["status"]))
        }
    });
    let current = &hpa["status"]["currentMetrics"][0]["pods"];
    assert_eq!(
        current["metric"]["name"], "http_requests_per_second",
        "{hpa}"
    );
    assert_eq!(hpa["status"]["currentReplicas"], 4, "{}", hpa["status"]);

    // The control plane's list: every member's pods, each naming its cluster.
    wait_for("the control plane to list the four pods", || {
        let list = plane.kubectl(&["get", "--raw", METRIC_PATH]).json();
        let found = values_by_cluster(&list);
        let want = pairs(&[
            ("member1", "190"),
            ("member1", "190"),
            ("member2", "10"),
            ("member2", "10"),
        ]);
        if found == want {
            Ok(())
        } else {
            Err(format!("{list}"))
        }
    });
    let discovery = plane
        .kubectl(&["get", "--raw", "/apis/custom.metrics.k8s.io/v1beta2"])
        .json();
    let names: Vec<&str> = discovery["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["pods/http_requests_per_second"], "{discovery}");
    let groups = plane.kubectl(&["get", "--raw", "/apis"]).json();
    let listed = groups["groups"].as_array().into_iter().flatten().any(|g| {
        g["name"] == "custom.metrics.k8s.io" && g["preferredVersion"]["version"] == "v1beta2"
    });
    assert!(listed, "the group in /apis: {groups}");

    // Bad input: an unknown metric is a 404 Status, a malformed selector a 400 naming it.
    let unknown = plane.kubectl(&[
        "get",
        "--raw",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/nonexistent",
    ]);
    let message = unknown.failure();
    assert!(
        message.contains("NotFound")
            && message.contains("could not find the metric nonexistent for pods"),
        "{message}"
    );
    let malformed = plane.kubectl(&[
        "get",
        "--raw",
        &format!("{METRIC_PATH}?metricLabelSelector=a+in+%28b"),
    ]);
    let message = malformed.failure();
    assert!(
        message.contains("BadRequest") && message.contains("metricLabelSelector \"a in (b\""),
        "{message}"
    );

    // RBAC: get on pods/<metric> in the group, as kube-apiserver checks it before an adapter.
    let as_jane = |path: &str| plane.kubectl(&["get", "--raw", path, "--as", "jane"]);
    let refused = as_jane(METRIC_PATH);
    let message = refused.failure();
    assert!(
        message.contains("Forbidden") && message.contains("custom.metrics.k8s.io"),
        "{message}"
    );
    plane.apply(
        "metrics-reader",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: custom-metrics-reader
rules:
- apiGroups: [custom.metrics.k8s.io]
  resources: ["*"]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: jane-custom-metrics
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: custom-metrics-reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: jane
"#,
    );
    wait_for("jane to read the metric", || {
        let run = as_jane(METRIC_PATH);
        if run.ok() {
            Ok(())
        } else {
            Err(run.stderr.clone())
        }
    });
}
