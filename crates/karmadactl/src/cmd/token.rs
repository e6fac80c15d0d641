//! `karmadactl token create|list|delete`: bootstrap tokens for `karmadactl register` (Pull mode).
//!
//! A token is the Secret `kube-system/bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token`; the API
//! server authenticates `<id>.<secret>` against it as `system:bootstrap:<id>` until `expiration`. With
//! `--print-register-command`, `create` prints the whole `karmadactl register` line, including the CA hash a
//! registering member pins the control plane with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use apiserver_auth::bootstrap_token::{
    self as bt, BootstrapToken, KEY_DESCRIPTION, KEY_EXPIRATION, KEY_EXTRA_GROUPS, KEY_TOKEN_ID,
    KEY_TOKEN_SECRET, KEY_USAGE_AUTHENTICATION, KEY_USAGE_SIGNING, SECRET_NAMESPACE, SECRET_TYPE,
};
use base64::Engine;
use clap::{Args, Subcommand};
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::Kubeconfig;
use rustls_pki_types::pem::PemObject;
use serde_json::json;

use crate::client;

#[derive(Args, Debug)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a bootstrap token.
    Create(CreateArgs),
    /// List bootstrap tokens.
    List(CommonArgs),
    /// Delete bootstrap tokens (by id or whole token).
    Delete(DeleteArgs),
}

#[derive(Args, Debug)]
pub struct CommonArgs {
    /// Kubeconfig of the Karmada control plane.
    #[arg(long, alias = "karmada-config")]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long = "karmada-context")]
    pub karmada_context: Option<String>,
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// How long the token stays valid (e.g. 24h, 30m); 0 means it never expires.
    #[arg(long, default_value = "24h", value_parser = parse_ttl)]
    pub ttl: Duration,
    /// Print the full `karmadactl register` command instead of only the token.
    #[arg(long)]
    pub print_register_command: bool,
    /// A human-readable note stored with the token.
    #[arg(long)]
    pub description: Option<String>,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Token ids (`abcdef`) or whole tokens (`abcdef.0123456789abcdef`).
    #[arg(required = true)]
    pub tokens: Vec<String>,
}

/// Parses `--ttl`: a duration such as `24h`, `90m`, `1h30m`; `0` for no expiry.
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let parsed: jiff::SignedDuration = text
        .parse()
        .map_err(|e| format!("{e}; expected a duration such as 24h, 30m or 0 (never expires)"))?;
    Duration::try_from(parsed).map_err(|_| "the ttl must not be negative".to_string())
}

pub async fn run(args: TokenArgs) -> anyhow::Result<()> {
    match args.command {
        TokenCommand::Create(args) => create(args).await,
        TokenCommand::List(args) => list(args).await,
        TokenCommand::Delete(args) => delete(args).await,
    }
}

async fn karmada(common: &CommonArgs) -> anyhow::Result<(kube::Client, PathBuf)> {
    let path = client::kubeconfig_path(common.kubeconfig.as_deref());
    let client = client::from_kubeconfig(&path, common.karmada_context.as_deref()).await?;
    Ok((client, path))
}

/// The token Secret, as the API server expects it.
pub fn token_secret(
    token: &BootstrapToken,
    expiration: Option<Timestamp>,
    description: Option<&str>,
) -> Secret {
    let mut data: BTreeMap<String, ByteString> = BTreeMap::new();
    let mut put = |k: &str, v: &str| {
        data.insert(k.to_owned(), ByteString(v.as_bytes().to_vec()));
    };
    put(KEY_TOKEN_ID, &token.id);
    put(KEY_TOKEN_SECRET, &token.secret);
    put(KEY_USAGE_AUTHENTICATION, "true");
    put(KEY_USAGE_SIGNING, "true");
    if let Some(at) = expiration {
        put(
            KEY_EXPIRATION,
            &at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        );
    }
    if let Some(d) = description {
        put(KEY_DESCRIPTION, d);
    }
    let mut secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": token.secret_name(), "namespace": SECRET_NAMESPACE},
        "type": SECRET_TYPE,
    }))
    .unwrap_or_default();
    secret.data = Some(data);
    secret
}

async fn create(args: CreateArgs) -> anyhow::Result<()> {
    let (client, path) = karmada(&args.common).await?;
    let mut bytes = [0u8; 22];
    rand::Rng::fill(&mut rand::rng(), &mut bytes[..]);
    let token = BootstrapToken::from_random(bytes);
    let expiration = if args.ttl.is_zero() {
        None
    } else {
        let ttl = jiff::SignedDuration::try_from(args.ttl).context("ttl out of range")?;
        Some(
            Timestamp::now()
                .checked_add(ttl)
                .context("ttl out of range")?,
        )
    };
    let register = if args.print_register_command {
        Some(register_command(
            &path,
            args.common.karmada_context.as_deref(),
            &token,
        )?)
    } else {
        None
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(SECRET_NAMESPACE).await?.is_none() {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": SECRET_NAMESPACE}}))?;
        match namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e).context("creating namespace kube-system"),
        }
    }
    let secrets: Api<Secret> = Api::namespaced(client, SECRET_NAMESPACE);
    secrets
        .create(
            &PostParams::default(),
            &token_secret(&token, expiration, args.description.as_deref()),
        )
        .await
        .context("creating the bootstrap token secret")?;
    match register {
        Some(command) => println!("{command}"),
        None => println!("{token}"),
    }
    Ok(())
}

