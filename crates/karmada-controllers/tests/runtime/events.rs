//! The Event recorder against the in-process API server: a repeat bumps the count of the Event it repeats,
//! anything else is an Event of its own.

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
    for i in 0..20 {
        recorder
            .record(
                &reference(&format!("uid-{i}")),
                EventType::Normal,
                "SyncSucceed",
                "applied",
            )
            .await;
    }
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
