//! Authentication: from a request's credentials to a [`UserInfo`].
//!
//! Order, as in kube-apiserver: a verified client certificate wins; otherwise a bearer token is
//! offered to each [`TokenAuthenticator`] in turn; a request with no credentials is anonymous
//! (when anonymous access is enabled) and RBAC decides what it may do. A token that no
//! authenticator accepts is an error (401), never a silent downgrade to anonymous.
//!
//! Every authenticated user is in `system:authenticated`; anonymous is in
//! `system:unauthenticated`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use http::HeaderMap;
use x509_parser::prelude::X509Certificate;

use crate::user::{AUTHENTICATED_GROUP, UserInfo};

#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("invalid bearer token")]
    InvalidToken,
    #[error("invalid client certificate: {0}")]
    InvalidCertificate(String),
    /// An authenticator could not decide (e.g. its backing store failed).
    #[error("authenticator unavailable: {0}")]
    Unavailable(String),
}

/// A source of bearer-token identities: static tokens, bootstrap tokens
/// ([`crate::bootstrap_token`]), ServiceAccount tokens ([`crate::service_account`]).
#[async_trait::async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// `Ok(Some(user))` if this authenticator recognises the token, `Ok(None)` if the token is
    /// not one of its kind or unknown to it.
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, AuthError>;
}

/// A connection's verified client certificate, read once when the TLS handshake ends: every request on the
/// connection is its user. Why: parsing the certificate again on every request was about 3 % of the API
/// server's CPU.
#[derive(Clone, Debug)]
pub struct PeerIdentity(Result<UserInfo, AuthError>);

impl PeerIdentity {
    /// The identity of the leaf certificate `der` (already verified against the CA by the TLS layer).
    pub fn from_der(der: &[u8]) -> Self {
        Self(user_from_client_cert(der))
    }
}

/// The user a verified client certificate names: CN is the user, each O a group.
pub fn user_from_client_cert(der: &[u8]) -> Result<UserInfo, AuthError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| AuthError::InvalidCertificate(format!("not an X.509 certificate: {e}")))?;
    user_from_parsed_cert(&cert)
}

fn user_from_parsed_cert(cert: &X509Certificate<'_>) -> Result<UserInfo, AuthError> {
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())
        .ok_or_else(|| AuthError::InvalidCertificate("subject has no common name".into()))?;
    let mut groups = Vec::new();
    for org in subject.iter_organization() {
        let org = org
            .as_str()
            .map_err(|e| AuthError::InvalidCertificate(format!("unreadable organization: {e}")))?;
        push_unique(&mut groups, org);
    }
    push_unique(&mut groups, AUTHENTICATED_GROUP);
    Ok(UserInfo {
        name: name.to_owned(),
        uid: String::new(),
        groups,
    })
}

fn push_unique(groups: &mut Vec<String>, group: &str) {
    if !groups.iter().any(|g| g == group) {
        groups.push(group.to_owned());
    }
}

/// The bearer token of an `Authorization: Bearer <token>` header, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("token file line {line}: {message} (expected: token,user,uid[,\"group1,group2\"])")]
    Line { line: usize, message: String },
}

/// Static tokens, in kube-apiserver's `--token-auth-file` CSV format:
/// `token,user,uid[,"group1,group2"]`. Blank lines and lines starting with `#` are skipped.
#[derive(Clone, Debug, Default)]
pub struct StaticTokens {
    users: HashMap<String, UserInfo>,
}

