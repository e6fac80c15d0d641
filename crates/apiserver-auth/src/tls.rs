//! The rustls server configuration of the API server.
//!
//! Client certificates are optional: a client that presents one must chain to the cluster CA
//! (else the handshake fails); a client without one continues and authenticates with a bearer
//! token or stays anonymous. Both protocols a Kubernetes client may speak are offered via ALPN.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;

use crate::pki::{Pki, PkiError};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(transparent)]
    Pki(#[from] PkiError),
    #[error("the CA certificate is not a usable trust anchor: {0}")]
    TrustAnchor(rustls::Error),
    #[error("client certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The crypto provider used everywhere (ring: no C/asm toolchain beyond `cc` needed).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The cluster CA as a rustls root store (for verifying client certificates, and for clients
/// of this server).
pub fn ca_roots(pki: &Pki) -> Result<Arc<RootCertStore>, TlsError> {
    let mut roots = RootCertStore::empty();
    roots
        .add(pki.ca_cert_der().clone())
        .map_err(TlsError::TrustAnchor)?;
    Ok(Arc::new(roots))
}

/// The server configuration: the serving certificate, optional client certificates verified
/// against the CA, ALPN `h2` then `http/1.1`.
pub fn server_config(pki: &Pki) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = provider();
    let verifier = WebPkiClientVerifier::builder_with_provider(ca_roots(pki)?, provider.clone())
        .allow_unauthenticated()
        .build()?;
    let (chain, key) = pki.serving_chain_and_key()?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::{CertificateDer, UnixTime, pem::PemObject};

    #[test]
    fn issued_client_certs_verify_against_the_ca_and_foreign_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let other_dir = tempfile::tempdir().unwrap();
        let other = Pki::load_or_create(other_dir.path(), &[]).unwrap();
        let verifier =
            WebPkiClientVerifier::builder_with_provider(ca_roots(&pki).unwrap(), provider())
                .build()
                .unwrap();

        let (own, _) = pki
            .issue_client_cert("alice", &[], std::time::Duration::from_secs(600))
            .unwrap();
        let own = CertificateDer::from_pem_slice(own.as_bytes()).unwrap();
        assert!(
            verifier
                .verify_client_cert(&own, &[], UnixTime::now())
                .is_ok()
        );

        let admin = CertificateDer::from_pem_slice(pki.admin().cert_pem.as_bytes()).unwrap();
        assert!(
            verifier
                .verify_client_cert(&admin, &[], UnixTime::now())
                .is_ok()
        );

        let foreign = CertificateDer::from_pem_slice(other.admin().cert_pem.as_bytes()).unwrap();
        assert!(
            verifier
                .verify_client_cert(&foreign, &[], UnixTime::now())
                .is_err()
        );
    }

    #[test]
    fn server_config_offers_h2_then_http11() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let config = server_config(&pki).unwrap();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
