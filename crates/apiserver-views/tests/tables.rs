//! Server-side Tables: each built-in printer's columns and cells for realistic objects, declared
//! (CRD) columns, and the `includeObject` variants.

#![allow(clippy::unwrap_used)]

use apimachinery::{Printer, PrinterColumn, ResourceDef};
use apiserver_views::builtin::resource_defs;
use apiserver_views::tables::{IncludeObject, table};
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

fn pod_template(containers: Value) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}})
}

#[test]
fn builtin_printers_match_kubectl_columns_and_cells() {
    let two_containers =
        json!([{"name": "nginx", "image": "nginx:1.25"}, {"name": "log", "image": "busybox"}]);
    let cases: Vec<(ResourceDef, Value, &str, Value)> = vec![
        (
            def("apps", "Deployment"),
            json!({"metadata": meta("web"), "spec": {"replicas": 3,
            "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]},
            "template": pod_template(two_containers.clone())},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}),
            "Name Ready Up-to-date Available Age Containers Images Selector",
            json!([
                "web",
                "2/3",
                3,
                2,
                "5m",
                "nginx,log",
                "nginx:1.25,busybox",
                "app=web,tier in (be,fe)"
            ]),
        ),
        (
            def("apps", "StatefulSet"),
            json!({"metadata": meta("db"), "spec": {"replicas": 2, "template": pod_template(json!([{"name": "pg", "image": "postgres:16"}]))},
            "status": {"readyReplicas": 1}}),
            "Name Ready Age Containers Images",
            json!(["db", "1/2", "5m", "pg", "postgres:16"]),
        ),
        (
            def("apps", "ReplicaSet"),
            json!({"metadata": meta("web-abc"), "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template(json!([{"name": "nginx", "image": "nginx"}]))}, "status": {"replicas": 3, "readyReplicas": 1}}),
            "Name Desired Current Ready Age Containers Images Selector",
            json!(["web-abc", 3, 3, 1, "5m", "nginx", "nginx", "app=web"]),
        ),
        (
            def("apps", "DaemonSet"),
            json!({"metadata": meta("agent"), "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "a", "image": "agent:1"}]}}},
            "status": {"desiredNumberScheduled": 4, "currentNumberScheduled": 4, "numberReady": 3, "updatedNumberScheduled": 4, "numberAvailable": 3}}),
            "Name Desired Current Ready Up-to-date Available Node Selector Age Containers Images Selector",
            json!([
                "agent",
                4,
                4,
                3,
                4,
                3,
                "kubernetes.io/os=linux",
                "5m",
                "a",
                "agent:1",
                "app=agent"
            ]),
        ),
        (
            def("batch", "Job"),
            json!({"metadata": meta("pi"), "spec": {"completions": 1, "selector": {"matchLabels": {"job": "pi"}},
            "template": pod_template(json!([{"name": "pi", "image": "perl"}]))},
            "status": {"succeeded": 1, "startTime": "2026-11-29T17:56:00Z", "completionTime": "2026-11-29T17:56:42Z",
                       "conditions": [{"type": "Complete", "status": "True"}]}}),
            "Name Status Completions Duration Age Containers Images Selector",
            json!(["pi", "Complete", "1/1", "42s", "5m", "pi", "perl", "job=pi"]),
        ),
        (
            def("batch", "CronJob"),
            json!({"metadata": meta("nightly"), "spec": {"schedule": "0 3 * * *", "suspend": false,
            "jobTemplate": {"spec": {"template": pod_template(json!([{"name": "b", "image": "backup"}]))}}},
            "status": {"lastScheduleTime": "2026-11-29T17:58:00Z", "active": [{"name": "nightly-1"}]}}),
            "Name Schedule Timezone Suspend Active Last Schedule Age Containers Images Selector",
            json!([
                "nightly",
                "0 3 * * *",
                "<none>",
                "False",
                1,
                "2m",
                "5m",
                "b",
                "backup",
                "<none>"
            ]),
        ),
        (
            def("", "Service"),
            json!({"metadata": meta("web"), "spec": {"type": "NodePort", "clusterIP": "10.0.0.7",
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}], "selector": {"app": "web"}}}),
            "Name Type Cluster-IP External-IP Port(s) Age Selector",
            json!([
                "web",
                "NodePort",
                "10.0.0.7",
                "<none>",
                "80:30080/TCP,53/UDP",
                "5m",
                "app=web"
            ]),
        ),
        (
            def("", "Service"),
            json!({"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.8", "ports": [{"port": 443}]}}),
            "Name Type Cluster-IP External-IP Port(s) Age Selector",
            json!([
                "lb",
                "LoadBalancer",
                "10.0.0.8",
                "<pending>",
                "443/TCP",
                "5m",
                "<none>"
            ]),
        ),
        (
            def("", "ConfigMap"),
            json!({"metadata": meta("cfg"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
            "Name Data Age",
            json!(["cfg", 3, "5m"]),
        ),
        (
            def("", "Secret"),
            json!({"metadata": meta("tls"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
            "Name Type Data Age",
            json!(["tls", "kubernetes.io/tls", 2, "5m"]),
        ),
        (
            def("", "Namespace"),
            json!({"metadata": {"name": "team-a", "creationTimestamp": CREATED}, "status": {"phase": "Active"}}),
            "Name Status Age",
            json!(["team-a", "Active", "5m"]),
        ),
        (
            def("", "ServiceAccount"),
            json!({"metadata": meta("builder"), "secrets": [{"name": "builder-token"}]}),
            "Name Secrets Age",
            json!(["builder", 1, "5m"]),
        ),
        (
            def("", "Pod"),
            json!({"metadata": meta("web-1"), "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "podIP": "10.1.0.5", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": "2026-11-29T17:59:00Z"}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}),
            "Name Ready Status Restarts Age IP Node Nominated Node Readiness Gates",
            json!([
                "web-1",
                "1/2",
                "CrashLoopBackOff",
                "2 (60s ago)",
                "5m",
                "10.1.0.5",
                "n1",
                "<none>",
                "<none>"
            ]),
        ),
        (
            def("", "Node"),
            json!({"metadata": {"name": "n1", "creationTimestamp": CREATED, "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Ubuntu 24.04", "kernelVersion": "6.8.0", "containerRuntimeVersion": "containerd://1.7"}}}),
            "Name Status Roles Age Version Internal-IP External-IP OS-Image Kernel-Version Container-Runtime",
            json!([
                "n1",
                "Ready,SchedulingDisabled",
                "control-plane",
                "5m",
                "v1.32.0",
                "192.168.1.10",
                "<none>",
                "Ubuntu 24.04",
                "6.8.0",
                "containerd://1.7"
            ]),
        ),
        (
            def("", "PersistentVolumeClaim"),
            json!({"metadata": meta("data"), "spec": {"volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}}),
            "Name Status Volume Capacity Access Modes StorageClass VolumeAttributesClass Age VolumeMode",
            json!([
                "data",
                "Bound",
                "pv-1",
                "10Gi",
                "RWO,ROX",
                "standard",
                "<unset>",
                "5m",
                "Filesystem"
            ]),
        ),
        (
            def("", "Event"),
            json!({"metadata": meta("web.123"), "type": "Warning", "reason": "BackOff", "message": "Back-off restarting",
            "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{a}"}, "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-11-29T17:50:00Z", "lastTimestamp": "2026-11-29T17:59:30Z", "count": 7}),
            "Last Seen Type Reason Object Subobject Source Message First Seen Count Name",
            json!([
                "30s",
                "Warning",
                "BackOff",
                "pod/web-1",
                "spec.containers{a}",
                "kubelet, n1",
                "Back-off restarting",
                "10m",
                7,
                "web.123"
            ]),
        ),
        (
            def("", "Endpoints"),
            json!({"metadata": meta("web"), "subsets": [{"addresses": [{"ip": "10.1.0.5"}, {"ip": "10.1.0.6"}],
            "ports": [{"port": 80}, {"port": 443}]}]}),
            "Name Endpoints Age",
            json!([
                "web",
                "10.1.0.5:80,10.1.0.5:443,10.1.0.6:80 + 1 more...",
                "5m"
            ]),
        ),
        (
            def("networking.k8s.io", "Ingress"),
            json!({"metadata": meta("site"), "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}], "tls": [{"hosts": ["a.example.com"]}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}]}}}),
            "Name Class Hosts Address Ports Age",
            json!([
                "site",
                "nginx",
                "a.example.com,b.example.com",
                "203.0.113.9",
                "80, 443",
                "5m"
            ]),
        ),
        (
            def("discovery.k8s.io", "EndpointSlice"),
            json!({"metadata": meta("web-x"), "addressType": "IPv4", "ports": [{"port": 80}],
            "endpoints": [{"addresses": ["10.1.0.5"]}]}),
            "Name AddressType Ports Endpoints Age",
            json!(["web-x", "IPv4", "80", "10.1.0.5", "5m"]),
        ),
        (
            def("coordination.k8s.io", "Lease"),
            json!({"metadata": meta("karmada-scheduler"), "spec": {"holderIdentity": "node-a_1234"}}),
            "Name Holder Age",
            json!(["karmada-scheduler", "node-a_1234", "5m"]),
        ),
        (
            def("rbac.authorization.k8s.io", "ClusterRole"),
            json!({"metadata": {"name": "admin", "creationTimestamp": CREATED}}),
            "Name Created At",
            json!(["admin", CREATED]),
        ),
        (
            def("rbac.authorization.k8s.io", "RoleBinding"),
            json!({"metadata": meta("rb"), "roleRef": {"kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "namespace": "ci", "name": "bot"}]}),
            "Name Role Age Users Groups ServiceAccounts",
            json!(["rb", "Role/reader", "5m", "alice", "devs", "ci:bot"]),
        ),
        (
            def("apiextensions.k8s.io", "CustomResourceDefinition"),
            json!({"metadata": {"name": "propagationpolicies.policy.karmada.io", "creationTimestamp": CREATED}}),
            "Name Created At",
            json!(["propagationpolicies.policy.karmada.io", CREATED]),
        ),
        (
            def("policy", "PodDisruptionBudget"),
            json!({"metadata": meta("web-pdb"), "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1}}),
            "Name Min Available Max Unavailable Allowed Disruptions Age",
            json!(["web-pdb", "2", "N/A", 1, "5m"]),
        ),
        (
            def("policy", "PodDisruptionBudget"),
            json!({"metadata": meta("db-pdb"), "spec": {"maxUnavailable": "50%"}}),
            "Name Min Available Max Unavailable Allowed Disruptions Age",
            json!(["db-pdb", "N/A", "50%", 0, "5m"]),
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
            "Name Reference Targets MinPods MaxPods Replicas Age",
            json!([
                "web-hpa",
                "Deployment/web",
                "cpu: 45%/80%, memory: <unknown>/500Mi + 1 more...",
                "2",
                10,
                3,
                "5m"
            ]),
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
            "Name Reference Targets MinPods MaxPods Replicas Age",
            json!([
                "queue-hpa",
                "StatefulSet/queue",
                "20/30 (avg), 2k/10k",
                "<unset>",
                5,
                1,
                "5m"
            ]),
        ),
        (
            def("autoscaling", "HorizontalPodAutoscaler"),
            json!({"metadata": meta("bare"), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 1}}),
            "Name Reference Targets MinPods MaxPods Replicas Age",
            json!(["bare", "Deployment/web", "<none>", "<unset>", 1, 0, "5m"]),
        ),
        (
            def("", "PersistentVolume"),
            json!({"metadata": {"name": "pv-1", "creationTimestamp": CREATED}, "spec": {"capacity": {"storage": "10240Mi"},
                "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}}),
            "Name Capacity Access Modes Reclaim Policy Status Claim StorageClass VolumeAttributesClass Reason Age VolumeMode",
            json!([
                "pv-1",
                "10Gi",
                "RWO,RWX",
                "Retain",
                "Bound",
                "default/data",
                "standard",
                "<unset>",
                "",
                "5m",
                "Filesystem"
            ]),
        ),
        (
            def("", "PersistentVolume"),
            json!({"metadata": {"name": "old", "creationTimestamp": CREATED, "deletionTimestamp": CREATED,
                "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
            "spec": {"storageClassName": "standard"}, "status": {"phase": "Released", "reason": "Gone"}}),
            "Name Capacity Access Modes Reclaim Policy Status Claim StorageClass VolumeAttributesClass Reason Age VolumeMode",
            json!([
                "old",
                "0",
                "",
                "",
                "Terminating",
                "",
                "legacy",
                "<unset>",
                "Gone",
                "5m",
                "<unset>"
            ]),
        ),
        (
            def("", "ResourceQuota"),
            json!({"metadata": meta("compute"), "spec": {"hard": {"pods": "10"}},
            "status": {"hard": {"requests.cpu": "1", "limits.memory": "2Gi", "pods": "10", "limits.cpu": "2000m"},
                       "used": {"requests.cpu": "500m", "pods": "3"}}}),
            "Name Age Request Limit",
            json!([
                "compute",
                "5m",
                "pods: 3/10, requests.cpu: 500m/1",
                "limits.cpu: 0/2, limits.memory: 0/2Gi"
            ]),
        ),
        (
            def("", "LimitRange"),
            json!({"metadata": meta("limits"), "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
            "Name Created At",
            json!(["limits", CREATED]),
        ),
        (
            def("", "PodTemplate"),
            json!({"metadata": meta("tmpl"), "template": {"metadata": {"labels": {"tier": "fe", "app": "web"}},
                "spec": {"containers": two_containers.clone()}}}),
            "Name Containers Images Pod Labels",
            json!(["tmpl", "nginx,log", "nginx:1.25,busybox", "app=web,tier=fe"]),
        ),
        (
            def("", "ReplicationController"),
            json!({"metadata": meta("legacy"), "spec": {"replicas": 3, "selector": {"app": "web"},
                "template": pod_template(json!([{"name": "nginx", "image": "nginx"}]))},
            "status": {"replicas": 3, "readyReplicas": 2}}),
            "Name Desired Current Ready Age Containers Images Selector",
            json!(["legacy", 3, 3, 2, "5m", "nginx", "nginx", "app=web"]),
        ),
        (
            def("networking.k8s.io", "NetworkPolicy"),
            json!({"metadata": meta("db-only"), "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress"]}}),
            "Name Pod-Selector Age",
            json!(["db-only", "app=db", "5m"]),
        ),
        (
            def("networking.k8s.io", "NetworkPolicy"),
            json!({"metadata": meta("deny-all"), "spec": {"podSelector": {}}}),
            "Name Pod-Selector Age",
            json!(["deny-all", "<none>", "5m"]),
        ),
        (
            def("networking.k8s.io", "IngressClass"),
            json!({"metadata": {"name": "external", "creationTimestamp": CREATED}, "spec": {"controller": "example.com/ingress",
                "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}),
            "Name Controller Parameters Age",
            json!([
                "external",
                "example.com/ingress",
                "IngressParameters.k8s.example.com/external-lb",
                "5m"
            ]),
        ),
        (
            def("networking.k8s.io", "IngressClass"),
            json!({"metadata": {"name": "nginx", "creationTimestamp": CREATED}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
            "Name Controller Parameters Age",
            json!(["nginx", "k8s.io/ingress-nginx", "<none>", "5m"]),
        ),
        (
            def("storage.k8s.io", "StorageClass"),
            json!({"metadata": {"name": "local-path", "creationTimestamp": CREATED,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"}),
            "Name Provisioner ReclaimPolicy VolumeBindingMode AllowVolumeExpansion Age",
            json!([
                "local-path (default)",
                "rancher.io/local-path",
                "Delete",
                "WaitForFirstConsumer",
                false,
                "5m"
            ]),
        ),
        (
            def("storage.k8s.io", "StorageClass"),
            json!({"metadata": {"name": "fast", "creationTimestamp": CREATED}, "provisioner": "ebs.csi.aws.com",
                "reclaimPolicy": "Retain", "allowVolumeExpansion": true}),
            "Name Provisioner ReclaimPolicy VolumeBindingMode AllowVolumeExpansion Age",
            json!(["fast", "ebs.csi.aws.com", "Retain", "Immediate", true, "5m"]),
        ),
        (
            def("scheduling.k8s.io", "PriorityClass"),
            json!({"metadata": {"name": "high", "creationTimestamp": CREATED}, "value": 1000000, "preemptionPolicy": "Never"}),
            "Name Value Global-Default Age PreemptionPolicy",
            json!(["high", 1000000, false, "5m", "Never"]),
        ),
        (
            cluster_def(),
            json!({"metadata": {"name": "member1", "creationTimestamp": CREATED},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://172.18.0.3:6443", "zones": ["z1", "z2"], "region": ""},
            "status": {"kubernetesVersion": "v1.31.2", "conditions": [{"type": "Ready", "status": "True"}]}}),
            "Name Version Mode Ready Age Zones Region Provider API-Endpoint Proxy-URL",
            json!([
                "member1",
                "v1.31.2",
                "Push",
                "True",
                "5m",
                "z1,z2",
                "<none>",
                "<none>",
                "https://172.18.0.3:6443",
                "<none>"
            ]),
        ),
        (
            cluster_def(),
            json!({"metadata": {"name": "member2", "creationTimestamp": CREATED}, "spec": {"syncMode": "Pull"}}),
            "Name Version Mode Ready Age Zones Region Provider API-Endpoint Proxy-URL",
            json!([
                "member2", "", "Pull", "Unknown", "5m", "<none>", "<none>", "<none>", "", "<none>"
            ]),
        ),
    ];
    for (def, object, columns, expected) in cases {
        let label = format!("{}/{}", def.kind, object["metadata"]["name"]);
        let (names, cells) = render(&def, object);
        // Multi-word column names ("Up-to-date", "Last Seen") are compared as one joined string.
        assert_eq!(names.join(" "), columns, "{label} columns");
        assert_eq!(Value::Array(cells), expected, "{label} cells");
    }
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
