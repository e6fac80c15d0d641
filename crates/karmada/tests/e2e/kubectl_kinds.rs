//! The built-in kinds a Karmada user propagates beside workloads (budgets, autoscalers, volumes,
//! quotas, classes, network policies): `kubectl apply` of one of each, kubectl's columns for
//! `kubectl get`, discovery through `kubectl api-resources`, kube-apiserver's 422 for a
//! PodDisruptionBudget bounded both ways, `kubectl create pdb|priorityclass|quota`, and `kubectl autoscale`
//! (which writes autoscaling/v1).

use crate::harness::{Server, rows};

const MANIFEST: &str = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-hpa, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-data}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /data}, storageClassName: manual}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: default}
spec: {hard: {pods: "10", requests.cpu: "4"}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: limits, namespace: default}
spec: {limits: [{type: Container, max: {cpu: "2"}}]}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: web-template, namespace: default}
template:
  metadata: {labels: {app: web}}
  spec: {containers: [{name: nginx, image: "nginx:1.25"}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy, namespace: default}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: nginx, image: "nginx:1.25"}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-only, namespace: default}
spec: {podSelector: {matchLabels: {app: db}}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"#;

#[test]
fn propagated_builtin_kinds_are_served_with_kubectl_columns() {
    let s = Server::start();
    let applied = s
        .kubectl_stdin(&["apply", "-f", "-"], MANIFEST)
        .success()
        .to_string();
    assert_eq!(applied.lines().count(), 11, "{applied}");
    assert!(
        applied.contains("poddisruptionbudget.policy/web-pdb created")
            && applied.contains("horizontalpodautoscaler.autoscaling/web-hpa created")
            && applied.contains("priorityclass.scheduling.k8s.io/high created"),
        "{applied}"
    );

    // (resource as typed, header, the first row's leading cells: AGE and empty cells drop out of
    // the whitespace split). The rows show the server's defaults (Retain, Pending, Delete,
    // PreemptLowerPriority) and kubectl's formatting (N/A, cpu: <unknown>/70%, (default)).
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "pdb",
            "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
            &["web-pdb", "1", "N/A", "0"],
        ),
        (
            "hpa",
            "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE",
            &[
                "web-hpa",
                "Deployment/web",
                "cpu:",
                "<unknown>/70%",
                "2",
                "5",
                "0",
            ],
        ),
        (
            "pv",
            "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE",
            &[
                "pv-data", "1Gi", "RWO", "Retain", "Pending", "manual", "<unset>",
            ],
        ),
        ("quota", "NAME AGE REQUEST LIMIT", &["compute"]),
        ("limits", "NAME CREATED AT", &["limits"]),
        (
            "podtemplates",
            "NAME CONTAINERS IMAGES POD LABELS",
            &["web-template", "nginx", "nginx:1.25", "app=web"],
        ),
        (
            "rc",
            "NAME DESIRED CURRENT READY AGE",
            &["legacy", "2", "0", "0"],
        ),
        ("netpol", "NAME POD-SELECTOR AGE", &["db-only", "app=db"]),
        (
            "ingressclass",
            "NAME CONTROLLER PARAMETERS AGE",
            &["nginx", "k8s.io/ingress-nginx", "<none>"],
        ),
        (
            "sc",
            "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
            &[
                "standard",
                "(default)",
                "kubernetes.io/no-provisioner",
                "Delete",
                "WaitForFirstConsumer",
                "false",
            ],
        ),
        (
            "pc",
            "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY",
            &["high", "1000", "false"],
        ),
    ];
    for (resource, header, row) in cases {
        let out = s.kubectl(&["get", resource]).success().to_string();
        let table = rows(&out);
        assert_eq!(table.len(), 2, "one object of {resource}:\n{out}");
        assert_eq!(table[0].join(" "), *header, "{resource} header");
        assert!(
            table[1].len() >= row.len() && table[1][..row.len()] == **row,
            "{resource} row {:?}, want it to start with {row:?}",
            table[1]
        );
    }
    let priority = rows(s.kubectl(&["get", "pc", "high"]).success());
    assert_eq!(
        priority[1].last().map(String::as_str),
        Some("PreemptLowerPriority")
    );

    // Discovery: names, short names, group versions, scope, and the `all` category (RC and HPA).
    let resources = s.kubectl(&["api-resources"]).success().to_string();
    let listed = rows(&resources);
    for expected in [
        "poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget",
        "horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler",
        "persistentvolumes pv v1 false PersistentVolume",
        "resourcequotas quota v1 true ResourceQuota",
        "limitranges limits v1 true LimitRange",
        "podtemplates v1 true PodTemplate",
        "replicationcontrollers rc v1 true ReplicationController",
        "networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy",
        "ingressclasses networking.k8s.io/v1 false IngressClass",
        "storageclasses sc storage.k8s.io/v1 false StorageClass",
        "priorityclasses pc scheduling.k8s.io/v1 false PriorityClass",
    ] {
        assert!(
            listed.iter().any(|row| row.join(" ") == expected),
            "{expected} in api-resources:\n{resources}"
        );
    }
    let all = s
        .kubectl(&["get", "all", "-o", "name"])
        .success()
        .to_string();
    for name in [
        "replicationcontroller/legacy",
        "horizontalpodautoscaler.autoscaling/web-hpa",
    ] {
        assert!(all.lines().any(|l| l == name), "{name} in get all:\n{all}");
    }
    assert!(!all.contains("poddisruptionbudget"), "{all}");

    // Both bounds: kube-apiserver's 422 on `spec`, and nothing stored.
    let invalid = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: bad-pdb, namespace: default}\n\
                   spec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {app: web}}}\n";
    let err = s
        .kubectl_stdin(&["apply", "-f", "-", "-v=6"], invalid)
        .failure()
        .to_string();
    assert!(err.contains("422 Unprocessable Entity"), "{err}");
    assert!(
        err.contains("The PodDisruptionBudget \"bad-pdb\" is invalid: spec: Invalid value:")
            && err.contains("minAvailable and maxUnavailable cannot be both set"),
        "{err}"
    );
    let missing = s.kubectl(&["get", "pdb", "bad-pdb"]).failure().to_string();
    assert!(missing.contains("not found"), "{missing}");

    // kubectl's generators for three of them send protobuf bodies.
    let generators: [&[&str]; 3] = [
        &[
            "create",
            "pdb",
            "gen-pdb",
            "--selector=app=gen",
            "--max-unavailable=50%",
        ],
        &["create", "priorityclass", "gen-pc", "--value=10"],
        &["create", "quota", "gen-quota", "--hard=pods=3"],
    ];
    for args in generators {
        s.kubectl(args).success();
    }
    // kubectl 1.32's `autoscale` writes an autoscaling/v1 object (protobuf); it is stored as v2.
    s.kubectl(&["create", "deployment", "auto", "--image=nginx:1.25"])
        .success();
    s.kubectl(&[
        "autoscale",
        "deployment",
        "auto",
        "--min=2",
        "--max=5",
        "--cpu-percent=70",
    ])
    .success();
    let stored = s.kubectl(&["get", "hpa", "auto", "-o", "json"]).json();
    assert_eq!(stored["apiVersion"], "autoscaling/v2");
    assert_eq!(
        stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        70
    );
    let v1 = s
        .kubectl(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "auto",
            "-o",
            "json",
        ])
        .json();
    assert_eq!(
        (
            &v1["spec"]["targetCPUUtilizationPercentage"],
            &v1["spec"]["minReplicas"]
        ),
        (&serde_json::json!(70), &serde_json::json!(2))
    );
    let generated = s.kubectl(&["get", "pdb", "gen-pdb", "-o", "json"]).json();
    assert_eq!(generated["spec"]["maxUnavailable"], "50%");
    let generated = s.kubectl(&["get", "pc", "gen-pc", "-o", "json"]).json();
    assert_eq!(
        (&generated["value"], &generated["preemptionPolicy"]),
        (
            &serde_json::json!(10),
            &serde_json::json!("PreemptLowerPriority")
        )
    );
}
