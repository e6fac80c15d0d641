//! Lists (selectors, paging at one revision) and watches (initial state, resume, selector
//! transitions, bookmarks, timeouts, Table events).

use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use store::Store;
use tower::ServiceExt;

use super::harness::Harness;

const CM: &str = "/api/v1/namespaces/default/configmaps";

/// An open watch: reads newline-delimited events.
struct Watch {
    body: Body,
    buffer: Vec<u8>,
}

impl Watch {
    async fn open(h: &Harness, path: &str, accept: Option<&str>) -> Watch {
        let mut builder = Request::builder().uri(path);
        if let Some(accept) = accept {
            builder = builder.header("accept", accept);
        }
        let response = h
            .router()
            .oneshot(builder.body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        Watch {
            body: response.into_body(),
            buffer: Vec::new(),
        }
    }

    /// The next event, or None when the stream ended.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=pos).collect();
                return Some(serde_json::from_slice(&line).expect("each line is one JSON event"));
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("watch event within 10s");
            match frame {
                None => return None,
                Some(frame) => {
                    if let Ok(data) = frame.expect("frame").into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    async fn expect(&mut self, kind: &str, name: &str) -> Value {
        let event = self.next().await.expect("an event");
        assert_eq!(event["type"], kind, "{event}");
        assert_eq!(event["object"]["metadata"]["name"], name, "{event}");
        event
    }
}

#[tokio::test]
async fn list_selectors_and_resource_version() {
    let h = Harness::new().await;
    for (name, app) in [("a", "web"), ("b", "db"), ("c", "web")] {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}}});
        assert_eq!(h.post(CM, &body).await.status, StatusCode::CREATED);
    }
    let all = h.get(&format!("{CM}?")).await;
    assert_eq!(all.body["kind"], "ConfigMapList");
    assert_eq!(all.body["items"].as_array().unwrap().len(), 3);
    assert_eq!(
        all.body["metadata"]["resourceVersion"],
        h.revision().await.to_string()
    );
    assert!(
        all.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["kind"] == "ConfigMap")
    );

    let names = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&h.get(&format!("{CM}?&labelSelector=app%3Dweb")).await.body),
        ["a", "c"]
    );
    assert_eq!(
        names(&h.get(&format!("{CM}?labelSelector=app+in+(db)")).await.body),
        ["b"]
    );
    assert_eq!(
        names(&h.get(&format!("{CM}?labelSelector=app!%3Dweb")).await.body),
        ["b"]
    );
    assert_eq!(
        names(
            &h.get(&format!("{CM}?fieldSelector=metadata.name%3Db"))
                .await
                .body
        ),
        ["b"]
    );
    assert_eq!(
        names(
            &h.get(&format!("{CM}?fieldSelector=metadata.name!%3Db"))
                .await
                .body
        ),
        ["a", "c"]
    );
    assert_eq!(
        names(
            &h.get("/api/v1/configmaps?fieldSelector=metadata.namespace%3Ddefault")
                .await
                .body
        ),
        ["a", "b", "c"]
    );
    let bad = h.get(&format!("{CM}?labelSelector=app%3D%3D%3D")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn list_paging_with_continue_sees_one_revision() {
    let h = Harness::new().await;
    for i in 0..7 {
        h.create_configmap("default", &format!("p{i}"), json!({}))
            .await;
    }
    let first = h.get(&format!("{CM}?limit=3")).await;
    let rv = first.body["metadata"]["resourceVersion"].clone();
    assert_eq!(first.body["items"].as_array().unwrap().len(), 3);
    let mut token = first.body["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_string();
    // Changes after the first page must not show up in later pages.
    h.create_configmap("default", "p9", json!({})).await;
    h.delete(&format!("{CM}/p5"), None).await;
    let mut seen: Vec<String> = first.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().into())
        .collect();
    loop {
        let page = h.get(&format!("{CM}?limit=3&continue={token}")).await;
        assert_eq!(page.status, StatusCode::OK, "{:?}", page.body);
        assert_eq!(page.body["metadata"]["resourceVersion"], rv);
        seen.extend(
            page.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_string()),
        );
        match page.body["metadata"]["continue"].as_str() {
            Some(next) => token = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
    let garbage = h.get(&format!("{CM}?limit=3&continue=not-a-token")).await;
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn watch_from_zero_sends_current_state_then_changes() {
    let h = Harness::new().await;
    h.create_configmap("default", "pre", json!({})).await;
    let mut watch = Watch::open(&h, &format!("{CM}?watch=true&resourceVersion=0"), None).await;
    watch.expect("ADDED", "pre").await;
    h.create_configmap("default", "live", json!({})).await;
    watch.expect("ADDED", "live").await;
    h.patch(
        &format!("{CM}/live"),
        "application/merge-patch+json",
        &json!({"data": {"a": "b"}}),
    )
    .await;
    let modified = watch.expect("MODIFIED", "live").await;
    assert_eq!(modified["object"]["data"]["a"], "b");
    h.delete(&format!("{CM}/live"), None).await;
    let deleted = watch.expect("DELETED", "live").await;
    assert_eq!(
        deleted["object"]["metadata"]["resourceVersion"],
        h.revision().await.to_string(),
        "DELETED carries the deletion revision"
    );
}

#[tokio::test]
async fn watch_from_revision_sends_only_later_events() {
    let h = Harness::new().await;
    h.create_configmap("default", "old", json!({})).await;
    let list = h.get(CM).await;
    let rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    h.create_configmap("default", "new", json!({})).await;
    let mut watch = Watch::open(
        &h,
        &format!("{CM}?&watch=true&resourceVersion={rv}&timeoutSeconds=5"),
        None,
    )
    .await;
    watch.expect("ADDED", "new").await;
}

#[tokio::test]
async fn watch_with_selector_turns_transitions_into_added_and_deleted() {
    let h = Harness::new().await;
    let mut watch = Watch::open(&h, &format!("{CM}?watch=1&labelSelector=app%3Dweb"), None).await;
    h.create_configmap("default", "x", json!({})).await;
    h.patch(
        &format!("{CM}/x"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .await;
    watch.expect("ADDED", "x").await;
    h.patch(
        &format!("{CM}/x"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"app": "db"}}}),
    )
    .await;
    watch.expect("DELETED", "x").await;
}

/// A label-selected watch is decided from the stored labels and sends the shared encoding of the object:
/// the whole object at its revision, for a change inside the selection and for a deletion, and nothing
/// for objects outside it.
#[tokio::test]
async fn watch_with_label_selector_sends_whole_objects_of_the_selection_only() {
    let h = Harness::new().await;
    let mut watch = Watch::open(&h, &format!("{CM}?watch=1&labelSelector=app%3Dweb"), None).await;
    let mut plain = Watch::open(&h, &format!("{CM}?watch=1"), None).await;
    h.create_configmap("default", "other", json!({"k": "0"}))
        .await;
    plain.expect("ADDED", "other").await;
    let selected = h
        .post(
            CM,
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "web", "labels": {"app": "web"}}, "data": {"k": "1"}}),
        )
        .await;
    assert_eq!(selected.status, StatusCode::CREATED, "{}", selected.body);
    let added = watch.expect("ADDED", "web").await;
    assert_eq!(added["object"]["data"]["k"], "1");
    assert_eq!(
        added["object"]["metadata"]["resourceVersion"],
        selected.body["metadata"]["resourceVersion"]
    );
    h.patch(
        &format!("{CM}/other"),
        "application/merge-patch+json",
        &json!({"data": {"k": "2"}}),
    )
    .await;
    let patched = h
        .patch(
            &format!("{CM}/web"),
            "application/merge-patch+json",
            &json!({"data": {"k": "3"}}),
        )
        .await;
    let modified = watch.expect("MODIFIED", "web").await;
    assert_eq!(
        modified["object"]["data"]["k"], "3",
        "the object is sent whole"
    );
    assert_eq!(modified["object"]["metadata"]["labels"]["app"], "web");
    assert_eq!(
        modified["object"]["metadata"]["resourceVersion"],
        patched.body["metadata"]["resourceVersion"]
    );
    h.delete(&format!("{CM}/other"), None).await;
    h.delete(&format!("{CM}/web"), None).await;
    let deleted = watch.expect("DELETED", "web").await;
    assert_eq!(deleted["object"]["data"]["k"], "3");
    // The unselected object's create, patch and deletion reached the plain watcher only: the selected one's
    // next event was the deletion of `web`.
    plain.expect("ADDED", "web").await;
    plain.expect("MODIFIED", "other").await;
}

