//! In-process test bed: a Karmada API server on the memory store, member-sims on loopback (plain HTTP), and
//! Clusters for them that are Ready with the members' API enablements, so controllers can be driven without
//! processes, certificates or the cluster status controller.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use karmada_apiserver::server::{ApiServer, ApiServerOptions};
use karmada_controllers::runtime::MemberClients;
use karmada_controllers::runtime::resources;
use kube::api::{Api, DynamicObject, PostParams};
use member_sim::config::SimConfig;
use member_sim::runtime::cluster::{ClusterOptions, RunningCluster};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How long any `eventually` waits before failing the test.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub struct ControlPlane {
    pub client: kube::Client,
    pub members: MemberClients,
    pub cancel: CancellationToken,
    server: Arc<ApiServer>,
}

impl ControlPlane {
    pub async fn start() -> ControlPlane {
        let cancel = CancellationToken::new();
        let store: Arc<dyn store::Store> = Arc::new(store::memory::MemoryStore::new());
        let options = ApiServerOptions {
            cancel: cancel.clone(),
            ..ApiServerOptions::default()
        };
        let server = ApiServer::new(store, options).await.expect("control plane");
        let client =
            kube::Client::new(karmada_apiserver::router::router(server.clone()), "default");
        let members = MemberClients::new(client.clone(), Duration::from_secs(5));
        ControlPlane {
            client,
            members,
            cancel,
            server,
        }
    }

    /// Creates a Ready Push Cluster for `member` (status written directly) and pins its client.
    pub async fn join(&self, member: &Member) {
        self.join_with(member, json!({})).await
    }

    /// [`Self::join`] with extra Cluster spec fields (labels go in `spec_extra["__labels"]`).
    pub async fn join_with(&self, member: &Member, mut spec_extra: Value) {
        let labels = spec_extra
            .as_object_mut()
            .and_then(|m| m.remove("__labels"))
            .unwrap_or_else(|| json!({}));
        let mut spec = json!({
            "apiEndpoint": format!("http://{}", member.running.address),
            "syncMode": "Push",
        });
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            for (k, v) in extra {
                spec.insert(k.clone(), v.clone());
            }
        }
        let cluster = json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": member.name, "labels": labels},
            "spec": spec,
        });
        let api: Api<DynamicObject> = resources::all(&self.client, &resources::cluster());
        let created = api
            .create(
                &PostParams::default(),
                &serde_json::from_value(cluster).expect("cluster object"),
            )
            .await
            .expect("create cluster");
        let mut with_status = serde_json::to_value(&created).expect("json");
        with_status["status"] = ready_status(member).await;
        api.replace_status(
            &member.name,
            &PostParams::default(),
            &serde_json::from_value::<DynamicObject>(with_status).expect("object"),
        )
        .await
        .expect("cluster status");
        self.members.pin(&member.name, member.client.clone()).await;
        // The execution namespace the cluster controller would create.
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": format!("karmada-es-{}", member.name)}});
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let _ = namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(ns).expect("ns"),
            )
            .await;
    }

    /// Creates any object from JSON through the dynamic API (`apiVersion`, `kind`, plural given).
    pub async fn create(&self, plural: &str, object: Value) -> Value {
        create(&self.client, plural, object).await
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Creates `object` (its apiVersion and kind say where) through `client`.
pub async fn create(client: &kube::Client, plural: &str, object: Value) -> Value {
    let resource = resource_of(&object, plural);
    let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), &ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(object).expect("object"),
        )
        .await
        .unwrap_or_else(|e| panic!("create {plural}: {e}"));
    serde_json::to_value(created).expect("json")
}

/// Reads an object; `None` when absent.
pub async fn get(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<Value> {
    let resource = resource_of(&json!({"apiVersion": api_version, "kind": kind}), plural);
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.get_opt(name)
        .await
        .unwrap_or_else(|e| panic!("get {plural}/{name}: {e}"))
        .map(|o| serde_json::to_value(o).expect("json"))
}

fn resource_of(object: &Value, plural: &str) -> kube::api::ApiResource {
    let api_version = object["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap_or_default();
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(group, version, kind),
        plural,
    )
}

/// A member-sim serving plain HTTP on loopback.
pub struct Member {
    pub name: String,
    pub client: kube::Client,
    running: RunningCluster,
    _faults: tempfile::TempDir,
}

impl Member {
    pub async fn start(name: &str) -> Member {
        Self::start_with(SimConfig {
            name: name.to_string(),
            ..SimConfig::default()
        })
        .await
    }

    pub async fn start_with(config: SimConfig) -> Member {
        let faults = tempfile::tempdir().expect("tempdir");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let name = config.name.clone();
        let running = member_sim::runtime::cluster::start(
            ClusterOptions {
                config,
                scale_mode: false,
                store: Arc::new(store::memory::MemoryStore::new()),
                listener,
                tls: None,
                authn: Arc::new(apiserver_auth::authn::Authenticator::new(None)),
                service_account_tokens: None,
                faults_path: faults.path().join("faults.json"),
                dns: None,
            },
            CancellationToken::new(),
        )
        .await
        .expect("member-sim");
        // Over the socket, like the control plane would reach a real member.
        let config = kube::Config::new(
            format!("http://{}", running.address)
                .parse()
                .expect("member url"),
        );
        let client = kube::Client::try_from(config).expect("member client");
        Member {
            name,
            client,
            running,
            _faults: faults,
        }
    }

    pub async fn stop(self) {
        self.running.stop().await;
    }
}

/// The Ready status of a Cluster for `member`, with the API enablements its discovery reports.
async fn ready_status(member: &Member) -> Value {
    let mut enablements = Vec::new();
    let core: k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList = member
        .client
        .request(http::Request::get("/api/v1").body(vec![]).expect("request"))
        .await
        .expect("core discovery");
    enablements.push(
        json!({"groupVersion": "v1", "resources": core.resources.iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| json!({"name": r.name, "kind": r.kind})).collect::<Vec<_>>()}),
    );
    let groups: k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroupList = member
        .client
        .request(http::Request::get("/apis").body(vec![]).expect("request"))
        .await
        .expect("group discovery");
    for group in groups.groups {
        for version in group.versions {
            let list: k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList = member
                .client
                .request(
                    http::Request::get(format!("/apis/{}", version.group_version))
                        .body(vec![])
                        .expect("request"),
                )
                .await
                .expect("discovery");
            enablements.push(
                json!({"groupVersion": version.group_version, "resources": list.resources.iter()
                .filter(|r| !r.name.contains('/'))
                .map(|r| json!({"name": r.name, "kind": r.kind})).collect::<Vec<_>>()}),
            );
        }
    }
    json!({
        "kubernetesVersion": "v1.31.0",
        "apiEnablements": enablements,
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                        "message": "cluster is healthy and ready to accept workloads",
                        "lastTransitionTime": "2026-11-29T00:00:00Z"}],
        "resourceSummary": {
            "allocatable": {"cpu": "24", "memory": "96Gi", "pods": "330"},
            "allocated": {"cpu": "0", "memory": "0", "pods": "0"},
        },
    })
}

/// Polls `check` until it yields `Some`, failing after [`PATIENCE`] with `what`. Polling a condition with a
/// deadline (never a fixed sleep) is how tests wait for level-triggered controllers.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `http://host:port` a member-sim serves on (what a Cluster's `spec.apiEndpoint` points at).
pub fn endpoint_of(member: &Member) -> String {
    format!("http://{}", member.running.address)
}
