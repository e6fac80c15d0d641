//! Bootstrap tokens: `Authorization: Bearer <id>.<secret>` checked against the Secret
//! `kube-system/bootstrap-token-<id>` (type `bootstrap.kubernetes.io/token`), as kube-apiserver's
//! bootstrap token authenticator does it.
//!
//! A valid token authenticates as `system:bootstrap:<id>` in `system:bootstrappers` (plus the
//! Secret's `auth-extra-groups`). Rejected: a missing Secret, another type, a different
//! secret, `usage-bootstrap-authentication` not `"true"`, an `expiration` in the past, or a
//! Secret being deleted. The decision is the pure [`check_secret`]; the authenticator only reads
//! the Secret from the store.

use std::sync::Arc;

use base64::Engine;
use jiff::Timestamp;
use serde_json::Value;
use store::Store;

use crate::authn::{AuthError, TokenAuthenticator};
use crate::user::UserInfo;

/// Group of every bootstrap token user.
pub const BOOTSTRAPPERS_GROUP: &str = "system:bootstrappers";
/// Prefix of a bootstrap token's user name; the token id follows.
pub const USER_PREFIX: &str = "system:bootstrap:";
/// Namespace of the token Secrets.
pub const SECRET_NAMESPACE: &str = "kube-system";
/// Prefix of a token Secret's name; the token id follows.
pub const SECRET_NAME_PREFIX: &str = "bootstrap-token-";
/// The Secret type of bootstrap tokens.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";

pub const KEY_TOKEN_ID: &str = "token-id";
pub const KEY_TOKEN_SECRET: &str = "token-secret";
pub const KEY_EXPIRATION: &str = "expiration";
pub const KEY_USAGE_AUTHENTICATION: &str = "usage-bootstrap-authentication";
pub const KEY_USAGE_SIGNING: &str = "usage-bootstrap-signing";
pub const KEY_DESCRIPTION: &str = "description";
pub const KEY_EXTRA_GROUPS: &str = "auth-extra-groups";

const ID_LEN: usize = 6;
const SECRET_LEN: usize = 16;
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A parsed bootstrap token, `[a-z0-9]{6}.[a-z0-9]{16}`.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapToken {
    pub id: String,
    pub secret: String,
}

impl std::fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret half never reaches logs.
        f.debug_struct("BootstrapToken")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for BootstrapToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.id, self.secret)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenFormatError {
    #[error(
        "a bootstrap token has the form <id>.<secret>: 6 and 16 characters of [a-z0-9] (e.g. abcdef.0123456789abcdef)"
    )]
    Malformed,
}

impl BootstrapToken {
    /// Parses `<id>.<secret>`.
    pub fn parse(text: &str) -> Result<Self, TokenFormatError> {
        let (id, secret) = text.split_once('.').ok_or(TokenFormatError::Malformed)?;
        let valid = |part: &str, len: usize| {
            part.len() == len && part.bytes().all(|b| ALPHABET.contains(&b))
        };
        if !valid(id, ID_LEN) || !valid(secret, SECRET_LEN) {
            return Err(TokenFormatError::Malformed);
        }
        Ok(Self {
            id: id.to_owned(),
            secret: secret.to_owned(),
        })
    }

    /// A token from 22 random bytes (each reduced onto `[a-z0-9]`; the slight bias is
    /// irrelevant for a 16-character secret).
    pub fn from_random(bytes: [u8; ID_LEN + SECRET_LEN]) -> Self {
        let pick = |b: &u8| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]);
        Self {
            id: bytes[..ID_LEN].iter().map(pick).collect(),
            secret: bytes[ID_LEN..].iter().map(pick).collect(),
        }
    }

    /// The name of this token's Secret.
    pub fn secret_name(&self) -> String {
        secret_name(&self.id)
    }

    /// The user this token authenticates as.
    pub fn user_name(&self) -> String {
        format!("{USER_PREFIX}{}", self.id)
    }
}

/// `bootstrap-token-<id>`.
pub fn secret_name(id: &str) -> String {
    format!("{SECRET_NAME_PREFIX}{id}")
}

/// Why a Secret does not authenticate a token.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Rejection {
    #[error("secret type is not {SECRET_TYPE}")]
    WrongType,
    #[error("secret is being deleted")]
    Deleting,
    #[error("token id or secret does not match")]
    Mismatch,
    #[error("token is not usable for authentication")]
    NotForAuthentication,
    #[error("token expired at {0}")]
    Expired(String),
    #[error("unreadable expiration {0:?}")]
    BadExpiration(String),
    #[error("extra group {0:?} does not start with system:bootstrappers:")]
    BadExtraGroup(String),
}

