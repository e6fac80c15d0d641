//! Forwards one request to an aggregated API, as kube-aggregator's proxy handler does: the
//! caller is authenticated here and named to the backend in the front-proxy headers; its own
//! credentials, impersonation headers and any `X-Remote-*` it sent are not passed on. The
//! backend authorizes (kube-aggregator does not authorize resource requests it proxies).

use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::ApiError;
use apiserver_auth::UserInfo;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue, header};

use super::Route;
use crate::respond::error_response;
use crate::server::ApiServer;

/// Time for the backend to send its response headers (a watch sends them at once).
const RESPONSE_HEADERS_TIMEOUT: Duration = Duration::from_secs(60);

pub const REMOTE_USER: &str = "x-remote-user";
pub const REMOTE_GROUP: &str = "x-remote-group";
const REMOTE_EXTRA_PREFIX: &str = "x-remote-extra-";

/// Headers that describe one hop or carry the caller's credentials.
const NOT_FORWARDED: &[&str] = &[
    "authorization",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "host",
    "content-length",
];

pub async fn serve(server: &Arc<ApiServer>, route: Route, request: Request) -> Response {
    let started = Instant::now();
    let response = match forward(server, route, request).await {
        Ok(response) => response,
        Err(error) => error_response(&error),
    };
    tracing::debug!(
        target: "karmada_apiserver::requests",
        aggregated = true,
        status = response.status().as_u16(),
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
    );
    response
}

/// The request headers the backend gets: the caller's minus credentials and hop-by-hop ones,
/// plus the caller's identity.
pub fn forwarded_headers(caller: &HeaderMap, user: &UserInfo) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in caller {
        let lower = name.as_str();
        if NOT_FORWARDED.contains(&lower)
            || lower.starts_with("impersonate-")
            || lower == REMOTE_USER
            || lower == REMOTE_GROUP
            || lower.starts_with(REMOTE_EXTRA_PREFIX)
        {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    if let Ok(value) = HeaderValue::from_str(&user.name) {
        headers.insert(HeaderName::from_static(REMOTE_USER), value);
    }
    for group in &user.groups {
        if let Ok(value) = HeaderValue::from_str(group) {
            headers.append(HeaderName::from_static(REMOTE_GROUP), value);
        }
    }
    headers
}

async fn forward(
    server: &Arc<ApiServer>,
    route: Route,
    request: Request,
) -> Result<Response, ApiError> {
    let (api_service, url, client) = match route {
        Route::Available {
            api_service,
            url,
            client,
        } => (api_service, url, client),
        Route::Unavailable {
            api_service,
            reason,
            message,
        } => {
            return Err(ApiError::service_unavailable(format!(
                "the APIService {api_service} is not available (Available=False, reason {reason}): {message}"
            )));
        }
    };
    let (parts, body) = request.into_parts();
    let user = parts
        .extensions
        .get::<UserInfo>()
        .cloned()
        .or_else(|| server.default_user())
        .ok_or_else(ApiError::unauthorized)?;
    let bytes = crate::request_body::read_limited(
        body,
        server.options.max_body_bytes,
        parts.version,
        &parts.headers,
    )
    .await?;
    let uri = match parts.uri.query() {
        Some(query) => format!("{}?{query}", parts.uri.path()),
        None => parts.uri.path().to_string(),
    };
    let mut outgoing = http::Request::builder()
        .method(parts.method)
        .uri(uri)
        .body(kube::client::Body::from(bytes.to_vec()))
        .map_err(|e| ApiError::bad_request(format!("invalid request: {e}")))?;
    *outgoing.headers_mut() = forwarded_headers(&parts.headers, &user);
    let unreachable = |reason: String| {
        ApiError::service_unavailable(format!(
            "error trying to reach service: the APIService {api_service} at {url}: {reason}"
        ))
    };
    let answer = tokio::time::timeout(RESPONSE_HEADERS_TIMEOUT, client.send(outgoing))
        .await
        .map_err(|_| {
            unreachable(format!(
                "no response within {}s",
                RESPONSE_HEADERS_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| unreachable(e.to_string()))?;
    let (backend, backend_body) = answer.into_parts();
    let mut response = Response::new(Body::new(backend_body));
    *response.status_mut() = backend.status;
    let mut headers = backend.headers;
    for name in [
        "connection",
        "keep-alive",
        "transfer-encoding",
        "upgrade",
        "te",
        "trailer",
    ] {
        headers.remove(name);
    }
    *response.headers_mut() = headers;
    if !response.headers().contains_key(header::CONTENT_TYPE) {
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    Ok(response)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_is_named_and_its_credentials_stay_here() {
        let mut caller = HeaderMap::new();
        caller.insert("authorization", "Bearer secret".parse().unwrap());
        caller.insert("impersonate-user", "root".parse().unwrap());
        caller.insert("x-remote-user", "forged".parse().unwrap());
        caller.insert("x-remote-extra-scopes", "forged".parse().unwrap());
        caller.insert("accept", "application/json".parse().unwrap());
        let user = UserInfo {
            name: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
        };
        let headers = forwarded_headers(&caller, &user);
        assert_eq!(headers.get("accept").unwrap(), "application/json");
        assert_eq!(headers.get(REMOTE_USER).unwrap(), "alice");
        let groups: Vec<&str> = headers
            .get_all(REMOTE_GROUP)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(groups, ["dev", "system:authenticated"]);
        for gone in ["authorization", "impersonate-user", "x-remote-extra-scopes"] {
            assert!(!headers.contains_key(gone), "{gone}");
        }
    }
}
