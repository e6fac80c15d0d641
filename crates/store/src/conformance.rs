//! The conformance suite every [`Store`] backend must pass.
//!
//! Each case is a `pub async fn(Arc<dyn Store>)` that starts from a fresh, empty store and
//! panics (it is test code) when the backend breaks one of the invariants listed in the crate
//! docs. Backends run it either with [`conformance_tests!`](crate::conformance_tests), which
//! generates one `#[tokio::test]` per case so a failure names its case, or with [`run_all`].
//!
//! Invariant of the suite itself: every case only assumes the trait's documented behaviour, so
//! the etcd backend can run it unchanged. Waits are bounded by [`WAIT`], never open-ended.

use std::any::Any;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use crate::{
    EventKind, KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, StoreResult,
    WatchEvent, WatchStream,
};

/// Longest a case waits for a watch event before failing.
pub const WAIT: Duration = Duration::from_secs(20);

/// A fresh store plus whatever must outlive it (a temporary directory, a server handle).
pub struct Fixture {
    /// The store under test.
    pub store: Arc<dyn Store>,
    /// Dropped after `store` (field order), so files outlive the store that uses them.
    _guard: Box<dyn Any + Send>,
}

impl Fixture {
    /// A fixture needing nothing kept alive besides the store.
    pub fn new(store: impl Store) -> Self {
        Self::with_guard(store, ())
    }

    /// A fixture that drops `guard` after the store.
    pub fn with_guard(store: impl Store, guard: impl Any + Send) -> Self {
        Fixture {
            store: Arc::new(store),
            _guard: Box::new(guard),
        }
    }
}

/// Generates one `#[tokio::test]` per conformance case. `$make` is an expression for a
/// closure returning a future of a fresh [`Fixture`]; the calling crate needs `tokio` (with the
/// `macros` and `rt-multi-thread` features) as a dependency. Keep the list in step with
/// [`run_all`].
///
/// ```text
/// mod memory {
///     store::conformance_tests!(|| async { Fixture::new(MemoryStore::new()) });
/// }
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@cases $make;
            create_then_get,
            create_existing_fails,
            update_checks_expected_revision,
            mutating_missing_key_fails,
            delete_returns_previous_value,
            revisions_increase_by_one,
            create_revision_survives_updates_not_deletes,
            range_is_prefix_isolated_and_ordered,
            paging_at_a_revision_is_one_snapshot,
            range_at_older_revision,
            range_at_compacted_revision_fails,
            range_at_future_revision_fails,
            count_by_prefix,
            watch_from_zero_replays_everything,
            watch_from_revision_sees_only_later_events,
            watch_filters_by_prefix,
            watch_receives_live_writes,
            watch_from_compacted_revision_fails,
            watch_behind_compaction_ends_with_compacted,
            watch_from_future_revision_waits,
            many_watchers_each_see_every_event,
            concurrent_creates_get_gap_free_revisions,
            concurrent_cas_has_one_winner_per_revision,
        );
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = ($make)().await;
                $crate::conformance::$case(fixture.store.clone()).await;
            }
        )*
    };
}

/// Runs every case in sequence, each on a fresh store from `make`.
pub async fn run_all<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture>,
{
    macro_rules! run {
        ($($case:ident),* $(,)?) => {
            $( $case(make().await.store.clone()).await; )*
        };
    }
    run!(
        create_then_get,
        create_existing_fails,
        update_checks_expected_revision,
        mutating_missing_key_fails,
        delete_returns_previous_value,
        revisions_increase_by_one,
        create_revision_survives_updates_not_deletes,
        range_is_prefix_isolated_and_ordered,
        paging_at_a_revision_is_one_snapshot,
        range_at_older_revision,
        range_at_compacted_revision_fails,
        range_at_future_revision_fails,
        count_by_prefix,
        watch_from_zero_replays_everything,
        watch_from_revision_sees_only_later_events,
        watch_filters_by_prefix,
        watch_receives_live_writes,
        watch_from_compacted_revision_fails,
        watch_behind_compaction_ends_with_compacted,
        watch_from_future_revision_waits,
        many_watchers_each_see_every_event,
        concurrent_creates_get_gap_free_revisions,
        concurrent_cas_has_one_winner_per_revision,
    );
}

