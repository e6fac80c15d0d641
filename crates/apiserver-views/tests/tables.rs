//! Server-side Tables: each built-in printer's columns and cells for realistic objects, declared
//! (CRD) columns, and the `includeObject` variants.

#![allow(clippy::unwrap_used)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use apimachinery::{Printer, PrinterColumn, ResourceDef};
use apiserver_views::builtin::resource_defs;
use apiserver_views::tables::{IncludeObject, table};
use expect_test::expect_file;
use jiff::Timestamp;
use serde_json::{Value, json};

fn now() -> Timestamp {
    "2026-11-29T18:00:00Z".parse().unwrap()
}

/// Creation five minutes before `now()`, so every AGE cell is `5m`.
const CREATED: &str = "2026-11-29T17:55:00Z";

fn def(group: &str, kind: &str) -> ResourceDef {
    resource_defs()
        .into_iter()
        .find(|d| d.group == group && d.kind == kind)
        .unwrap_or_else(|| panic!("no builtin {group}/{kind}"))
}

fn cluster_def() -> ResourceDef {
    let mut def = def("", "Node");
    def.group = "cluster.karmada.io".into();
    def.version = "v1alpha1".into();
    def.kind = "Cluster".into();
    def.plural = "clusters".into();
    def
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "default", "creationTimestamp": CREATED, "labels": {"app": name}})
}

/// (column names, cells of the single row).
fn render(def: &ResourceDef, object: Value) -> (Vec<String>, Vec<Value>) {
    let t = table(def, &[object], IncludeObject::None, now());
    let names = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    (names, t["rows"][0]["cells"].as_array().unwrap().clone())
}

/// `group/Kind "name"`, then the column names and the row's cells (JSON, so `3` and `"3"` differ).
fn printed_row(def: &ResourceDef, object: Value) -> String {
    let group = if def.group.is_empty() {
        "core"
    } else {
        &def.group
    };
    let label = format!("{group}/{} {}", def.kind, object["metadata"]["name"]);
    let (names, cells) = render(def, object);
    let cells: Vec<String> = cells.iter().map(Value::to_string).collect();
    format!(
        "{label}\n  columns: {}\n  cells:   {}\n",
        names.join(" | "),
        cells.join(" | ")
    )
}

fn pod_template(containers: Value) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}})
}

