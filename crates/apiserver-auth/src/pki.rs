//! The cluster PKI kept in the data directory: a CA, the API server's serving certificate and
//! the administrator's client certificate.
//!
//! Invariants:
//! - the CA is generated once and never replaced automatically: a directory holding only part
//!   of the CA (certificate without key or the reverse) is an error, because regenerating would
//!   silently invalidate every certificate issued so far;
//! - the serving certificate is regenerated whenever its SANs differ from the requested host
//!   list or it is expired or not yet valid; the admin certificate likewise when expired;
//! - private keys are written with mode 0600, through a temporary file and a rename, so a crash
//!   never leaves a half-written key.
//!
//! Everything here does blocking file I/O; call it at startup or from `spawn_blocking`.

use std::collections::BTreeSet;
use std::fs;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

pub const CA_CERT_FILE: &str = "ca.crt";
pub const CA_KEY_FILE: &str = "ca.key";
pub const SERVING_CERT_FILE: &str = "apiserver.crt";
pub const SERVING_KEY_FILE: &str = "apiserver.key";
pub const ADMIN_CERT_FILE: &str = "admin.crt";
pub const ADMIN_KEY_FILE: &str = "admin.key";

/// The common name of the generated CA.
pub const CA_COMMON_NAME: &str = "karmada-ca";
/// The common name of the serving certificate.
pub const SERVING_COMMON_NAME: &str = "karmada-apiserver";

/// SANs every serving certificate carries, in addition to the configured hosts.
const DEFAULT_SERVING_HOSTS: [&str; 4] =
    ["localhost", "127.0.0.1", "::1", "kubernetes.default.svc"];

const DAY: Duration = Duration::from_secs(24 * 60 * 60);
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
const LEAF_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// Back-dating of `notBefore`, so peers with slightly slow clocks accept fresh certificates.
const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("incomplete CA in {dir}: found {present} but not {missing}; restore it or remove both")]
    IncompleteCa {
        dir: PathBuf,
        present: &'static str,
        missing: &'static str,
    },
    #[error("certificate generation: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("invalid certificate request: {0}")]
    Request(String),
}

pub type Result<T, E = PkiError> = std::result::Result<T, E>;

