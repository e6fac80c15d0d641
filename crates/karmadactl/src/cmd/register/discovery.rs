//! Discovery of the control plane's CA for `register`: one TLS handshake that trusts nothing, then the
//! presented certificate whose SubjectPublicKeyInfo hash equals `--discovery-token-ca-cert-hash` is pinned.
//! Everything after (the token included) goes over connections verified against that pinned CA, so the token
//! never reaches a server that cannot prove it holds the expected CA.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Checks `--discovery-token-ca-cert-hash`: `sha256:` and 64 hex digits; returned lower-cased.
pub fn parse_ca_hash(text: &str) -> anyhow::Result<String> {
    let hex = text.strip_prefix("sha256:").ok_or_else(|| {
        anyhow!(
            "--discovery-token-ca-cert-hash must look like sha256:<64 hex digits>; got {text:?}"
        )
    })?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("--discovery-token-ca-cert-hash must look like sha256:<64 hex digits>; got {text:?}");
    }
    Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
}

/// `host:port` and the host alone from `ENDPOINT` (`host:port`, or an `https://` URL).
pub fn split_endpoint(endpoint: &str) -> anyhow::Result<(String, String)> {
    let rest = endpoint
        .strip_prefix("https://")
        .unwrap_or(endpoint)
        .trim_end_matches('/');
    if rest.contains("://") || rest.is_empty() {
        bail!("the endpoint must be host:port or https://host:port; got {endpoint:?}");
    }
    let address = if rest
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        rest.to_owned()
    } else {
        format!("{rest}:443")
    };
    let host = address
        .rsplit_once(':')
        .map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']').to_owned())
        .unwrap_or_default();
    Ok((address, host))
}

/// The certificate among `chain` whose SPKI hash is `expected`.
pub fn pick_ca<'a>(
    chain: &'a [CertificateDer<'static>],
    expected: &str,
) -> anyhow::Result<&'a CertificateDer<'static>> {
    let mut seen = Vec::new();
    for cert in chain {
        let hash = apiserver_auth::pki::ca_hash_of_der(cert).map_err(|e| anyhow!(e))?;
        if hash == expected {
            return Ok(cert);
        }
        seen.push(hash);
    }
    bail!(
        "the control plane's CA does not match --discovery-token-ca-cert-hash {expected} (the server presented {}); \
         check the hash printed by `karmadactl token create --print-register-command` — nothing was created",
        seen.join(", ")
    )
}

/// The certificates the server at `address` presents, read without verifying them.
pub async fn presented_chain(
    address: &str,
    host: &str,
) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(RecordOnly(provider)))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name =
        ServerName::try_from(host.to_owned()).map_err(|e| anyhow!("invalid host {host:?}: {e}"))?;
    let handshake = async {
        let tcp = tokio::net::TcpStream::connect(address).await?;
        connector.connect(name, tcp).await
    };
    let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| {
            anyhow!(
                "no TLS handshake with {address} within {}s",
                HANDSHAKE_TIMEOUT.as_secs()
            )
        })?
        .with_context(|| format!("connecting to the control plane at {address}"))?;
    let chain = tls
        .get_ref()
        .1
        .peer_certificates()
        .map(|certs| {
            certs
                .iter()
                .map(|c| c.clone().into_owned())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if chain.is_empty() {
        bail!("the control plane at {address} presented no certificate");
    }
    Ok(chain)
}

/// Accepts any server certificate (it is checked against the hash afterwards) but still verifies the handshake
/// signatures, so the peer holds the key of what it presented.
#[derive(Debug)]
struct RecordOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for RecordOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hash_format() {
        let hex = "ab".repeat(32);
        assert_eq!(
            parse_ca_hash(&format!("sha256:{}", hex.to_uppercase())).unwrap(),
            format!("sha256:{hex}")
        );
        for bad in [
            "",
            "abc",
            &hex,
            &format!("sha1:{hex}"),
            &format!("sha256:{}", &hex[1..]),
            &format!("sha256:{}zz", &hex[2..]),
        ] {
            assert!(parse_ca_hash(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoints() {
        let cases = [
            ("127.0.0.1:32443", ("127.0.0.1:32443", "127.0.0.1")),
            (
                "https://karmada.example:6443/",
                ("karmada.example:6443", "karmada.example"),
            ),
            (
                "karmada.example",
                ("karmada.example:443", "karmada.example"),
            ),
        ];
        for (input, (address, host)) in cases {
            assert_eq!(
                split_endpoint(input).unwrap(),
                (address.to_owned(), host.to_owned()),
                "{input}"
            );
        }
        assert!(split_endpoint("http://x:1").is_err());
        assert!(split_endpoint("").is_err());
    }

    #[test]
    fn ca_is_picked_by_hash_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let pki = apiserver_auth::pki::Pki::load_or_create(dir.path(), &[]).unwrap();
        let (chain, _) = pki.serving_chain_and_key().unwrap();
        let hash = pki.ca_hash().unwrap();
        assert_eq!(pick_ca(&chain, &hash).unwrap(), pki.ca_cert_der());
        let err = pick_ca(&chain, &format!("sha256:{}", "0".repeat(64)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not match"), "{err}");
        assert!(err.contains(&hash), "{err}");
    }
}
