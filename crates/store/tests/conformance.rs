//! The store crate's one integration-test binary: the conformance suite against every
//! backend, plus redb-only tests (restart, crash safety, small watch ring).

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

#[path = "conformance/crash.rs"]
mod crash;
#[path = "conformance/model.rs"]
mod model;
#[path = "conformance/redb_restart.rs"]
mod redb_restart;

use store::conformance::Fixture;
use store::memory::MemoryStore;
use store::redb_backend::{RedbOptions, RedbStore};

/// A redb store in a fresh temporary directory that lives as long as the fixture.
fn redb_fixture(options: RedbOptions) -> Fixture {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = RedbStore::open(dir.path().join("store.redb"), options).expect("open redb store");
    Fixture::with_guard(store, dir)
}

mod memory {
    use super::*;
    store::conformance_tests!(|| async { Fixture::new(MemoryStore::new()) });
}

mod redb {
    use super::*;
    store::conformance_tests!(|| async { redb_fixture(RedbOptions::default()) });
}

/// A watch ring of 4 events makes nearly every watcher replay from the on-disk event log.
mod redb_tiny_watch_ring {
    use super::*;
    store::conformance_tests!(|| async {
        redb_fixture(RedbOptions {
            watch_cache_events: 4,
            max_batch: 3,
            ..RedbOptions::default()
        })
    });
}

/// Every write relaxed (no journal sync of its own): the semantics stay the same.
mod redb_all_relaxed {
    use super::*;
    store::conformance_tests!(|| async {
        redb_fixture(RedbOptions {
            relaxed_prefixes: vec![String::new()],
            ..RedbOptions::default()
        })
    });
}

#[tokio::test]
async fn run_all_passes_on_memory() {
    store::conformance::run_all(|| async { Fixture::new(MemoryStore::new()) }).await;
}

/// Ten thousand idle watchers cost one cursor each: all of them see a write, on both backends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watchers_each_see_a_write() {
    use futures::StreamExt;
    for fixture in [
        Fixture::new(MemoryStore::new()),
        redb_fixture(RedbOptions::default()),
    ] {
        let store = fixture.store.clone();
        let mut streams = Vec::with_capacity(10_000);
        for i in 0..10_000 {
            let prefix = if i % 2 == 0 { "/w/" } else { "/w/x" };
            streams.push(store.watch(prefix, 0).await.expect("watch"));
        }
        let revision = store
            .create("/w/x1", bytes::Bytes::from_static(b"shared"))
            .await
            .expect("create");
        let deadline = std::time::Duration::from_secs(30);
        for stream in &mut streams {
            let event = tokio::time::timeout(deadline, stream.next())
                .await
                .expect("event within deadline")
                .expect("stream open")
                .expect("no error");
            assert_eq!(event.revision(), revision);
        }
    }
}
