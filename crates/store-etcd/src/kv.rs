//! The [`Store`] implementation: every call is one etcd request (a range, a transaction or a
//! compaction), so each is atomic on the server and nothing is cached besides the highest
//! compacted revision seen. Revision errors and probes live in `revisions`.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use etcd_client::{
    Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse, TxnResponse,
};
use store::{
    KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, StoreResult, WatchStream,
};

use crate::EtcdStore;
use crate::errors::{self, Kind};

impl EtcdStore {
    fn store_kv(&self, kv: &etcd_client::KeyValue) -> StoreResult<KeyValue> {
        self.namespace.key_value(kv)
    }

    pub(crate) fn header_revision(
        &self,
        header: Option<&etcd_client::ResponseHeader>,
    ) -> StoreResult<Revision> {
        header
            .map(|h| self.namespace.to_store(h.revision()))
            .ok_or_else(|| {
                StoreError::Backend(format!(
                    "etcd {}: response without a header",
                    self.endpoints
                ))
            })
    }

    /// Runs `then` if `compare` holds, else reads `key` to explain why not.
    async fn txn_or_read(
        &self,
        key: &[u8],
        compare: Compare,
        then: TxnOp,
    ) -> StoreResult<TxnResponse> {
        let txn = Txn::new()
            .when([compare])
            .and_then([then])
            .or_else([TxnOp::get(key, None)]);
        self.raw_txn(txn).await.map_err(|e| self.backend(e))
    }

    /// Why a guarded write's compare failed: the key is missing, or its revision differs.
    fn refusal(&self, key: &str, expected: Option<Revision>, resp: &TxnResponse) -> StoreError {
        let current = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get
                .kvs()
                .first()
                .map(|kv| self.namespace.to_store(kv.mod_revision())),
            _ => None,
        });
        match current {
            None => StoreError::NotFound(key.to_string()),
            Some(actual) => StoreError::Conflict {
                key: key.to_string(),
                expected: expected.unwrap_or(0),
                actual,
            },
        }
    }

    /// The etcd compare for "exists, and (if given) was last written at `expected`".
    fn precondition(&self, key: &[u8], expected: Option<Revision>) -> StoreResult<Compare> {
        Ok(match expected {
            Some(revision) => {
                Compare::mod_revision(key, CompareOp::Equal, self.namespace.to_etcd(revision)?)
            }
            None => Compare::create_revision(key, CompareOp::Greater, 0),
        })
    }
}

#[async_trait::async_trait]
impl Store for EtcdStore {
    async fn get(&self, key: &str) -> StoreResult<Option<KeyValue>> {
        let resp = self
            .raw_get(self.namespace.etcd_key(key), None)
            .await
            .map_err(|e| self.backend(e))?;
        resp.kvs().first().map(|kv| self.store_kv(kv)).transpose()
    }

    async fn range(&self, req: RangeRequest) -> StoreResult<RangeResult> {
        let (prefix_start, end) = self.namespace.prefix_range(&req.prefix);
        let start = match &req.start_after {
            Some(after) => {
                // The smallest key strictly greater than `after`.
                let mut next = self.namespace.etcd_key(after);
                next.push(0);
                next.max(prefix_start)
            }
            None => prefix_start,
        };
        let mut options = GetOptions::new().with_range(end);
        if req.limit > 0 {
            options = options.with_limit(i64::try_from(req.limit).unwrap_or(i64::MAX));
        }
        if let Some(revision) = req.revision {
            options = options.with_revision(self.namespace.to_etcd(revision)?);
        }
        let resp = match self.raw_get(start, Some(options)).await {
            Ok(resp) => resp,
            Err(error) => {
                let requested = req.revision.unwrap_or(0);
                return Err(self.revision_error(requested, error).await);
            }
        };
        let revision = match req.revision {
            Some(revision) => revision,
            None => self.header_revision(resp.header())?,
        };
        let offset_key = self.namespace.offset_key();
        let kvs = resp
            .kvs()
            .iter()
            // A restore's bookkeeping, not a stored object.
            .filter(|kv| kv.key() != offset_key.as_slice())
            .map(|kv| self.store_kv(kv))
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(RangeResult {
            kvs,
            more: resp.more(),
            revision,
        })
    }