impl StaticTokens {
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads a token file (blocking; call at startup).
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse_csv(&text)
    }

    pub fn parse_csv(text: &str) -> Result<Self, TokenFileError> {
        let mut tokens = Self::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let fields = split_csv_line(trimmed)
                .map_err(|message| TokenFileError::Line { line, message })?;
            if fields.len() < 3 {
                return Err(TokenFileError::Line {
                    line,
                    message: format!("{} fields, need at least 3", fields.len()),
                });
            }
            let (token, name, uid) = (&fields[0], &fields[1], &fields[2]);
            if token.is_empty() || name.is_empty() {
                return Err(TokenFileError::Line {
                    line,
                    message: "token and user must not be empty".into(),
                });
            }
            let groups = fields
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if tokens.users.contains_key(token) {
                return Err(TokenFileError::Line {
                    line,
                    message: "duplicate token".into(),
                });
            }
            tokens.insert(
                token,
                UserInfo {
                    name: name.clone(),
                    uid: uid.clone(),
                    groups,
                },
            );
        }
        Ok(tokens)
    }

    /// Adds a token (`system:authenticated` is added to its groups).
    pub fn insert(&mut self, token: &str, mut user: UserInfo) {
        push_unique(&mut user.groups, AUTHENTICATED_GROUP);
        self.users.insert(token.to_owned(), user);
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for StaticTokens {
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, AuthError> {
        Ok(self.users.get(token).cloned())
    }
}

/// Splits one CSV record: comma-separated, fields optionally double-quoted, `""` inside quotes
/// is a literal quote.
fn split_csv_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut in_quotes = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (in_quotes, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => in_quotes = false,
            (true, c) => field.push(c),
            (false, '"') if field.trim().is_empty() && !was_quoted => {
                field.clear();
                in_quotes = true;
                was_quoted = true;
            }
            (false, '"') => return Err("stray double quote inside an unquoted field".into()),
            (false, ',') => {
                fields.push(finish_field(&mut field, was_quoted));
                was_quoted = false;
            }
            (false, c) if was_quoted && !c.is_whitespace() => {
                return Err("text after a closing double quote".into());
            }
            (false, c) => field.push(c),
        }
    }
    if in_quotes {
        return Err("unterminated double quote".into());
    }
    fields.push(finish_field(&mut field, was_quoted));
    Ok(fields)
}

fn finish_field(field: &mut String, quoted: bool) -> String {
    let value = std::mem::take(field);
    if quoted {
        value
    } else {
        value.trim().to_owned()
    }
}

/// The request authenticator: client certificates, then bearer tokens, then anonymous.
pub struct Authenticator {
    token_authenticators: Vec<Arc<dyn TokenAuthenticator>>,
    anonymous: bool,
}

impl Default for Authenticator {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Authenticator {
    /// Certificates plus, when given, the static tokens of a `--token-auth-file`; anonymous
    /// requests allowed (RBAC still applies).
    pub fn new(static_tokens: Option<StaticTokens>) -> Self {
        let token_authenticators: Vec<Arc<dyn TokenAuthenticator>> = match static_tokens {
            Some(tokens) => vec![Arc::new(tokens)],
            None => Vec::new(),
        };
        Self {
            token_authenticators,
            anonymous: true,
        }
    }

    /// Adds a token authenticator; they are consulted in the order added.
    pub fn with_token_authenticator(mut self, authenticator: Arc<dyn TokenAuthenticator>) -> Self {
        self.token_authenticators.push(authenticator);
        self
    }

    /// Whether requests without credentials become `system:anonymous` (default) or are
    /// rejected with 401.
    pub fn with_anonymous(mut self, enabled: bool) -> Self {
        self.anonymous = enabled;
        self
    }

    /// Authenticates one request. `peer` is the connection's client certificate, which the TLS
    /// layer already verified against the CA. `Ok(None)` means no credentials and anonymous
    /// access is disabled (the caller answers 401).
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&PeerIdentity>,
    ) -> Result<Option<UserInfo>, AuthError> {
        if let Some(PeerIdentity(user)) = peer {
            return user.clone().map(Some);
        }
        if let Some(token) = bearer_token(headers) {
            for authenticator in &self.token_authenticators {
                if let Some(mut user) = authenticator.authenticate_token(token).await? {
                    push_unique(&mut user.groups, AUTHENTICATED_GROUP);
                    return Ok(Some(user));
                }
            }
            return Err(AuthError::InvalidToken);
        }
        Ok(self.anonymous.then(UserInfo::anonymous))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::Pki;
    use rustls_pki_types::{CertificateDer, pem::PemObject};

    fn user(name: &str, uid: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            uid: uid.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        }
    }

