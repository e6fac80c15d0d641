//! Events expire after `--event-ttl` since their last observation, as with kube-apiserver.

use std::time::Duration;

use futures::StreamExt;
use http::StatusCode;
use jiff::{SignedDuration, Timestamp};
use karmada_apiserver::ApiServerOptions;
use karmada_apiserver::event_ttl::{EVENTS_PREFIX, sweep};
use serde_json::{Value, json};
use store::{EventKind, Store};

use super::harness::Harness;

/// A metav1.Time (seconds).
fn seconds(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn event(name: &str, created: Timestamp, last: Timestamp, series_last: Option<Timestamp>) -> Value {
    let mut event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Deployment", "namespace": "default", "name": "web", "apiVersion": "apps/v1"},
        "reason": "ScheduleBindingSucceed",
        "message": "Binding has been scheduled successfully.",
        "type": "Normal",
        "source": {"component": "karmada-scheduler"},
        "count": 1,
        "firstTimestamp": seconds(created),
        "lastTimestamp": seconds(last),
    });
    if let Some(series_last) = series_last {
        event["series"] = json!({"count": 2, "lastObservedTime": series_last.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()});
    }
    event
}

async fn create(h: &Harness, event: &Value) {
    let reply = h.post("/api/v1/namespaces/default/events", event).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test]
async fn a_sweep_deletes_events_last_observed_before_the_ttl() {
    let h = Harness::with_options(ApiServerOptions {
        // The sweep is called by hand below.
        event_ttl: None,
        ..ApiServerOptions::default()
    })
    .await;
    // The server stamps creationTimestamp with the time of the create, which counts as an
    // observation too; so the sweeps below run at a time three hours from now, and the events
    // carry their clients' times around it.
    let now = Timestamp::now();
    let sweep_at = now + SignedDuration::from_hours(3);
    let two_hours_ago = now - SignedDuration::from_hours(2);
    let recent = sweep_at - SignedDuration::from_mins(30);
    create(&h, &event("stale", two_hours_ago, two_hours_ago, None)).await;
    create(&h, &event("fresh", two_hours_ago, recent, None)).await;
    create(
        &h,
        &event("renewed", two_hours_ago, two_hours_ago, Some(recent)),
    )
    .await;
    let unrelated = h
        .create_configmap(
            "default",
            "stale-looking",
            json!({"lastTimestamp": seconds(two_hours_ago)}),
        )
        .await;
    assert_eq!(unrelated.status, StatusCode::CREATED);

    let revision = h.revision().await;
    let mut watch = h.store.watch(EVENTS_PREFIX, revision).await.expect("watch");
    let expired = sweep(&h.server, sweep_at, Duration::from_secs(3600))
        .await
        .expect("sweep");
    assert_eq!(expired, 1, "only the stale event");
    let deleted = watch.next().await.expect("an event").expect("no error");
    assert_eq!(deleted.kind, EventKind::Delete);
    assert_eq!(deleted.kv.key, format!("{EVENTS_PREFIX}default/stale"));

    let base = "/api/v1/namespaces/default/events";
    assert_eq!(
        h.get(&format!("{base}/stale")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(h.get(&format!("{base}/fresh")).await.status, StatusCode::OK);
    assert_eq!(
        h.get(&format!("{base}/renewed")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        h.get("/api/v1/namespaces/default/configmaps/stale-looking")
            .await
            .status,
        StatusCode::OK,
        "only Events expire"
    );

    // An hour after their last observation the others are stale too; a second sweep at the same
    // time finds nothing.
    let later = recent + SignedDuration::from_hours(1) + SignedDuration::from_secs(1);
    assert_eq!(
        sweep(&h.server, later, Duration::from_secs(3600))
            .await
            .expect("sweep"),
        2
    );
    assert_eq!(
        sweep(&h.server, later, Duration::from_secs(3600))
            .await
            .expect("sweep"),
        0
    );
    let list = h.get(base).await;
    assert_eq!(list.body["items"], json!([]), "{}", list.body);
}

#[tokio::test]
async fn the_server_sweeps_on_its_own() {
    let h = Harness::with_options(ApiServerOptions {
        event_ttl: Some(Duration::from_secs(2)),
        ..ApiServerOptions::default()
    })
    .await;
    let hour_ago = Timestamp::now() - SignedDuration::from_hours(1);
    create(&h, &event("old", hour_ago, hour_ago, None)).await;
    h.wait_for("the expired event to be deleted", async || {
        h.get("/api/v1/namespaces/default/events/old").await.status == StatusCode::NOT_FOUND
    })
    .await;
}
