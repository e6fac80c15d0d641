//! How the control plane reaches a member cluster in Push mode: the credentials Secret `karmadactl join` stores
//! (named by the Cluster's `spec.secretRef`) and the one-context kubeconfig built from it and the Cluster's
//! endpoint. The controllers' member clients and the API server's cluster proxy both build theirs here.
//!
//! The Secret holds `caBundle` (PEM) and either `token` (a ServiceAccount token the member issued, or the joining
//! kubeconfig's own) or the client certificate pair `tls.crt` / `tls.key`.
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::collections::BTreeMap;

use base64::Engine;
use karmada_api::Cluster;
use kube::config::{AuthInfo, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

/// Keys of the credentials Secret.
pub const SECRET_KEY_CA_BUNDLE: &str = "caBundle";
pub const SECRET_KEY_TOKEN: &str = "token";
pub const SECRET_KEY_CLIENT_CERT: &str = "tls.crt";
pub const SECRET_KEY_CLIENT_KEY: &str = "tls.key";

/// The name of the kubeconfig's one cluster, user and context.
const ENTRY: &str = "member";

/// Why no member client could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    #[error("spec.apiEndpoint is not set")]
    NoEndpoint,
    #[error(
        "the credentials Secret holds neither {SECRET_KEY_TOKEN} nor {SECRET_KEY_CLIENT_CERT}/{SECRET_KEY_CLIENT_KEY}"
    )]
    NoCredentials,
    #[error("building the member client: {0}")]
    Client(String),
}

/// The Secret's `data` as decoded bytes by key (what `k8s_openapi`'s `Secret.data` holds; a stored Secret's JSON
/// has them base64-encoded).
pub type SecretData = BTreeMap<String, Vec<u8>>;

fn non_empty<'a>(data: &'a SecretData, key: &str) -> Option<&'a [u8]> {
    data.get(key).map(Vec::as_slice).filter(|v| !v.is_empty())
}

/// Whether `data` holds a token or a client certificate pair.
pub fn has_credentials(data: &SecretData) -> bool {
    non_empty(data, SECRET_KEY_TOKEN).is_some()
        || (non_empty(data, SECRET_KEY_CLIENT_CERT).is_some()
            && non_empty(data, SECRET_KEY_CLIENT_KEY).is_some())
}

/// The one-context kubeconfig for `cluster` with the credentials in `data`. Pure, so the Secret's format is
/// tested without a server. A Secret without credentials gives an anonymous user ([`has_credentials`] tells).
pub fn member_kubeconfig(cluster: &Cluster, data: &SecretData) -> Result<Kubeconfig, AccessError> {
    if cluster.spec.api_endpoint.is_empty() {
        return Err(AccessError::NoEndpoint);
    }
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let server = kube::config::Cluster {
        server: Some(cluster.spec.api_endpoint.clone()),
        certificate_authority_data: non_empty(data, SECRET_KEY_CA_BUNDLE).map(b64),
        insecure_skip_tls_verify: cluster.spec.insecure_skip_tls_verification.then_some(true),
        ..Default::default()
    };
    let mut user = AuthInfo {
        token: non_empty(data, SECRET_KEY_TOKEN)
            .map(|token| String::from_utf8_lossy(token).trim().to_string().into()),
        ..Default::default()
    };
    if let (Some(cert), Some(key)) = (
        non_empty(data, SECRET_KEY_CLIENT_CERT),
        non_empty(data, SECRET_KEY_CLIENT_KEY),
    ) {
        user.client_certificate_data = Some(b64(cert));
        user.client_key_data = Some(b64(key).into());
    }
    Ok(Kubeconfig {
        clusters: vec![NamedCluster {
            name: ENTRY.to_string(),
            cluster: Some(server),
            ..Default::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: ENTRY.to_string(),
            auth_info: Some(user),
            ..Default::default()
        }],
        contexts: vec![NamedContext {
            name: ENTRY.to_string(),
            context: Some(Context {
                cluster: ENTRY.to_string(),
                user: Some(ENTRY.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        current_context: Some(ENTRY.to_string()),
        api_version: Some("v1".to_string()),
        kind: Some("Config".to_string()),
        ..Default::default()
    })
}

/// The client configuration for `cluster` with the credentials in `data` (timeouts are the caller's).
pub async fn member_config(
    cluster: &Cluster,
    data: &SecretData,
) -> Result<kube::Config, AccessError> {
    let kubeconfig = member_kubeconfig(cluster, data)?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| AccessError::Client(e.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn cluster(endpoint: &str) -> Cluster {
        let mut cluster = Cluster::default();
        cluster.spec.api_endpoint = endpoint.into();
        cluster
    }

    fn data(pairs: &[(&str, &str)]) -> SecretData {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn a_token_secret_gives_a_token_user() {
        let config = member_kubeconfig(
            &cluster("https://m:6443"),
            &data(&[("caBundle", "CA"), ("token", "tok\n")]),
        )
        .unwrap();
        let server = config.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(server.server.as_deref(), Some("https://m:6443"));
        assert_eq!(server.certificate_authority_data, Some(b64("CA")));
        assert_eq!(server.insecure_skip_tls_verify, None);
        let user = config.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.token.as_ref().unwrap().expose_secret(), "tok");
        assert_eq!(config.current_context.as_deref(), Some("member"));
    }

    #[test]
    fn a_certificate_secret_gives_a_certificate_user() {
        let secret = data(&[("tls.crt", "CERT"), ("tls.key", "KEY")]);
        assert!(has_credentials(&secret));
        let mut skip = cluster("https://m:6443");
        skip.spec.insecure_skip_tls_verification = true;
        let config = member_kubeconfig(&skip, &secret).unwrap();
        let user = config.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.client_certificate_data, Some(b64("CERT")));
        assert_eq!(
            user.client_key_data.as_ref().unwrap().expose_secret(),
            b64("KEY")
        );
        assert!(user.token.is_none());
        assert_eq!(
            config.clusters[0]
                .cluster
                .as_ref()
                .unwrap()
                .insecure_skip_tls_verify,
            Some(true)
        );
    }

    #[test]
    fn missing_parts_are_named() {
        assert_eq!(
            member_kubeconfig(&cluster(""), &SecretData::new()).unwrap_err(),
            AccessError::NoEndpoint
        );
        assert!(!has_credentials(&data(&[("caBundle", "CA")])));
        assert!(!has_credentials(&data(&[("tls.crt", "CERT")])));
        assert!(!has_credentials(&data(&[("token", "")])));
        assert!(
            AccessError::NoCredentials
                .to_string()
                .contains("neither token nor tls.crt/tls.key")
        );
    }
}