    fn headers(authorization: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = authorization {
            h.insert(http::header::AUTHORIZATION, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn token_file_parses_kube_apiserver_format() {
        let text = "# comment\n\
                    t1,alice,u1,\"dev,ops\"\n\
                    \n\
                    t2, bob ,u2\n\
                    t3,carol,u3,viewers\n";
        let tokens = StaticTokens::parse_csv(text).unwrap();
        assert_eq!(tokens.len(), 3);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let cases = [
            (
                "t1",
                Some(user("alice", "u1", &["dev", "ops", AUTHENTICATED_GROUP])),
            ),
            ("t2", Some(user("bob", "u2", &[AUTHENTICATED_GROUP]))),
            (
                "t3",
                Some(user("carol", "u3", &["viewers", AUTHENTICATED_GROUP])),
            ),
            ("nope", None),
        ];
        for (token, want) in cases {
            let got = rt.block_on(tokens.authenticate_token(token)).unwrap();
            assert_eq!(got, want, "{token}");
        }
    }

    #[test]
    fn bad_token_files_name_the_line_and_the_format() {
        let cases = [
            ("t1,alice\n", 1, "need at least 3"),
            ("t1,alice,u1\nt1,bob,u2\n", 2, "duplicate token"),
            ("t1,alice,u1,\"dev\n", 1, "unterminated"),
            (",alice,u1\n", 1, "must not be empty"),
            ("t1,al\"ice,u1\n", 1, "stray double quote"),
        ];
        for (text, line, fragment) in cases {
            let err = StaticTokens::parse_csv(text).unwrap_err().to_string();
            assert!(err.contains(&format!("line {line}:")), "{err}");
            assert!(err.contains(fragment), "{err}");
            assert!(err.contains("token,user,uid"), "{err}");
        }
    }

    #[test]
    fn csv_quoting_rules() {
        assert_eq!(
            split_csv_line(r#"a,"b,c","d""e""#).unwrap(),
            vec!["a", "b,c", r#"d"e"#]
        );
        assert_eq!(split_csv_line("a,,b").unwrap(), vec!["a", "", "b"]);
    }

    #[test]
    fn bearer_token_extraction() {
        let cases = [
            (Some("Bearer abc"), Some("abc")),
            (Some("bearer  abc "), Some("abc")),
            (Some("Basic Zm9vOmJhcg=="), None),
            (Some("Bearer "), None),
            (None, None),
        ];
        for (header, want) in cases {
            assert_eq!(bearer_token(&headers(header)), want, "{header:?}");
        }
    }

    #[tokio::test]
    async fn authenticator_order_and_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let admin_der = CertificateDer::from_pem_slice(pki.admin().cert_pem.as_bytes()).unwrap();
        let mut tokens = StaticTokens::new();
        tokens.insert("good", user("alice", "u1", &["dev"]));
        let authn = Authenticator::new(Some(tokens));

        // A certificate wins over a token.
        let got = authn
            .authenticate(
                &headers(Some("Bearer good")),
                Some(&PeerIdentity::from_der(&admin_der)),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.name, "system:admin");
        assert_eq!(got.groups, vec!["system:masters", AUTHENTICATED_GROUP]);

        let got = authn
            .authenticate(&headers(Some("Bearer good")), None)
            .await
            .unwrap();
        assert_eq!(
            got,
            Some(user("alice", "u1", &["dev", AUTHENTICATED_GROUP]))
        );

        let err = authn
            .authenticate(&headers(Some("Bearer bad")), None)
            .await
            .unwrap_err();
        assert_eq!(err, AuthError::InvalidToken);

        let got = authn.authenticate(&headers(None), None).await.unwrap();
        assert_eq!(got, Some(UserInfo::anonymous()));

        let strict = Authenticator::new(None).with_anonymous(false);
        assert_eq!(
            strict.authenticate(&headers(None), None).await.unwrap(),
            None
        );

        // A connection whose certificate names no user fails every request on it, token or not.
        let unreadable = PeerIdentity::from_der(b"not a cert");
        for header in [Some("Bearer good"), None] {
            let err = authn
                .authenticate(&headers(header), Some(&unreadable))
                .await
                .unwrap_err();
            assert!(matches!(err, AuthError::InvalidCertificate(_)), "{err:?}");
        }
    }

    #[test]
    fn garbage_certificate_is_rejected() {
        let err = user_from_client_cert(b"not a cert").unwrap_err();
        assert!(matches!(err, AuthError::InvalidCertificate(_)));
    }
}
