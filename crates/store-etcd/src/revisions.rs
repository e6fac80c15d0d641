//! Revision bookkeeping etcd does not expose directly: whether a revision is still readable,
//! the compacted revision (etcd reports it only when refusing a watch), and the translation of
//! etcd's revision errors into the store's.

use std::time::Duration;

use etcd_client::{GetOptions, WatchOptions};
use store::{Revision, Store, StoreError, StoreResult};

use crate::EtcdStore;
use crate::errors::{self, Kind};

/// Longest wait for etcd to report the compacted revision to a probe watch. etcd checks
/// unsynced watchers every 100 ms, so this is generous.
const PROBE_WAIT: Duration = Duration::from_secs(5);

impl EtcdStore {
    /// Turns a failed read at `requested` into the store's revision errors.
    pub(crate) async fn revision_error(
        &self,
        requested: Revision,
        error: etcd_client::Error,
    ) -> StoreError {
        match errors::kind(&error) {
            Kind::Compacted => match self.compacted_revision().await {
                Ok(compacted) => StoreError::Compacted {
                    requested,
                    compacted,
                },
                Err(probe) => probe,
            },
            Kind::FutureRevision => match self.current_revision().await {
                Ok(current) => StoreError::FutureRevision { requested, current },
                Err(probe) => probe,
            },
            Kind::Other => self.backend(error),
        }
    }

    /// Fails with `Compacted` when history after `after` is no longer complete. A cheap point
    /// read at `after` answers it: etcd refuses reads below its compacted revision.
    pub(crate) async fn check_watchable(&self, after: Revision) -> StoreResult<()> {
        let options = GetOptions::new()
            .with_revision(self.namespace.to_etcd(after)?)
            .with_count_only();
        match self
            .raw_get(self.namespace.probe_key(), Some(options))
            .await
        {
            Ok(_) => Ok(()),
            Err(error) => match errors::kind(&error) {
                // Watching from a revision not yet written waits for it.
                Kind::FutureRevision => Ok(()),
                _ => Err(self.revision_error(after, error).await),
            },
        }
    }

    /// Asks etcd for its compacted revision: a watch from revision 1 is refused with it.
    pub(crate) async fn probe_compacted(&self) -> StoreResult<Revision> {
        let probe_key = self.namespace.probe_key();
        let not_compacted = self
            .raw_get(
                probe_key.clone(),
                Some(GetOptions::new().with_revision(1).with_count_only()),
            )
            .await;
        match not_compacted {
            Ok(_) => return Ok(0),
            Err(error) if errors::kind(&error) != Kind::Compacted => {
                return Err(self.backend(error));
            }
            Err(_) => {}
        }
        let mut stream = self
            .raw_watch(probe_key, Some(WatchOptions::new().with_start_revision(1)))
            .await
            .map_err(|e| self.backend(e))?;
        let answer = tokio::time::timeout(PROBE_WAIT, async {
            loop {
                match stream.message().await {
                    Ok(Some(resp)) if resp.canceled() => return Ok(resp.compact_revision()),
                    Ok(Some(_)) => {}
                    Ok(None) => return Ok(0),
                    Err(error) => return Err(self.backend(error)),
                }
            }
        })
        .await
        .map_err(|_| {
            StoreError::Backend(format!(
                "etcd {}: no compacted revision reported within {PROBE_WAIT:?}",
                self.endpoints
            ))
        })??;
        Ok(self.namespace.to_store(answer))
    }
}