// ---- helpers -------------------------------------------------------------------------------

fn ok<T>(result: StoreResult<T>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{what}: unexpected error: {error}"),
    }
}

fn bytes(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

async fn range(store: &dyn Store, prefix: &str, revision: Option<Revision>) -> RangeResult {
    let req = RangeRequest {
        prefix: prefix.to_string(),
        revision,
        ..RangeRequest::default()
    };
    ok(
        store.range(req).await,
        &format!("range {prefix} at {revision:?}"),
    )
}

fn pairs(result: &RangeResult) -> Vec<(String, String)> {
    result
        .kvs
        .iter()
        .map(|kv| {
            (
                kv.key.clone(),
                String::from_utf8_lossy(&kv.value).into_owned(),
            )
        })
        .collect()
}

fn owned(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn next_event(stream: &mut WatchStream) -> WatchEvent {
    match tokio::time::timeout(WAIT, stream.next()).await {
        Ok(Some(Ok(event))) => event,
        Ok(Some(Err(error))) => panic!("watch failed: {error}"),
        Ok(None) => panic!("watch stream ended early"),
        Err(_) => panic!("no watch event within {WAIT:?}"),
    }
}

/// Writes a marker key and asserts it is the next event: proves nothing unexpected came before.
async fn expect_marker_next(store: &dyn Store, stream: &mut WatchStream, key: &str) {
    let revision = ok(store.create(key, bytes("marker")).await, "create marker");
    let event = next_event(stream).await;
    assert_eq!(
        (event.kv.key.as_str(), event.revision()),
        (key, revision),
        "an unexpected event arrived before the marker"
    );
}

/// A compact description of an event for table comparisons.
fn describe(event: &WatchEvent) -> (EventKind, String, String, Revision, Option<String>) {
    (
        event.kind,
        event.kv.key.clone(),
        String::from_utf8_lossy(&event.kv.value).into_owned(),
        event.revision(),
        event
            .prev
            .as_ref()
            .map(|p| String::from_utf8_lossy(&p.value).into_owned()),
    )
}

// ---- basic CRUD ----------------------------------------------------------------------------

/// A created key reads back with `create_revision == mod_revision ==` the returned revision.
pub async fn create_then_get(store: Arc<dyn Store>) {
    assert_eq!(ok(store.current_revision().await, "revision"), 0);
    let revision = ok(store.create("/a/1", bytes("one")).await, "create");
    assert_eq!(revision, 1);
    let kv = ok(store.get("/a/1").await, "get").expect("created key is readable");
    assert_eq!(
        kv,
        KeyValue {
            key: "/a/1".to_string(),
            value: bytes("one"),
            create_revision: revision,
            mod_revision: revision,
        }
    );
    assert_eq!(ok(store.get("/a/2").await, "get missing"), None);
    assert_eq!(ok(store.current_revision().await, "revision"), revision);
}

/// A second create fails with `AlreadyExists`, keeps the value and consumes no revision.
pub async fn create_existing_fails(store: Arc<dyn Store>) {
    let first = ok(store.create("/k", bytes("v1")).await, "create");
    match store.create("/k", bytes("v2")).await {
        Err(StoreError::AlreadyExists(key)) => assert_eq!(key, "/k"),
        other => panic!("second create: expected AlreadyExists, got {other:?}"),
    }
    let kv = ok(store.get("/k").await, "get").expect("key exists");
    assert_eq!((kv.value, kv.mod_revision), (bytes("v1"), first));
    assert_eq!(ok(store.current_revision().await, "revision"), first);
}

/// Updates with the right, a wrong, or no expected revision.
pub async fn update_checks_expected_revision(store: Arc<dyn Store>) {
    let created = ok(store.create("/k", bytes("v0")).await, "create");
    let mut last = created;
    // (expected revision as an offset from the key's current one; `None` = unconditional,
    // value, whether the update must succeed)
    let cases: [(Option<i64>, &str, bool); 5] = [
        (Some(0), "v1", true),
        (Some(7), "bad", false),
        (Some(-1), "bad", false),
        (None, "v2", true),
        (Some(0), "v3", true),
    ];
    for (offset, value, succeeds) in cases {
        let expected = offset.map(|o| last.saturating_add_signed(o));
        let result = store.update("/k", bytes(value), expected).await;
        match (succeeds, result) {
            (true, Ok(revision)) => {
                assert_eq!(revision, last + 1, "update with {expected:?}");
                last = revision;
            }
            (
                false,
                Err(StoreError::Conflict {
                    key,
                    expected: e,
                    actual,
                }),
            ) => {
                assert_eq!(
                    (key.as_str(), e, actual),
                    ("/k", expected.unwrap_or(0), last)
                );
            }
            (_, other) => panic!("update with {expected:?}: unexpected {other:?}"),
        }
        let kv = ok(store.get("/k").await, "get").expect("key exists");
        assert_eq!(kv.mod_revision, last);
    }
    let kv = ok(store.get("/k").await, "get").expect("key exists");
    assert_eq!((kv.value, kv.mod_revision), (bytes("v3"), created + 3));
}

/// Update and delete of a missing key fail with `NotFound`, with or without a precondition.
pub async fn mutating_missing_key_fails(store: Arc<dyn Store>) {
    ok(store.create("/other", bytes("x")).await, "create");
    for expected in [None, Some(1), Some(5)] {
        match store.update("/missing", bytes("v"), expected).await {
            Err(StoreError::NotFound(key)) => assert_eq!(key, "/missing"),
            other => panic!("update missing with {expected:?}: got {other:?}"),
        }
        match store.delete("/missing", expected).await {
            Err(StoreError::NotFound(key)) => assert_eq!(key, "/missing"),
            other => panic!("delete missing with {expected:?}: got {other:?}"),
        }
    }
    assert_eq!(ok(store.current_revision().await, "revision"), 1);
    assert_eq!(ok(store.get("/missing").await, "get"), None);
}

/// Delete checks its precondition and returns the removed value and its own revision.
pub async fn delete_returns_previous_value(store: Arc<dyn Store>) {
    let created = ok(store.create("/d", bytes("a")).await, "create");
    let updated = ok(store.update("/d", bytes("b"), None).await, "update");
    match store.delete("/d", Some(created)).await {
        Err(StoreError::Conflict { actual, .. }) => assert_eq!(actual, updated),
        other => panic!("delete with stale revision: got {other:?}"),
    }
    let (revision, prev) = ok(store.delete("/d", Some(updated)).await, "delete");
    assert_eq!(revision, updated + 1);
    assert_eq!(
        prev,
        KeyValue {
            key: "/d".to_string(),
            value: bytes("b"),
            create_revision: created,
            mod_revision: updated,
        }
    );
    assert_eq!(ok(store.get("/d").await, "get"), None);
    let (again, _) = {
        ok(store.create("/d", bytes("c")).await, "recreate");
        ok(store.delete("/d", None).await, "unconditional delete")
    };
    assert_eq!(again, revision + 2);
}

/// Each mutation takes exactly the next revision; failures take none.
pub async fn revisions_increase_by_one(store: Arc<dyn Store>) {
    let mut expected = 0;
    for round in 0..5 {
        let key = format!("/r/{round}");
        expected += 1;
        assert_eq!(ok(store.create(&key, bytes("c")).await, "create"), expected);
        assert!(store.create(&key, bytes("again")).await.is_err());
        expected += 1;
        assert_eq!(
            ok(store.update(&key, bytes("u"), None).await, "update"),
            expected
        );
        let kv = ok(store.get(&key).await, "get").expect("exists");
        assert_eq!(kv.mod_revision, expected);
        assert!(
            store
                .update(&key, bytes("x"), Some(expected + 1))
                .await
                .is_err()
        );
        if round % 2 == 0 {
            expected += 1;
            assert_eq!(ok(store.delete(&key, None).await, "delete").0, expected);
        }
        assert_eq!(ok(store.current_revision().await, "revision"), expected);
    }
}

/// `create_revision` is kept across updates and reset by delete + create.
pub async fn create_revision_survives_updates_not_deletes(store: Arc<dyn Store>) {
    let created = ok(store.create("/c", bytes("1")).await, "create");
    for value in ["2", "3"] {
        let revision = ok(store.update("/c", bytes(value), None).await, "update");
        let kv = ok(store.get("/c").await, "get").expect("exists");
        assert_eq!((kv.create_revision, kv.mod_revision), (created, revision));
    }
    ok(store.delete("/c", None).await, "delete");
    let recreated = ok(store.create("/c", bytes("new")).await, "recreate");
    let kv = ok(store.get("/c").await, "get").expect("exists");
    assert_eq!(
        (kv.create_revision, kv.mod_revision),
        (recreated, recreated)
    );
    assert!(recreated > created);
}

// ---- range ---------------------------------------------------------------------------------

/// Range returns exactly the keys under a prefix, in key order (`/a/` never sees `/ab/`).
pub async fn range_is_prefix_isolated_and_ordered(store: Arc<dyn Store>) {
    for key in [
        "/b/1", "/ab/2", "/a/3", "/a/1", "/ab/1", "/a/2", "/a", "/a/2/x",
    ] {
        ok(store.create(key, bytes(key)).await, "create");
    }
    let cases: [(&str, &[&str]); 5] = [
        ("/a/", &["/a/1", "/a/2", "/a/2/x", "/a/3"]),
        ("/ab/", &["/ab/1", "/ab/2"]),
        ("/b/", &["/b/1"]),
        ("/c/", &[]),
        (
            "",
            &[
                "/a", "/a/1", "/a/2", "/a/2/x", "/a/3", "/ab/1", "/ab/2", "/b/1",
            ],
        ),
    ];
    for (prefix, keys) in cases {
        let result = range(store.as_ref(), prefix, None).await;
        let got: Vec<&str> = result.kvs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(got, keys, "range {prefix:?}");
        assert!(!result.more);
        assert_eq!(result.revision, 8);
        assert!(result.kvs.iter().all(|kv| kv.value == bytes(&kv.key)));
    }
}

/// Pages read at the first page's revision form one snapshot despite writes in between.
pub async fn paging_at_a_revision_is_one_snapshot(store: Arc<dyn Store>) {
    for i in 0..10 {
        ok(
            store
                .create(&format!("/p/{i}"), bytes(&format!("v{i}")))
                .await,
            "create",
        );
    }
    let full = range(store.as_ref(), "/p/", None).await;
    let mut pages = Vec::new();
    let mut req = RangeRequest {
        prefix: "/p/".to_string(),
        limit: 3,
        ..RangeRequest::default()
    };
    loop {
        let page = ok(store.range(req.clone()).await, "page");
        assert_eq!(
            page.revision, full.revision,
            "every page is served at one revision"
        );
        // Writes between pages must not show up in later pages.
        let n = pages.len();
        ok(
            store.create(&format!("/p/{n}a"), bytes("inserted")).await,
            "insert",
        );
        ok(
            store
                .update("/p/9", bytes(&format!("changed{n}")), None)
                .await,
            "update",
        );
        if n == 0 {
            ok(store.delete("/p/5", None).await, "delete");
        }
        pages.extend(page.kvs.iter().cloned());
        if !page.more {
            assert!(page.kvs.len() <= 3);
            break;
        }
        assert_eq!(page.kvs.len(), 3);
        req.revision = Some(page.revision);
        req.start_after = page.kvs.last().map(|kv| kv.key.clone());
    }
    assert_eq!(pages, full.kvs);
}

/// Range at every older revision returns that revision's state, also when paged.
pub async fn range_at_older_revision(store: Arc<dyn Store>) {
    let s = store.as_ref();
    ok(s.create("/o/a", bytes("a1")).await, "create a"); // 1
    ok(s.create("/o/b", bytes("b1")).await, "create b"); // 2
    ok(s.update("/o/a", bytes("a2"), None).await, "update a"); // 3
    ok(s.delete("/o/b", None).await, "delete b"); // 4
    ok(s.create("/o/c", bytes("c1")).await, "create c"); // 5
    ok(s.create("/o/b", bytes("b2")).await, "recreate b"); // 6
    ok(s.create("/x", bytes("x")).await, "create outside"); // 7
    let cases: [(Revision, &[(&str, &str)]); 7] = [
        (0, &[]),
        (1, &[("/o/a", "a1")]),
        (2, &[("/o/a", "a1"), ("/o/b", "b1")]),
        (3, &[("/o/a", "a2"), ("/o/b", "b1")]),
        (4, &[("/o/a", "a2")]),
        (5, &[("/o/a", "a2"), ("/o/c", "c1")]),
        (6, &[("/o/a", "a2"), ("/o/b", "b2"), ("/o/c", "c1")]),
    ];
    for (revision, expected) in cases {
        let result = range(s, "/o/", Some(revision)).await;
        assert_eq!(pairs(&result), owned(expected), "range at {revision}");
        assert_eq!(result.revision, revision);
    }
    let at3 = range(s, "/o/", Some(3)).await;
    let b = &at3.kvs[1];
    assert_eq!((b.create_revision, b.mod_revision), (2, 2));
    // Paging at an older revision.
    let page = ok(
        s.range(RangeRequest {
            prefix: "/o/".to_string(),
            start_after: Some("/o/a".to_string()),
            limit: 1,
            revision: Some(2),
        })
        .await,
        "page at 2",
    );
    assert_eq!(pairs(&page), owned(&[("/o/b", "b1")]));
    assert!(!page.more);
    let page = ok(
        s.range(RangeRequest {
            prefix: "/o/".to_string(),
            start_after: None,
            limit: 1,
            revision: Some(5),
        })
        .await,
        "page at 5",
    );
    assert_eq!((pairs(&page), page.more), (owned(&[("/o/a", "a2")]), true));
}

/// Compaction: bounds, idempotence, `Compacted` below it, readable at it.
pub async fn range_at_compacted_revision_fails(store: Arc<dyn Store>) {
    let s = store.as_ref();
    for i in 0..4 {
        ok(s.create(&format!("/k/{i}"), bytes("v")).await, "create"); // 1..=4
    }
    ok(s.update("/k/0", bytes("w"), None).await, "update"); // 5
    ok(s.delete("/k/1", None).await, "delete"); // 6
    match s.compact(7).await {
        Err(StoreError::FutureRevision {
            requested: 7,
            current: 6,
        }) => {}
        other => panic!("compact in the future: got {other:?}"),
    }
    ok(s.compact(5).await, "compact");
    assert_eq!(ok(s.compacted_revision().await, "compacted"), 5);
    ok(
        s.compact(3).await,
        "compacting below the compacted revision is a no-op",
    );
    assert_eq!(ok(s.compacted_revision().await, "compacted"), 5);
    match s
        .range(RangeRequest {
            prefix: "/k/".to_string(),
            revision: Some(4),
            ..Default::default()
        })
        .await
    {
        Err(StoreError::Compacted {
            requested: 4,
            compacted: 5,
        }) => {}
        other => panic!("range at compacted revision: got {other:?}"),
    }
    let at5 = range(s, "/k/", Some(5)).await;
    assert_eq!(
        pairs(&at5),
        owned(&[("/k/0", "w"), ("/k/1", "v"), ("/k/2", "v"), ("/k/3", "v")])
    );
    let now = range(s, "/k/", None).await;
    assert_eq!(
        pairs(&now),
        owned(&[("/k/0", "w"), ("/k/2", "v"), ("/k/3", "v")])
    );
    assert_eq!(now.revision, 6);
}

/// Range beyond the current revision fails with `FutureRevision`.
pub async fn range_at_future_revision_fails(store: Arc<dyn Store>) {
    ok(store.create("/f", bytes("v")).await, "create");
    for requested in [2, 100] {
        match store
            .range(RangeRequest {
                prefix: "/".to_string(),
                revision: Some(requested),
                ..Default::default()
            })
            .await
        {
            Err(StoreError::FutureRevision {
                requested: r,
                current: 1,
            }) => assert_eq!(r, requested),
            other => panic!("range at {requested}: got {other:?}"),
        }
    }
}

/// Count matches the live keys under a prefix.
pub async fn count_by_prefix(store: Arc<dyn Store>) {
    for key in ["/n/a", "/n/b", "/n/c", "/nn/a", "/m/a"] {
        ok(store.create(key, bytes("v")).await, "create");
    }
    ok(store.delete("/n/b", None).await, "delete");
    let cases = [
        ("/n/", 2),
        ("/nn/", 1),
        ("/n", 3),
        ("/", 4),
        ("", 4),
        ("/z/", 0),
    ];
    for (prefix, count) in cases {
        assert_eq!(
            ok(store.count(prefix).await, "count"),
            count,
            "count {prefix:?}"
        );
    }
}

// ---- watch ---------------------------------------------------------------------------------

/// Writes the same small history on any store: put, update, delete under `/w/` and one outside.
async fn write_history(
    s: &dyn Store,
) -> Vec<(EventKind, String, String, Revision, Option<String>)> {
    ok(s.create("/w/a", bytes("a1")).await, "create");
    ok(s.create("/v/z", bytes("z1")).await, "create outside");
    ok(s.update("/w/a", bytes("a2"), None).await, "update");
    ok(s.create("/w/b", bytes("b1")).await, "create");
    ok(s.delete("/w/a", None).await, "delete");
    let event = |kind, key: &str, value: &str, revision, prev: Option<&str>| {
        (
            kind,
            key.to_string(),
            value.to_string(),
            revision,
            prev.map(str::to_string),
        )
    };
    vec![
        event(EventKind::Put, "/w/a", "a1", 1, None),
        event(EventKind::Put, "/v/z", "z1", 2, None),
        event(EventKind::Put, "/w/a", "a2", 3, Some("a1")),
        event(EventKind::Put, "/w/b", "b1", 4, None),
        event(EventKind::Delete, "/w/a", "a2", 5, Some("a2")),
    ]
}

/// Watch from 0 replays the whole history in order, then nothing extra.
pub async fn watch_from_zero_replays_everything(store: Arc<dyn Store>) {
    let expected = write_history(store.as_ref()).await;
    let mut stream = ok(store.watch("", 0).await, "watch");
    for want in &expected {
        assert_eq!(&describe(&next_event(&mut stream).await), want);
    }
    expect_marker_next(store.as_ref(), &mut stream, "/marker").await;
}

/// Watch from `R` yields exactly the events after `R`, with previous values.
pub async fn watch_from_revision_sees_only_later_events(store: Arc<dyn Store>) {
    let expected = write_history(store.as_ref()).await;
    let mut streams = Vec::new();
    for after in 0..expected.len() as Revision {
        streams.push((after, ok(store.watch("/", after).await, "watch")));
    }
    for (after, stream) in &mut streams {
        for want in expected.iter().filter(|e| e.3 > *after) {
            let event = next_event(stream).await;
            assert_eq!(&describe(&event), want, "watch after {after}");
            if event.kind == EventKind::Delete {
                let prev = event.prev.expect("a delete carries the deleted value");
                assert_eq!((prev.create_revision, prev.mod_revision), (1, 3));
                assert_eq!(event.kv.create_revision, 1);
            }
        }
    }
    // One marker, which must be every stream's next event: nothing extra came before it.
    let marker = ok(store.create("/marker", bytes("m")).await, "create marker");
    for (after, stream) in &mut streams {
        assert_eq!(
            next_event(stream).await.revision(),
            marker,
            "watch after {after}"
        );
    }
}

/// Watchers only see events under their prefix.
pub async fn watch_filters_by_prefix(store: Arc<dyn Store>) {
    let mut a = ok(store.watch("/a/", 0).await, "watch /a/");
    let mut ab = ok(store.watch("/ab/", 0).await, "watch /ab/");
    for key in ["/ab/1", "/a/1", "/b/1", "/ab/2", "/a/2", "/a"] {
        ok(store.create(key, bytes("v")).await, "create");
    }
    for (stream, keys) in [(&mut a, ["/a/1", "/a/2"]), (&mut ab, ["/ab/1", "/ab/2"])] {
        for key in keys {
            assert_eq!(next_event(stream).await.kv.key, key);
        }
    }
    expect_marker_next(store.as_ref(), &mut a, "/a/marker").await;
    expect_marker_next(store.as_ref(), &mut ab, "/ab/marker").await;
}

/// Writes made after the watch starts arrive in order.
pub async fn watch_receives_live_writes(store: Arc<dyn Store>) {
    ok(store.create("/live/before", bytes("v")).await, "create");
    let start = ok(store.current_revision().await, "revision");
    let mut stream = ok(store.watch("/live/", start).await, "watch");
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for i in 0..50 {
                ok(
                    store.create(&format!("/live/{i:02}"), bytes("v")).await,
                    "create",
                );
            }
        })
    };
    for i in 0..50 {
        let event = next_event(&mut stream).await;
        assert_eq!(
            (event.revision(), event.kv.key),
            (start + 1 + i, format!("/live/{i:02}"))
        );
    }
    writer.await.expect("writer task");
}