#[test]
fn builtin_printers_match_kubectl_columns_and_cells() {
    let two_containers =
        json!([{"name": "nginx", "image": "nginx:1.25"}, {"name": "log", "image": "busybox"}]);
    let cases: Vec<(ResourceDef, Value)> = vec![
        (
            def("apps", "Deployment"),
            json!({"metadata": meta("web"), "spec": {"replicas": 3,
            "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]},
            "template": pod_template(two_containers.clone())},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}),
        ),
        (
            def("apps", "StatefulSet"),
            json!({"metadata": meta("db"), "spec": {"replicas": 2, "template": pod_template(json!([{"name": "pg", "image": "postgres:16"}]))},
            "status": {"readyReplicas": 1}}),
        ),
        (
            def("apps", "ReplicaSet"),
            json!({"metadata": meta("web-abc"), "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template(json!([{"name": "nginx", "image": "nginx"}]))}, "status": {"replicas": 3, "readyReplicas": 1}}),
        ),
        (
            def("apps", "DaemonSet"),
            json!({"metadata": meta("agent"), "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "a", "image": "agent:1"}]}}},
            "status": {"desiredNumberScheduled": 4, "currentNumberScheduled": 4, "numberReady": 3, "updatedNumberScheduled": 4, "numberAvailable": 3}}),
        ),
        (
            def("batch", "Job"),
            json!({"metadata": meta("pi"), "spec": {"completions": 1, "selector": {"matchLabels": {"job": "pi"}},
            "template": pod_template(json!([{"name": "pi", "image": "perl"}]))},
            "status": {"succeeded": 1, "startTime": "2026-11-29T17:56:00Z", "completionTime": "2026-11-29T17:56:42Z",
                       "conditions": [{"type": "Complete", "status": "True"}]}}),
        ),
        (
            def("batch", "CronJob"),
            json!({"metadata": meta("nightly"), "spec": {"schedule": "0 3 * * *", "suspend": false,
            "jobTemplate": {"spec": {"template": pod_template(json!([{"name": "b", "image": "backup"}]))}}},
            "status": {"lastScheduleTime": "2026-11-29T17:58:00Z", "active": [{"name": "nightly-1"}]}}),
        ),
        (
            def("", "Service"),
            json!({"metadata": meta("web"), "spec": {"type": "NodePort", "clusterIP": "10.0.0.7",
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}], "selector": {"app": "web"}}}),
        ),
        (
            def("", "Service"),
            json!({"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.8", "ports": [{"port": 443}]}}),
        ),
        (
            def("", "ConfigMap"),
            json!({"metadata": meta("cfg"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
        ),
        (
            def("", "Secret"),
            json!({"metadata": meta("tls"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
        ),
        (
            def("", "Namespace"),
            json!({"metadata": {"name": "team-a", "creationTimestamp": CREATED}, "status": {"phase": "Active"}}),
        ),
        (
            def("", "ServiceAccount"),
            json!({"metadata": meta("builder"), "secrets": [{"name": "builder-token"}]}),
        ),
        (
            def("", "Pod"),
            json!({"metadata": meta("web-1"), "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "podIP": "10.1.0.5", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": "2026-11-29T17:59:00Z"}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}),
        ),
        (
            def("", "Node"),
            json!({"metadata": {"name": "n1", "creationTimestamp": CREATED, "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Ubuntu 24.04", "kernelVersion": "6.8.0", "containerRuntimeVersion": "containerd://1.7"}}}),
        ),
        (
            def("", "PersistentVolumeClaim"),
            json!({"metadata": meta("data"), "spec": {"volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}}),
        ),
        (
            def("", "Event"),
            json!({"metadata": meta("web.123"), "type": "Warning", "reason": "BackOff", "message": "Back-off restarting",
            "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{a}"}, "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-11-29T17:50:00Z", "lastTimestamp": "2026-11-29T17:59:30Z", "count": 7}),
        ),
        (
            def("", "Endpoints"),
            json!({"metadata": meta("web"), "subsets": [{"addresses": [{"ip": "10.1.0.5"}, {"ip": "10.1.0.6"}],
            "ports": [{"port": 80}, {"port": 443}]}]}),
        ),
        (
            def("networking.k8s.io", "Ingress"),
            json!({"metadata": meta("site"), "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}], "tls": [{"hosts": ["a.example.com"]}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}]}}}),
        ),
        (
            def("discovery.k8s.io", "EndpointSlice"),
            json!({"metadata": meta("web-x"), "addressType": "IPv4", "ports": [{"port": 80}],
            "endpoints": [{"addresses": ["10.1.0.5"]}]}),
        ),
        (
            def("coordination.k8s.io", "Lease"),
            json!({"metadata": meta("karmada-scheduler"), "spec": {"holderIdentity": "node-a_1234"}}),
        ),
        (
            def("rbac.authorization.k8s.io", "ClusterRole"),
            json!({"metadata": {"name": "admin", "creationTimestamp": CREATED}}),
        ),
        (
            def("rbac.authorization.k8s.io", "RoleBinding"),
            json!({"metadata": meta("rb"), "roleRef": {"kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "namespace": "ci", "name": "bot"}]}),
        ),
        (
            def("apiextensions.k8s.io", "CustomResourceDefinition"),
            json!({"metadata": {"name": "propagationpolicies.policy.karmada.io", "creationTimestamp": CREATED}}),
        ),
        (
            def("policy", "PodDisruptionBudget"),
            json!({"metadata": meta("web-pdb"), "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1}}),
        ),
        (
            def("policy", "PodDisruptionBudget"),
            json!({"metadata": meta("db-pdb"), "spec": {"maxUnavailable": "50%"}}),
        ),
        (
            def("autoscaling", "HorizontalPodAutoscaler"),
            json!({"metadata": meta("web-hpa"), "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10, "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "packets"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}]},
            "status": {"currentReplicas": 3, "desiredReplicas": 3, "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "100m"}}}]}}),
        ),
        (
            def("autoscaling", "HorizontalPodAutoscaler"),
            json!({"metadata": meta("queue-hpa"), "spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "queue"}, "maxReplicas": 5,
                "metrics": [
                    {"type": "External", "external": {"metric": {"name": "depth"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
                    {"type": "Object", "object": {"metric": {"name": "rps"}, "target": {"type": "Value", "value": "10k"}}}]},
            "status": {"currentReplicas": 1, "currentMetrics": [
                {"type": "External", "external": {"metric": {"name": "depth"}, "current": {"averageValue": "20"}}},
                {"type": "Object", "object": {"metric": {"name": "rps"}, "current": {"value": "2000"}}}]}}),
        ),
        (
            def("autoscaling", "HorizontalPodAutoscaler"),
            json!({"metadata": meta("bare"), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 1}}),
        ),
        (
            def("", "PersistentVolume"),
            json!({"metadata": {"name": "pv-1", "creationTimestamp": CREATED}, "spec": {"capacity": {"storage": "10240Mi"},
                "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}}),
        ),
        (
            def("", "PersistentVolume"),
            json!({"metadata": {"name": "old", "creationTimestamp": CREATED, "deletionTimestamp": CREATED,
                "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
            "spec": {"storageClassName": "standard"}, "status": {"phase": "Released", "reason": "Gone"}}),
        ),
        (
            def("", "ResourceQuota"),
            json!({"metadata": meta("compute"), "spec": {"hard": {"pods": "10"}},
            "status": {"hard": {"requests.cpu": "1", "limits.memory": "2Gi", "pods": "10", "limits.cpu": "2000m"},
                       "used": {"requests.cpu": "500m", "pods": "3"}}}),
        ),
        (
            def("", "LimitRange"),
            json!({"metadata": meta("limits"), "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
        ),
        (
            def("", "PodTemplate"),
            json!({"metadata": meta("tmpl"), "template": {"metadata": {"labels": {"tier": "fe", "app": "web"}},
                "spec": {"containers": two_containers.clone()}}}),
        ),
        (
            def("", "ReplicationController"),
            json!({"metadata": meta("legacy"), "spec": {"replicas": 3, "selector": {"app": "web"},
                "template": pod_template(json!([{"name": "nginx", "image": "nginx"}]))},
            "status": {"replicas": 3, "readyReplicas": 2}}),
        ),
        (
            def("networking.k8s.io", "NetworkPolicy"),
            json!({"metadata": meta("db-only"), "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress"]}}),
        ),
        (
            def("networking.k8s.io", "NetworkPolicy"),
            json!({"metadata": meta("deny-all"), "spec": {"podSelector": {}}}),
        ),
        (
            def("networking.k8s.io", "IngressClass"),
            json!({"metadata": {"name": "external", "creationTimestamp": CREATED}, "spec": {"controller": "example.com/ingress",
                "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}),
        ),
        (
            def("networking.k8s.io", "IngressClass"),
            json!({"metadata": {"name": "nginx", "creationTimestamp": CREATED}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
        ),
        (
            def("storage.k8s.io", "StorageClass"),
            json!({"metadata": {"name": "local-path", "creationTimestamp": CREATED,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"}),
        ),
        (
            def("storage.k8s.io", "StorageClass"),
            json!({"metadata": {"name": "fast", "creationTimestamp": CREATED}, "provisioner": "ebs.csi.aws.com",
                "reclaimPolicy": "Retain", "allowVolumeExpansion": true}),
        ),
        (
            def("scheduling.k8s.io", "PriorityClass"),
            json!({"metadata": {"name": "high", "creationTimestamp": CREATED}, "value": 1000000, "preemptionPolicy": "Never"}),
        ),
        (
            cluster_def(),
            json!({"metadata": {"name": "member1", "creationTimestamp": CREATED},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://172.18.0.3:6443", "zones": ["z1", "z2"], "region": ""},
            "status": {"kubernetesVersion": "v1.31.2", "conditions": [{"type": "Ready", "status": "True"}]}}),
        ),
        (
            cluster_def(),
            json!({"metadata": {"name": "member2", "creationTimestamp": CREATED}, "spec": {"syncMode": "Pull"}}),
        ),
    ];
    let mut printed = String::new();
    for (def, object) in cases {
        printed.push_str(&printed_row(&def, object));
    }
    // The columns and cells kubectl shows for each object; UPDATE_EXPECT=1 rewrites the file.
    expect_file!["snapshots/builtin_printers.txt"].assert_eq(&printed);
}

#[test]
fn wide_columns_have_priority_one() {
    let t = table(&def("apps", "Deployment"), &[], IncludeObject::None, now());
    let priorities: Vec<(String, i64)> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["priority"].as_i64().unwrap(),
            )
        })
        .collect();
    let wide: Vec<&str> = priorities
        .iter()
        .filter(|(_, p)| *p == 1)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(wide, ["Containers", "Images", "Selector"]);
    assert_eq!(t["columnDefinitions"][0]["format"], "name");
    assert_eq!(t["rows"], json!([]));
}

#[test]
fn pod_status_reasons() {
    let pod = |status: Value, extra_meta: Value| {
        let mut metadata = meta("p");
        if let Value::Object(extra) = extra_meta {
            metadata.as_object_mut().unwrap().extend(extra);
        }
        json!({"metadata": metadata, "spec": {"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}, "status": status})
    };
    let cases = [
        (
            pod(
                json!({"phase": "Pending", "initContainerStatuses": [{"name": "i", "state": {"waiting": {"reason": "PodInitializing"}}}]}),
                json!({}),
            ),
            "Init:0/1",
        ),
        (
            pod(
                json!({"phase": "Pending", "initContainerStatuses": [{"name": "i", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
                json!({}),
            ),
            "Init:Error",
        ),
        (
            pod(
                json!({"phase": "Failed", "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 137}}}]}),
                json!({}),
            ),
            "ExitCode:137",
        ),
        (
            pod(
                json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": true, "state": {"running": {}}}]}),
                json!({"deletionTimestamp": CREATED}),
            ),
            "Terminating",
        ),
        (
            pod(
                json!({"phase": "Succeeded", "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
                json!({}),
            ),
            "Completed",
        ),
        (pod(json!({"phase": "Pending"}), json!({})), "Pending"),
    ];
    for (object, expected) in cases {
        let (_, cells) = render(&def("", "Pod"), object);
        assert_eq!(cells[2], expected);
    }
}

fn policy_def(columns: Vec<PrinterColumn>) -> ResourceDef {
    let mut def = def("", "ConfigMap");
    def.group = "policy.karmada.io".into();
    def.version = "v1alpha1".into();
    def.kind = "PropagationPolicy".into();
    def.plural = "propagationpolicies".into();
    def.builtin = false;
    def.printer = Printer::Columns(columns);
    def
}

fn column(name: &str, type_: &str, json_path: &str, priority: i32) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        type_: type_.into(),
        format: String::new(),
        description: String::new(),
        priority,
        json_path: json_path.into(),
    }
}

#[test]
fn declared_columns_follow_crd_semantics() {
    let object = json!({"metadata": {"name": "pp", "namespace": "default", "creationTimestamp": CREATED},
        "spec": {"conflictResolution": "Abort", "priority": 0},
        "status": {"conditions": [{"type": "Scheduled", "status": "True"}]}});
    // PropagationPolicy declares AGE itself: no second AGE is added.
    let with_age = policy_def(vec![
        column(
            "CONFLICT-RESOLUTION",
            "string",
            ".spec.conflictResolution",
            0,
        ),
        column("PRIORITY", "integer", ".spec.priority", 0),
        column("AGE", "date", ".metadata.creationTimestamp", 0),
    ]);
    let (names, cells) = render(&with_age, object.clone());
    assert_eq!(names, ["Name", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"]);
    assert_eq!(cells, [json!("pp"), json!("Abort"), json!(0), json!("5m")]);

    let without_age = policy_def(vec![
        column(
            "SCHEDULED",
            "string",
            r#".status.conditions[?(@.type=="Scheduled")].status"#,
            0,
        ),
        column("MISSING", "string", ".status.nothing", 1),
    ]);
    let (names, cells) = render(&without_age, object.clone());
    assert_eq!(names, ["Name", "SCHEDULED", "MISSING", "Age"]);
    assert_eq!(
        cells,
        [json!("pp"), json!("True"), Value::Null, json!("5m")]
    );

    let none_declared = policy_def(vec![]);
    let (names, cells) = render(&none_declared, object);
    assert_eq!(names, ["Name", "Age"]);
    assert_eq!(cells, [json!("pp"), json!("5m")]);
}

#[test]
fn include_object_controls_row_objects() {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "ns1", "creationTimestamp": CREATED, "labels": {"a": "b"},
                     "managedFields": [{"manager": "kubectl"}]},
        "data": {"k": "v"}});
    let cm = def("", "ConfigMap");
    let none = table(
        &cm,
        std::slice::from_ref(&object),
        IncludeObject::None,
        now(),
    );
    assert!(none["rows"][0].get("object").is_none());

    let metadata = table(
        &cm,
        std::slice::from_ref(&object),
        IncludeObject::Metadata,
        now(),
    );
    let partial = &metadata["rows"][0]["object"];
    assert_eq!(partial["kind"], "PartialObjectMetadata");
    assert_eq!(partial["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(partial["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(partial["metadata"]["namespace"], "ns1");
    assert!(partial["metadata"].get("managedFields").is_none());
    assert!(partial.get("data").is_none());

    let full = table(
        &cm,
        std::slice::from_ref(&object),
        IncludeObject::Object,
        now(),
    );
    assert_eq!(full["rows"][0]["object"], object);
    assert_eq!(
        (&full["kind"], &full["apiVersion"], &full["metadata"]),
        (&json!("Table"), &json!("meta.k8s.io/v1"), &json!({}))
    );
}

#[test]
fn include_object_parses_query_values() {
    assert_eq!(IncludeObject::parse(None), Some(IncludeObject::Metadata));
    assert_eq!(
        IncludeObject::parse(Some("Object")),
        Some(IncludeObject::Object)
    );
    assert_eq!(
        IncludeObject::parse(Some("None")),
        Some(IncludeObject::None)
    );
    assert_eq!(IncludeObject::parse(Some("Everything")), None);
}

#[test]
fn every_row_has_one_cell_per_column_even_for_empty_objects() {
    for def in resource_defs() {
        let t = table(
            &def,
            &[json!({}), json!({"metadata": {"name": "x"}})],
            IncludeObject::Metadata,
            now(),
        );
        let columns = t["columnDefinitions"].as_array().unwrap().len();
        for row in t["rows"].as_array().unwrap() {
            assert_eq!(
                row["cells"].as_array().unwrap().len(),
                columns,
                "{}",
                def.kind
            );
        }
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Field names the printers read, so random objects reach their code paths.
    const KEYS: &[&str] = &[
        "metadata",
        "name",
        "creationTimestamp",
        "deletionTimestamp",
        "labels",
        "spec",
        "status",
        "replicas",
        "readyReplicas",
        "containers",
        "image",
        "ports",
        "port",
        "nodePort",
        "protocol",
        "type",
        "conditions",
        "state",
        "waiting",
        "terminated",
        "reason",
        "exitCode",
        "lastState",
        "finishedAt",
        "restartCount",
        "selector",
        "matchLabels",
        "matchExpressions",
        "operator",
        "values",
        "key",
        "subsets",
        "addresses",
        "ip",
        "rules",
        "host",
        "tls",
        "loadBalancer",
        "ingress",
        "endpoints",
        "subjects",
        "roleRef",
        "kind",
        "jobTemplate",
        "template",
        "startTime",
        "completionTime",
        "zones",
        "data",
        "syncMode",
        "metrics",
        "currentMetrics",
        "resource",
        "target",
        "current",
        "averageUtilization",
        "averageValue",
        "minAvailable",
        "maxUnavailable",
        "claimRef",
        "capacity",
        "accessModes",
        "hard",
        "used",
        "podSelector",
        "parameters",
        "annotations",
    ];

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            prop_oneof![
                Just("2026-11-29T17:55:00Z".to_string()),
                "[a-zA-Z0-9 ,/=-]{0,12}"
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(proptest::sample::select(KEYS), inner, 0..6)
                    .prop_map(|map| Value::Object(
                        map.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                    )),
            ]
        })
    }

    /// Generated once: cloning the definitions (with their schemas) per case would dominate.
    static DEFS: std::sync::LazyLock<Vec<ResourceDef>> = std::sync::LazyLock::new(resource_defs);

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Whatever an object looks like, every printer yields one cell per column and never panics.
        #[test]
        fn arbitrary_objects_print_a_full_row(objects in proptest::collection::vec(json_value(), 1..4)) {
            for def in DEFS.iter() {
                let t = table(def, &objects, IncludeObject::Metadata, now());
                let columns = t["columnDefinitions"].as_array().unwrap().len();
                for row in t["rows"].as_array().unwrap() {
                    prop_assert_eq!(row["cells"].as_array().unwrap().len(), columns, "{}", def.kind);
                    prop_assert_eq!(&row["object"]["kind"], "PartialObjectMetadata");
                }
            }
        }
    }
}
