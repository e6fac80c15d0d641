//! Objects have the shape kube-apiserver gives them. Every built-in kind the cluster serves is
//! watched from the start, one object of each is written as a user writes it
//! (`tests/fixtures/api-shape/samples.yaml`), and the workloads are driven through the states
//! member-sim produces (pending and running pods, rollouts, a finished Job, a pod deleted). Every
//! version of every object the watches saw, whoever wrote it, is then read back:
//! - into its k8s-openapi type and serialized again, which must give the same JSON: a field the
//!   type does not know would be lost, and a field Go always writes (`imageID` of a waiting
//!   container) would be added;
//! - into the Python `kubernetes` client's model (scripts/setup.sh installs it), whose
//!   validation rejects a missing required field, and which must keep every field.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::{AsyncBufReadExt, StreamExt};
use member_sim::SimConfig;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod common;
use common::live::{self, DEADLINE, eventually};

/// A served kind, from discovery.
#[derive(Clone, Debug)]
struct Served {
    api_version: String,
    kind: String,
    plural: String,
    namespaced: bool,
}

impl Served {
    fn collection(&self, namespace: Option<&str>) -> String {
        let base = if self.api_version.contains('/') {
            format!("/apis/{}", self.api_version)
        } else {
            format!("/api/{}", self.api_version)
        };
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", self.plural),
            None => format!("{base}/{}", self.plural),
        }
    }
}

/// Groups Kubernetes itself defines (custom resources are another test's business).
fn is_kubernetes_group(group: &str) -> bool {
    ["", "apps", "batch", "autoscaling", "policy"].contains(&group) || group.ends_with(".k8s.io")
}

async fn get(client: &kube::Client, path: &str) -> Value {
    let request = http::Request::get(path).body(Vec::new()).expect("request");
    client
        .request::<Value>(request)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

async fn served_kinds(client: &kube::Client) -> Vec<Served> {
    let mut group_versions = vec!["v1".to_string()];
    let groups = get(client, "/apis").await;
    for group in groups["groups"].as_array().expect("groups") {
        let name = group["name"].as_str().expect("group name");
        if !is_kubernetes_group(name) {
            continue;
        }
        for version in group["versions"].as_array().expect("versions") {
            group_versions.push(version["groupVersion"].as_str().expect("gv").to_string());
        }
    }
    let mut served = Vec::new();
    for group_version in group_versions {
        let path = if group_version == "v1" {
            "/api/v1".to_string()
        } else {
            format!("/apis/{group_version}")
        };
        let list = get(client, &path).await;
        for resource in list["resources"].as_array().expect("resources") {
            let verbs: Vec<&str> = resource["verbs"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let plural = resource["name"].as_str().expect("name");
            if plural.contains('/') || !verbs.contains(&"watch") {
                continue;
            }
            served.push(Served {
                api_version: group_version.clone(),
                kind: resource["kind"].as_str().expect("kind").to_string(),
                plural: plural.to_string(),
                namespaced: resource["namespaced"].as_bool().expect("namespaced"),
            });
        }
    }
    served
}

/// Collects every object a watch of `served` (all namespaces) delivers until `cancel`.
fn watch_all(
    client: kube::Client,
    served: Served,
    seen: Arc<Mutex<Vec<Value>>>,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let path = format!(
            "{}?watch=true&resourceVersion=0&allowWatchBookmarks=false",
            served.collection(None)
        );
        let request = http::Request::get(&path).body(Vec::new()).expect("request");
        let body = client
            .request_stream(request)
            .await
            .unwrap_or_else(|e| panic!("watch {path}: {e}"));
        let mut lines = std::pin::pin!(body.lines());
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                line = lines.next() => match line {
                    Some(Ok(line)) => {
                        let event: Value = serde_json::from_str(&line)
                            .unwrap_or_else(|e| panic!("watch {path}: {e}: {line}"));
                        match event["type"].as_str() {
                            Some("ADDED" | "MODIFIED" | "DELETED") => {
                                seen.lock().expect("lock").push(event["object"].clone());
                            }
                            other => panic!("watch {path}: unexpected event {other:?}: {line}"),
                        }
                    }
                    Some(Err(e)) => panic!("watch {path}: {e}"),
                    None => return,
                },
            }
        }
    })
}