/// A PEM certificate and its PEM private key.
#[derive(Clone, Debug)]
pub struct CertAndKey {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The loaded PKI. The CA key stays in memory so client certificates can be issued.
pub struct Pki {
    dir: PathBuf,
    ca: CertAndKey,
    ca_der: CertificateDer<'static>,
    ca_key: KeyPair,
    serving: CertAndKey,
    admin: CertAndKey,
}

impl std::fmt::Debug for Pki {
    // Never print key material.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Pki {
    /// Loads the PKI from `dir`, generating whatever is missing (see the module invariants).
    /// `hosts` are extra DNS names and IP addresses for the serving certificate.
    pub fn load_or_create(dir: &Path, hosts: &[String]) -> Result<Pki> {
        fs::create_dir_all(dir).map_err(|source| io_error(dir, source))?;
        let now = OffsetDateTime::now_utc();
        let (ca, ca_key) = load_or_create_ca(dir, now)?;
        let ca_der = parse_cert_pem(&dir.join(CA_CERT_FILE), &ca.cert_pem)?;
        let issuer = Issuer::from_ca_cert_der(&ca_der, &ca_key)?;

        let wanted_sans = serving_sans(hosts);
        let serving = load_leaf(dir, SERVING_CERT_FILE, SERVING_KEY_FILE, now, |cert| {
            sans_of(cert) == wanted_sans
        })?;
        let serving = match serving {
            Some(pair) => pair,
            None => {
                let pair = issue_serving(&issuer, &wanted_sans, now)?;
                write_pair(dir, SERVING_CERT_FILE, SERVING_KEY_FILE, &pair)?;
                pair
            }
        };

        let admin = match load_leaf(dir, ADMIN_CERT_FILE, ADMIN_KEY_FILE, now, |_| true)? {
            Some(pair) => pair,
            None => {
                let groups = [crate::MASTERS_GROUP.to_owned()];
                let pair = issue_client(&issuer, "system:admin", &groups, LEAF_VALIDITY, now)?;
                write_pair(dir, ADMIN_CERT_FILE, ADMIN_KEY_FILE, &pair)?;
                pair
            }
        };

        Ok(Pki {
            dir: dir.to_owned(),
            ca,
            ca_der,
            ca_key,
            serving,
            admin,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn ca_cert_pem(&self) -> &str {
        &self.ca.cert_pem
    }

    pub fn ca_cert_der(&self) -> &CertificateDer<'static> {
        &self.ca_der
    }

    pub fn serving(&self) -> &CertAndKey {
        &self.serving
    }

    /// The administrator's client certificate (CN `system:admin`, O `system:masters`), for
    /// the generated kubeconfig.
    pub fn admin(&self) -> &CertAndKey {
        &self.admin
    }

    /// The admin client certificate, PEM.
    pub fn admin_cert_pem(&self) -> &str {
        &self.admin.cert_pem
    }

    /// The admin client key, PEM.
    pub fn admin_key_pem(&self) -> &str {
        &self.admin.key_pem
    }

    /// The serving certificate chain (leaf, then CA) and key, for rustls.
    pub fn serving_chain_and_key(
        &self,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
        let path = self.dir.join(SERVING_CERT_FILE);
        let leaf = parse_cert_pem(&path, &self.serving.cert_pem)?;
        let key_path = self.dir.join(SERVING_KEY_FILE);
        let key = PrivateKeyDer::from_pem_slice(self.serving.key_pem.as_bytes())
            .map_err(|e| invalid(&key_path, format!("not a PEM private key: {e}")))?;
        Ok((vec![leaf, self.ca_der.clone()], key))
    }

    /// Issues a client certificate signed by the CA: CN = `common_name` (the user), one O per
    /// group. At most two groups are supported (a limit of the certificate encoder); Kubernetes
    /// client certificates normally carry one.
    pub fn issue_client_cert(
        &self,
        common_name: &str,
        groups: &[String],
        validity: Duration,
    ) -> Result<(String, String)> {
        let issuer = Issuer::from_ca_cert_der(&self.ca_der, &self.ca_key)?;
        let pair = issue_client(
            &issuer,
            common_name,
            groups,
            validity,
            OffsetDateTime::now_utc(),
        )?;
        Ok((pair.cert_pem, pair.key_pem))
    }

    /// Signs a PEM certificate signing request (a CertificateSigningRequest's `spec.request`,
    /// e.g. from a pull-mode agent registering) as a client certificate: the CSR's CN and O
    /// (at most two) become the certificate's; requested extensions (SANs, usages) are not
    /// honoured, because this CA only issues client certificates.
    pub fn sign_csr(&self, csr_pem: &str, validity: Duration) -> Result<String> {
        let request = rcgen::CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|e| PkiError::Request(format!("not a valid PEM certificate request: {e}")))?;
        let (common_name, groups) = csr_subject(csr_pem)?;
        let issuer = Issuer::from_ca_cert_der(&self.ca_der, &self.ca_key)?;
        client_cert_for_key(
            &issuer,
            &request.public_key,
            &common_name,
            &groups,
            validity,
            OffsetDateTime::now_utc(),
        )
    }

    /// `sha256:<hex>` of the CA's SubjectPublicKeyInfo: kubeadm's discovery-token-ca-cert-hash.
    pub fn ca_hash(&self) -> Result<String> {
        ca_hash_of_der(&self.ca_der)
            .map_err(|message| invalid(&self.dir.join(CA_CERT_FILE), message))
    }
}

/// `sha256:<hex>` of a DER certificate's SubjectPublicKeyInfo.
pub fn ca_hash_of_der(der: &[u8]) -> std::result::Result<String, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let digest = Sha256::digest(cert.tbs_certificate.subject_pki.raw);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

fn load_or_create_ca(dir: &Path, now: OffsetDateTime) -> Result<(CertAndKey, KeyPair)> {
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    match (cert_path.exists(), key_path.exists()) {
        (true, true) => {
            let cert_pem = read(&cert_path)?;
            let key_pem = read(&key_path)?;
            let key = KeyPair::from_pem(&key_pem)
                .map_err(|e| invalid(&key_path, format!("not a usable private key: {e}")))?;
            Ok((CertAndKey { cert_pem, key_pem }, key))
        }
        (false, false) => {
            let key = KeyPair::generate()?;
            let mut params = CertificateParams::default();
            params.distinguished_name = common_name_dn(CA_COMMON_NAME);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![
                KeyUsagePurpose::KeyCertSign,
                KeyUsagePurpose::CrlSign,
                KeyUsagePurpose::DigitalSignature,
            ];
            set_validity(&mut params, now, CA_VALIDITY);
            let cert = params.self_signed(&key)?;
            let pair = CertAndKey {
                cert_pem: cert.pem(),
                key_pem: key.serialize_pem(),
            };
            write_pair(dir, CA_CERT_FILE, CA_KEY_FILE, &pair)?;
            Ok((pair, key))
        }
        (true, false) => Err(PkiError::IncompleteCa {
            dir: dir.to_owned(),
            present: CA_CERT_FILE,
            missing: CA_KEY_FILE,
        }),
        (false, true) => Err(PkiError::IncompleteCa {
            dir: dir.to_owned(),
            present: CA_KEY_FILE,
            missing: CA_CERT_FILE,
        }),
    }
}

/// Loads a leaf pair if both files exist, the certificate is currently valid and `keep`
/// accepts it; `None` means "(re)generate".
fn load_leaf(
    dir: &Path,
    cert_file: &str,
    key_file: &str,
    now: OffsetDateTime,
    keep: impl Fn(&x509_parser::certificate::X509Certificate<'_>) -> bool,
) -> Result<Option<CertAndKey>> {
    let cert_path = dir.join(cert_file);
    let key_path = dir.join(key_file);
    if !cert_path.exists() || !key_path.exists() {
        return Ok(None);
    }
    let cert_pem = read(&cert_path)?;
    let key_pem = read(&key_path)?;
    let der = parse_cert_pem(&cert_path, &cert_pem)?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| invalid(&cert_path, format!("not an X.509 certificate: {e}")))?;
    let validity = cert.validity();
    let now_ts = now.unix_timestamp();
    let valid =
        validity.not_before.timestamp() <= now_ts && now_ts < validity.not_after.timestamp();
    if !valid || !keep(&cert) {
        return Ok(None);
    }
    Ok(Some(CertAndKey { cert_pem, key_pem }))
}

/// The SAN set a serving certificate should carry, normalised (IPs in canonical form).
fn serving_sans(hosts: &[String]) -> BTreeSet<String> {
    DEFAULT_SERVING_HOSTS
        .iter()
        .map(|h| (*h).to_owned())
        .chain(hosts.iter().map(|h| h.trim().to_owned()))
        .filter(|h| !h.is_empty())
        .map(|h| match h.parse::<IpAddr>() {
            Ok(ip) => ip.to_string(),
            Err(_) => h.to_ascii_lowercase(),
        })
        .collect()
}

fn sans_of(cert: &x509_parser::certificate::X509Certificate<'_>) -> BTreeSet<String> {
    use x509_parser::extensions::GeneralName;
    let mut out = BTreeSet::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(dns) => {
                    out.insert(dns.to_ascii_lowercase());
                }
                GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                        16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                        _ => None,
                    };
                    if let Some(ip) = ip {
                        out.insert(ip.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn issue_serving(
    issuer: &Issuer<'_, &KeyPair>,
    sans: &BTreeSet<String>,
    now: OffsetDateTime,
) -> Result<CertAndKey> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name_dn(SERVING_COMMON_NAME);
    params.subject_alt_names = sans
        .iter()
        .map(|h| match h.parse::<IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => h.clone().try_into().map(SanType::DnsName),
        })
        .collect::<std::result::Result<_, _>>()?;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, now, LEAF_VALIDITY);
    let cert = params.signed_by(&key, issuer)?;
    Ok(CertAndKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// The O attribute's OID; used to encode a second group, since rcgen keeps one value per
/// attribute type.
const ORGANIZATION_OID: [u64; 4] = [2, 5, 4, 10];

fn issue_client(
    issuer: &Issuer<'_, &KeyPair>,
    common_name: &str,
    groups: &[String],
    validity: Duration,
    now: OffsetDateTime,
) -> Result<CertAndKey> {
    let key = KeyPair::generate()?;
    let cert_pem = client_cert_for_key(issuer, &key, common_name, groups, validity, now)?;
    Ok(CertAndKey {
        cert_pem,
        key_pem: key.serialize_pem(),
    })
}

/// A client certificate (the only profile this CA issues to clients) for `public_key`.
pub(crate) fn client_cert_for_key(
    issuer: &Issuer<'_, &KeyPair>,
    public_key: &impl rcgen::PublicKeyData,
    common_name: &str,
    groups: &[String],
    validity: Duration,
    now: OffsetDateTime,
) -> Result<String> {
    if common_name.is_empty() {
        return Err(PkiError::Request(
            "the common name (user name) must not be empty".into(),
        ));
    }
    if groups.len() > 2 {
        return Err(PkiError::Request(format!(
            "at most 2 groups (O attributes) are supported, got {}",
            groups.len()
        )));
    }
    if validity < Duration::from_secs(60) {
        return Err(PkiError::Request(format!(
            "validity must be at least one minute, got {validity:?}"
        )));
    }
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    if let Some(first) = groups.first() {
        dn.push(DnType::OrganizationName, first.as_str());
    }
    if let Some(second) = groups.get(1) {
        dn.push(
            DnType::CustomDnType(ORGANIZATION_OID.to_vec()),
            second.as_str(),
        );
    }
    dn.push(DnType::CommonName, common_name);
    params.distinguished_name = dn;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, now, validity);
    Ok(params.signed_by(public_key, issuer)?.pem())
}

/// The CN and every O of a PEM CSR's subject (read directly: rcgen keeps one value per type).
pub fn csr_subject(csr_pem: &str) -> Result<(String, Vec<String>)> {
    use x509_parser::prelude::FromDer;
    let der = rustls_pki_types::CertificateSigningRequestDer::from_pem_slice(csr_pem.as_bytes())
        .map_err(|e| PkiError::Request(format!("not a PEM certificate request: {e}")))?;
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(der.as_ref())
            .map_err(|e| PkiError::Request(format!("unreadable certificate request: {e}")))?;
    let subject = &csr.certification_request_info.subject;
    let text = |attr: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        attr.as_str()
            .map(str::to_owned)
            .map_err(|e| PkiError::Request(format!("unreadable subject attribute: {e}")))
    };
    let common_name = match subject.iter_common_name().next() {
        Some(cn) => text(cn)?,
        None => String::new(),
    };
    let groups = subject
        .iter_organization()
        .map(text)
        .collect::<Result<Vec<_>>>()?;
    Ok((common_name, groups))
}

fn common_name_dn(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

fn set_validity(params: &mut CertificateParams, now: OffsetDateTime, validity: Duration) {
    params.not_before = now - CLOCK_SKEW;
    // Whole days keep expiry readable; a sub-day validity is kept as is.
    let validity = if validity >= DAY {
        Duration::from_secs(validity.as_secs() / DAY.as_secs() * DAY.as_secs())
    } else {
        validity
    };
    params.not_after = now + validity;
}

fn parse_cert_pem(path: &Path, pem: &str) -> Result<CertificateDer<'static>> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| invalid(path, format!("not a PEM certificate: {e}")))
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|source| io_error(path, source))
}

