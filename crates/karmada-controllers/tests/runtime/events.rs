//! The Event recorder against the in-process API server: a repeat bumps the count of the Event it repeats,
//! anything else is an Event of its own; a burst's new Events go in one list create, or one create each when
//! the server has no list create.

use std::pin::Pin;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use karmada_controllers::runtime::{EventRecorder, EventType};
use kube::api::{Api, ListParams};

use crate::support::{ControlPlane, eventually};

fn reference(uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        name: Some("web".into()),
        namespace: Some("default".into()),
        uid: Some(uid.into()),
        ..ObjectReference::default()
    }
}

/// Records the same Normal event once on each object `uid-{i}`, `i` in `uids`: distinct Events, no repeats.
async fn record_applied_on(recorder: &EventRecorder, uids: std::ops::Range<usize>) {
    for i in uids {
        recorder
            .record(
                &reference(&format!("uid-{i}")),
                EventType::Normal,
                "SyncSucceed",
                "applied",
            )
            .await;
    }
}

/// (reason, message, count) of every Event in `default`, sorted.
async fn recorded(client: &kube::Client) -> Vec<(String, String, i32)> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let mut seen: Vec<(String, String, i32)> = events
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|e| {
            (
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
                e.count.unwrap_or_default(),
            )
        })
        .collect();
    seen.sort();
    seen
}

#[tokio::test]
async fn a_repeated_event_is_counted_and_a_different_one_recorded_apart() {
    let control_plane = ControlPlane::start().await;
    let client = control_plane.client.clone();
    let recorder = EventRecorder::new(client.clone(), "test");
    let web = reference("uid-web");
    recorder
        .record(&web, EventType::Warning, "ApplyFailed", "member said no")
        .await;
    eventually("the first Event", || async {
        (recorded(&client).await.len() == 1).then_some(())
    })
    .await;
    recorder
        .record(&web, EventType::Warning, "ApplyFailed", "member said no")
        .await;
    recorder
        .record(
            &web,
            EventType::Warning,
            "ApplyFailed",
            "member said no again",
        )
        .await;
    recorder
        .record(
            &reference("uid-other"),
            EventType::Warning,
            "ApplyFailed",
            "member said no",
        )
        .await;
    let events = eventually("the repeat counted and the others recorded", || async {
        let events = recorded(&client).await;
        (events.len() == 3 && events.iter().any(|e| e.2 == 2)).then_some(events)
    })
    .await;
    assert_eq!(
        events,
        [
            ("ApplyFailed".to_string(), "member said no".to_string(), 1),
            ("ApplyFailed".to_string(), "member said no".to_string(), 2),
            (
                "ApplyFailed".to_string(),
                "member said no again".to_string(),
                1
            ),
        ]
    );
}

#[tokio::test]
async fn events_recorded_together_are_written_together_and_repeats_still_count() {
    let control_plane = ControlPlane::start().await;
    let client = control_plane.client.clone();
    let recorder = EventRecorder::new(client.clone(), "test");
    let web = reference("uid-web");
    // All within one gathering window: one burst, written side by side, with the repeats in order.
    for _ in 0..3 {
        recorder
            .record(&web, EventType::Normal, "SyncSucceed", "applied")
            .await;
    }
    record_applied_on(&recorder, 0..20).await;
    let events = eventually("every event written", || async {
        let events = recorded(&client).await;
        (events.len() == 21 && events.iter().any(|e| e.2 == 3)).then_some(events)
    })
    .await;
    assert_eq!(events.iter().filter(|e| e.2 == 1).count(), 20, "{events:?}");
    let api: Api<Event> = Api::namespaced(client.clone(), "default");
    for event in api.list(&ListParams::default()).await.expect("list").items {
        let first = event.first_timestamp.expect("firstTimestamp").0;
        let last = event.last_timestamp.expect("lastTimestamp").0;
        assert!(last >= first, "{:?}", event.metadata.name);
        assert_eq!(
            event.source.and_then(|s| s.component).as_deref(),
            Some("test")
        );
    }
}

/// (method, path, status) of every request a client sent.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<(http::Method, String, u16)>>>);

impl Sent {
    fn count(&self, method: &http::Method, path: &str, status: u16) -> usize {
        self.0
            .lock()
            .expect("sent")
            .iter()
            .filter(|(m, p, s)| m == method && p == path && *s == status)
            .count()
    }

