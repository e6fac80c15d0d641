//! Where the control plane is and how a user's credentials become a client for it.
//!
//! The dashboard's own kubeconfig gives only the address and the CA to trust; its credentials are dropped.
//! A pasted kubeconfig gives only a user: its server is ignored (the dashboard talks to its one control
//! plane) and credentials that name local files or run commands are refused, since they would run on the
//! dashboard's host.

use kube::config::{AuthInfo, Kubeconfig};
use secrecy::SecretString;
use serde_json::json;

use crate::api::{self, ApiError};

/// What a user logs in with.
pub enum Credentials {
    Token(String),
    /// A kubeconfig's YAML; its current context's user is taken.
    Kubeconfig(String),
}

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// The control plane: its address and trust, without credentials.
#[derive(Clone)]
pub struct ControlPlane {
    base: kube::Config,
}

impl ControlPlane {
    /// From a client configuration; its credentials are dropped.
    pub fn new(mut config: kube::Config) -> ControlPlane {
        config.auth_info = AuthInfo::default();
        ControlPlane { base: config }
    }

    pub fn server(&self) -> String {
        self.base.cluster_url.to_string()
    }

    /// A client acting as the user `credentials` name.
    pub fn client(&self, credentials: Credentials) -> Result<kube::Client, LoginError> {
        let auth_info = match credentials {
            Credentials::Token(token) => {
                let token = token.trim();
                if token.is_empty() {
                    return Err(LoginError::Input(
                        "enter a bearer token or a kubeconfig".into(),
                    ));
                }
                AuthInfo {
                    token: Some(SecretString::from(token.to_string())),
                    ..AuthInfo::default()
                }
            }
            Credentials::Kubeconfig(yaml) => user_of_kubeconfig(&yaml)?,
        };
        let mut config = self.base.clone();
        config.auth_info = auth_info;
        kube::Client::try_from(config)
            .map_err(|e| LoginError::Input(format!("building a client: {e}")))
    }
}

/// The current context's user of a pasted kubeconfig, when it carries its credentials inline.
pub fn user_of_kubeconfig(yaml: &str) -> Result<AuthInfo, LoginError> {
    let kubeconfig = Kubeconfig::from_yaml(yaml)
        .map_err(|e| LoginError::Input(format!("the kubeconfig does not parse: {e}")))?;
    let context_name = kubeconfig.current_context.clone().unwrap_or_default();
    let user_name = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.user.clone().unwrap_or_default())
        .or_else(|| {
            (kubeconfig.auth_infos.len() == 1).then(|| kubeconfig.auth_infos[0].name.clone())
        })
        .ok_or_else(|| LoginError::Input("the kubeconfig has no current-context".into()))?;
    let user = kubeconfig
        .auth_infos
        .into_iter()
        .find(|u| u.name == user_name)
        .and_then(|u| u.auth_info)
        .ok_or_else(|| LoginError::Input(format!("the kubeconfig has no user {user_name:?}")))?;
    if user.token_file.is_some()
        || user.client_certificate.is_some()
        || user.client_key.is_some()
        || user.exec.is_some()
        || user.auth_provider.is_some()
    {
        return Err(LoginError::Input(
            "the kubeconfig's user names files or commands; paste one with token or \
             client-certificate-data and client-key-data inline"
                .into(),
        ));
    }
    let has_cert = user.client_certificate_data.is_some() && user.client_key_data.is_some();
    if user.token.is_none() && !has_cert {
        return Err(LoginError::Input(
            "the kubeconfig's user has neither a token nor client-certificate-data and client-key-data".into(),
        ));
    }
    Ok(AuthInfo {
        token: user.token,
        client_certificate_data: user.client_certificate_data,
        client_key_data: user.client_key_data,
        ..AuthInfo::default()
    })
}

/// Who the API server says the client is (a SelfSubjectReview); a 401 means the credentials are refused.
pub async fn whoami(client: &kube::Client) -> Result<String, ApiError> {
    let review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
    });
    let answer = api::post(
        client,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &review,
    )
    .await?;
    Ok(api::text(&answer, "/status/userInfo/username").to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const INLINE: &str = "apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: 'https://elsewhere:1'}}]
users: [{name: u, user: {token: abc}}]
";

    #[test]
    fn pasted_kubeconfig_gives_its_inline_user() {
        let user = user_of_kubeconfig(INLINE).unwrap();
        assert!(user.token.is_some());
    }

    #[test]
    fn pasted_kubeconfig_naming_files_or_commands_is_refused() {
        for user in [
            "{tokenFile: /etc/passwd}",
            "{client-certificate: /x, client-key: /y}",
            "{exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}}",
        ] {
            let yaml = INLINE.replace("{token: abc}", user);
            let err = user_of_kubeconfig(&yaml).err().unwrap().to_string();
            assert!(
                err.contains("files or commands") || err.contains("parse"),
                "{user}: {err}"
            );
        }
        let yaml = INLINE.replace("{token: abc}", "{}");
        let err = user_of_kubeconfig(&yaml).err().unwrap().to_string();
        assert!(err.contains("neither a token"), "{err}");
    }
}