/// A data field of a Secret as text: `data` is base64, `stringData` (never stored, but accepted
/// for objects not yet defaulted) is plain.
pub fn secret_field(secret: &Value, key: &str) -> Option<String> {
    if let Some(encoded) = secret["data"][key].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        return String::from_utf8(bytes).ok();
    }
    secret["stringData"][key].as_str().map(str::to_owned)
}

/// Whether `secret` authenticates `token` at `now`, and as whom.
pub fn check_secret(
    secret: &Value,
    token: &BootstrapToken,
    now: Timestamp,
) -> Result<UserInfo, Rejection> {
    if secret["type"].as_str() != Some(SECRET_TYPE) {
        return Err(Rejection::WrongType);
    }
    if !secret["metadata"]["deletionTimestamp"].is_null() {
        return Err(Rejection::Deleting);
    }
    let id = secret_field(secret, KEY_TOKEN_ID).unwrap_or_default();
    let stored = secret_field(secret, KEY_TOKEN_SECRET).unwrap_or_default();
    if id != token.id || !constant_time_eq(stored.as_bytes(), token.secret.as_bytes()) {
        return Err(Rejection::Mismatch);
    }
    if secret_field(secret, KEY_USAGE_AUTHENTICATION).as_deref() != Some("true") {
        return Err(Rejection::NotForAuthentication);
    }
    if let Some(expiration) = secret_field(secret, KEY_EXPIRATION) {
        let at: Timestamp = expiration
            .parse()
            .map_err(|_| Rejection::BadExpiration(expiration.clone()))?;
        if at <= now {
            return Err(Rejection::Expired(expiration));
        }
    }
    let mut groups = vec![BOOTSTRAPPERS_GROUP.to_owned()];
    if let Some(extra) = secret_field(secret, KEY_EXTRA_GROUPS) {
        for group in extra.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            if !group.starts_with("system:bootstrappers:") {
                return Err(Rejection::BadExtraGroup(group.to_owned()));
            }
            if !groups.iter().any(|g| g == group) {
                groups.push(group.to_owned());
            }
        }
    }
    Ok(UserInfo {
        name: token.user_name(),
        uid: String::new(),
        groups,
    })
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The store key of a token Secret (the API server's layout for core kinds).
pub fn secret_store_key(id: &str) -> String {
    format!(
        "/registry/core/secrets/{SECRET_NAMESPACE}/{}",
        secret_name(id)
    )
}

/// The bootstrap token authenticator: reads the token's Secret straight from the store on
/// each request (registration is rare; no cache to go stale after `token delete`).
pub struct BootstrapTokenAuthenticator {
    store: Arc<dyn Store>,
}

impl BootstrapTokenAuthenticator {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for BootstrapTokenAuthenticator {
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, AuthError> {
        let Ok(token) = BootstrapToken::parse(token) else {
            return Ok(None);
        };
        let stored = self
            .store
            .get(&secret_store_key(&token.id))
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?;
        let Some(kv) = stored else {
            return Ok(None);
        };
        let secret: Value = serde_json::from_slice(&kv.value)
            .map_err(|e| AuthError::Unavailable(format!("stored secret unreadable: {e}")))?;
        match check_secret(&secret, &token, Timestamp::now()) {
            Ok(user) => Ok(Some(user)),
            Err(reason) => {
                tracing::info!(token_id = %token.id, %reason, "bootstrap token rejected");
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn secret(id: &str, token_secret: &str, expiration: Option<&str>, usage: &str) -> Value {
        let mut data = json!({
            KEY_TOKEN_ID: b64(id),
            KEY_TOKEN_SECRET: b64(token_secret),
            KEY_USAGE_AUTHENTICATION: b64(usage),
        });
        if let Some(e) = expiration {
            data[KEY_EXPIRATION] = json!(b64(e));
        }
        json!({"type": SECRET_TYPE, "metadata": {"name": secret_name(id)}, "data": data})
    }

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn parses_only_the_canonical_form() {
        let good = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        assert_eq!(good.id, "abcdef");
        assert_eq!(good.user_name(), "system:bootstrap:abcdef");
        assert_eq!(good.secret_name(), "bootstrap-token-abcdef");
        assert_eq!(good.to_string(), "abcdef.0123456789abcdef");
        for bad in [
            "",
            "abcdef",
            "abcdef.",
            "abcde.0123456789abcdef",
            "abcdef.0123456789abcde",
            "ABCDEF.0123456789abcdef",
            "abcdef.0123456789abcdef0",
            "abc-ef.0123456789abcdef",
            "abcdef:0123456789abcdef",
        ] {
            assert_eq!(
                BootstrapToken::parse(bad),
                Err(TokenFormatError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn random_tokens_parse_back() {
        for seed in 0u8..=255 {
            let mut bytes = [0u8; 22];
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = seed
                    .wrapping_mul(31)
                    .wrapping_add(u8::try_from(i).unwrap() * 7);
            }
            let token = BootstrapToken::from_random(bytes);
            assert_eq!(BootstrapToken::parse(&token.to_string()), Ok(token));
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let token = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        assert!(!format!("{token:?}").contains("0123456789abcdef"));
    }

    #[test]
    fn secret_decisions() {
        let token = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let future = Some("2026-01-02T00:00:00Z");
        let past = Some("2025-12-31T23:59:59Z");
        let cases: Vec<(&str, Value, Result<(), Rejection>)> = vec![
            (
                "valid",
                secret("abcdef", "0123456789abcdef", future, "true"),
                Ok(()),
            ),
            (
                "no expiration",
                secret("abcdef", "0123456789abcdef", None, "true"),
                Ok(()),
            ),
            (
                "expired",
                secret("abcdef", "0123456789abcdef", past, "true"),
                Err(Rejection::Expired("2025-12-31T23:59:59Z".into())),
            ),
            (
                "wrong secret",
                secret("abcdef", "0123456789abcdeX", future, "true"),
                Err(Rejection::Mismatch),
            ),
            (
                "wrong id",
                secret("abcdeg", "0123456789abcdef", future, "true"),
                Err(Rejection::Mismatch),
            ),
            (
                "not for authentication",
                secret("abcdef", "0123456789abcdef", future, "false"),
                Err(Rejection::NotForAuthentication),
            ),
            (
                "bad expiration",
                secret("abcdef", "0123456789abcdef", Some("tomorrow"), "true"),
                Err(Rejection::BadExpiration("tomorrow".into())),
            ),
            (
                "opaque",
                {
                    let mut s = secret("abcdef", "0123456789abcdef", future, "true");
                    s["type"] = json!("Opaque");
                    s
                },
                Err(Rejection::WrongType),
            ),
            (
                "deleting",
                {
                    let mut s = secret("abcdef", "0123456789abcdef", future, "true");
                    s["metadata"]["deletionTimestamp"] = json!("2025-12-31T00:00:00Z");
                    s
                },
                Err(Rejection::Deleting),
            ),
        ];
        for (what, secret, want) in cases {
            let got = check_secret(&secret, &token, now()).map(|user| {
                assert_eq!(user.name, "system:bootstrap:abcdef");
                assert_eq!(user.groups, vec![BOOTSTRAPPERS_GROUP.to_owned()]);
            });
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn extra_groups_must_stay_under_bootstrappers() {
        let token = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let mut s = secret("abcdef", "0123456789abcdef", None, "true");
        s["data"][KEY_EXTRA_GROUPS] = json!(b64("system:bootstrappers:karmada"));
        let user = check_secret(&s, &token, now()).unwrap();
        assert_eq!(
            user.groups,
            vec![
                BOOTSTRAPPERS_GROUP.to_owned(),
                "system:bootstrappers:karmada".to_owned()
            ]
        );
        s["data"][KEY_EXTRA_GROUPS] = json!(b64("system:masters"));
        assert_eq!(
            check_secret(&s, &token, now()),
            Err(Rejection::BadExtraGroup("system:masters".into()))
        );
    }

    #[tokio::test]
    async fn authenticator_reads_the_store() {
        let store: Arc<dyn Store> = Arc::new(store::memory::MemoryStore::new());
        let token = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let s = secret(
            "abcdef",
            "0123456789abcdef",
            Some("2999-01-01T00:00:00Z"),
            "true",
        );
        store
            .create(
                &secret_store_key("abcdef"),
                serde_json::to_vec(&s).unwrap().into(),
            )
            .await
            .unwrap();
        let authn = BootstrapTokenAuthenticator::new(store);
        let user = authn
            .authenticate_token(&token.to_string())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(
            authn
                .authenticate_token("abcdef.0123456789abcdeX")
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            authn
                .authenticate_token("zzzzzz.0123456789abcdef")
                .await
                .unwrap(),
            None
        );
        assert_eq!(authn.authenticate_token("not-a-token").await.unwrap(), None);
    }
}
