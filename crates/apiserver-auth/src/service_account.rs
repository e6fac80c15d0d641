//! ServiceAccount tokens: the JWTs the `serviceaccounts/token` subresource (TokenRequest, what
//! `kubectl create token` asks for) and the legacy `kubernetes.io/service-account-token` Secrets
//! carry, signed with an ES256 key kept beside the certificates, and the authenticator that
//! accepts them, as kube-apiserver's service account authenticator does.
//!
//! A bound token names its ServiceAccount (and uid) under the `kubernetes.io` claim, has an
//! issuer, audiences and an expiry; a legacy token has the issuer `kubernetes/serviceaccount`, no
//! expiry, and names the Secret that holds it. Either is accepted only while what it names still
//! exists with the same uid (a legacy one while its Secret still holds it), so deleting the
//! ServiceAccount revokes its tokens. The user is `system:serviceaccount:<ns>:<name>` in
//! `system:serviceaccounts` and `system:serviceaccounts:<ns>`.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};
use store::Store;

use crate::authn::{AuthError, TokenAuthenticator};
use crate::user::{AUTHENTICATED_GROUP, UserInfo};

/// The signing key's file in the PKI directory (kube-apiserver calls its own `sa.key` too).
pub const KEY_FILE: &str = "sa.key";
/// The issuer and default audience of bound tokens: kube-apiserver's usual `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The issuer of legacy Secret-held tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The Secret type whose tokens the server mints.
pub const SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming the ServiceAccount of a token Secret.
pub const SERVICE_ACCOUNT_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation recording that ServiceAccount's uid.
pub const SERVICE_ACCOUNT_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
const USER_PREFIX: &str = "system:serviceaccount:";
/// Clock skew tolerated on `exp` and `nbf`, as kube-apiserver allows.
const LEEWAY_SECONDS: i64 = 60;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("service account signing key: {0}")]
    Key(String),
}

/// Why a token was not accepted (logged; the client only sees 401).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Rejection {
    #[error("not a JWT")]
    NotJwt,
    #[error("signature does not verify")]
    BadSignature,
    #[error("issuer {0:?} is not this server's")]
    Issuer(String),
    #[error("no audience of the token is accepted here")]
    Audience,
    #[error("token expired or not yet valid")]
    Expired,
    #[error("claims do not name a service account")]
    Claims,
}

/// What a verified token names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenSubject {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The Secret holding a legacy token.
    pub secret: Option<String>,
}

/// A request for a bound token.
#[derive(Clone, Debug)]
pub struct BoundToken<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub audiences: &'a [String],
    pub expiration_seconds: i64,
}

