//! Namespace finalization: a namespace marked for deletion (phase Terminating) has every
//! namespaced object in it deleted, of every kind including custom ones; once none is left,
//! the `kubernetes` finalizer is removed and the namespace disappears.
//!
//! Level-triggered and restart-safe: each pass looks at the namespaces in the store, so a
//! restart simply finds the terminating ones again. Passes run on namespace changes, and on a
//! short tick while some namespace still waits for contents held by finalizers.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::ApiError;
use futures::StreamExt;
use serde_json::Value;
use store::RangeRequest;

use crate::handlers::WriteOptions;
use crate::handlers::delete::{DeleteOptions, delete_object};
use crate::handlers::update::finalize_namespace;
use crate::objects;
use crate::server::ApiServer;
use crate::storage;

const RETRY_TICK: Duration = Duration::from_millis(200);
const FINALIZER: &str = "kubernetes";

/// Runs until the server's shutdown token is cancelled.
pub async fn run(server: Arc<ApiServer>) {
    crate::background::run_until_shutdown(
        &server,
        "namespace finalizer restarting",
        RETRY_TICK,
        || watch_and_finalize(&server),
    )
    .await;
}

async fn watch_and_finalize(server: &ApiServer) -> Result<(), ApiError> {
    let Some(ns_def) = server.registry().lookup("", "v1", "namespaces") else {
        return Ok(());
    };
    let revision = crate::background::current_revision(server).await?;
    let mut events = crate::background::watch_kind(server, &ns_def, revision).await?;
    loop {
        let pending = pass(server).await?;
        if pending {
            tokio::select! {
                event = events.next() => if event.is_none() { return Ok(()) },
                _ = tokio::time::sleep(RETRY_TICK) => {}
            }
        } else {
            match events.next().await {
                None => return Ok(()),
                Some(Err(err)) => return Err(storage::store_error(err)),
                Some(Ok(_)) => {}
            }
        }
        // Coalesce a burst of namespace events into one pass.
        while let Some(Some(_)) = futures::FutureExt::now_or_never(events.next()) {}
    }
}

/// One pass over terminating namespaces; true while any still has contents.
async fn pass(server: &ApiServer) -> Result<bool, ApiError> {
    let registry = server.registry();
    let Some(ns_def) = registry.lookup("", "v1", "namespaces") else {
        return Ok(false);
    };
    let page = server
        .store
        .range(RangeRequest {
            prefix: storage::collection_prefix(&ns_def, None),
            ..RangeRequest::default()
        })
        .await
        .map_err(storage::store_error)?;
    let mut pending = false;
    for kv in &page.kvs {
        let namespace = storage::decode(&ns_def, kv)?;
        if !objects::is_deleting(&namespace) {
            continue;
        }
        let name = objects::name_of(&namespace).to_string();
        if delete_contents(server, &name).await? > 0 {
            pending = true;
            continue;
        }
        let finalizers: Vec<Value> = namespace
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter(|v| v.as_str() != Some(FINALIZER))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let body = serde_json::json!({"spec": {"finalizers": finalizers}});
        match finalize_namespace(
            server,
            &ns_def,
            &name,
            body,
            &WriteOptions::internal("namespace-controller"),
        )
        .await
        {
            Ok(_) => {}
            Err(err) if err.code == 404 || err.code == 409 => pending = true,
            Err(err) => return Err(err),
        }
    }
    Ok(pending)
}

/// Deletes every object in `namespace`; returns how many are still there.
async fn delete_contents(server: &ApiServer, namespace: &str) -> Result<usize, ApiError> {
    let mut remaining = 0;
    for def in server
        .registry()
        .storage_defs()
        .into_iter()
        .filter(|d| d.namespaced)
    {
        let prefix = storage::collection_prefix(&def, Some(namespace));
        let page = server
            .store
            .range(RangeRequest {
                prefix,
                ..RangeRequest::default()
            })
            .await
            .map_err(storage::store_error)?;
        for kv in &page.kvs {
            let object = storage::decode(&def, kv)?;
            remaining += 1;
            if objects::is_deleting(&object) {
                continue;
            }
            let name = objects::name_of(&object).to_string();
            match delete_object(
                server,
                &def,
                Some(namespace),
                &name,
                &DeleteOptions::default(),
            )
            .await
            {
                Ok(_) => {}
                Err(err) if err.code == 404 || err.code == 409 => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(remaining)
}
