//! The runtime controllers against an in-process control plane and in-process member-sims (see [`support`]).
//! One test binary for all of them: one link instead of one per file.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod binding;
mod dependencies;
mod detector;
mod events;
mod execution;
mod failover;
mod informer;
mod leader_election;
mod namespace;
mod restart;
mod scheduler;
mod scheduler_estimator;
mod scheduler_profiles;
mod status;
mod support;
mod workload_rebalancer;
mod write_budget;

/// The test bed itself: a member joins as a Ready cluster and is reachable through the pinned client.
#[tokio::test]
async fn test_bed_joins_a_ready_member() {
    let control_plane = support::ControlPlane::start().await;
    let member = support::Member::start("member1").await;
    control_plane.join(&member).await;
    let cluster = support::get(
        &control_plane.client,
        "cluster.karmada.io/v1alpha1",
        "Cluster",
        "clusters",
        None,
        "member1",
    )
    .await
    .expect("cluster exists");
    assert_eq!(cluster["status"]["conditions"][0]["status"], "True");
    let enablements = cluster["status"]["apiEnablements"]
        .as_array()
        .expect("list");
    assert!(enablements.iter().any(|e| e["groupVersion"] == "apps/v1"));
    let typed: karmada_api::Cluster = serde_json::from_value(cluster).expect("typed");
    let client = control_plane
        .members
        .client(&typed)
        .await
        .expect("member client");
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
    assert_eq!(
        nodes
            .list(&Default::default())
            .await
            .expect("nodes")
            .items
            .len(),
        3
    );
    member.stop().await;
}