/// Signs and verifies ServiceAccount tokens with one ES256 key.
pub struct TokenIssuer {
    key: EcdsaKeyPair,
    key_id: String,
    issuer: String,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("key_id", &self.key_id)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl TokenIssuer {
    /// The key in `dir/sa.key`, generated on first use (blocking; call at startup).
    pub fn load_or_create(dir: &Path) -> Result<Self, KeyError> {
        let path = dir.join(KEY_FILE);
        let pem = match std::fs::read_to_string(&path) {
            Ok(pem) => pem,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let pem = rcgen::KeyPair::generate()
                    .map_err(|e| KeyError::Key(e.to_string()))?
                    .serialize_pem();
                crate::pki::write_private(&path, pem.as_bytes()).map_err(|e| KeyError::File {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })?;
                pem
            }
            Err(e) => {
                return Err(KeyError::File {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        Self::from_pem(&pem)
    }

    /// An issuer signing with a PKCS#8 P-256 key in PEM.
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        let der = match PrivateKeyDer::from_pem_slice(pem.as_bytes()) {
            Ok(PrivateKeyDer::Pkcs8(der)) => der,
            Ok(_) => return Err(KeyError::Key("expected a PKCS#8 P-256 key".into())),
            Err(e) => return Err(KeyError::Key(e.to_string())),
        };
        let key = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            der.secret_pkcs8_der(),
            &SystemRandom::new(),
        )
        .map_err(|e| KeyError::Key(e.to_string()))?;
        // The key id is a digest of the public key, as kube-apiserver derives its own.
        let digest = <sha2::Sha256 as sha2::Digest>::digest(key.public_key().as_ref());
        let key_id = URL_SAFE_NO_PAD.encode(digest);
        Ok(Self {
            key,
            key_id,
            issuer: DEFAULT_ISSUER.into(),
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The public half of the signing key as a JSON Web Key (RFC 7517/7518: an EC P-256 point), so that
    /// relying parties outside the cluster can verify tokens, as kube-apiserver publishes its keys.
    pub fn public_jwk(&self) -> Value {
        // ring gives the uncompressed SEC1 point: 0x04, then X and Y, 32 bytes each.
        let point = self.key.public_key().as_ref();
        let (x, y) = point
            .get(1..)
            .unwrap_or_default()
            .split_at(point.len().saturating_sub(1) / 2);
        json!({
            "use": "sig",
            "kty": "EC",
            "kid": self.key_id,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        })
    }

    /// `/openid/v1/jwks`: the key set tokens are signed with.
    pub fn jwks(&self) -> Value {
        json!({"keys": [self.public_jwk()]})
    }

    /// `/.well-known/openid-configuration`: OIDC discovery for the issuer, pointing at `jwks_uri`.
    pub fn openid_configuration(&self, jwks_uri: &str) -> Value {
        json!({
            "issuer": self.issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    }

    /// A bound token for a ServiceAccount, valid from `now` for `expiration_seconds`.
    pub fn issue_bound(
        &self,
        request: &BoundToken<'_>,
        now: Timestamp,
    ) -> Result<String, KeyError> {
        let issued = now.as_second();
        let claims = json!({
            "aud": request.audiences,
            "exp": issued + request.expiration_seconds,
            "iat": issued,
            "iss": self.issuer,
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": {
                "namespace": request.namespace,
                "serviceaccount": {"name": request.name, "uid": request.uid},
            },
            "nbf": issued,
            "sub": format!("{USER_PREFIX}{}:{}", request.namespace, request.name),
        });
        self.sign(&claims)
    }

    /// A legacy token for the token Secret `secret` of a ServiceAccount: no expiry.
    pub fn issue_legacy(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        secret: &str,
    ) -> Result<String, KeyError> {
        let claims = json!({
            "iss": LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": namespace,
            "kubernetes.io/serviceaccount/secret.name": secret,
            "kubernetes.io/serviceaccount/service-account.name": name,
            "kubernetes.io/serviceaccount/service-account.uid": uid,
            "sub": format!("{USER_PREFIX}{namespace}:{name}"),
        });
        self.sign(&claims)
    }

    fn sign(&self, claims: &Value) -> Result<String, KeyError> {
        let header = json!({"alg": "ES256", "kid": self.key_id});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .key
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|e| KeyError::Key(e.to_string()))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }

    /// What a token names, if this key signed it and it is valid at `now` for `audiences`.
    pub fn verify(
        &self,
        token: &str,
        audiences: &[String],
        now: Timestamp,
    ) -> Result<TokenSubject, Rejection> {
        let mut parts = token.split('.');
        let (Some(header_part), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Rejection::NotJwt);
        };
        let header: Value = decode_part(header_part).ok_or(Rejection::NotJwt)?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(Rejection::BadSignature);
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| Rejection::NotJwt)?;
        let signed = &token[..header_part.len() + 1 + payload.len()];
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref())
            .verify(signed.as_bytes(), &signature)
            .map_err(|_| Rejection::BadSignature)?;
        let claims: Value = decode_part(payload).ok_or(Rejection::Claims)?;
        let text = |pointer: &str| {
            claims
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        match claims.get("iss").and_then(Value::as_str) {
            Some(LEGACY_ISSUER) => Ok(TokenSubject {
                namespace: text("/kubernetes.io~1serviceaccount~1namespace")
                    .ok_or(Rejection::Claims)?,
                name: text("/kubernetes.io~1serviceaccount~1service-account.name")
                    .ok_or(Rejection::Claims)?,
                uid: text("/kubernetes.io~1serviceaccount~1service-account.uid")
                    .ok_or(Rejection::Claims)?,
                secret: Some(
                    text("/kubernetes.io~1serviceaccount~1secret.name").ok_or(Rejection::Claims)?,
                ),
            }),
            Some(issuer) if issuer == self.issuer => {
                check_times(&claims, now)?;
                let accepted = match claims.get("aud") {
                    Some(Value::String(one)) => audiences.contains(one),
                    Some(Value::Array(many)) => many
                        .iter()
                        .filter_map(Value::as_str)
                        .any(|a| audiences.iter().any(|b| b == a)),
                    _ => false,
                };
                if !accepted {
                    return Err(Rejection::Audience);
                }
                Ok(TokenSubject {
                    namespace: text("/kubernetes.io/namespace").ok_or(Rejection::Claims)?,
                    name: text("/kubernetes.io/serviceaccount/name").ok_or(Rejection::Claims)?,
                    uid: text("/kubernetes.io/serviceaccount/uid").ok_or(Rejection::Claims)?,
                    secret: None,
                })
            }
            other => Err(Rejection::Issuer(other.unwrap_or_default().to_string())),
        }
    }
}

fn decode_part(part: &str) -> Option<Value> {
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The `exp` claim of a token already verified (`None` for legacy tokens, which have none).
fn expiry(token: &str) -> Option<i64> {
    let payload = token.split('.').nth(1)?;
    decode_part(payload)?.get("exp")?.as_i64()
}

fn check_times(claims: &Value, now: Timestamp) -> Result<(), Rejection> {
    let now = now.as_second();
    let exp = claims.get("exp").and_then(Value::as_i64);
    let nbf = claims.get("nbf").and_then(Value::as_i64);
    match (exp, nbf) {
        (Some(exp), _) if now > exp + LEEWAY_SECONDS => Err(Rejection::Expired),
        (_, Some(nbf)) if now + LEEWAY_SECONDS < nbf => Err(Rejection::Expired),
        (None, _) => Err(Rejection::Expired),
        _ => Ok(()),
    }
}

/// The user a ServiceAccount authenticates as.
pub fn service_account_user(namespace: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        name: format!("{USER_PREFIX}{namespace}:{name}"),
        uid: uid.to_string(),
        groups: vec![
            SERVICE_ACCOUNTS_GROUP.to_string(),
            format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
            AUTHENTICATED_GROUP.to_string(),
        ],
    }
}

/// Accepts the tokens of [`TokenIssuer`] whose ServiceAccount (and, for legacy tokens, Secret)
/// still exists: read from the store on each request, so a deletion revokes at once.
pub struct ServiceAccountTokenAuthenticator {
    issuer: Arc<TokenIssuer>,
    audiences: Vec<String>,
    store: Arc<dyn Store>,
    /// Tokens whose signature verified, by digest: a controller sends the same token on every request, and an
    /// ECDSA verification costs far more than the lookups that follow. Expiry is still checked on each use.
    verified: parking_lot::Mutex<std::collections::HashMap<[u8; 32], VerifiedToken>>,
}

/// What a verified token names, and its `exp` (legacy tokens have none).
type VerifiedToken = (TokenSubject, Option<i64>);

/// Verified tokens remembered at most; the map is emptied when full (tokens are long-lived and few).
const VERIFIED_CAPACITY: usize = 1024;

impl ServiceAccountTokenAuthenticator {
    pub fn new(issuer: Arc<TokenIssuer>, store: Arc<dyn Store>) -> Self {
        let audiences = vec![issuer.issuer().to_string()];
        Self {
            issuer,
            audiences,
            store,
            verified: Default::default(),
        }
    }

    /// [`TokenIssuer::verify`], remembering what verified.
    fn verify(&self, token: &str, now: Timestamp) -> Result<TokenSubject, Rejection> {
        let digest: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()).into();
        if let Some((subject, expires)) = self.verified.lock().get(&digest) {
            if expires.is_some_and(|exp| now.as_second() > exp + LEEWAY_SECONDS) {
                return Err(Rejection::Expired);
            }
            return Ok(subject.clone());
        }
        let subject = self.issuer.verify(token, &self.audiences, now)?;
        let expires = expiry(token);
        let mut verified = self.verified.lock();
        if verified.len() >= VERIFIED_CAPACITY {
            verified.clear();
        }
        verified.insert(digest, (subject.clone(), expires));
        Ok(subject)
    }

    async fn stored(&self, key: &str) -> Result<Option<Value>, AuthError> {
        let Some(kv) = self
            .store
            .get(key)
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?
        else {
            return Ok(None);
        };
        serde_json::from_slice(&kv.value)
            .map(Some)
            .map_err(|e| AuthError::Unavailable(format!("stored object unreadable: {e}")))
    }
}

/// Whether a stored object is live (not being deleted) and has `uid`.
fn live_with_uid(object: &Value, uid: &str) -> bool {
    object.pointer("/metadata/uid").and_then(Value::as_str) == Some(uid)
        && object.pointer("/metadata/deletionTimestamp").is_none()
}

/// Whether a token Secret still holds `token` for the ServiceAccount `uid`.
pub fn secret_holds(secret: &Value, token: &str) -> bool {
    let held = secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok());
    secret.get("type").and_then(Value::as_str) == Some(SECRET_TYPE)
        && secret.pointer("/metadata/deletionTimestamp").is_none()
        && held.as_deref() == Some(token.as_bytes())
}

#[async_trait::async_trait]
impl TokenAuthenticator for ServiceAccountTokenAuthenticator {
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, AuthError> {
        let subject = match self.verify(token, Timestamp::now()) {
            Ok(subject) => subject,
            Err(Rejection::NotJwt) => return Ok(None),
            Err(reason) => {
                tracing::info!(%reason, "service account token rejected");
                return Ok(None);
            }
        };
        let account = self
            .stored(&format!(
                "/registry/core/serviceaccounts/{}/{}",
                subject.namespace, subject.name
            ))
            .await?;
        if !account.is_some_and(|a| live_with_uid(&a, &subject.uid)) {
            tracing::info!(namespace = %subject.namespace, name = %subject.name,
                "service account token rejected: the service account is gone");
            return Ok(None);
        }
        if let Some(secret_name) = &subject.secret {
            let secret = self
                .stored(&format!(
                    "/registry/core/secrets/{}/{secret_name}",
                    subject.namespace
                ))
                .await?;
            if !secret.is_some_and(|s| secret_holds(&s, token)) {
                tracing::info!(namespace = %subject.namespace, secret = %secret_name,
                    "legacy service account token rejected: its Secret is gone");
                return Ok(None);
            }
        }
        Ok(Some(service_account_user(
            &subject.namespace,
            &subject.name,
            &subject.uid,
        )))
    }
}

#[cfg(test)]
mod tests;
