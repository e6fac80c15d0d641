//! The shared watch registry: one watch per resource however many controllers subscribe, a cache updated
//! before any subscriber hears of the change, late subscribers brought up to date by a replay, and the watch
//! stopped once nobody listens.

use futures::StreamExt;
use karmada_controllers::runtime::{CompactObject, Informers, TemplateReader, resources};
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
    let api = || resources::all_raw(&control_plane.client, &resource);

    let mut first = informers.subscribe(api(), watcher::Config::default());
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
    let mut second = informers.subscribe(api(), watcher::Config::default());
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
    let filtered = informers.subscribe(api(), watcher::Config::default().labels("team=a"));
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
        .map(|o| o.metadata().name().to_string())
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
        resources::all_raw(&control_plane.client, &resource),
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

/// GETs of ConfigMaps the API server has answered (its `apiserver_request_total`).
async fn config_map_gets(control_plane: &ControlPlane) -> f64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = control_plane
        .client
        .request_text(request)
        .await
        .expect("metrics");
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains(r#"verb="GET""#)
                && l.contains(r#"resource="configmaps""#)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn a_template_reader_reads_a_listed_cache_when_it_is_new_enough() {
    let control_plane = ControlPlane::start().await;
    create_config_map(&control_plane, "tpl").await;
    let informers = Informers::default();
    let reader = TemplateReader::new(control_plane.client.clone(), informers.clone());
    let resource = config_maps();
    let api = resources::all_raw(&control_plane.client, &resource);
    let read = |name: &'static str, at_least: Option<String>| {
        let reader = reader.clone();
        async move {
            reader
                .get("v1", "ConfigMap", "default", name, at_least.as_deref())
                .await
                .expect("read")
        }
    };

    // Nobody watches ConfigMaps: the API server is asked.
    assert!(informers.cached(&api).is_none());
    let before = config_map_gets(&control_plane).await;
    let live = read("tpl", None).await.expect("exists");
    assert_eq!(config_map_gets(&control_plane).await, before + 1.0);
    let version: u64 = live
        .metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("numeric resourceVersion");

    // Another controller watches them: its listed cache answers, as long as it holds the version asked for.
    let subscription = informers.subscribe(api.clone(), watcher::Config::default());
    eventually("the cache is listed and shared", || {
        let found = informers.cached(&api).is_some();
        async move { found.then_some(()) }
    })
    .await;
    let before = config_map_gets(&control_plane).await;
    let cached = read("tpl", Some(version.to_string()))
        .await
        .expect("cached");
    assert_eq!(cached.data["data"]["k"], "tpl");
    assert_eq!(
        cached.types.as_ref().map(|t| t.kind.as_str()),
        Some("ConfigMap")
    );
    assert_eq!(
        config_map_gets(&control_plane).await,
        before,
        "served from the cache"
    );
    read("tpl", Some((version + 1_000).to_string()))
        .await
        .expect("exists");
    assert_eq!(
        config_map_gets(&control_plane).await,
        before + 1.0,
        "a newer version than cached is asked of the API server"
    );
    assert!(
        read("absent", None).await.is_none(),
        "not cached: asked, and absent"
    );
    assert_eq!(config_map_gets(&control_plane).await, before + 2.0);

    // The watch stops with its last subscriber; the cache is no longer offered.
    drop(subscription);
    eventually("the stopped watch's cache is not offered", || {
        let gone = informers.cached(&api).is_none();
        async move { gone.then_some(()) }
    })
    .await;
}
