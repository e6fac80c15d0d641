//! A certificate signer holding only the CA (certificate and key files), for controllers that
//! sign CertificateSigningRequests (`--cluster-signing-cert-file` / `--cluster-signing-key-file`).
//!
//! Unlike [`crate::pki::Pki::load_or_create`] it never writes anything: a controller must not
//! regenerate the API server's serving certificate as a side effect of loading the CA.

use std::path::Path;
use std::time::Duration;

use rcgen::{Issuer, KeyPair};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use time::OffsetDateTime;

use crate::pki::{PkiError, Result, client_cert_for_key};

/// The CA that signs client certificates.
pub struct CaSigner {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    key: KeyPair,
}

impl std::fmt::Debug for CaSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaSigner").finish_non_exhaustive()
    }
}

impl CaSigner {
    /// Reads a PEM CA certificate and its PEM key (blocking).
    pub fn load(cert_file: &Path, key_file: &Path) -> Result<Self> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| PkiError::Io {
                path: path.to_owned(),
                source,
            })
        };
        Self::from_pem(&read(cert_file)?, &read(key_file)?).map_err(|e| match e {
            PkiError::Request(message) => PkiError::Invalid {
                path: cert_file.to_owned(),
                message,
            },
            other => other,
        })
    }

    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self> {
        let ca_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| PkiError::Request(format!("not a PEM certificate: {e}")))?;
        let key = KeyPair::from_pem(key_pem)
            .map_err(|e| PkiError::Request(format!("not a usable private key: {e}")))?;
        Ok(Self {
            ca_pem: cert_pem.to_owned(),
            ca_der,
            key,
        })
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Signs a PEM CSR as a client certificate with the CSR's CN and O (at most two); PEM out.
    pub fn sign_client_csr(&self, csr_pem: &str, validity: Duration) -> Result<String> {
        let request = rcgen::CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|e| PkiError::Request(format!("not a valid PEM certificate request: {e}")))?;
        let (common_name, groups) = crate::pki::csr_subject(csr_pem)?;
        let issuer = Issuer::from_ca_cert_der(&self.ca_der, &self.key)?;
        client_cert_for_key(
            &issuer,
            &request.public_key,
            &common_name,
            &groups,
            validity,
            OffsetDateTime::now_utc(),
        )
    }
}

/// A new key and a PEM CSR for `common_name` with one O per group (at most two): what a
/// registering agent submits. Returns `(csr_pem, key_pem)`.
pub fn client_csr(common_name: &str, groups: &[String]) -> Result<(String, String)> {
    if groups.len() > 2 {
        return Err(PkiError::Request(format!(
            "at most 2 groups (O attributes) are supported, got {}",
            groups.len()
        )));
    }
    let key = KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    if let Some(first) = groups.first() {
        dn.push(rcgen::DnType::OrganizationName, first.as_str());
    }
    if let Some(second) = groups.get(1) {
        dn.push(
            rcgen::DnType::CustomDnType(vec![2, 5, 4, 10]),
            second.as_str(),
        );
    }
    dn.push(rcgen::DnType::CommonName, common_name);
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key)?;
    Ok((csr.pem()?, key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{CA_CERT_FILE, CA_KEY_FILE, Pki};

    #[test]
    fn signs_a_generated_csr_with_the_pki_ca() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let signer = CaSigner::load(
            &dir.path().join(CA_CERT_FILE),
            &dir.path().join(CA_KEY_FILE),
        )
        .unwrap();
        assert_eq!(signer.ca_pem(), pki.ca_cert_pem());
        let groups = vec!["system:karmada:agents".to_owned()];
        let (csr, _key) = client_csr("system:karmada:agent:m1", &groups).unwrap();
        assert_eq!(
            crate::pki::csr_subject(&csr).unwrap(),
            ("system:karmada:agent:m1".to_owned(), groups.clone())
        );
        let cert = signer
            .sign_client_csr(&csr, Duration::from_secs(3600))
            .unwrap();
        let der = CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        let user = crate::authn::user_from_client_cert(&der).unwrap();
        assert_eq!(user.name, "system:karmada:agent:m1");
        assert!(user.in_group("system:karmada:agents"));
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert_eq!(
            parsed.issuer().to_string(),
            format!("CN={}", crate::pki::CA_COMMON_NAME)
        );
    }

    #[test]
    fn missing_files_and_garbage_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let err = CaSigner::load(&dir.path().join("nope.crt"), &dir.path().join("nope.key"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope.crt"), "{err}");
        std::fs::write(dir.path().join("a.crt"), "junk").unwrap();
        std::fs::write(dir.path().join("a.key"), "junk").unwrap();
        let err = CaSigner::load(&dir.path().join("a.crt"), &dir.path().join("a.key"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("a.crt"), "{err}");
    }
}
