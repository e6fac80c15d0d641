//! Sends one controller [`Write`] to the API and reports what the server made of it.
//!
//! Updates carry a `resourceVersion` precondition: the version of the object as the controller
//! loop knows it, which is the version observed at the start of the pass or, when an earlier
//! write of the same pass touched the object, the version that write's response returned.
//! The API server has no `pods/binding` subresource, so a [`Write::Bind`] is performed as the
//! binding subresource would: `spec.nodeName` set by an update, then the `PodScheduled`
//! condition by a status update, both with preconditions.

use http::{Method, Request, header};
use jiff::Timestamp;
use serde_json::Value;

use crate::api::{ApiRequest, UnknownKind};
use crate::meta;
use crate::objects::{ObjectKey, Objects, Write};

/// Why a write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The object changed since it was observed (409 Conflict) or already exists: retry after
    /// the watch has caught up.
    #[error("{key}: {message}")]
    Stale { key: ObjectKey, message: String },
    /// The object is gone (404): nothing left to do.
    #[error("{key} not found")]
    Gone { key: ObjectKey },
    #[error(transparent)]
    UnknownKind(#[from] UnknownKind),
    /// Anything else the server refused or failed with.
    #[error("{key}: {source}")]
    Failed {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
}

/// What a successful write left on the server.
#[derive(Debug)]
pub enum Written {
    /// The object as the server now has it.
    Object(Value),
    /// The object was deleted; the value is its last state when the server returned it.
    Deleted(ObjectKey, Option<Value>),
}

/// Performs `write` through `client`; `objects` supplies current versions (and, for a binding,
/// the pod).
pub async fn send(
    client: &kube::Client,
    objects: &Objects,
    write: &Write,
    now: Timestamp,
) -> Result<Written, WriteError> {
    let key = write.key();
    match write {
        Write::Create(_) => {
            let request = write.request()?;
            exchange(client, &key, request).await.map(Written::Object)
        }
        Write::Update(object) | Write::UpdateStatus(object) => {
            let mut request = write.request()?;
            if let Some(body) = request.body.as_mut() {
                pin_version(body, objects.get(&key).unwrap_or(object));
            }
            exchange(client, &key, request).await.map(Written::Object)
        }
        Write::Bind { pod, node } => {
            let Some(current) = objects.get(pod) else {
                return Err(WriteError::Gone { key });
            };
            // Let the pure model compute the bound pod, exactly as the binding would.
            let mut scratch = Objects::from_values([current.clone()]);
            scratch
                .apply(
                    &Write::Bind {
                        pod: pod.clone(),
                        node: node.clone(),
                    },
                    now,
                )
                .map_err(|e| WriteError::Stale {
                    key: key.clone(),
                    message: e.to_string(),
                })?;
            let bound = scratch
                .get(pod)
                .cloned()
                .ok_or(WriteError::Gone { key: key.clone() })?;
            let updated = exchange(client, &key, Write::Update(bound.clone()).request()?).await?;
            let mut status_request = Write::UpdateStatus(bound).request()?;
            if let Some(body) = status_request.body.as_mut() {
                pin_version(body, &updated);
            }
            exchange(client, &key, status_request)
                .await
                .map(Written::Object)
        }
        Write::Delete(_) => {
            let request = write.request()?;
            let last = exchange(client, &key, request).await?;
            let last = (meta::name(&last) == key.name).then_some(last);
            Ok(Written::Deleted(key, last))
        }
    }
}

/// Sets `body`'s `metadata.resourceVersion` to `known`'s.
fn pin_version(body: &mut Value, known: &Value) {
    let version = meta::str_at(known, "/metadata/resourceVersion");
    if !version.is_empty() {
        meta::set_path(
            body,
            &["metadata", "resourceVersion"],
            Value::String(version.to_string()),
        );
    }
}

async fn exchange(
    client: &kube::Client,
    key: &ObjectKey,
    request: ApiRequest,
) -> Result<Value, WriteError> {
    let body = match &request.body {
        Some(body) => serde_json::to_vec(body).map_err(|e| WriteError::Failed {
            key: key.clone(),
            source: kube::Error::SerdeError(e),
        })?,
        None => Vec::new(),
    };
    let method = Method::from_bytes(request.method.as_bytes()).unwrap_or(Method::GET);
    let http_request = Request::builder()
        .method(method)
        .uri(&request.path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(body)
        .map_err(|e| WriteError::Failed {
            key: key.clone(),
            source: kube::Error::HttpError(e),
        })?;
    match client.request::<Value>(http_request).await {
        Ok(value) => Ok(value),
        Err(kube::Error::Api(status)) if status.code == 409 => Err(WriteError::Stale {
            key: key.clone(),
            message: status.message.clone(),
        }),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            Err(WriteError::Gone { key: key.clone() })
        }
        Err(source) => Err(WriteError::Failed {
            key: key.clone(),
            source,
        }),
    }
}
