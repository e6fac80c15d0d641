//! Saving an etcd snapshot (the maintenance API's consistent copy of the whole database) to a
//! file. The data goes to a temporary sibling first and is renamed into place only after it is
//! complete and synced, so `out` never holds a partial snapshot.

use std::path::{Path, PathBuf};

use store::{StoreError, StoreResult};
use tokio::io::AsyncWriteExt;

use crate::EtcdStore;

/// Streams the snapshot into `out`; returns its size in bytes.
pub async fn save(store: &EtcdStore, out: &Path) -> StoreResult<u64> {
    let partial = partial_path(out)?;
    let result = write(store, out, &partial).await;
    if result.is_err() {
        // Best effort: the partial file is garbage either way.
        let _ = tokio::fs::remove_file(&partial).await;
    }
    result
}

fn partial_path(out: &Path) -> StoreResult<PathBuf> {
    let name = out.file_name().ok_or_else(|| {
        StoreError::Backend(format!(
            "snapshot destination {} is not a file path",
            out.display()
        ))
    })?;
    let mut partial = name.to_os_string();
    partial.push(".partial");
    Ok(out.with_file_name(partial))
}

async fn write(store: &EtcdStore, out: &Path, partial: &Path) -> StoreResult<u64> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        StoreError::Backend(format!("snapshot: cannot {what} {}: {e}", path.display()))
    };
    let mut stream = store.raw_snapshot().await.map_err(|e| store.backend(e))?;
    let mut file = tokio::fs::File::create(partial)
        .await
        .map_err(|e| io("create", partial, e))?;
    let mut written = 0u64;
    while let Some(chunk) = stream.message().await.map_err(|e| store.backend(e))? {
        file.write_all(chunk.blob())
            .await
            .map_err(|e| io("write", partial, e))?;
        written += chunk.blob().len() as u64;
    }
    if written == 0 {
        return Err(StoreError::Backend(format!(
            "etcd {}: the snapshot stream was empty",
            store.endpoints
        )));
    }
    file.sync_all().await.map_err(|e| io("sync", partial, e))?;
    drop(file);
    tokio::fs::rename(partial, out)
        .await
        .map_err(|e| io("rename into", out, e))?;
    Ok(written)
}
