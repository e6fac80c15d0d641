//! The Cluster `proxy` subresource: `/apis/cluster.karmada.io/v1alpha1/clusters/NAME/proxy/<path>`
//! forwards the request to the member's API with the control plane's credentials for that cluster
//! (the Cluster's `spec.apiEndpoint` and its Secret in `karmada-cluster`) and hands back the
//! member's status, headers and body, streamed (watches stay open).
//!
//! Upgrades pass through (`kubectl exec`, `attach`, `port-forward` against the member's kubelet
//! endpoints): the upgrade headers go to the member, and when it switches protocols the two
//! upgraded connections are joined byte for byte until either side closes.
//!
//! The caller is authorized on `clusters/proxy` with the verb of the method (GET `get`, POST
//! `create`, PUT `update`, PATCH `patch`, DELETE `delete`), as kube-apiserver does for proxy
//! subresources. Failures that are ours (unknown cluster, no credentials, member unreachable) come
//! back as `Status` objects; the member's own errors pass through unchanged.

use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::ApiError;
use apiserver_auth::{RequestAttributes, UserInfo, forbidden_message};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use base64::Engine;
use http::{HeaderMap, HeaderName, Method, header};
use karmada_api::Cluster;
use karmada_api::cluster::{ClusterSyncMode, GROUP, VERSION};
use serde_json::Value;

use crate::respond::error_response;
use crate::server::ApiServer;

/// A member that does not accept a connection by then is reported unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for the member to send its response headers (a watch sends them at once).
const RESPONSE_HEADERS_TIMEOUT: Duration = Duration::from_secs(60);

/// Request headers passed to the member: what says what the body is and what the caller accepts.
/// Credentials are never forwarded (the member gets the control plane's own).
const FORWARDED_REQUEST_HEADERS: &[HeaderName] =
    &[header::CONTENT_TYPE, header::ACCEPT, header::USER_AGENT];

/// Further request headers an upgrade needs (WebSocket handshake, SPDY stream protocol offer).
const UPGRADE_REQUEST_HEADERS: &[&str] = &[
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "x-stream-protocol-version",
];

/// Whether the client asks to switch protocols.
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
}

/// Response headers that describe one hop, not the message: our server sets its own.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
];

/// A parsed proxy request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyTarget {
    /// The Cluster's name.
    pub cluster: String,
    /// The path on the member, always starting with `/`.
    pub path: String,
}

/// The proxy target of `path`, when it addresses the Cluster `proxy` subresource.
pub fn parse_target(path: &str) -> Option<ProxyTarget> {
    let prefix = format!("/apis/{GROUP}/{VERSION}/clusters/");
    let rest = path.strip_prefix(&prefix)?;
    let (cluster, rest) = rest.split_once('/')?;
    let tail = rest.strip_prefix("proxy")?;
    if cluster.is_empty() || !(tail.is_empty() || tail.starts_with('/')) {
        return None;
    }
    Some(ProxyTarget {
        cluster: cluster.to_string(),
        path: if tail.is_empty() {
            "/".to_string()
        } else {
            tail.to_string()
        },
    })
}

/// The authorization verb of a proxy request's method.
pub fn verb_of(method: &Method) -> Option<&'static str> {
    match *method {
        Method::GET | Method::HEAD | Method::OPTIONS => Some("get"),
        Method::POST => Some("create"),
        Method::PUT => Some("update"),
        Method::PATCH => Some("patch"),
        Method::DELETE => Some("delete"),
        _ => None,
    }
}

/// Serves one proxy request end to end (authentication result, authorization, forwarding,
/// request metrics). `request` must have a path [`parse_target`] accepts.
pub async fn serve(server: Arc<ApiServer>, request: Request) -> Response {
    let started = Instant::now();
    server.metrics.request_started();
    let verb = verb_of(request.method()).unwrap_or("");
    let method = request.method().clone();
    let response = match handle(&server, request).await {
        Ok(response) => response,
        Err(err) => error_response(&err),
    };
    let labels = crate::metrics::RequestLabels {
        verb: if verb.is_empty() {
            crate::metrics::RequestLabels::non_resource(&method).verb
        } else {
            crate::metrics::reported_verb(verb)
        },
        group: GROUP.to_string(),
        version: VERSION.to_string(),
        resource: "clusters".to_string(),
        subresource: "proxy".to_string(),
        scope: "resource",
        component: crate::metrics::COMPONENT,
    };
    // The member's answer streams through: its size is not known here.
    server
        .metrics
        .observe_request(labels, response.status().as_u16(), started.elapsed(), None);
    server.metrics.request_finished();
    response
}

