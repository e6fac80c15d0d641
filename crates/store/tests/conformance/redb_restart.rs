//! redb-only behaviour: state, history, compaction and watch replay survive a reopen; the
//! compactor keeps its retention; the raw benchmark runs against a real file.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use store::compactor::{CompactionPolicy, spawn_compactor};
use store::redb_backend::{RedbOptions, RedbStore};
use store::{EventKind, RangeRequest, Store, StoreError};
use tokio_util::sync::CancellationToken;

fn open(path: &std::path::Path) -> RedbStore {
    RedbStore::open(path, RedbOptions::default()).expect("open redb store")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_history_and_watch_survive_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    {
        let store = open(&path);
        for i in 0..6 {
            store
                .create(&format!("/r/{i}"), Bytes::from(format!("v{i}")))
                .await
                .expect("create");
        }
        store
            .update("/r/0", Bytes::from_static(b"changed"), Some(1))
            .await
            .expect("update");
        store.delete("/r/1", Some(2)).await.expect("delete");
        store.compact(3).await.expect("compact");
    }
    let store = open(&path);
    assert_eq!(store.current_revision().await.expect("revision"), 8);
    assert_eq!(store.compacted_revision().await.expect("compacted"), 3);
    let old = store
        .range(RangeRequest {
            prefix: "/r/".into(),
            revision: Some(6),
            ..Default::default()
        })
        .await
        .expect("range at 6");
    assert_eq!(old.kvs.len(), 6);
    assert_eq!(old.kvs[0].value, Bytes::from_static(b"v0"));
    assert!(matches!(
        store
            .range(RangeRequest {
                prefix: "/r/".into(),
                revision: Some(2),
                ..Default::default()
            })
            .await,
        Err(StoreError::Compacted {
            requested: 2,
            compacted: 3
        })
    ));
    let mut stream = store.watch("/r/", 3).await.expect("watch from disk");
    let mut replayed = Vec::new();
    for _ in 4..=8 {
        let event = stream.next().await.expect("event").expect("not an error");
        replayed.push((event.revision(), event.kind));
    }
    assert_eq!(
        replayed,
        vec![
            (4, EventKind::Put),
            (5, EventKind::Put),
            (6, EventKind::Put),
            (7, EventKind::Put),
            (8, EventKind::Delete),
        ]
    );
    assert_eq!(
        store.create("/r/new", Bytes::new()).await.expect("create"),
        9
    );
    let live = tokio::time::timeout(Duration::from_secs(20), stream.next()).await;
    assert!(
        matches!(live, Ok(Some(Ok(ref e))) if e.revision() == 9),
        "{live:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compactor_keeps_its_retention_and_stops_on_cancel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Store> = Arc::new(open(&dir.path().join("store.redb")));
    for i in 0..30 {
        store
            .create(&format!("/k/{i}"), Bytes::new())
            .await
            .expect("create");
    }
    let cancel = CancellationToken::new();
    let policy = CompactionPolicy {
        keep_revisions: 10,
        interval: Duration::from_millis(10),
    };
    let task = spawn_compactor(store.clone(), policy, cancel.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while store.compacted_revision().await.expect("compacted") != 20 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "compactor never ran"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("compactor stops when cancelled")
        .expect("compactor task");
    assert!(store.watch("/k/", 19).await.is_err());
    assert!(store.watch("/k/", 20).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_create_rate_reports_every_create() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Store> = Arc::new(open(&dir.path().join("store.redb")));
    let result = store::bench::raw_create_rate(store.clone(), 8, 203, 256).await;
    assert_eq!((result.total, result.errors), (203, 0));
    assert!(result.ops_per_sec > 0.0);
    assert!(result.p50 <= result.p99);
    assert_eq!(store.count("/bench/").await.expect("count"), 203);
    assert_eq!(store.current_revision().await.expect("revision"), 203);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_close_checkpoints_what_the_journal_held() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let options = RedbOptions {
        checkpoint_interval: std::time::Duration::from_secs(3600),
        checkpoint_journal_bytes: u64::MAX,
        ..RedbOptions::default()
    };
    {
        let store = RedbStore::open(&path, options.clone()).expect("open");
        for i in 0..20 {
            store
                .create(&format!("/j/{i}"), Bytes::from(format!("v{i}")))
                .await
                .expect("create");
        }
    }
    let store = RedbStore::open(&path, options).expect("reopen");
    assert_eq!(store.replayed_from_journal(), 0, "the close checkpointed");
    assert_eq!(store.current_revision().await.expect("revision"), 20);
    let kv = store.get("/j/19").await.expect("get").expect("present");
    assert_eq!(kv.value, Bytes::from_static(b"v19"));
}

/// Writes under a relaxed prefix are acknowledged without a journal sync of their own; a batch
/// holding any other write still syncs; both kinds survive a clean reopen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relaxed_writes_skip_the_sync_and_survive_a_clean_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let options = RedbOptions {
        relaxed_prefixes: vec!["/registry/core/events/".into()],
        // No checkpoint during the test: every batch goes through the journal.
        checkpoint_interval: Duration::from_secs(3600),
        checkpoint_journal_bytes: u64::MAX,
        ..RedbOptions::default()
    };
    {
        let store = RedbStore::open(&path, options.clone()).expect("open");
        let before = store.journal_syncs();
        for i in 0..20 {
            let key = format!("/registry/core/events/default/e{i}");
            store
                .create(&key, Bytes::from(format!("event {i}")))
                .await
                .expect("relaxed create");
        }
        store
            .update(
                "/registry/core/events/default/e0",
                Bytes::from_static(b"event 0, twice"),
                Some(1),
            )
            .await
            .expect("relaxed update");
        assert_eq!(
            store.journal_syncs(),
            before,
            "relaxed writes alone never sync"
        );
        store
            .create(
                "/registry/apps/deployments/default/web",
                Bytes::from_static(b"web"),
            )
            .await
            .expect("strict create");
        assert_eq!(store.journal_syncs(), before + 1, "a strict write syncs");
        store
            .delete("/registry/core/events/default/e1", None)
            .await
            .expect("relaxed delete");
        assert_eq!(store.journal_syncs(), before + 1);
    }
    let store = RedbStore::open(&path, options).expect("reopen");
    let events = store
        .range(RangeRequest {
            prefix: "/registry/core/events/".into(),
            ..Default::default()
        })
        .await
        .expect("range");
    assert_eq!(events.kvs.len(), 19, "e1 deleted, the rest kept");
    let e0 = store
        .get("/registry/core/events/default/e0")
        .await
        .expect("get")
        .expect("e0 kept");
    assert_eq!(e0.value, Bytes::from_static(b"event 0, twice"));
    assert_eq!(store.current_revision().await.expect("revision"), 23);
    assert!(
        store
            .get("/registry/apps/deployments/default/web")
            .await
            .expect("get")
            .is_some()
    );
}

/// Acknowledged writes wait for their redb commit (`commit_interval`) and share it, yet every
/// read sees them at once: a point read and a watch from the ring (which keeps them even when it
/// is tiny), a range and a count after flushing them, and a reopen from the closing checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_waiting_for_their_commit_are_read_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let options = RedbOptions {
        // Longer than the test: only a reader, the ring's room or closing commits.
        commit_interval: Duration::from_secs(3600),
        watch_cache_events: 8,
        ..RedbOptions::default()
    };
    {
        let store = RedbStore::open(&path, options.clone()).expect("open");
        let commits_before = store.redb_commits();
        for i in 0..3 {
            store
                .create(&format!("/d/{i}"), Bytes::from(format!("v{i}")))
                .await
                .expect("create");
        }
        store
            .update("/d/0", Bytes::from_static(b"changed"), Some(1))
            .await
            .expect("update");
        assert_eq!(
            store.redb_commits(),
            commits_before,
            "four writes, each its own batch, wait in one open transaction"
        );
        let read = store.get("/d/0").await.expect("get").expect("present");
        assert_eq!(read.value, Bytes::from_static(b"changed"));
        let mut watch = store.watch("/d/", 0).await.expect("watch");
        for expected in 1..=4 {
            let event = watch.next().await.expect("event").expect("ok");
            assert_eq!(event.kv.mod_revision, expected);
        }
        // More writes than half the ring's room: the writer commits rather than let the ring
        // drop events redb does not have yet.
        for i in 3..12 {
            store
                .create(&format!("/d/{i}"), Bytes::from_static(b"v"))
                .await
                .expect("create");
        }
        assert!(store.redb_commits() > commits_before);
        let listed = store
            .range(RangeRequest {
                prefix: "/d/".to_string(),
                ..RangeRequest::default()
            })
            .await
            .expect("range");
        assert_eq!(listed.kvs.len(), 12);
        assert_eq!(store.count("/d/").await.expect("count"), 12);
        // The one left waiting after the last commit is flushed by the range above, then
        // another write waits again and only the closing checkpoint commits it.
        store
            .create("/d/last", Bytes::from_static(b"v"))
            .await
            .expect("create");
        let mut from_start = store.watch("/d/", 0).await.expect("watch");
        let mut seen = 0;
        while seen < 14 {
            from_start.next().await.expect("event").expect("ok");
            seen += 1;
        }
    }
    let store = RedbStore::open(&path, options).expect("reopen");
    assert_eq!(store.current_revision().await.expect("revision"), 14);
    assert!(store.get("/d/last").await.expect("get").is_some());
}
