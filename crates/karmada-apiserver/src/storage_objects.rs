//! `apiserver_storage_objects{resource}`: how many objects of each stored resource the store holds, counted every
//! [`PERIOD`] as kube-apiserver does (it counts every minute; here the count is one cheap store call per
//! resource).

use std::sync::Arc;
use std::time::Duration;

use crate::server::ApiServer;
use crate::storage;

/// How often the objects are counted.
pub const PERIOD: Duration = Duration::from_secs(30);

/// Counts every stored resource now and each [`PERIOD`] until the server's shutdown token is cancelled.
pub async fn run(server: Arc<ApiServer>) {
    let cancel = server.options.cancel.clone();
    let mut ticker = tokio::time::interval(PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        count_all(&server).await;
    }
}

/// Sets the gauge of every stored resource (`plural.group`, or the plural for the core group).
pub async fn count_all(server: &ApiServer) {
    for def in server.registry().storage_defs() {
        let prefix = storage::collection_prefix(&def, None);
        match server.store.count(&prefix).await {
            Ok(count) => {
                let resource = if def.group.is_empty() {
                    def.plural.clone()
                } else {
                    format!("{}.{}", def.plural, def.group)
                };
                server.metrics.set_storage_objects(&resource, count);
            }
            Err(err) => tracing::debug!(%err, prefix, "counting stored objects"),
        }
    }
}
