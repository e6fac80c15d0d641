//! The etcd calls the store makes, each routed through [`Members`](crate::members::Members)
//! with the resend rule that fits it: reads, compaction, watch creation and snapshots are safe
//! to repeat on another member; transactions (the only writes) are not.

use etcd_client::{
    Client, CompactionOptions, CompactionResponse, GetOptions, GetResponse, SnapshotStreaming, Txn,
    TxnResponse, WatchOptions, WatchStream,
};

use crate::EtcdStore;
use crate::members::Resend;

type Result<T> = std::result::Result<T, etcd_client::Error>;

/// Largest response the store accepts from etcd. gRPC's default (4 MiB) is smaller than an
/// unpaged LIST of ten thousand 1 KiB objects; etcd itself sends responses of any size.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1 << 30;

impl EtcdStore {
    pub(crate) async fn raw_get(
        &self,
        key: Vec<u8>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse> {
        self.members
            .call(Resend::Always, move |client: Client| {
                let (key, options) = (key.clone(), options.clone());
                async move {
                    client
                        .kv_client()
                        .max_decoding_message_size(MAX_RESPONSE_BYTES)
                        .get(key, options)
                        .await
                }
            })
            .await
    }

    pub(crate) async fn raw_txn(&self, txn: Txn) -> Result<TxnResponse> {
        self.members
            .call(Resend::OnlyIfUnsent, move |mut client: Client| {
                let txn = txn.clone();
                async move { client.txn(txn).await }
            })
            .await
    }

    pub(crate) async fn raw_compact(
        &self,
        revision: i64,
        options: Option<CompactionOptions>,
    ) -> Result<CompactionResponse> {
        self.members
            .call(Resend::Always, move |mut client: Client| {
                let options = options.clone();
                async move { client.compact(revision, options).await }
            })
            .await
    }

    pub(crate) async fn raw_watch(
        &self,
        key: Vec<u8>,
        options: Option<WatchOptions>,
    ) -> Result<WatchStream> {
        self.members
            .call(Resend::Always, move |client: Client| {
                let (key, options) = (key.clone(), options.clone());
                async move {
                    client
                        .watch_client()
                        .max_decoding_message_size(MAX_RESPONSE_BYTES)
                        .watch(key, options)
                        .await
                }
            })
            .await
    }

    pub(crate) async fn raw_snapshot(&self) -> Result<SnapshotStreaming> {
        self.members
            .call(Resend::Always, |mut client: Client| async move {
                client.snapshot().await
            })
            .await
    }
}
