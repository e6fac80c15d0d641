//! The shared watch registry: one watch per resource however many controllers subscribe, a cache updated
//! before any subscriber hears of the change, late subscribers brought up to date by a replay, and the watch
//! stopped once nobody listens.

use futures::StreamExt;
use karmada_controllers::runtime::{CompactObject, Informers, resources};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use serde_json::json;

use crate::support::{ControlPlane, eventually};

fn config_maps() -> ApiResource {
    ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&())
}

async fn create_config_map(control_plane: &ControlPlane, name: &str) {
    control_plane
        .create(
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "default"}, "data": {"k": name}}),
        )
        .await;
}

/// Reads events until `name` is applied; returns every event seen on the way, in order.
async fn events_until_applied(
    events: &mut futures::stream::BoxStream<'static, Event<CompactObject>>,
    name: &str,
) -> Vec<String> {
    events_until(events, |event, object_name| {
        object_name == Some(name) && matches!(event, Event::Apply(_) | Event::InitApply(_))
    })
    .await
}

/// Reads events until `last` holds for one; returns every event seen on the way, in order.
async fn events_until(
    events: &mut futures::stream::BoxStream<'static, Event<CompactObject>>,
    last: impl Fn(&Event<CompactObject>, Option<&str>) -> bool,
) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(crate::support::PATIENCE, events.next())
            .await
            .expect("an event before the deadline")
            .expect("the stream stays open");
        let (label, object) = match &event {
            Event::Init => ("Init".to_string(), None),
            Event::InitDone => ("InitDone".to_string(), None),
            Event::InitApply(o) => ("InitApply".to_string(), Some(o)),
            Event::Apply(o) => ("Apply".to_string(), Some(o)),
            Event::Delete(o) => ("Delete".to_string(), Some(o)),
        };
        let object_name = object.and_then(|o| o.metadata().name.clone());
        seen.push(format!(
            "{label} {}",
            object_name.clone().unwrap_or_default()
        ));
        if last(&event, object_name.as_deref()) {
            return seen;
        }
    }
}

#[tokio::test]
async fn subscribers_share_one_watch_and_a_late_one_gets_a_replay() {
    let control_plane = ControlPlane::start().await;
    create_config_map(&control_plane, "before").await;
    let informers = Informers::default();
    let resource = config_maps();
    let api = || resources::all(&control_plane.client, &resource);

    let mut first = informers.subscribe(api(), &resource, watcher::Config::default());
    let seen = events_until_applied(&mut first.events, "before").await;
    assert_eq!(seen.first().map(String::as_str), Some("Init "));
    eventually("the shared cache is listed", || {
        let store = first.store.clone();
        async move { store.wait_until_ready().await.ok() }
    })
    .await;

    create_config_map(&control_plane, "during").await;
    let seen = events_until_applied(&mut first.events, "during").await;
    assert_eq!(seen.last().map(String::as_str), Some("Apply during"));

    // A second subscriber to the same resource joins the running watch and is replayed what it missed.
    let mut second = informers.subscribe(api(), &resource, watcher::Config::default());
    assert_eq!(informers.watching(), 1, "one watch for two subscribers");
    let mut replay = events_until(&mut second.events, |e, _| matches!(e, Event::InitDone)).await;
    replay.sort();
    assert_eq!(
        replay,
        ["Init ", "InitApply before", "InitApply during", "InitDone "],
        "the replay is a relist of the cache"
    );

    // Both hear of a new object, and the cache has it by the time they do.
    create_config_map(&control_plane, "after").await;
    for subscription in [&mut first, &mut second] {
        events_until_applied(&mut subscription.events, "after").await;
        let cached = subscription
            .store
            .state()
            .into_iter()
            .find(|o| o.metadata().name.as_deref() == Some("after"))
            .expect("cached before the event is seen");
        let object: DynamicObject = cached.to_dynamic().expect("decodes");
        assert_eq!(object.data["data"]["k"], "after");
    }

    // A watch with other selectors is a watch of its own.
    let filtered = informers.subscribe(
        api(),
        &resource,
        watcher::Config::default().labels("team=a"),
    );
    assert_eq!(informers.watching(), 2);
    drop(filtered);

    drop(first);
    assert_eq!(
        informers.watching(),
        1,
        "a watch with a subscriber left keeps running"
    );
    drop(second);
    assert_eq!(
        informers.watching(),
        0,
        "the watch stops with its last subscriber"
    );
}

fn names(objects: Vec<std::sync::Arc<CompactObject>>) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .filter_map(|o| o.metadata().name.clone())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_label_index_follows_the_cache() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{DeleteParams, Patch, PatchParams};

    let control_plane = ControlPlane::start().await;
    let objects: kube::Api<ConfigMap> =
        kube::Api::namespaced(control_plane.client.clone(), "default");
    let create = |name: &'static str, team: &'static str| {
        control_plane.create(
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "default", "labels": {"team": team}}}),
        )
    };
    create("early", "a").await;
    let informers = Informers::default();
    let resource = config_maps();
    let mut subscription = informers.subscribe(
        resources::all(&control_plane.client, &resource),
        &resource,
        watcher::Config::default(),
    );
    events_until(&mut subscription.events, |e, _| {
        matches!(e, Event::InitDone)
    })
    .await;

    // Built from what the cache already holds.
    let index = subscription.label_index("team");
    assert_eq!(names(index.get("a")), ["early"]);

    // Kept current before the subscriber hears of a change.
    create("late", "a").await;
    create("other", "b").await;
    create_config_map(&control_plane, "unlabelled").await;
    events_until_applied(&mut subscription.events, "unlabelled").await;
    assert_eq!(names(index.get("a")), ["early", "late"]);
    assert_eq!(names(index.get("b")), ["other"]);

    objects
        .patch(
            "early",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "b"}}})),
        )
        .await
        .expect("relabel");
    events_until_applied(&mut subscription.events, "early").await;
    assert_eq!(names(index.get("a")), ["late"], "a relabelled object moves");
    assert_eq!(names(index.get("b")), ["early", "other"]);

    objects
        .delete("other", &DeleteParams::default())
        .await
        .expect("delete");
    events_until(&mut subscription.events, |e, name| {
        matches!(e, Event::Delete(_)) && name == Some("other")
    })
    .await;
    assert_eq!(names(index.get("b")), ["early"], "a deleted object leaves");
    assert!(index.get("c").is_empty());

    // Asking again for the same label shares the index.
    assert_eq!(names(subscription.label_index("team").get("a")), ["late"]);
}
