//! The kubelet's streaming endpoints of a simulated cluster: `pods/exec`, `pods/attach`,
//! `pods/portforward` and `pods/log`, served in front of the API router, answered from the
//! pure [`crate::shell`], [`crate::container`] and [`crate::container_logs`].
//!
//! In a real cluster kube-apiserver authorizes these and hands the stream to the node's
//! kubelet; here one handler does both: it authorizes (GET as `get`, POST as `create`, on the
//! pod's subresource), reads the pod, checks it can be entered, then upgrades.
//!
//! Protocols, as kubectl 1.32 sends them (observed with a recording server):
//! - exec/attach: `GET` with `Upgrade: websocket`, `Sec-WebSocket-Protocol: v5.channel.k8s.io`;
//!   only when that upgrade fails does it retry as `POST` + `Upgrade: SPDY/3.1`. Both v5 and
//!   v4 channel protocols are served (the Python client asks for v4); SPDY is not, and the POST
//!   gets a Status saying so.
//! - port-forward: `GET` WebSocket with `SPDY/3.1+portforward.k8s.io` (SPDY tunnelled in binary
//!   messages), falling back to `POST` + `Upgrade: SPDY/3.1` (`X-Stream-Protocol-Version:
//!   portforward.k8s.io`). Both are served, and the WebSocket channel form (`v4.channel.k8s.io`,
//!   `ports=` in the query) that the Python client uses. Every port echoes what it receives.

// `ApiError` is what every handler here answers with (it becomes the client's Status), built once
// per refused request: its size costs nothing worth boxing for (as in the API server crate).
#![allow(clippy::result_large_err)]

mod exec;
mod log;
mod portforward;
pub mod spdy;

use std::sync::Arc;

use apimachinery::ApiError;
use apiserver_auth::{RequestAttributes, UserInfo, forbidden_message};
use axum::Router;
use axum::routing::any;
use http::request::Parts;
use http::{HeaderMap, Method};
use karmada_apiserver::ApiServer;
use serde_json::Value;

use crate::container::{self, Referenced};
use crate::meta;

/// The API router with the kubelet's endpoints in front of it.
pub fn with_kubelet(server: Arc<ApiServer>, api: Router) -> Router {
    let pod = "/api/v1/namespaces/{namespace}/pods/{name}";
    Router::new()
        .route(&format!("{pod}/exec"), any(exec::exec))
        .route(&format!("{pod}/attach"), any(exec::attach))
        .route(&format!("{pod}/portforward"), any(portforward::serve))
        .route(&format!("{pod}/log"), any(log::serve))
        .fallback_service(api)
        .with_state(server)
}

/// The query's `key=value` pairs, repeated keys kept.
fn query_pairs(parts: &Parts) -> Vec<(String, String)> {
    form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn first<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A boolean query parameter (`true`, `True` from the Python client, `1`).
fn flag(query: &[(String, String)], key: &str) -> bool {
    first(query, key).is_some_and(|v| matches!(v, "true" | "True" | "1"))
}

/// The WebSocket subprotocols the client offered, in its order.
fn offered_protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

fn is_websocket(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Authorizes the request on the pod's `subresource` and reads the pod.
async fn admit(
    server: &ApiServer,
    parts: &Parts,
    namespace: &str,
    name: &str,
    subresource: &str,
) -> Result<Value, ApiError> {
    let user = parts
        .extensions
        .get::<UserInfo>()
        .cloned()
        .or_else(|| server.default_user())
        .ok_or_else(ApiError::unauthorized)?;
    let verb = match parts.method {
        Method::GET => "get",
        Method::POST => "create",
        ref other => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({other}); pods/{subresource} takes GET{}",
                if subresource == "log" { "" } else { " or POST" }
            )));
        }
    };
    if subresource == "log" && verb != "get" {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource (POST); pods/log takes GET",
        ));
    }
    let attrs = RequestAttributes {
        verb: verb.to_string(),
        api_group: String::new(),
        resource: "pods".to_string(),
        subresource: subresource.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        resource_request: true,
        path: parts.uri.path().to_string(),
    };
    if !server
        .authorizer
        .authorize(&user, &attrs)
        .await
        .is_allowed()
    {
        return Err(ApiError::forbidden(forbidden_message(&user, &attrs)));
    }
    read(server, "pods", namespace, name)
        .await?
        .ok_or_else(|| ApiError::not_found("", "pods", name))
}

async fn read(
    server: &ApiServer,
    plural: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, ApiError> {
    let def = server
        .registry()
        .lookup("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))?;
    Ok(server
        .read_object(&def, Some(namespace), name)
        .await?
        .map(|(object, _)| object))
}

/// The ConfigMaps and Secrets `spec` (a container of `pod`) reads, as they are now.
async fn referenced(server: &ApiServer, pod: &Value, spec: &Value) -> Result<Referenced, ApiError> {
    let names = container::references(pod, spec);
    let namespace = meta::namespace(pod);
    let mut referenced = Referenced::default();
    for name in names.config_maps {
        if let Some(object) = read(server, "configmaps", namespace, &name).await? {
            referenced.config_maps.insert(name, object);
        }
    }
    for name in names.secrets {
        if let Some(object) = read(server, "secrets", namespace, &name).await? {
            referenced.secrets.insert(name, object);
        }
    }
    Ok(referenced)
}

/// What a stream needs of the pod: a host, not finished, the container running.
fn check_enterable(pod: &Value, container: &str, action: &str) -> Result<(), ApiError> {
    let phase = meta::str_at(pod, "/status/phase");
    if matches!(phase, "Succeeded" | "Failed") {
        return Err(ApiError::bad_request(format!(
            "cannot {action} a container in a completed pod; current phase is {phase}"
        )));
    }
    if meta::str_at(pod, "/spec/nodeName").is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {} does not have a host assigned",
            meta::name(pod)
        )));
    }
    let running = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| meta::str_at(s, "/name") == container && s.pointer("/state/running").is_some());
    if !running {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade connection: container not found (\"{container}\")"
        )));
    }
    Ok(())
}

/// Runs a stream's session until it ends or the cluster stops (the upgrade task is not the
/// server's, so it watches the server's token itself).
async fn until_stopped(server: &ApiServer, session: impl std::future::Future<Output = ()>) {
    let cancel = server.options.cancel.clone();
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = session => {}
    }
}

fn bad_request(error: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(error.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_running_containers_of_placed_live_pods_are_entered() {
        let running = json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "containerStatuses": [{"name": "app", "state": {"running": {}}}]},
        });
        assert!(check_enterable(&running, "app", "exec into").is_ok());
        let mut done = running.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert_eq!(
            check_enterable(&done, "app", "exec into")
                .unwrap_err()
                .message,
            "cannot exec into a container in a completed pod; current phase is Succeeded"
        );
        let pending =
            json!({"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Pending"}});
        assert_eq!(
            check_enterable(&pending, "app", "attach to")
                .unwrap_err()
                .message,
            "pod p does not have a host assigned"
        );
        assert_eq!(
            check_enterable(&running, "sidecar", "exec into")
                .unwrap_err()
                .message,
            "unable to upgrade connection: container not found (\"sidecar\")"
        );
    }
}
