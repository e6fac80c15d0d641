//! Server-sent events for live views: watches made with the session's client say "change" when anything a
//! view shows changes (the page re-fetches its fragment), or "ended" when the API refuses the credentials.
//!
//! Each watch is a task owned by the stream: when the browser leaves, the stream is dropped and the tasks
//! are cancelled. Notifications coalesce in a one-slot channel: a page needs to know that something
//! changed, not how many times.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt, TryStreamExt};
use http::Request;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::api::{self, ApiError, paths};

/// What the page is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Change,
    Ended,
}

/// Pause before watching again after a failure that is not the user's credentials.
const RETRY: Duration = Duration::from_secs(2);

/// The collection paths (with a label selector where one narrows them) whose changes a view shows;
/// `binding_id` is the workload's binding's permanent id, which labels its Works.
pub fn watched(view: &str, namespace: &str, binding_id: &str) -> Option<Vec<String>> {
    Some(match view {
        "overview" => vec![paths::CLUSTERS.into(), paths::BINDINGS.into()],
        "workload" => {
            let mut watched = vec![
                format!(
                    "/apis/work.karmada.io/v1alpha2/namespaces/{}/resourcebindings",
                    paths::segment(namespace)
                ),
                paths::namespaced_events(namespace),
            ];
            if !binding_id.is_empty() {
                let selector = format!("{}={binding_id}", crate::views::workload::LABEL_BINDING_ID);
                let selector: String =
                    form_urlencoded::byte_serialize(selector.as_bytes()).collect();
                watched.push(format!("{}?labelSelector={selector}", paths::WORKS));
            }
            watched
        }
        "policies" => vec![
            paths::POLICIES.into(),
            paths::CLUSTER_POLICIES.into(),
            paths::BINDINGS.into(),
        ],
        "failover" => vec![
            paths::CLUSTERS.into(),
            paths::BINDINGS.into(),
            paths::EVENTS.into(),
        ],
        "services" => vec![
            paths::SERVICE_EXPORTS.into(),
            paths::SERVICE_IMPORTS.into(),
            paths::MULTI_CLUSTER_SERVICES.into(),
            crate::views::services::imported_slices_path(),
            crate::views::services::collected_works_path(),
        ],
        "overrides" => vec![
            paths::OVERRIDE_POLICIES.into(),
            paths::CLUSTER_OVERRIDE_POLICIES.into(),
            paths::BINDINGS.into(),
            paths::WORKS.into(),
        ],
        _ => return None,
    })
}

/// The event stream for `collections`, watched as `client`; `cancel` is the server's shutdown.
pub fn stream(
    client: kube::Client,
    collections: Vec<String>,
    cancel: CancellationToken,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (sender, receiver) = mpsc::channel::<Signal>(1);
    let owned = cancel.child_token();
    for path in collections {
        tokio::spawn(watch(client.clone(), path, sender.clone(), owned.clone()));
    }
    let guard = owned.drop_guard();
    let events = tokio_stream::wrappers::ReceiverStream::new(receiver).map(move |signal| {
        let _owned = &guard;
        Ok(match signal {
            Signal::Change => Event::default().event("change").data("1"),
            Signal::Ended => Event::default().event("ended").data("401"),
        })
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// Watches one collection until cancelled: the current resourceVersion from a one-item list, then the
/// watch from there; an expired version (410) or a closed watch lists again.
async fn watch(
    client: kube::Client,
    path: String,
    sender: mpsc::Sender<Signal>,
    cancel: CancellationToken,
) {
    loop {
        let outcome = tokio::select! {
            _ = cancel.cancelled() => return,
            outcome = watch_once(&client, &path, &sender) => outcome,
        };
        match outcome {
            Ok(()) => {}
            Err(ApiError::Unauthorized(_)) => {
                let _ = sender.send(Signal::Ended).await;
                return;
            }
            // RBAC hides this collection from the user: nothing of it is on the page either.
            Err(ApiError::Forbidden(_)) => return,
            Err(error) => {
                tracing::debug!(%path, %error, "dashboard watch failed");
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(RETRY) => {}
                }
            }
        }
    }
}

async fn watch_once(
    client: &kube::Client,
    path: &str,
    sender: &mpsc::Sender<Signal>,
) -> Result<(), ApiError> {
    let separator = if path.contains('?') { '&' } else { '?' };
    let list = api::get(client, &format!("{path}{separator}limit=1")).await?;
    let version = api::text(&list, "/metadata/resourceVersion").to_string();
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("watch", "true")
        .append_pair("resourceVersion", &version)
        .append_pair("allowWatchBookmarks", "true")
        .append_pair("timeoutSeconds", "290")
        .finish();
    let request = Request::get(format!("{path}{separator}{query}")).body(Vec::new())?;
    let events = client.request_events::<Value>(request).await?;
    futures::pin_mut!(events);
    while let Some(event) = events.try_next().await? {
        match event {
            kube::core::WatchEvent::Bookmark(_) => {}
            kube::core::WatchEvent::Error(status) => {
                return Err(ApiError::from(kube::Error::Api(status)));
            }
            _ => {
                // A full slot already says "change".
                let _ = sender.try_send(Signal::Change);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_view_watches_what_it_shows() {
        assert_eq!(watched("overview", "", "").unwrap().len(), 2);
        let workload = watched("workload", "a/b", "").unwrap();
        assert!(workload[0].contains("namespaces/a%2Fb/"), "{workload:?}");
        assert_eq!(
            workload.len(),
            2,
            "no Works watched before the binding has an id"
        );
        let workload = watched("workload", "a", "id-1").unwrap();
        assert!(
            workload[2]
                .ends_with("works?labelSelector=resourcebinding.karmada.io%2Fpermanent-id%3Did-1"),
            "{workload:?}"
        );
        assert!(watched("nope", "", "").is_none());
        let services = watched("services", "", "").unwrap();
        assert!(
            services.iter().any(|p| p.contains("serviceimports"))
                && services.iter().any(|p| p.contains("multiclusterservices"))
                && services
                    .iter()
                    .any(|p| p.contains("endpointslices?labelSelector=")),
            "{services:?}"
        );
        let overrides = watched("overrides", "", "").unwrap();
        assert!(
            overrides.iter().any(|p| p.ends_with("/overridepolicies"))
                && overrides
                    .iter()
                    .any(|p| p.ends_with("/clusteroverridepolicies")),
            "{overrides:?}"
        );
    }
}