#[tokio::test]
async fn watch_timeout_ends_the_stream_cleanly() {
    let h = Harness::new().await;
    let mut watch = Watch::open(&h, &format!("{CM}?watch=true&timeoutSeconds=1"), None).await;
    assert!(watch.next().await.is_none());
}

#[tokio::test]
async fn watch_bookmarks_and_initial_events_end() {
    let options = karmada_apiserver::ApiServerOptions {
        bookmark_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let h = Harness::with_options(options).await;
    h.create_configmap("default", "a", json!({})).await;
    let rev = h.revision().await;
    let mut watch = Watch::open(
        &h,
        &format!("{CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
        None,
    )
    .await;
    watch.expect("ADDED", "a").await;
    let end = watch.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(
        end["object"]["metadata"]["resourceVersion"],
        rev.to_string()
    );
    let periodic = watch.next().await.unwrap();
    assert_eq!(periodic["type"], "BOOKMARK");
    assert_eq!(periodic["object"]["kind"], "ConfigMap");

    let rejected = h
        .get(&format!("{CM}?watch=true&sendInitialEvents=true"))
        .await;
    assert_eq!(rejected.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn watch_single_object_by_field_selector_and_table_events() {
    let h = Harness::new().await;
    h.create_configmap("default", "one", json!({})).await;
    h.create_configmap("default", "two", json!({})).await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let mut watch = Watch::open(
        &h,
        &format!("{CM}?fieldSelector=metadata.name%3Dtwo&resourceVersion=0&watch=true"),
        Some(accept),
    )
    .await;
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["kind"], "Table");
    assert_eq!(event["object"]["rows"].as_array().unwrap().len(), 1);
    assert_eq!(
        event["object"]["rows"][0]["object"]["metadata"]["name"],
        "two"
    );
}

#[tokio::test]
async fn metadata_watch_sends_partial_object_metadata_for_every_change() {
    let h = Harness::new().await;
    h.create_configmap("default", "pre", json!({"a": "1"}))
        .await;
    let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let mut watch = Watch::open(
        &h,
        &format!("{CM}?watch=true&resourceVersion=0"),
        Some(accept),
    )
    .await;
    let added = watch.expect("ADDED", "pre").await;
    h.patch(
        &format!("{CM}/pre"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"tier": "web"}}, "data": {"a": "2"}}),
    )
    .await;
    let modified = watch.expect("MODIFIED", "pre").await;
    h.delete(&format!("{CM}/pre"), None).await;
    let deleted = watch.expect("DELETED", "pre").await;
    for event in [&added, &modified, &deleted] {
        let object = &event["object"];
        assert_eq!(object["kind"], "PartialObjectMetadata", "{event}");
        assert_eq!(object["apiVersion"], "meta.k8s.io/v1", "{event}");
        assert!(
            object.get("data").is_none(),
            "no body beyond metadata: {event}"
        );
        assert!(object["metadata"]["uid"].is_string(), "{event}");
    }
    assert_eq!(modified["object"]["metadata"]["labels"]["tier"], "web");
    assert_ne!(
        added["object"]["metadata"]["resourceVersion"],
        modified["object"]["metadata"]["resourceVersion"]
    );
    assert_eq!(
        deleted["object"]["metadata"]["resourceVersion"],
        h.revision().await.to_string(),
        "DELETED carries the deletion revision"
    );
}

#[tokio::test]
async fn list_at_an_exact_past_revision_and_after_compaction() {
    let h = Harness::new().await;
    h.create_configmap("default", "first", json!({})).await;
    let then = h.revision().await;
    h.create_configmap("default", "second", json!({})).await;
    let past = h
        .get(&format!(
            "{CM}?resourceVersion={then}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(past.status, StatusCode::OK, "{:?}", past.body);
    assert_eq!(past.body["metadata"]["resourceVersion"], then.to_string());
    let names: Vec<&str> = past.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first"]);

    let first_page = h.get(&format!("{CM}?limit=1")).await;
    let token = first_page.body["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_string();
    h.create_configmap("default", "third", json!({})).await;
    h.store.compact(h.revision().await).await.unwrap();
    let expired = h
        .get(&format!(
            "{CM}?resourceVersion={then}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(expired.status, StatusCode::GONE);
    assert_eq!(expired.reason(), "Expired");
    let stale_page = h.get(&format!("{CM}?limit=1&continue={token}")).await;
    assert_eq!(stale_page.status, StatusCode::GONE);
    assert_eq!(stale_page.reason(), "Expired");
}
