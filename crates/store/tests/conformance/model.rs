//! Property test: random histories applied to each backend and to a plain model (a snapshot
//! map per revision) must agree on every outcome, on every point read after each write, on every paged range at every readable
//! revision, and on the watch replay after compaction.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::StreamExt;
use proptest::prelude::*;
use store::memory::MemoryStore;
use store::redb_backend::{RedbOptions, RedbStore};
use store::{EventKind, KeyValue, RangeRequest, Revision, Store, StoreError};

/// Keys chosen to trip prefix handling: `/a` vs `/a/` vs `/ab/`, nested keys.
const KEYS: [&str; 6] = ["/a/1", "/a/2", "/ab/1", "/b", "/a", "/a/1/x"];
const PREFIXES: [&str; 5] = ["", "/a/", "/ab/", "/a", "/c"];

#[derive(Clone, Debug)]
enum Op {
    Create(usize),
    /// `Some(true)`: the right expected revision; `Some(false)`: a wrong one; `None`: none.
    Update(usize, Option<bool>),
    Delete(usize, Option<bool>),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let expected = prop::option::of(any::<bool>());
    prop_oneof![
        key.clone().prop_map(Op::Create),
        (key.clone(), expected.clone()).prop_map(|(k, e)| Op::Update(k, e)),
        (key, expected).prop_map(|(k, e)| Op::Delete(k, e)),
    ]
}

/// The model: the state after every revision, and the events in order.
struct Model {
    snapshots: Vec<BTreeMap<String, KeyValue>>,
    events: Vec<(EventKind, String, Revision)>,
}

impl Model {
    fn current(&self) -> &BTreeMap<String, KeyValue> {
        &self.snapshots[self.snapshots.len() - 1]
    }

    fn revision(&self) -> Revision {
        (self.snapshots.len() - 1) as Revision
    }

    /// Applies `op`; returns the expected revision, or `None` if it must fail.
    fn apply(&mut self, op: &Op, value: &Bytes) -> Option<Revision> {
        let revision = self.revision() + 1;
        let mut next = self.current().clone();
        let (key, kind) = match op {
            Op::Create(k) => {
                let key = KEYS[*k].to_string();
                if next.contains_key(&key) {
                    return None;
                }
                next.insert(key.clone(), kv(&key, value, revision, revision));
                (key, EventKind::Put)
            }
            Op::Update(k, expected) | Op::Delete(k, expected) => {
                let key = KEYS[*k].to_string();
                let old = next.get(&key)?;
                if *expected == Some(false) {
                    return None;
                }
                if matches!(op, Op::Update(..)) {
                    let create = old.create_revision;
                    next.insert(key.clone(), kv(&key, value, create, revision));
                    (key, EventKind::Put)
                } else {
                    next.remove(&key);
                    (key, EventKind::Delete)
                }
            }
        };
        self.snapshots.push(next);
        self.events.push((kind, key, revision));
        Some(revision)
    }
}

fn kv(key: &str, value: &Bytes, create: Revision, modified: Revision) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: value.clone(),
        create_revision: create,
        mod_revision: modified,
    }
}

async fn check_against_model(store: &dyn Store, ops: &[Op], compact_fraction: f64) {
    let mut model = Model {
        snapshots: vec![BTreeMap::new()],
        events: Vec::new(),
    };
    for (i, op) in ops.iter().enumerate() {
        let value = Bytes::from(format!("value-{i}"));
        let expected_revision = |key: &str| {
            let current = model.current().get(key).map_or(0, |kv| kv.mod_revision);
            move |right: &Option<bool>| match right {
                Some(true) => Some(current),
                Some(false) => Some(current + 1000),
                None => None,
            }
        };
        let got = match op {
            Op::Create(k) => store.create(KEYS[*k], value.clone()).await,
            Op::Update(k, e) => {
                let expected = expected_revision(KEYS[*k])(e);
                store.update(KEYS[*k], value.clone(), expected).await
            }
            Op::Delete(k, e) => {
                let expected = expected_revision(KEYS[*k])(e);
                store.delete(KEYS[*k], expected).await.map(|(r, _)| r)
            }
        };
        let want = model.apply(op, &value);
        match (&got, want) {
            (Ok(r), Some(w)) => assert_eq!(*r, w, "op {i} {op:?}"),
            (Err(StoreError::Backend(e)), _) => panic!("op {i} {op:?}: backend error {e}"),
            (Err(_), None) => {}
            _ => panic!("op {i} {op:?}: store said {got:?}, model said {want:?}"),
        }
        // Point reads after every write: with a small watch ring, some keys are answered from
        // the ring and some from the backend's own table.
        for key in KEYS {
            let read = store.get(key).await.expect("get");
            assert_eq!(
                read.as_ref(),
                model.current().get(key),
                "get {key} after op {i} {op:?}"
            );
        }
    }
    let current = model.revision();
    let compacted = (current as f64 * compact_fraction) as Revision;
    store.compact(compacted).await.expect("compact");
    for revision in 0..=current {
        for prefix in PREFIXES {
            for limit in [0, 2] {
                let pages = read_pages(store, prefix, limit, revision).await;
                if revision < compacted {
                    assert!(
                        matches!(pages, Err(StoreError::Compacted { .. })),
                        "range at compacted {revision}: {pages:?}"
                    );
                    continue;
                }
                let want: Vec<KeyValue> = model.snapshots[revision as usize]
                    .values()
                    .filter(|kv| kv.key.starts_with(prefix))
                    .cloned()
                    .collect();
                assert_eq!(
                    pages.expect("range"),
                    want,
                    "{prefix:?} at {revision} limit {limit}"
                );
            }
        }
    }
    let mut stream = store.watch("/a", compacted).await.expect("watch");
    for (kind, key, revision) in model.events.iter().filter(|e| e.2 > compacted) {
        if !key.starts_with("/a") {
            continue;
        }
        let event = stream.next().await.expect("event").expect("no error");
        assert_eq!(
            (event.kind, event.kv.key.as_str(), event.revision()),
            (*kind, key.as_str(), *revision)
        );
    }
}

async fn read_pages(
    store: &dyn Store,
    prefix: &str,
    limit: usize,
    revision: Revision,
) -> Result<Vec<KeyValue>, StoreError> {
    let mut all = Vec::new();
    let mut req = RangeRequest {
        prefix: prefix.to_string(),
        limit,
        revision: Some(revision),
        start_after: None,
    };
    loop {
        let page = store.range(req.clone()).await?;
        assert_eq!(page.revision, revision);
        all.extend(page.kvs.iter().cloned());
        if !page.more {
            return Ok(all);
        }
        req.start_after = page.kvs.last().map(|kv| kv.key.clone());
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn memory_matches_model(ops in prop::collection::vec(op(), 0..40), fraction in 0.0..1.0f64) {
        runtime().block_on(check_against_model(&MemoryStore::new(), &ops, fraction));
    }

    #[test]
    fn redb_matches_model(ops in prop::collection::vec(op(), 0..40), fraction in 0.0..1.0f64) {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = RedbOptions { watch_cache_events: 3, ..RedbOptions::default() };
        let store = RedbStore::open(dir.path().join("store.redb"), options).expect("open");
        runtime().block_on(check_against_model(&store, &ops, fraction));
    }
}