/// Watching from below the compacted revision fails at once; from it, works.
pub async fn watch_from_compacted_revision_fails(store: Arc<dyn Store>) {
    for i in 0..5 {
        ok(store.create(&format!("/c/{i}"), bytes("v")).await, "create");
    }
    ok(store.compact(3).await, "compact");
    for after in [0, 2] {
        match store.watch("/c/", after).await {
            Err(StoreError::Compacted {
                requested,
                compacted: 3,
            }) => assert_eq!(requested, after),
            Err(other) => panic!("watch after {after}: got {other}"),
            Ok(_) => panic!("watch after {after}: expected Compacted"),
        }
    }
    let mut stream = ok(
        store.watch("/c/", 3).await,
        "watch at the compacted revision",
    );
    for revision in [4, 5] {
        assert_eq!(next_event(&mut stream).await.revision(), revision);
    }
}

/// A watcher overtaken by compaction gets `Compacted`, then its stream ends.
pub async fn watch_behind_compaction_ends_with_compacted(store: Arc<dyn Store>) {
    let mut stream = ok(store.watch("/s/", 0).await, "watch");
    for i in 0..10 {
        ok(store.create(&format!("/s/{i}"), bytes("v")).await, "create");
    }
    ok(store.compact(6).await, "compact");
    // The watcher had read nothing: events 1..=6 are gone, so it must be told, not skip them.
    match tokio::time::timeout(WAIT, stream.next()).await {
        Ok(Some(Err(StoreError::Compacted { compacted: 6, .. }))) => {}
        other => panic!("lagging watcher: expected Compacted, got {other:?}"),
    }
    match tokio::time::timeout(WAIT, stream.next()).await {
        Ok(None) => {}
        other => panic!("stream must end after Compacted, got {other:?}"),
    }
}

