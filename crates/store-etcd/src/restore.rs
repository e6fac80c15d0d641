//! Revision continuity across a restore. etcd 3.4's `snapshot restore` cannot move revisions
//! forward (`--bump-revision` arrived in etcdutl 3.5), so the store does it itself: a restore
//! records a per-namespace offset in etcd (etcd revision = store revision + offset) that maps
//! every restored revision far above any revision clients saw before, and compacts etcd at
//! the restore point. Every store reads the offset when it connects, so all replicas agree.
//!
//! Result: after a restore, every resourceVersion a client holds from before it is below the
//! compacted revision, so its watch or paged list answers 410 and it relists, never reading
//! stale data; new writes get resourceVersions above every old one (up to `bump` writes
//! after the backup, the same margin Kubernetes recommends for etcd restores).

use etcd_client::{PutOptions, Txn, TxnOp};
use store::{Revision, StoreError, StoreResult};

use crate::EtcdStore;
use crate::keys::REVISION_OFFSET;

/// How far revisions jump on restore (Kubernetes' documented `--bump-revision` for etcd).
pub const RESTORE_BUMP: u64 = 1_000_000_000;

impl EtcdStore {
    /// Reads this namespace's recorded offset; etcd without one uses [`REVISION_OFFSET`].
    pub(crate) async fn load_offset(&mut self) -> StoreResult<()> {
        let resp = self
            .raw_get(self.namespace.offset_key(), None)
            .await
            .map_err(|e| self.backend(e))?;
        let offset = match resp.kvs().first() {
            None => REVISION_OFFSET,
            Some(kv) => parse_offset(kv.value())?,
        };
        self.namespace = self.namespace.clone().with_offset(offset);
        Ok(())
    }

    /// Moves this namespace's revisions up by `bump` and compacts everything before, on a
    /// freshly restored etcd that no API server uses yet. Returns the new current revision.
    /// Stores connected before this call keep the old mapping: reconnect them.
    pub async fn bump_revisions(&mut self, bump: u64) -> StoreResult<Revision> {
        let bump = i64::try_from(bump)
            .map_err(|_| StoreError::Backend(format!("revision bump {bump} is too large")))?;
        let offset = self.namespace.offset().checked_sub(bump).ok_or_else(|| {
            StoreError::Backend(format!(
                "revision offset {} cannot move by {bump}",
                self.namespace.offset()
            ))
        })?;
        let put = TxnOp::put(
            self.namespace.offset_key(),
            offset.to_string(),
            None::<PutOptions>,
        );
        let resp = self
            .raw_txn(Txn::new().and_then([put]))
            .await
            .map_err(|e| self.backend(e))?;
        let etcd_revision = resp
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| StoreError::Backend("etcd: put without a header".to_string()))?;
        self.raw_compact(etcd_revision, None)
            .await
            .map_err(|e| self.backend(e))?;
        self.namespace = self.namespace.clone().with_offset(offset);
        let revision = self.namespace.to_store(etcd_revision);
        self.note_compacted(revision);
        Ok(revision)
    }
}

fn parse_offset(value: &[u8]) -> StoreResult<i64> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| {
            StoreError::Backend(format!(
                "etcd holds a malformed revision offset {:?}",
                String::from_utf8_lossy(value)
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_parse_or_fail_clearly() {
        assert_eq!(parse_offset(b"-999999999").ok(), Some(-999_999_999));
        assert_eq!(parse_offset(b"1").ok(), Some(1));
        assert!(parse_offset(b"x").is_err());
        assert!(parse_offset(b"\xff").is_err());
    }
}
