//! A throwaway PKI for the TLS test: one CA, a server certificate for 127.0.0.1/localhost and
//! a client certificate, written as PEM files into a directory.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::harness::ServerTls;

/// Writes `ca.pem`, `server.pem`, `server-key.pem`, `client.pem` and `client-key.pem`.
pub fn write_pki(dir: &Path) -> anyhow::Result<ServerTls> {
    let mut ca_params = CertificateParams::new(Vec::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "store-etcd test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf = |name: &str, sans: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(sans)?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        anyhow::Ok((cert.pem(), key.serialize_pem()))
    };
    let (server_cert, server_key) = leaf(
        "etcd",
        vec!["127.0.0.1".to_string(), "localhost".to_string()],
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let (client_cert, client_key) = leaf(
        "karmada-apiserver",
        Vec::new(),
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;
    std::fs::write(dir.join("ca.pem"), ca_cert.pem())?;
    std::fs::write(dir.join("server.pem"), server_cert)?;
    std::fs::write(dir.join("server-key.pem"), server_key)?;
    std::fs::write(dir.join("client.pem"), client_cert)?;
    std::fs::write(dir.join("client-key.pem"), client_key)?;
    Ok(ServerTls {
        ca_file: dir.join("ca.pem"),
        cert_file: dir.join("server.pem"),
        key_file: dir.join("server-key.pem"),
    })
}
