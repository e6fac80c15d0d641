//! The dashboard's serving certificate: the files given, else a self-signed one made at start (browsers
//! warn about it; pass --tls-cert/--tls-key for a trusted one).

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("generating the self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// A server configuration from PEM files (the certificate chain, then the key).
pub fn from_files(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let file_error = |path: &Path, message: String| TlsError::File {
        path: path.display().to_string(),
        message,
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| file_error(cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(file_error(cert, "no PEM certificate found".into()));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e.to_string()))?;
    config(chain, key_der)
}

/// A server configuration with a certificate made now for `hosts` (plus localhost and 127.0.0.1).
pub fn self_signed(hosts: &[String]) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    names.extend(
        hosts
            .iter()
            .filter(|h| !names.contains(h))
            .cloned()
            .collect::<Vec<_>>(),
    );
    let certified = rcgen::generate_simple_self_signed(names)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    config(vec![certified.cert.der().clone()], key)
}

fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_config_builds_and_files_round_trip() {
        let config = self_signed(&["dash.example".into()]).unwrap();
        assert_eq!(config.alpn_protocols[0], b"h2");
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let dir = std::env::temp_dir().join(format!("dash-tls-{}", crate::session::random_token()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("c.pem"), certified.cert.pem()).unwrap();
        std::fs::write(dir.join("k.pem"), certified.signing_key.serialize_pem()).unwrap();
        assert!(from_files(&dir.join("c.pem"), &dir.join("k.pem")).is_ok());
        let err = from_files(&dir.join("k.pem"), &dir.join("k.pem"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
