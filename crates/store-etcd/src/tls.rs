//! Builds the TLS client configuration from PEM files. Reading happens on tokio's blocking-
//! aware file API, and each missing or unreadable file is named in the error.

use std::path::Path;

use etcd_client::{Certificate, Identity, TlsOptions};
use store::{StoreError, StoreResult};

use crate::EtcdTls;

async fn read_pem(what: &str, path: &Path) -> StoreResult<Vec<u8>> {
    tokio::fs::read(path).await.map_err(|e| {
        StoreError::Backend(format!(
            "cannot read the etcd {what} file {}: {e} (expected a PEM file)",
            path.display()
        ))
    })
}

/// The client TLS settings: trust `ca_file`, present `cert_file` + `key_file`.
pub async fn client_config(tls: &EtcdTls) -> StoreResult<TlsOptions> {
    let ca = read_pem("CA", &tls.ca_file).await?;
    let cert = read_pem("client certificate", &tls.cert_file).await?;
    let key = read_pem("client key", &tls.key_file).await?;
    Ok(TlsOptions::new()
        .ca_certificate(Certificate::from_pem(ca))
        .identity(Identity::from_pem(cert, key)))
}
