//! Backups of the redb backend: a consistent copy of the current state taken from ONE read
//! transaction (an MVCC snapshot, so writers keep going while it is copied), and the step that
//! turns such a copy into a restored store whose revisions continue far above the old ones.
//!
//! A backup holds the `kv` and `meta` tables only: the event log is history that a restore
//! discards anyway (see [`prepare_restored`]).
//!
//! Invariants:
//! - the copy is written to a sibling temporary file and renamed into place only after its
//!   transaction committed, so `out` is either absent or a complete backup;
//! - a prepared restore has `revision == compacted == backup revision + bump` and no events:
//!   every revision a client saw before the restore (up to `bump` writes after the backup)
//!   is compacted, so its watches and reads answer `Compacted` (410) and it relists.

use std::ops::Bound;
use std::path::{Path, PathBuf};

use redb::{Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable};

use super::{COMPACTED, EVENTS, KV, META, REVISION, RedbStore, backend_error, read_counters};
use crate::{Revision, StoreError, StoreResult};

impl RedbStore {
    /// Writes a consistent copy of the current state to `out` (a new redb file) while the store
    /// keeps serving; returns the revision the copy is at.
    pub async fn backup_to(&self, out: &Path) -> StoreResult<Revision> {
        let out = out.to_path_buf();
        self.flush_waiting().await?;
        self.read(move |txn| copy_snapshot(txn, &out)).await
    }
}

/// Backs up the store file at `source` when no server has it open (redb refuses a second
/// opener, so this fails with a clear error while a server runs). Blocks on file I/O.
pub fn backup_file(source: &Path, out: &Path) -> StoreResult<Revision> {
    if !source.is_file() {
        return Err(StoreError::Backend(format!(
            "no embedded store at {}",
            source.display()
        )));
    }
    let db = Database::open(source).map_err(|e| {
        StoreError::Backend(format!(
            "cannot open {} (is an API server using it?): {e}",
            source.display()
        ))
    })?;
    // Writes acknowledged after the last checkpoint are in the journal only.
    super::journal::recover(&db, &super::journal_path(source))?;
    let txn = db.begin_read().map_err(backend_error)?;
    copy_snapshot(&txn, out)
}

/// Makes the backup copy at `path` ready to serve as a restored store: its revision jumps by
/// `bump` and everything below the new revision is marked compacted. Returns the new revision.
/// Blocks on file I/O.
pub fn prepare_restored(path: &Path, bump: u64) -> StoreResult<Revision> {
    let db = Database::open(path).map_err(|e| {
        StoreError::Backend(format!(
            "{} is not a readable embedded store: {e}",
            path.display()
        ))
    })?;
    let mut txn = db.begin_write().map_err(backend_error)?;
    txn.set_durability(Durability::Immediate)
        .map_err(backend_error)?;
    let restored = {
        let meta = txn.open_table(META).map_err(backend_error)?;
        let revision = meta
            .get(REVISION)
            .map_err(backend_error)?
            .map(|v| v.value())
            .unwrap_or(0);
        drop(meta);
        let restored = revision.checked_add(bump).ok_or_else(|| {
            StoreError::Backend(format!("revision {revision} + {bump} overflows"))
        })?;
        // The event log would let a watcher replay history that no longer leads to this state.
        txn.delete_table(EVENTS).map_err(backend_error)?;
        txn.open_table(EVENTS).map_err(backend_error)?;
        let mut meta = txn.open_table(META).map_err(backend_error)?;
        meta.insert(REVISION, restored).map_err(backend_error)?;
        meta.insert(COMPACTED, restored).map_err(backend_error)?;
        restored
    };
    txn.commit().map_err(backend_error)?;
    Ok(restored)
}

