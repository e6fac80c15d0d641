//! A simulated cluster served on a loopback socket, for tests that talk to it as clients do.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use member_sim::SimConfig;
use member_sim::runtime::cluster::RunningCluster;
use member_sim::runtime::{ClusterOptions, cluster, faults_file};
use tokio_util::sync::CancellationToken;

/// How long a test waits for a condition or for the cluster to stop (the machine may be loaded).
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Starts `config`'s cluster over plain HTTP (every request an administrator), in memory, with
/// its fault file in `dir`; it stops when `cancel` fires.
pub async fn start(config: SimConfig, dir: &Path, cancel: &CancellationToken) -> RunningCluster {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let faults_path = faults_file::path(dir, &config.name);
    cluster::start(
        ClusterOptions {
            config,
            scale_mode: false,
            store: Arc::new(store::memory::MemoryStore::new()),
            listener,
            tls: None,
            authn: Arc::new(apiserver_auth::authn::Authenticator::new(None)),
            service_account_tokens: None,
            faults_path,
            dns: None,
        },
        cancel.clone(),
    )
    .await
    .expect("cluster starts")
}

/// A client of the cluster's socket.
pub fn socket_client(running: &RunningCluster) -> kube::Client {
    kube::Client::try_from(kube::Config::new(
        format!("http://{}", running.address).parse().expect("uri"),
    ))
    .expect("socket client")
}

/// Polls `check` until it returns true, failing after [`DEADLINE`].
pub async fn eventually<F, Fut>(what: &str, mut check: F)
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