fn write_pair(dir: &Path, cert_file: &str, key_file: &str, pair: &CertAndKey) -> Result<()> {
    // Key first: a certificate on disk without its key would look like an incomplete CA.
    write_atomic(&dir.join(key_file), pair.key_pem.as_bytes(), 0o600)?;
    write_atomic(&dir.join(cert_file), pair.cert_pem.as_bytes(), 0o644)
}

/// Writes a private key file (owner-only), atomically.
pub(crate) fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    write_atomic(path, contents, 0o600)
}

fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    crate::files::write_atomic(path, contents, mode).map_err(|source| io_error(path, source))
}

fn io_error(path: &Path, source: std::io::Error) -> PkiError {
    PkiError::Io {
        path: path.to_owned(),
        source,
    }
}

fn invalid(path: &Path, message: String) -> PkiError {
    PkiError::Invalid {
        path: path.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn subject_of(pem: &str) -> (Vec<String>, Vec<String>) {
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let cn = cert
            .subject()
            .iter_common_name()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        let o = cert
            .subject()
            .iter_organization()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        (cn, o)
    }

    #[test]
    fn first_start_generates_and_second_start_reloads_the_same_pki() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = vec!["karmada.example.com".to_owned(), "10.0.0.7".to_owned()];
        let first = Pki::load_or_create(dir.path(), &hosts).unwrap();
        for file in [CA_KEY_FILE, SERVING_KEY_FILE, ADMIN_KEY_FILE] {
            let mode = fs::metadata(dir.path().join(file))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
        let second = Pki::load_or_create(dir.path(), &hosts).unwrap();
        assert_eq!(first.ca_cert_pem(), second.ca_cert_pem());
        assert_eq!(first.serving().cert_pem, second.serving().cert_pem);
        assert_eq!(first.admin().cert_pem, second.admin().cert_pem);
        assert_eq!(first.ca_hash().unwrap(), second.ca_hash().unwrap());

        let (cn, o) = subject_of(&first.admin().cert_pem);
        assert_eq!(
            (cn, o),
            (vec!["system:admin".into()], vec!["system:masters".into()])
        );
    }

    #[test]
    fn serving_cert_has_default_and_configured_sans_and_is_regenerated_on_change() {
        let dir = tempfile::tempdir().unwrap();
        let first = Pki::load_or_create(dir.path(), &["Api.Example.com".to_owned()]).unwrap();
        let der = CertificateDer::from_pem_slice(first.serving().cert_pem.as_bytes()).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let sans = sans_of(&cert);
        for want in [
            "localhost",
            "127.0.0.1",
            "::1",
            "kubernetes.default.svc",
            "api.example.com",
        ] {
            assert!(sans.contains(want), "{want} missing from {sans:?}");
        }

        let changed = Pki::load_or_create(dir.path(), &["10.1.2.3".to_owned()]).unwrap();
        assert_eq!(
            first.ca_cert_pem(),
            changed.ca_cert_pem(),
            "CA must survive"
        );
        assert_ne!(first.serving().cert_pem, changed.serving().cert_pem);
        let der = CertificateDer::from_pem_slice(changed.serving().cert_pem.as_bytes()).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let sans = sans_of(&cert);
        assert!(sans.contains("10.1.2.3"));
        assert!(!sans.contains("api.example.com"));
    }

    #[test]
    fn incomplete_ca_is_an_error_not_a_silent_regeneration() {
        let dir = tempfile::tempdir().unwrap();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        fs::remove_file(dir.path().join(CA_KEY_FILE)).unwrap();
        let err = Pki::load_or_create(dir.path(), &[]).unwrap_err();
        assert!(
            matches!(
                err,
                PkiError::IncompleteCa {
                    missing: CA_KEY_FILE,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn garbage_ca_file_gives_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(CA_CERT_FILE), "hello").unwrap();
        fs::write(dir.path().join(CA_KEY_FILE), "world").unwrap();
        let err = Pki::load_or_create(dir.path(), &[]).unwrap_err();
        assert!(err.to_string().contains(CA_KEY_FILE), "{err}");
    }

    #[test]
    fn issued_client_cert_carries_user_and_groups_and_chains_to_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let groups = vec!["system:nodes".to_owned(), "team-a".to_owned()];
        let (cert_pem, key_pem) = pki
            .issue_client_cert("system:node:member1", &groups, Duration::from_secs(3600))
            .unwrap();
        assert!(KeyPair::from_pem(&key_pem).is_ok());
        let (cn, o) = subject_of(&cert_pem);
        assert_eq!(cn, vec!["system:node:member1"]);
        assert_eq!(o, groups);

        let der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let (_, ca) = x509_parser::parse_x509_certificate(pki.ca_cert_der()).unwrap();
        assert_eq!(cert.issuer(), ca.subject());

        let three = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        assert!(pki.issue_client_cert("u", &three, DAY).is_err());
        assert!(pki.issue_client_cert("", &[], DAY).is_err());
    }

    #[test]
    fn ca_hash_is_sha256_of_the_spki() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let hash = pki.ca_hash().unwrap();
        let hex = hash.strip_prefix("sha256:").unwrap();
        assert_eq!(hex.len(), 64);
        let (_, ca) = x509_parser::parse_x509_certificate(pki.ca_cert_der()).unwrap();
        let expected = Sha256::digest(ca.public_key().raw);
        let expected: String = expected.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, expected);
    }

    #[test]
    fn csr_is_signed_as_a_client_cert_with_its_subject() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let agent_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "system:nodes");
        dn.push(DnType::CommonName, "system:node:member1");
        params.distinguished_name = dn;
        let csr = params.serialize_request(&agent_key).unwrap().pem().unwrap();

        let cert_pem = pki.sign_csr(&csr, Duration::from_secs(3600)).unwrap();
        let (cn, o) = subject_of(&cert_pem);
        assert_eq!(cn, vec!["system:node:member1"]);
        assert_eq!(o, vec!["system:nodes"]);
        let der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert_eq!(
            cert.public_key().raw,
            rcgen::PublicKeyData::subject_public_key_info(&agent_key).as_slice()
        );

        let err = pki.sign_csr("garbage", DAY).unwrap_err();
        assert!(err.to_string().contains("certificate request"), "{err}");
        let mut no_cn = CertificateParams::default();
        no_cn.distinguished_name = DistinguishedName::new();
        let csr = no_cn.serialize_request(&agent_key).unwrap().pem().unwrap();
        assert!(
            pki.sign_csr(&csr, DAY).is_err(),
            "a CSR without a CN names no user"
        );
    }
}