/// Copies `kv` and `meta` as `txn` sees them into a new file at `out`.
fn copy_snapshot(txn: &ReadTransaction, out: &Path) -> StoreResult<Revision> {
    let (revision, compacted) = read_counters(txn)?;
    let partial = partial_path(out)?;
    let _ = std::fs::remove_file(&partial);
    let result = (|| {
        let copy = Database::create(&partial).map_err(backend_error)?;
        let mut write = copy.begin_write().map_err(backend_error)?;
        write
            .set_durability(Durability::Immediate)
            .map_err(backend_error)?;
        {
            let source = txn.open_table(KV).map_err(backend_error)?;
            let mut target = write.open_table(KV).map_err(backend_error)?;
            for entry in source
                .range::<&str>((Bound::<&str>::Unbounded, Bound::<&str>::Unbounded))
                .map_err(backend_error)?
            {
                let (key, value) = entry.map_err(backend_error)?;
                target
                    .insert(key.value(), value.value())
                    .map_err(backend_error)?;
            }
            write.open_table(EVENTS).map_err(backend_error)?;
            let mut meta = write.open_table(META).map_err(backend_error)?;
            meta.insert(REVISION, revision).map_err(backend_error)?;
            meta.insert(COMPACTED, compacted).map_err(backend_error)?;
        }
        write.commit().map_err(backend_error)?;
        drop(copy);
        std::fs::rename(&partial, out).map_err(|e| {
            StoreError::Backend(format!("cannot move backup to {}: {e}", out.display()))
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result.map(|()| revision)
}

fn partial_path(out: &Path) -> StoreResult<PathBuf> {
    let name = out.file_name().ok_or_else(|| {
        StoreError::Backend(format!(
            "backup destination {} is not a file",
            out.display()
        ))
    })?;
    let mut partial = name.to_os_string();
    partial.push(".partial");
    Ok(out.with_file_name(partial))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use crate::Store;
    use crate::redb_backend::RedbOptions;

    #[tokio::test]
    async fn a_restored_copy_keeps_the_objects_and_compacts_every_old_revision() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path().join("a.redb"), RedbOptions::default()).unwrap();
        store.create("/a", Bytes::from("1")).await.unwrap();
        let b = store.create("/b", Bytes::from("2")).await.unwrap();
        store.delete("/a", None).await.unwrap();
        let copy = dir.path().join("copy.redb");
        let at = store.backup_to(&copy).await.unwrap();
        assert_eq!(at, b + 1);
        // Writes after the backup are not in it.
        let later = store.create("/c", Bytes::from("3")).await.unwrap();
        drop(store);

        let restored_at = prepare_restored(&copy, 1000).unwrap();
        assert_eq!(restored_at, at + 1000);
        let restored = RedbStore::open(&copy, RedbOptions::default()).unwrap();
        assert_eq!(restored.current_revision().await.unwrap(), restored_at);
        assert_eq!(restored.compacted_revision().await.unwrap(), restored_at);
        assert!(restored.get("/a").await.unwrap().is_none());
        assert_eq!(restored.get("/b").await.unwrap().unwrap().mod_revision, b);
        assert!(restored.get("/c").await.unwrap().is_none());
        // A watcher from a revision seen before the restore must relist.
        assert!(matches!(
            restored.watch("/", later).await,
            Err(StoreError::Compacted { .. })
        ));
        // New writes continue above the bump, and a watch from the restored revision sees them.
        let mut watch = restored.watch("/", restored_at).await.unwrap();
        let next = restored.create("/d", Bytes::from("4")).await.unwrap();
        assert_eq!(next, restored_at + 1);
        let event = watch.next().await.unwrap().unwrap();
        assert_eq!(event.kv.key, "/d");
    }

    #[test]
    fn an_open_store_cannot_be_backed_up_from_outside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let _open = RedbStore::open(&path, RedbOptions::default()).unwrap();
        let error = backup_file(&path, &dir.path().join("out.redb")).unwrap_err();
        assert!(error.to_string().contains("API server"), "{error}");
        assert!(backup_file(&dir.path().join("none"), &dir.path().join("o")).is_err());
    }
}