/// `karmadactl register <host:port> --token T --discovery-token-ca-cert-hash sha256:…` for the control plane
/// of the kubeconfig at `path`.
fn register_command(
    path: &Path,
    context: Option<&str>,
    token: &BootstrapToken,
) -> anyhow::Result<String> {
    let kubeconfig = Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let context_name = context
        .map(str::to_owned)
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| anyhow!("kubeconfig {} has no current context", path.display()))?;
    let cluster_name = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .ok_or_else(|| anyhow!("context {context_name:?} not found in {}", path.display()))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| anyhow!("cluster {cluster_name:?} not found in {}", path.display()))?;
    let server = cluster.server.clone().unwrap_or_default();
    let endpoint = server
        .strip_prefix("https://")
        .ok_or_else(|| anyhow!("the control plane must be served over https to register members; server is {server:?}"))?
        .trim_end_matches('/');
    let ca_pem = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .context("certificate-authority-data is not base64")?,
        (None, Some(file)) => std::fs::read(file).with_context(|| format!("reading {file}"))?,
        (None, None) => bail!(
            "kubeconfig {} names no CA for the control plane",
            path.display()
        ),
    };
    let der = rustls_pki_types::CertificateDer::from_pem_slice(&ca_pem)
        .map_err(|e| anyhow!("the control plane CA is not a PEM certificate: {e}"))?;
    let hash = apiserver_auth::pki::ca_hash_of_der(&der).map_err(|e| anyhow!(e))?;
    Ok(format!(
        "karmadactl register {endpoint} --token {token} --discovery-token-ca-cert-hash {hash}"
    ))
}

async fn list(args: CommonArgs) -> anyhow::Result<()> {
    let (client, _) = karmada(&args).await?;
    let secrets: Api<Secret> = Api::namespaced(client, SECRET_NAMESPACE);
    // Filtered here: field selectors on `type` are not served for every kind.
    let list = secrets
        .list(&ListParams::default())
        .await
        .context("listing bootstrap token secrets")?;
    let now = Timestamp::now();
    let mut rows = vec![
        [
            "TOKEN",
            "TTL",
            "EXPIRES",
            "USAGES",
            "DESCRIPTION",
            "EXTRA GROUPS",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for secret in list.items {
        if secret.type_.as_deref() != Some(SECRET_TYPE) {
            continue;
        }
        let value = serde_json::to_value(&secret)?;
        let field = |k: &str| bt::secret_field(&value, k).unwrap_or_default();
        let id = field(KEY_TOKEN_ID);
        let token = format!("{id}.{}", field(KEY_TOKEN_SECRET));
        let expiration = field(KEY_EXPIRATION);
        let ttl = match expiration.parse::<Timestamp>() {
            Ok(at) if at <= now => "<expired>".to_owned(),
            Ok(at) => apimachinery::time::human_duration_seconds(at.as_second() - now.as_second()),
            Err(_) => "<forever>".to_owned(),
        };
        let usages: Vec<&str> = [
            (KEY_USAGE_AUTHENTICATION, "authentication"),
            (KEY_USAGE_SIGNING, "signing"),
        ]
        .into_iter()
        .filter(|(k, _)| field(k) == "true")
        .map(|(_, name)| name)
        .collect();
        let or_none = |s: String| if s.is_empty() { "<none>".to_owned() } else { s };
        rows.push(vec![
            token,
            ttl,
            or_none(expiration),
            usages.join(","),
            or_none(field(KEY_DESCRIPTION)),
            or_none(field(KEY_EXTRA_GROUPS)),
        ]);
    }
    print!("{}", crate::printer::table(&rows));
    Ok(())
}

async fn delete(args: DeleteArgs) -> anyhow::Result<()> {
    let (client, _) = karmada(&args.common).await?;
    let secrets: Api<Secret> = Api::namespaced(client, SECRET_NAMESPACE);
    for given in &args.tokens {
        let id = match given.split_once('.') {
            Some(_) => {
                BootstrapToken::parse(given)
                    .map_err(|e| anyhow!("{given:?}: {e}"))?
                    .id
            }
            None => given.clone(),
        };
        let name = bt::secret_name(&id);
        match secrets.delete(&name, &DeleteParams::default()).await {
            Ok(_) => println!("bootstrap token {id:?} deleted"),
            Err(kube::Error::Api(s)) if s.code == 404 => bail!("bootstrap token {id:?} not found"),
            Err(e) => return Err(e).with_context(|| format!("deleting {SECRET_NAMESPACE}/{name}")),
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ttl_parsing() {
        assert_eq!(parse_ttl("24h").unwrap(), Duration::from_secs(86400));
        assert_eq!(parse_ttl("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_ttl("1h30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_ttl("soon").is_err());
        assert!(parse_ttl("-1h").is_err());
    }

    #[test]
    fn secret_shape() {
        let token = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let at: Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
        let secret = token_secret(&token, Some(at), Some("for m1"));
        assert_eq!(
            secret.metadata.name.as_deref(),
            Some("bootstrap-token-abcdef")
        );
        assert_eq!(secret.metadata.namespace.as_deref(), Some("kube-system"));
        assert_eq!(secret.type_.as_deref(), Some(SECRET_TYPE));
        let value = serde_json::to_value(&secret).unwrap();
        // What the API server's authenticator reads back.
        let user =
            bt::check_secret(&value, &token, "2026-01-01T00:00:00Z".parse().unwrap()).unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(
            bt::secret_field(&value, KEY_EXPIRATION).unwrap(),
            "2026-01-02T03:04:05Z"
        );
        assert!(bt::check_secret(&value, &token, "2026-01-03T00:00:00Z".parse().unwrap()).is_err());
    }
}
