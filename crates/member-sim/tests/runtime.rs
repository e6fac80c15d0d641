//! The async runtime end to end, in process: a cluster serves its API on a socket, the
//! controllers drive a Deployment to availability through the in-process client, a fault file
//! changes what socket clients get (and nothing for the controllers), and stopping the cluster
//! ends every task.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, PostParams};
use member_sim::SimConfig;
use member_sim::faults::Fault;
use member_sim::runtime::{ClusterOptions, cluster, faults_file};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `check` until it returns true, failing after [`DEADLINE`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let waited = tokio::time::timeout(DEADLINE, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_runs_workloads_and_enacts_faults_from_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let faults_path = faults_file::path(dir.path(), "rt");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let cancel = CancellationToken::new();
    let config = SimConfig {
        name: "rt".into(),
        nodes: 2,
        kubernetes_version: "v1.31.4".into(),
        pod_startup_delay: jiff::SignedDuration::from_millis(200),
        ..SimConfig::default()
    };
    let running = cluster::start(
        ClusterOptions {
            config,
            scale_mode: false,
            store: Arc::new(store::memory::MemoryStore::new()),
            listener,
            tls: None,
            authn: Arc::new(apiserver_auth::authn::Authenticator::new(None)),
            service_account_tokens: None,
            faults_path: faults_path.clone(),
            dns: None,
        },
        cancel.clone(),
    )
    .await
    .expect("cluster starts");

    let nodes: Api<Node> = Api::all(running.client.clone());
    let listed = nodes.list(&ListParams::default()).await.expect("nodes");
    assert_eq!(listed.items.len(), 2, "nodes exist once start returns");

    let socket = kube::Client::try_from(kube::Config::new(
        format!("http://{}", running.address).parse().expect("uri"),
    ))
    .expect("socket client");
    let version = socket.apiserver_version().await.expect("version");
    assert_eq!(
        (version.git_version.as_str(), version.minor.as_str()),
        ("v1.31.4", "31")
    );

    let deployments: Api<Deployment> = Api::namespaced(running.client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create");
    eventually("the Deployment to become available", || async {
        deployments
            .get("web")
            .await
            .ok()
            .and_then(|d| d.status?.available_replicas)
            == Some(2)
    })
    .await;

    faults_file::apply(&faults_path, Fault::ErrorRate(1.0)).expect("write fault");
    let socket_nodes: Api<Node> = Api::all(socket.clone());
    eventually("socket requests to fail", || async {
        matches!(
            socket_nodes.list(&ListParams::default()).await,
            Err(kube::Error::Api(status)) if status.code == 500
        )
    })
    .await;
    nodes
        .list(&ListParams::default())
        .await
        .expect("the in-process client bypasses network faults");
    faults_file::apply(&faults_path, Fault::Clear).expect("clear");
    eventually("socket requests to succeed again", || async {
        socket_nodes.list(&ListParams::default()).await.is_ok()
    })
    .await;

    tokio::time::timeout(DEADLINE, running.stop())
        .await
        .expect("every task stops");
}
