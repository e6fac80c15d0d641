//! `POST /api/v1/events` with an `EventList`: each item created in its own namespace as a single
//! create would be, refused items named one by one, bad lists refused whole with nothing stored.

use std::sync::Arc;

use apiserver_auth::{Authorizer, Decision, RequestAttributes, UserInfo};
use http::StatusCode;
use karmada_apiserver::ApiServerOptions;
use karmada_apiserver::handlers::event_list::MAX_ITEMS;
use serde_json::{Value, json};

use super::harness::Harness;

fn event(namespace: Option<&str>, name: &str, reason: &str) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": metadata,
        "involvedObject": {"kind": "Deployment", "namespace": namespace.unwrap_or("default"), "name": "web", "apiVersion": "apps/v1"},
        "reason": reason,
        "message": "Binding has been scheduled successfully.",
        "type": "Normal",
        "source": {"component": "karmada-scheduler"},
        "count": 1,
        "firstTimestamp": "2026-12-07T10:00:00Z",
        "lastTimestamp": "2026-12-07T10:00:00Z",
    })
}

fn list(items: Vec<Value>) -> Value {
    json!({"kind": "EventList", "apiVersion": "v1", "items": items})
}

async fn create_namespace(h: &Harness, name: &str) {
    let reply = h
        .post("/api/v1/namespaces", &json!({"metadata": {"name": name}}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test]
async fn every_item_is_created_in_its_namespace_like_a_single_create() {
    let h = Harness::new().await;
    create_namespace(&h, "team-a").await;
    let reply = h
        .post(
            "/api/v1/events",
            &list(vec![
                event(Some("default"), "web.1", "ScheduleBindingSucceed"),
                event(Some("team-a"), "web.2", "SyncSucceed"),
                event(Some("default"), "web.3", "ApplyPolicySucceed"),
            ]),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["kind"], "Status");
    assert_eq!(reply.body["status"], "Success");
    assert_eq!(reply.body["code"], 201);

    for (namespace, name, reason) in [
        ("default", "web.1", "ScheduleBindingSucceed"),
        ("team-a", "web.2", "SyncSucceed"),
        ("default", "web.3", "ApplyPolicySucceed"),
    ] {
        let stored = h
            .get(&format!("/api/v1/namespaces/{namespace}/events/{name}"))
            .await;
        assert_eq!(stored.status, StatusCode::OK, "{namespace}/{name}");
        assert_eq!(stored.body["reason"], reason);
        assert_eq!(stored.body["metadata"]["namespace"], namespace);
        // What a single create adds, the list create adds too.
        assert!(
            stored.body["metadata"]["uid"].is_string(),
            "{}",
            stored.body
        );
        assert!(stored.body["metadata"]["creationTimestamp"].is_string());
        assert!(stored.body["metadata"]["resourceVersion"].is_string());
        assert!(
            stored.body["metadata"]["managedFields"].is_array(),
            "{}",
            stored.body
        );
    }
    let all = h.get("/api/v1/events").await;
    assert_eq!(all.body["items"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn refused_items_are_named_and_the_others_created() {
    let h = Harness::new().await;
    let existing = h
        .post(
            "/api/v1/namespaces/default/events",
            &event(Some("default"), "taken", "Original"),
        )
        .await;
    assert_eq!(existing.status, StatusCode::CREATED, "{}", existing.body);

    let reply = h
        .post(
            "/api/v1/events",
            &list(vec![
                event(Some("default"), "fresh", "SyncSucceed"),
                event(Some("default"), "taken", "Overwrite"),
                event(None, "homeless", "SyncSucceed"),
                event(Some("no-such-namespace"), "lost", "SyncSucceed"),
            ]),
        )
        .await;
    // The first refusal's code and reason; every refused item in the causes.
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.body);
    assert_eq!(reply.reason(), "AlreadyExists");
    assert!(
        reply
            .message()
            .starts_with("3 of 4 events were not created (the others were): items[1]: "),
        "{}",
        reply.message()
    );
    let causes: Vec<(String, String)> = reply.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        causes,
        [
            ("items[1]".to_string(), "AlreadyExists".to_string()),
            ("items[2]".to_string(), "Invalid".to_string()),
            ("items[3]".to_string(), "NotFound".to_string()),
        ]
    );
    assert!(
        reply
            .message()
            .contains("metadata.namespace: Required value"),
        "{}",
        reply.message()
    );

    let fresh = h.get("/api/v1/namespaces/default/events/fresh").await;
    assert_eq!(fresh.status, StatusCode::OK);
    // The Event that was there is untouched.
    let taken = h.get("/api/v1/namespaces/default/events/taken").await;
    assert_eq!(taken.body["reason"], "Original");
    assert_eq!(
        taken.body["metadata"]["resourceVersion"],
        existing.body["metadata"]["resourceVersion"]
    );
    let all = h.get("/api/v1/events").await;
    assert_eq!(all.body["items"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn a_body_that_is_not_an_event_list_is_refused_whole() {
    let h = Harness::new().await;
    let revision = h.revision().await;

    let single = h
        .post(
            "/api/v1/events",
            &event(Some("default"), "web.1", "SyncSucceed"),
        )
        .await;
    assert_eq!(single.status, StatusCode::BAD_REQUEST, "{}", single.body);
    assert!(
        single
            .message()
            .contains("one Event is created with POST /api/v1/namespaces/{namespace}/events"),
        "{}",
        single.message()
    );

    let wrong_version = h
        .post(
            "/api/v1/events",
            &json!({"kind": "EventList", "apiVersion": "events.k8s.io/v1", "items": []}),
        )
        .await;
    assert_eq!(wrong_version.status, StatusCode::BAD_REQUEST);

    let no_items = h
        .post(
            "/api/v1/events",
            &json!({"kind": "EventList", "apiVersion": "v1"}),
        )
        .await;
    assert_eq!(
        no_items.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        no_items.body
    );
    assert_eq!(no_items.body["details"]["causes"][0]["field"], "items");

    let too_many: Vec<Value> = (0..=MAX_ITEMS)
        .map(|i| event(Some("default"), &format!("web.{i}"), "SyncSucceed"))
        .collect();
    let too_many = h.post("/api/v1/events", &list(too_many)).await;
    assert_eq!(too_many.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        too_many
            .message()
            .contains("items: Too many: 1001: must have at most 1000 items"),
        "{}",
        too_many.message()
    );

    assert_eq!(h.revision().await, revision, "nothing was stored");
}

/// Allows creating Events only in `default`.
struct EventsInDefault;

#[async_trait::async_trait]
impl Authorizer for EventsInDefault {
    async fn authorize(&self, _user: &UserInfo, attrs: &RequestAttributes) -> Decision {
        if !attrs.resource_request || (attrs.resource == "events" && attrs.namespace == "default") {
            Decision::Allow
        } else {
            Decision::Deny("events in default only".into())
        }
    }
}

#[tokio::test]
async fn a_list_create_needs_events_in_every_namespace() {
    let h = Harness::with_options(ApiServerOptions {
        authorizer: Arc::new(EventsInDefault),
        ..ApiServerOptions::default()
    })
    .await;
    let revision = h.revision().await;
    let reply = h
        .post(
            "/api/v1/events",
            &list(vec![event(Some("default"), "web.1", "SyncSucceed")]),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
    assert_eq!(h.revision().await, revision);
    let single = h
        .post(
            "/api/v1/namespaces/default/events",
            &event(Some("default"), "web.1", "SyncSucceed"),
        )
        .await;
    assert_eq!(single.status, StatusCode::CREATED, "{}", single.body);
}