    async fn count(&self, prefix: &str) -> StoreResult<u64> {
        let (start, end) = self.namespace.prefix_range(prefix);
        let resp = self
            .raw_get(
                start,
                Some(GetOptions::new().with_range(end).with_count_only()),
            )
            .await
            .map_err(|e| self.backend(e))?;
        Ok(u64::try_from(resp.count()).unwrap_or(0))
    }

    async fn create(&self, key: &str, value: Bytes) -> StoreResult<Revision> {
        let etcd_key = self.namespace.etcd_key(key);
        let resp = self
            .txn_or_read(
                &etcd_key,
                Compare::create_revision(etcd_key.clone(), CompareOp::Equal, 0),
                TxnOp::put(etcd_key.clone(), value.to_vec(), None),
            )
            .await?;
        if !resp.succeeded() {
            return Err(StoreError::AlreadyExists(key.to_string()));
        }
        self.header_revision(resp.header())
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> StoreResult<Revision> {
        let etcd_key = self.namespace.etcd_key(key);
        let resp = self
            .txn_or_read(
                &etcd_key,
                self.precondition(&etcd_key, expected)?,
                TxnOp::put(etcd_key.clone(), value.to_vec(), None),
            )
            .await?;
        if !resp.succeeded() {
            return Err(self.refusal(key, expected, &resp));
        }
        self.header_revision(resp.header())
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> StoreResult<(Revision, KeyValue)> {
        let etcd_key = self.namespace.etcd_key(key);
        let resp = self
            .txn_or_read(
                &etcd_key,
                self.precondition(&etcd_key, expected)?,
                TxnOp::delete(etcd_key.clone(), Some(DeleteOptions::new().with_prev_key())),
            )
            .await?;
        if !resp.succeeded() {
            return Err(self.refusal(key, expected, &resp));
        }
        let revision = self.header_revision(resp.header())?;
        let removed = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(delete) => delete.prev_kvs().first().cloned(),
            _ => None,
        });
        match removed {
            Some(kv) => Ok((revision, self.store_kv(&kv)?)),
            None => Err(StoreError::Backend(format!(
                "etcd {}: delete of {key} at revision {revision} returned no previous value",
                self.endpoints
            ))),
        }
    }

    async fn current_revision(&self) -> StoreResult<Revision> {
        let resp = self
            .raw_get(
                self.namespace.probe_key(),
                Some(GetOptions::new().with_count_only()),
            )
            .await
            .map_err(|e| self.backend(e))?;
        self.header_revision(resp.header())
    }

    async fn compacted_revision(&self) -> StoreResult<Revision> {
        let compacted = self.probe_compacted().await?;
        self.note_compacted(compacted);
        Ok(compacted.max(self.compacted_seen.load(Ordering::Acquire)))
    }

    async fn compact(&self, revision: Revision) -> StoreResult<()> {
        if revision <= self.compacted_seen.load(Ordering::Acquire) {
            return Ok(());
        }
        let etcd_revision = match self.namespace.to_etcd(revision) {
            Ok(etcd_revision) => etcd_revision,
            // Before a restore's jump: compacted already.
            Err(StoreError::Compacted { .. }) => return Ok(()),
            Err(error) => return Err(error),
        };
        let result = self.raw_compact(etcd_revision, None).await;
        match result {
            Ok(_) => {
                self.note_compacted(revision);
                Ok(())
            }
            Err(error) => match errors::kind(&error) {
                // Another replica (or an earlier call) compacted at or beyond it already.
                Kind::Compacted => Ok(()),
                Kind::FutureRevision => Err(StoreError::FutureRevision {
                    requested: revision,
                    current: self.current_revision().await?,
                }),
                Kind::Other => Err(self.backend(error)),
            },
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> StoreResult<WatchStream> {
        crate::watch::start(self, prefix, after).await
    }
}
