//! How the API server's background controllers (garbage collector, namespace finalizer, token controller) run:
//! a pass that watches and reconciles until its watch ends or fails, started again after a pause, until the
//! server shuts down. Each pass begins with a full look at the store, so a restart loses nothing.

use std::future::Future;
use std::time::Duration;

use apimachinery::{ApiError, ResourceDef};

use crate::server::ApiServer;

/// Runs `pass` until the server's shutdown token is cancelled; a pass that fails is logged with `restarting`
/// and, like one that ends, started again after `pause`.
pub async fn run_until_shutdown<F, Fut>(
    server: &ApiServer,
    restarting: &'static str,
    pause: Duration,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), ApiError>>,
{
    let shutdown = server.options.cancel.clone();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            result = pass() => {
                if let Err(err) = result {
                    tracing::warn!(%err, "{restarting}");
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// The store's revision now: a pass watches from it before its first look at the store, so nothing written
/// after that look is missed.
pub async fn current_revision(server: &ApiServer) -> Result<store::Revision, ApiError> {
    server
        .store
        .current_revision()
        .await
        .map_err(crate::storage::store_error)
}

/// Every change to objects of `def`, in all namespaces, after `revision`.
pub async fn watch_kind(
    server: &ApiServer,
    def: &ResourceDef,
    revision: store::Revision,
) -> Result<store::WatchStream, ApiError> {
    server
        .store
        .watch(&crate::storage::collection_prefix(def, None), revision)
        .await
        .map_err(crate::storage::store_error)
}