async fn handle(server: &Arc<ApiServer>, request: Request) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let upgrade = is_upgrade(&parts.headers);
    let client_upgrade = if upgrade {
        parts.extensions.remove::<hyper::upgrade::OnUpgrade>()
    } else {
        None
    };
    let target = parse_target(parts.uri.path()).ok_or_else(ApiError::not_found_path)?;
    let user = parts
        .extensions
        .get::<UserInfo>()
        .cloned()
        .or_else(|| server.default_user())
        .ok_or_else(ApiError::unauthorized)?;
    let verb = verb_of(&parts.method).ok_or_else(|| {
        ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({})",
            parts.method
        ))
    })?;
    let attrs = RequestAttributes {
        verb: verb.to_string(),
        api_group: GROUP.to_string(),
        resource: "clusters".to_string(),
        subresource: "proxy".to_string(),
        name: target.cluster.clone(),
        resource_request: true,
        path: parts.uri.path().to_string(),
        ..RequestAttributes::default()
    };
    if !server
        .authorizer
        .authorize(&user, &attrs)
        .await
        .is_allowed()
    {
        return Err(ApiError::forbidden(forbidden_message(&user, &attrs)));
    }
    let client = member_client(server, &target.cluster).await?;
    let limit = server.options.max_body_bytes;
    let bytes =
        crate::request_body::read_limited(body, limit, parts.version, &parts.headers).await?;
    let uri = match parts.uri.query() {
        Some(query) => format!("{}?{query}", target.path),
        None => target.path.clone(),
    };
    let mut forward = http::Request::builder().method(parts.method).uri(uri);
    for name in FORWARDED_REQUEST_HEADERS {
        if let Some(value) = parts.headers.get(name) {
            forward = forward.header(name, value);
        }
    }
    if upgrade {
        for name in UPGRADE_REQUEST_HEADERS {
            for value in parts.headers.get_all(*name) {
                forward = forward.header(*name, value);
            }
        }
    }
    let forward = forward
        .body(kube::client::Body::from(bytes))
        .map_err(|e| ApiError::bad_request(format!("invalid proxy request: {e}")))?;
    let unreachable = |reason: String| {
        ApiError::service_unavailable(format!(
            "the member cluster \"{}\" is unreachable through the proxy: {reason}",
            target.cluster
        ))
    };
    let answer = tokio::time::timeout(RESPONSE_HEADERS_TIMEOUT, client.send(forward))
        .await
        .map_err(|_| {
            unreachable(format!(
                "no response within {}s",
                RESPONSE_HEADERS_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| unreachable(apimachinery::error_chain(&e)))?;
    if answer.status() == http::StatusCode::SWITCHING_PROTOCOLS {
        let cancel = server.options.cancel.clone();
        return join_upgrades(client_upgrade, answer, &target.cluster, cancel);
    }
    let (member_parts, member_body) = answer.into_parts();
    let mut response = Response::new(Body::new(member_body));
    *response.status_mut() = member_parts.status;
    *response.headers_mut() = response_headers(&member_parts.headers);
    Ok(response)
}

/// The member switched protocols: answer the client with the member's 101 and its handshake headers,
/// then join the two upgraded connections. The joining task ends when either side closes.
fn join_upgrades(
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
    mut answer: http::Response<kube::client::Body>,
    cluster: &str,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<Response, ApiError> {
    let client_upgrade = client_upgrade.ok_or_else(|| {
        ApiError::bad_request(
            "the member switched protocols, but this connection can not be upgraded (use HTTP/1.1)",
        )
    })?;
    let member_upgrade = hyper::upgrade::on(&mut answer);
    let cluster = cluster.to_string();
    tokio::spawn(async move {
        let (client, member) = match tokio::try_join!(client_upgrade, member_upgrade) {
            Ok(both) => both,
            Err(error) => {
                tracing::debug!(cluster, %error, "proxy upgrade failed");
                return;
            }
        };
        let mut client = hyper_util::rt::TokioIo::new(client);
        let mut member = hyper_util::rt::TokioIo::new(member);
        tokio::select! {
            _ = cancel.cancelled() => {}
            copied = tokio::io::copy_bidirectional(&mut client, &mut member) => {
                if let Err(error) = copied {
                    tracing::debug!(cluster, %error, "proxied upgraded connection ended");
                }
            }
        }
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    // The handshake headers (Upgrade, Connection, Sec-WebSocket-Accept, -Protocol) are the member's.
    *response.headers_mut() = answer.headers().clone();
    Ok(response)
}

/// The member's response headers without the hop-by-hop ones.
fn response_headers(member: &HeaderMap) -> HeaderMap {
    let mut headers = member.clone();
    for name in HOP_BY_HOP {
        headers.remove(*name);
    }
    headers
}

/// A client for the member cluster `name`, from its Cluster and credentials Secret in the store.
pub(crate) async fn member_client(
    server: &ApiServer,
    name: &str,
) -> Result<kube::Client, ApiError> {
    let registry = server.registry();
    let cluster_def = registry
        .lookup(GROUP, VERSION, "clusters")
        .ok_or_else(ApiError::not_found_path)?;
    let (object, _) = server
        .read_object(&cluster_def, None, name)
        .await?
        .ok_or_else(|| ApiError::not_found(GROUP, "clusters", name))?;
    let cluster: Cluster = serde_json::from_value(object)
        .map_err(|e| ApiError::internal(format!("cluster \"{name}\" is malformed: {e}")))?;
    let secret_ref = match (&cluster.spec.secret_ref, cluster.spec.sync_mode) {
        (Some(secret_ref), _) => secret_ref.clone(),
        (None, ClusterSyncMode::Pull) => {
            return Err(ApiError::service_unavailable(format!(
                "cluster \"{name}\" is in Pull mode: the control plane holds no credentials for it; the proxy needs Push credentials (spec.secretRef) or an agent that serves the proxy"
            )));
        }
        (None, ClusterSyncMode::Push) => {
            return Err(ApiError::service_unavailable(format!(
                "cluster \"{name}\" has no credentials (spec.secretRef is not set)"
            )));
        }
    };
    let secret_def = registry
        .lookup("", "v1", "secrets")
        .ok_or_else(ApiError::not_found_path)?;
    let (secret, _) = server
        .read_object(&secret_def, Some(&secret_ref.namespace), &secret_ref.name)
        .await?
        .ok_or_else(|| {
            ApiError::service_unavailable(format!(
                "the credentials of cluster \"{name}\" (Secret {}/{}) are missing",
                secret_ref.namespace, secret_ref.name
            ))
        })?;
    let data = secret_data(&secret).map_err(|message| {
        ApiError::service_unavailable(format!("cluster \"{name}\": {message}"))
    })?;
    if !member_access::has_credentials(&data) {
        return Err(ApiError::service_unavailable(format!(
            "cluster \"{name}\": {}",
            member_access::AccessError::NoCredentials
        )));
    }
    let mut config = member_access::member_config(&cluster, &data)
        .await
        .map_err(|e| ApiError::service_unavailable(format!("cluster \"{name}\": {e}")))?;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    // No read timeout: a proxied watch may be silent for minutes.
    config.read_timeout = None;
    kube::Client::try_from(config).map_err(|e| {
        ApiError::service_unavailable(format!(
            "cluster \"{name}\": building the member client: {e}"
        ))
    })
}

/// The stored Secret's `data` (base64 strings) decoded.
fn secret_data(secret: &Value) -> Result<member_access::SecretData, String> {
    let Some(data) = secret.get("data").and_then(Value::as_object) else {
        return Ok(member_access::SecretData::new());
    };
    data.iter()
        .map(|(key, value)| {
            let text = value.as_str().unwrap_or_default();
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(|bytes| (key.clone(), bytes))
                .map_err(|e| format!("the Secret's {key} is not base64: {e}"))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn proxy_paths_parse() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/nodes",
                Some(("m1", "/api/v1/nodes")),
            ),
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy",
                Some(("m1", "/")),
            ),
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/",
                Some(("m1", "/")),
            ),
            ("/apis/cluster.karmada.io/v1alpha1/clusters/m1", None),
            ("/apis/cluster.karmada.io/v1alpha1/clusters/m1/status", None),
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxyx/a",
                None,
            ),
            ("/apis/cluster.karmada.io/v1alpha1/clusters//proxy/a", None),
            ("/api/v1/namespaces/default/pods/p/proxy", None),
        ];
        for (path, want) in cases {
            let got = parse_target(path);
            let want = want.map(|(cluster, path)| ProxyTarget {
                cluster: cluster.into(),
                path: path.into(),
            });
            assert_eq!(got, want, "{path}");
        }
    }

    #[test]
    fn verbs_follow_methods() {
        assert_eq!(verb_of(&Method::GET), Some("get"));
        assert_eq!(verb_of(&Method::POST), Some("create"));
        assert_eq!(verb_of(&Method::PUT), Some("update"));
        assert_eq!(verb_of(&Method::PATCH), Some("patch"));
        assert_eq!(verb_of(&Method::DELETE), Some("delete"));
        assert_eq!(verb_of(&Method::CONNECT), None);
    }

    #[test]
    fn stored_secret_data_is_decoded_and_bad_base64_named() {
        let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let data =
            secret_data(&json!({"data": {"caBundle": b64("CA"), "token": b64("tok")}})).unwrap();
        assert_eq!(data["caBundle"], b"CA");
        assert_eq!(data["token"], b"tok");
        assert!(secret_data(&json!({})).unwrap().is_empty());
        let err = secret_data(&json!({"data": {"token": "%%"}})).unwrap_err();
        assert!(err.contains("token is not base64"), "{err}");
    }

    #[test]
    fn hop_by_hop_headers_are_dropped() {
        let mut member = HeaderMap::new();
        member.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        member.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        member.insert(header::CONNECTION, "keep-alive".parse().unwrap());
        let headers = response_headers(&member);
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    }
}