/// Watching from a future revision waits for it (etcd semantics).
pub async fn watch_from_future_revision_waits(store: Arc<dyn Store>) {
    ok(store.create("/fw/0", bytes("v")).await, "create");
    let mut stream = ok(
        store.watch("/fw/", 3).await,
        "watch after a future revision",
    );
    for i in 1..=4 {
        ok(
            store.create(&format!("/fw/{i}"), bytes("v")).await,
            "create",
        );
    }
    let event = next_event(&mut stream).await;
    assert_eq!((event.kv.key.as_str(), event.revision()), ("/fw/3", 4));
    assert_eq!(next_event(&mut stream).await.revision(), 5);
}

/// Hundreds of watchers on one prefix each receive every event.
pub async fn many_watchers_each_see_every_event(store: Arc<dyn Store>) {
    let mut streams = Vec::new();
    for _ in 0..200 {
        streams.push(ok(store.watch("/many/", 0).await, "watch"));
    }
    for i in 0..20 {
        ok(
            store
                .create(&format!("/many/{i:02}"), bytes("shared"))
                .await,
            "create",
        );
    }
    for stream in &mut streams {
        for revision in 1..=20 {
            assert_eq!(next_event(stream).await.revision(), revision);
        }
    }
}

// ---- concurrency ---------------------------------------------------------------------------

