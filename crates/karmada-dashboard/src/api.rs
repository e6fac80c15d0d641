//! Raw JSON calls to the control plane with a session's client, and what their failures mean to a page.

use http::Request;
use serde_json::Value;

/// How a call failed, as a page reports it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The credentials were refused: wrong, expired, or their ServiceAccount is gone. Ends the session.
    #[error("the API server refused the credentials (401 Unauthorized): {0}")]
    Unauthorized(String),
    /// RBAC refused the call; the Status message says what was denied.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// 410 Gone: a list's `continue` token outlived its snapshot (compaction or expiry).
    #[error("{0}")]
    Expired(String),
    /// The user's input was refused before or by the API (a malformed taint, a missing field).
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Other(String),
}

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => match status.code {
                401 => ApiError::Unauthorized(status.message),
                403 => ApiError::Forbidden(status.message),
                404 => ApiError::NotFound(status.message),
                410 => ApiError::Expired(status.message),
                400 | 422 => ApiError::Invalid(status.message),
                code => ApiError::Other(format!("{} ({code} {})", status.message, status.reason)),
            },
            other => ApiError::Other(other.to_string()),
        }
    }
}

impl From<http::Error> for ApiError {
    fn from(error: http::Error) -> Self {
        ApiError::Other(error.to_string())
    }
}

/// GET `path` as JSON.
pub async fn get(client: &kube::Client, path: &str) -> Result<Value, ApiError> {
    let request = Request::get(path).body(Vec::new())?;
    Ok(client.request::<Value>(request).await?)
}

/// GET `path`, `None` when it does not exist.
pub async fn get_opt(client: &kube::Client, path: &str) -> Result<Option<Value>, ApiError> {
    match get(client, path).await {
        Ok(value) => Ok(Some(value)),
        Err(ApiError::NotFound(_)) => Ok(None),
        Err(other) => Err(other),
    }
}

/// PUT `body` to `path` (a whole object carrying its resourceVersion: a concurrent change fails with 409).
pub async fn put(client: &kube::Client, path: &str, body: &Value) -> Result<Value, ApiError> {
    let bytes = serde_json::to_vec(body).map_err(|e| ApiError::Other(e.to_string()))?;
    let request = Request::put(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(bytes)?;
    Ok(client.request::<Value>(request).await?)
}

/// DELETE `path`.
pub async fn delete(client: &kube::Client, path: &str) -> Result<(), ApiError> {
    let request = Request::delete(path).body(Vec::new())?;
    client.request::<Value>(request).await?;
    Ok(())
}

/// POST `body` to `path`.
pub async fn post(client: &kube::Client, path: &str, body: &Value) -> Result<Value, ApiError> {
    let bytes = serde_json::to_vec(body).map_err(|e| ApiError::Other(e.to_string()))?;
    let request = Request::post(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(bytes)?;
    Ok(client.request::<Value>(request).await?)
}

/// One page of a list: its items and the continue token of the next page.
pub struct Page {
    pub items: Vec<Value>,
    pub next: Option<String>,
}

/// Lists `path` one page at a time (`limit`, `continue`), so a first page of a huge list is fast.
pub async fn list_page(
    client: &kube::Client,
    path: &str,
    limit: usize,
    continue_token: Option<&str>,
) -> Result<Page, ApiError> {
    // The serializer is not Send: finish it before awaiting.
    let query = {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("limit", &limit.to_string());
        if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
            query.append_pair("continue", token);
        }
        query.finish()
    };
    let separator = if path.contains('?') { '&' } else { '?' };
    let list = get(client, &format!("{path}{separator}{query}")).await?;
    let items = match list.get("items") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let next = list
        .pointer("/metadata/continue")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    Ok(Page { items, next })
}

/// A string at a JSON pointer, or "".
pub fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The `status` of the condition of type `kind` ("True", "False", "Unknown"), or "" without one.
pub fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == kind))
}

/// Paths of the kinds the dashboard reads.
pub mod paths {
    pub const CLUSTERS: &str = "/apis/cluster.karmada.io/v1alpha1/clusters";
    pub const BINDINGS: &str = "/apis/work.karmada.io/v1alpha2/resourcebindings";
    pub const WORKS: &str = "/apis/work.karmada.io/v1alpha1/works";
    pub const POLICIES: &str = "/apis/policy.karmada.io/v1alpha1/propagationpolicies";
    pub const CLUSTER_POLICIES: &str =
        "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies";
    pub const EVENTS: &str = "/api/v1/events";
    pub const SERVICE_EXPORTS: &str = "/apis/multicluster.x-k8s.io/v1alpha1/serviceexports";
    pub const SERVICE_IMPORTS: &str = "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports";
    pub const MULTI_CLUSTER_SERVICES: &str =
        "/apis/networking.karmada.io/v1alpha1/multiclusterservices";
    pub const ENDPOINT_SLICES: &str = "/apis/discovery.k8s.io/v1/endpointslices";
    pub const OVERRIDE_POLICIES: &str = "/apis/policy.karmada.io/v1alpha1/overridepolicies";
    pub const CLUSTER_OVERRIDE_POLICIES: &str =
        "/apis/policy.karmada.io/v1alpha1/clusteroverridepolicies";
    pub const NAMESPACES: &str = "/api/v1/namespaces";

    /// The Cluster `proxy` subresource: `path` as the member serves it, reached with the user's identity.
    pub fn cluster_proxy(name: &str, path: &str) -> String {
        format!("{}/proxy{path}", cluster(name))
    }

    pub fn cluster(name: &str) -> String {
        format!("{CLUSTERS}/{}", segment(name))
    }

    pub fn binding(namespace: &str, name: &str) -> String {
        format!(
            "/apis/work.karmada.io/v1alpha2/namespaces/{}/resourcebindings/{}",
            segment(namespace),
            segment(name)
        )
    }

    pub fn namespaced_events(namespace: &str) -> String {
        format!("/api/v1/namespaces/{}/events", segment(namespace))
    }

    pub fn policy(namespace: &str, name: &str) -> String {
        format!(
            "/apis/policy.karmada.io/v1alpha1/namespaces/{}/propagationpolicies/{}",
            segment(namespace),
            segment(name)
        )
    }

    pub fn cluster_policy(name: &str) -> String {
        format!("{CLUSTER_POLICIES}/{}", segment(name))
    }

    /// A path segment: names come from URLs the user typed, so anything outside a DNS name is encoded.
    pub fn segment(name: &str) -> String {
        form_urlencoded::byte_serialize(name.as_bytes()).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_what_the_page_does() {
        let status = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                message: format!("m{code}"),
                ..Default::default()
            }))
        };
        assert!(matches!(
            ApiError::from(status(401)),
            ApiError::Unauthorized(_)
        ));
        assert!(matches!(ApiError::from(status(403)), ApiError::Forbidden(m) if m == "m403"));
        assert!(matches!(ApiError::from(status(404)), ApiError::NotFound(_)));
        assert!(matches!(ApiError::from(status(410)), ApiError::Expired(_)));
        assert!(matches!(ApiError::from(status(422)), ApiError::Invalid(_)));
        assert!(matches!(ApiError::from(status(500)), ApiError::Other(_)));
    }

    #[test]
    fn path_segments_cannot_climb_out() {
        assert_eq!(paths::segment("a/../b"), "a%2F..%2Fb");
        assert_eq!(
            paths::cluster("member1"),
            format!("{}/member1", paths::CLUSTERS)
        );
    }
}
