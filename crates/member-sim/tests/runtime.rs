//! The async runtime end to end, in process: a cluster serves its API on a socket, the
//! controllers drive a Deployment to availability through the in-process client, a fault file
//! changes what socket clients get (and nothing for the controllers), and stopping the cluster
//! ends every task.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, PostParams};
use member_sim::SimConfig;
use member_sim::faults::Fault;
use member_sim::runtime::faults_file;
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod common;
use common::live::{self, DEADLINE, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_runs_workloads_and_enacts_faults_from_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let faults_path = faults_file::path(dir.path(), "rt");
    let cancel = CancellationToken::new();
    let config = SimConfig {
        name: "rt".into(),
        nodes: 2,
        kubernetes_version: "v1.31.4".into(),
        pod_startup_delay: jiff::SignedDuration::from_millis(200),
        ..SimConfig::default()
    };
    let running = live::start(config, dir.path(), &cancel).await;

    let nodes: Api<Node> = Api::all(running.client.clone());
    let listed = nodes.list(&ListParams::default()).await.expect("nodes");
    assert_eq!(listed.items.len(), 2, "nodes exist once start returns");

    let socket = live::socket_client(&running);
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