/// Concurrent creators get unique, gap-free revisions, and watch replays them all.
pub async fn concurrent_creates_get_gap_free_revisions(store: Arc<dyn Store>) {
    const TASKS: usize = 8;
    const PER_TASK: usize = 200;
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            for i in 0..PER_TASK {
                let key = format!("/cc/{t}/{i:03}");
                let revision = ok(store.create(&key, bytes(&key)).await, "create");
                revisions.push(revision);
            }
            revisions
        }));
    }
    let mut all = BTreeSet::new();
    for task in tasks {
        for revision in task.await.expect("writer task") {
            assert!(all.insert(revision), "revision {revision} handed out twice");
        }
    }
    let total = (TASKS * PER_TASK) as Revision;
    assert_eq!(all, (1..=total).collect::<BTreeSet<_>>());
    assert_eq!(ok(store.count("/cc/").await, "count"), total);
    let mut stream = ok(store.watch("/cc/", 0).await, "watch");
    for revision in 1..=total {
        assert_eq!(next_event(&mut stream).await.revision(), revision);
    }
}

/// Racing CAS increments: one winner per revision, no lost update.
pub async fn concurrent_cas_has_one_winner_per_revision(store: Arc<dyn Store>) {
    const TASKS: usize = 4;
    const INCREMENTS: usize = 25;
    ok(store.create("/cas", bytes("0")).await, "create");
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut won = Vec::new();
            while won.len() < INCREMENTS {
                let kv = ok(store.get("/cas").await, "get").expect("counter exists");
                let n: usize = String::from_utf8_lossy(&kv.value)
                    .parse()
                    .expect("a number");
                match store
                    .update("/cas", bytes(&(n + 1).to_string()), Some(kv.mod_revision))
                    .await
                {
                    Ok(revision) => won.push((kv.mod_revision, revision)),
                    Err(StoreError::Conflict { .. }) => {}
                    Err(error) => panic!("update: {error}"),
                }
            }
            won
        }))
    }
    let mut read_revisions = BTreeSet::new();
    let mut new_revisions = BTreeSet::new();
    for task in tasks {
        for (read, written) in task.await.expect("cas task") {
            assert!(
                read_revisions.insert(read),
                "two winners for revision {read}"
            );
            assert!(new_revisions.insert(written));
            assert_eq!(
                written,
                read + 1,
                "a successful CAS is the very next mutation"
            );
        }
    }
    let total = TASKS * INCREMENTS;
    let kv = ok(store.get("/cas").await, "get").expect("counter exists");
    assert_eq!(kv.value, bytes(&total.to_string()), "no increment lost");
    assert_eq!(kv.mod_revision, 1 + total as Revision);
}
