//! Sessions: a random id in an HttpOnly, Secure, SameSite=Strict cookie, mapped on the server to the user's
//! client and a CSRF token. Nothing else is kept per user, and nothing is shared between sessions.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderMap;
use parking_lot::Mutex;

pub const COOKIE: &str = "karmada-dashboard-session";
/// A session lives at most this long; the user's token may end it sooner (a 401).
const MAX_AGE: Duration = Duration::from_secs(12 * 3600);
/// Bounds memory if logins are scripted; the oldest sessions go first.
const MAX_SESSIONS: usize = 10_000;

pub struct Session {
    pub user: String,
    pub client: kube::Client,
    pub csrf: String,
    created: Instant,
}

#[derive(Default)]
pub struct Sessions {
    inner: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    /// Stores a new session and returns its id.
    pub fn create(&self, user: String, client: kube::Client) -> String {
        let id = random_token();
        let session = Arc::new(Session {
            user,
            client,
            csrf: random_token(),
            created: Instant::now(),
        });
        let mut inner = self.inner.lock();
        inner.retain(|_, s| s.created.elapsed() < MAX_AGE);
        if inner.len() >= MAX_SESSIONS
            && let Some(oldest) = inner
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone())
        {
            inner.remove(&oldest);
        }
        inner.insert(id.clone(), session);
        id
    }

    /// The session the request's cookie names, if it is live.
    pub fn of_request(&self, headers: &HeaderMap) -> Option<(String, Arc<Session>)> {
        let id = cookie_value(headers, COOKIE)?;
        let mut inner = self.inner.lock();
        let session = inner.get(&id)?.clone();
        if session.created.elapsed() >= MAX_AGE {
            inner.remove(&id);
            return None;
        }
        Some((id, session))
    }

    pub fn end(&self, id: &str) {
        self.inner.lock().remove(id);
    }

    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// 32 random bytes, hex.
pub fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The Set-Cookie value for a session id (an empty id clears the cookie).
pub fn set_cookie(id: &str) -> String {
    let max_age = if id.is_empty() { 0 } else { MAX_AGE.as_secs() };
    format!("{COOKIE}={id}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age={max_age}")
}

/// A cookie's value from the Cookie headers.
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
}

/// Compares secrets in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cookie_is_found_among_others_and_flags_are_set() {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::COOKIE,
            "a=1; karmada-dashboard-session=xyz; b=2".parse().unwrap(),
        );
        assert_eq!(cookie_value(&headers, COOKIE).as_deref(), Some("xyz"));
        let cookie = set_cookie("xyz");
        for flag in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
            assert!(cookie.contains(flag), "{cookie}");
        }
        assert!(set_cookie("").contains("Max-Age=0"));
    }

    #[test]
    fn tokens_are_random_and_secrets_compare_exactly() {
        let a = random_token();
        assert_eq!(a.len(), 64);
        assert_ne!(a, random_token());
        assert!(same_secret(&a, &a.clone()));
        assert!(!same_secret(&a, &random_token()));
        assert!(!same_secret("ab", "abc"));
    }
}