/// Where `original` and its read-back differ: `unknown field` (lost), `missing field` (the
/// type always writes it) or a changed value. Numbers compare by value (`1` and `1.0`), and a
/// field that is `null` may be absent from the read-back.
fn differences(path: &str, original: &Value, back: &Value, out: &mut Vec<String>) {
    match (original, back) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    // Go writes a zero `metav1.Time` as null (`lastProbeTime`); to k8s-openapi
                    // that is an absent optional field.
                    None if value.is_null() => {}
                    None => out.push(format!("unknown field {path}.{key}")),
                    Some(other) => differences(&format!("{path}.{key}"), value, other, out),
                }
            }
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("missing field {path}.{key} (= {})", b[key]));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{index}]"), x, y, out);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: {a} read back as {b}")),
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(object: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

/// The object read into its k8s-openapi type and written again; `None` for a kind k8s-openapi
/// has no type for.
fn k8s_openapi_read_back(object: &Value) -> Option<Result<Value, String>> {
    use k8s_openapi::api::{
        apps, autoscaling, batch, certificates, coordination, core, discovery, events, networking,
        node, policy, rbac, scheduling, storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    let api_version = object["apiVersion"].as_str()?;
    let kind = object["kind"].as_str()?;
    macro_rules! dispatch {
        ($(($v:literal, $k:literal) => $t:ty,)*) => {
            match (api_version, kind) {
                $(($v, $k) => Some(round_trip::<$t>(object)),)*
                _ => None,
            }
        };
    }
    dispatch! {
        ("v1", "Namespace") => core::v1::Namespace,
        ("v1", "ConfigMap") => core::v1::ConfigMap,
        ("v1", "Secret") => core::v1::Secret,
        ("v1", "Service") => core::v1::Service,
        ("v1", "ServiceAccount") => core::v1::ServiceAccount,
        ("v1", "Event") => core::v1::Event,
        ("v1", "Endpoints") => core::v1::Endpoints,
        ("v1", "Pod") => core::v1::Pod,
        ("v1", "PersistentVolumeClaim") => core::v1::PersistentVolumeClaim,
        ("v1", "Node") => core::v1::Node,
        ("v1", "PersistentVolume") => core::v1::PersistentVolume,
        ("v1", "ResourceQuota") => core::v1::ResourceQuota,
        ("v1", "LimitRange") => core::v1::LimitRange,
        ("v1", "PodTemplate") => core::v1::PodTemplate,
        ("v1", "ReplicationController") => core::v1::ReplicationController,
        ("apps/v1", "Deployment") => apps::v1::Deployment,
        ("apps/v1", "StatefulSet") => apps::v1::StatefulSet,
        ("apps/v1", "DaemonSet") => apps::v1::DaemonSet,
        ("apps/v1", "ReplicaSet") => apps::v1::ReplicaSet,
        ("apps/v1", "ControllerRevision") => apps::v1::ControllerRevision,
        ("batch/v1", "Job") => batch::v1::Job,
        ("batch/v1", "CronJob") => batch::v1::CronJob,
        ("networking.k8s.io/v1", "Ingress") => networking::v1::Ingress,
        ("networking.k8s.io/v1", "NetworkPolicy") => networking::v1::NetworkPolicy,
        ("networking.k8s.io/v1", "IngressClass") => networking::v1::IngressClass,
        ("policy/v1", "PodDisruptionBudget") => policy::v1::PodDisruptionBudget,
        ("autoscaling/v2", "HorizontalPodAutoscaler") => autoscaling::v2::HorizontalPodAutoscaler,
        ("autoscaling/v1", "HorizontalPodAutoscaler") => autoscaling::v1::HorizontalPodAutoscaler,
        ("storage.k8s.io/v1", "StorageClass") => storage::v1::StorageClass,
        ("storage.k8s.io/v1", "CSIDriver") => storage::v1::CSIDriver,
        ("storage.k8s.io/v1", "CSINode") => storage::v1::CSINode,
        ("storage.k8s.io/v1", "VolumeAttachment") => storage::v1::VolumeAttachment,
        ("scheduling.k8s.io/v1", "PriorityClass") => scheduling::v1::PriorityClass,
        ("discovery.k8s.io/v1", "EndpointSlice") => discovery::v1::EndpointSlice,
        ("coordination.k8s.io/v1", "Lease") => coordination::v1::Lease,
        ("events.k8s.io/v1", "Event") => events::v1::Event,
        ("node.k8s.io/v1", "RuntimeClass") => node::v1::RuntimeClass,
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => certificates::v1::CertificateSigningRequest,
        ("rbac.authorization.k8s.io/v1", "Role") => rbac::v1::Role,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => rbac::v1::RoleBinding,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => rbac::v1::ClusterRole,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => rbac::v1::ClusterRoleBinding,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => apiextensions::CustomResourceDefinition,
        ("apiregistration.k8s.io/v1", "APIService") => apiregistration::APIService,
    }
}

fn label(object: &Value) -> String {
    format!(
        "{} {}/{} rv {}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["namespace"].as_str().unwrap_or(""),
        object["metadata"]["name"].as_str().unwrap_or("?"),
        object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("?"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_kind_reads_back_through_typed_clients_in_every_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cancel = CancellationToken::new();
    let config = SimConfig {
        name: "shape".into(),
        nodes: 2,
        pod_startup_delay: jiff::SignedDuration::from_secs(2),
        ..SimConfig::default()
    };
    let running = live::start(config, dir.path(), &cancel).await;
    let client = live::socket_client(&running);

    let served = served_kinds(&client).await;
    let unmapped: Vec<String> = served
        .iter()
        .filter(|s| {
            k8s_openapi_read_back(&json!({"apiVersion": s.api_version, "kind": s.kind})).is_none()
        })
        .map(|s| format!("{} {}", s.api_version, s.kind))
        .collect();
    assert!(
        unmapped.is_empty(),
        "served kinds this test cannot read: {unmapped:?}"
    );

    let seen = Arc::new(Mutex::new(Vec::new()));
    let stop_watches = CancellationToken::new();
    let watches: Vec<_> = served
        .iter()
        .map(|s| {
            watch_all(
                client.clone(),
                s.clone(),
                seen.clone(),
                stop_watches.clone(),
            )
        })
        .collect();

    let samples = test_fixtures::documents("api-shape/samples.yaml");
    let mut sampled = BTreeSet::new();
    for sample in &samples {
        let (api_version, kind) = (
            sample["apiVersion"].as_str().unwrap(),
            sample["kind"].as_str().unwrap(),
        );
        let kind_served = served
            .iter()
            .find(|s| s.api_version == api_version && s.kind == kind)
            .unwrap_or_else(|| panic!("{api_version} {kind} is not served"));
        let path = kind_served.collection(sample["metadata"]["namespace"].as_str());
        let request = http::Request::post(&path)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(sample).unwrap())
            .unwrap();
        client
            .request::<Value>(request)
            .await
            .unwrap_or_else(|e| panic!("creating {}: {e}", label(sample)));
        sampled.insert((api_version.to_string(), kind.to_string()));
    }

    let deployments = "/apis/apps/v1/namespaces/shape/deployments";
    eventually("the Deployment to become available", || async {
        get(&client, &format!("{deployments}/web")).await["status"]["availableReplicas"] == 2
    })
    .await;
    eventually("the Job to complete", || async {
        get(&client, "/apis/batch/v1/namespaces/shape/jobs/once").await["status"]["succeeded"] == 1
    })
    .await;
    // A rollout: new pods start (pending, then running) while old ones are deleted.
    let patch = http::Request::patch(format!("{deployments}/web"))
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(&json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:2", "ports": [{"containerPort": 8080}]}]}}}})).unwrap())
        .unwrap();
    client.request::<Value>(patch).await.expect("roll out");
    eventually("the rollout to finish", || async {
        let d = get(&client, &format!("{deployments}/web")).await;
        d["status"]["updatedReplicas"] == 3
            && d["status"]["availableReplicas"] == 3
            && d["status"]["replicas"] == 3
    })
    .await;
    let delete = http::Request::delete("/api/v1/namespaces/shape/pods/single")
        .body(Vec::new())
        .unwrap();
    client.request::<Value>(delete).await.expect("delete pod");
    eventually("the pod to go", || async {
        let request = http::Request::get("/api/v1/namespaces/shape/pods/single")
            .body(Vec::new())
            .unwrap();
        matches!(client.request::<Value>(request).await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    stop_watches.cancel();
    for watch in watches {
        watch.await.expect("watch task");
    }

    // One copy of each object version in each API version it is served in.
    let mut objects: BTreeMap<(String, String, String), Value> = BTreeMap::new();
    for object in seen.lock().expect("lock").drain(..) {
        let key = (
            object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            object["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            object["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
        objects.insert(key, object);
    }
    let objects: Vec<Value> = objects.into_values().collect();
    let kinds_seen: BTreeSet<(String, String)> = objects
        .iter()
        .map(|o| {
            (
                o["apiVersion"].as_str().unwrap().to_string(),
                o["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let pod_states: BTreeSet<String> = objects
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|o| {
            let waiting = o["status"]["containerStatuses"][0]["state"]["waiting"].is_object();
            format!(
                "{}{}",
                o["status"]["phase"].as_str().unwrap_or("none"),
                if waiting { "/waiting" } else { "" }
            )
        })
        .collect();
    for state in ["Pending", "Pending/waiting", "Running", "Succeeded"] {
        assert!(
            pod_states.contains(state),
            "no pod was seen {state}: {pod_states:?}"
        );
    }
    for sample in &sampled {
        assert!(
            kinds_seen.contains(sample),
            "the watch never delivered a {sample:?}"
        );
    }

    let mut problems = Vec::new();
    for object in &objects {
        match k8s_openapi_read_back(object) {
            None => problems.push(format!("{}: no k8s-openapi type", label(object))),
            Some(Err(e)) => {
                problems.push(format!("{}: k8s-openapi rejects it: {e}", label(object)))
            }
            Some(Ok(back)) => {
                let mut found = Vec::new();
                differences("", object, &back, &mut found);
                problems.extend(found.into_iter().map(|d| format!("{}: {d}", label(object))));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "k8s-openapi read-back of {} objects:\n{}",
        objects.len(),
        problems.join("\n")
    );

    // Value structs Go always writes, which k8s-openapi (all optional) cannot tell from pointers.
    let service = objects
        .iter()
        .rev()
        .find(|o| o["kind"] == "Service" && o["metadata"]["name"] == "web")
        .unwrap();
    assert_eq!(
        service["status"],
        json!({"loadBalancer": {}}),
        "a Service's status"
    );
    let waiting = objects
        .iter()
        .find(|o| {
            o["kind"] == "Pod"
                && o["status"]["containerStatuses"][0]["state"]["waiting"].is_object()
        })
        .unwrap();
    assert_eq!(
        waiting["status"]["containerStatuses"][0]["lastState"],
        json!({}),
        "{}",
        label(waiting)
    );
    assert_eq!(
        waiting["status"]["containerStatuses"][0]["imageID"],
        "",
        "{}",
        label(waiting)
    );

    let dump = dir.path().join("objects.json");
    std::fs::write(&dump, serde_json::to_vec(&objects).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_models.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(&dump)
        .output()
        .expect("python3 runs (scripts/setup.sh installs python3 and the kubernetes package)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python3 {}: {stderr}\n(scripts/setup.sh installs the kubernetes package)",
        script.display()
    );
    assert!(
        stdout.contains(&format!(
            "python models: {} objects read, 0 failed",
            objects.len()
        )),
        "{stdout}\n{stderr}"
    );

    cancel.cancel();
    tokio::time::timeout(DEADLINE, running.stop())
        .await
        .expect("every task stops");
}