    fn writes(&self) -> Vec<(http::Method, String, u16)> {
        self.0
            .lock()
            .expect("sent")
            .iter()
            .filter(|(m, _, _)| m != http::Method::GET)
            .cloned()
            .collect()
    }
}

type Responding =
    Pin<Box<dyn Future<Output = Result<http::Response<kube::client::Body>, kube::Error>> + Send>>;

/// A client of `inner` that notes what it sends; with `refuse_lists` it answers a list create of Events with that
/// code: 405 as kube-apiserver does (no such call), 403 as our API server does for a client allowed Events only
/// in some namespaces (an agent).
fn noting_client(inner: &kube::Client, sent: &Sent, refuse_lists: Option<u16>) -> kube::Client {
    let inner = inner.clone();
    let sent = sent.clone();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let sent = sent.clone();
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let future: Responding = Box::pin(async move {
            let refusal =
                refuse_lists.filter(|_| method == http::Method::POST && path == "/api/v1/events");
            let response = if let Some(code) = refusal {
                let reason = if code == 403 {
                    "Forbidden"
                } else {
                    "MethodNotAllowed"
                };
                let status = serde_json::json!({
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "the list create is refused", "reason": reason, "details": {}, "code": code,
                });
                http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(status.to_string().into_bytes()))
                    .expect("response")
            } else {
                inner.send(request).await?
            };
            sent.0
                .lock()
                .expect("sent")
                .push((method, path, response.status().as_u16()));
            Ok(response)
        });
        future
    });
    kube::Client::new(service, "default")
}

#[tokio::test]
async fn a_bursts_new_events_are_created_in_one_request_and_repeats_patched() {
    let control_plane = ControlPlane::start().await;
    let sent = Sent::default();
    let recorder = EventRecorder::new(noting_client(&control_plane.client, &sent, None), "test");
    // A current-thread test runtime: the writer runs only once the loop below has queued everything, so
    // these are one burst.
    for _ in 0..3 {
        recorder
            .record(
                &reference("uid-web"),
                EventType::Normal,
                "SyncSucceed",
                "applied",
            )
            .await;
    }
    record_applied_on(&recorder, 0..20).await;
    let client = control_plane.client.clone();
    let events = eventually("every event written", || async {
        let events = recorded(&client).await;
        (events.len() == 21 && events.iter().any(|e| e.2 == 3)).then_some(events)
    })
    .await;
    assert_eq!(events.iter().filter(|e| e.2 == 1).count(), 20, "{events:?}");
    let writes = sent.writes();
    assert_eq!(
        sent.count(&http::Method::POST, "/api/v1/events", 201),
        1,
        "{writes:?}"
    );
    assert_eq!(
        sent.count(
            &http::Method::POST,
            "/api/v1/namespaces/default/events",
            201
        ),
        0,
        "{writes:?}"
    );
    let patches = writes
        .iter()
        .filter(|(m, _, _)| *m == http::Method::PATCH)
        .count();
    assert_eq!(patches, 2, "the two repeats count on the first: {writes:?}");
    assert_eq!(writes.len(), 3, "{writes:?}");
}

#[tokio::test]
async fn a_server_without_list_creates_gets_one_create_per_event_from_then_on() {
    one_create_per_event_after(405).await;
}

#[tokio::test]
async fn a_client_refused_list_creates_writes_one_create_per_event_from_then_on() {
    one_create_per_event_after(403).await;
}

async fn one_create_per_event_after(refusal: u16) {
    let control_plane = ControlPlane::start().await;
    let sent = Sent::default();
    let recorder = EventRecorder::new(
        noting_client(&control_plane.client, &sent, Some(refusal)),
        "test",
    );
    record_applied_on(&recorder, 0..5).await;
    let client = control_plane.client.clone();
    eventually("the first five written", || async {
        (recorded(&client).await.len() == 5).then_some(())
    })
    .await;
    record_applied_on(&recorder, 5..10).await;
    eventually("all ten written", || async {
        (recorded(&client).await.len() == 10).then_some(())
    })
    .await;
    let writes = sent.writes();
    assert_eq!(
        sent.count(&http::Method::POST, "/api/v1/events", refusal),
        1,
        "asked once: {writes:?}"
    );
    assert_eq!(
        sent.count(
            &http::Method::POST,
            "/api/v1/namespaces/default/events",
            201
        ),
        10,
        "{writes:?}"
    );
    assert_eq!(writes.len(), 11, "{writes:?}");
}
