//! A three-member etcd cluster losing the member the store talks to: acknowledged writes
//! survive, writing continues through another member, and a watcher that re-watches from its
//! last revision sees every write exactly once, in order.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use store::{Revision, Store, StoreError, WatchStream};
use store_etcd::{EtcdOptions, EtcdStore};

use crate::harness::EtcdCluster;

const WRITES: usize = 60;
/// Longest the test waits for the cluster to elect a new leader and accept writes again.
const RECOVERY: Duration = Duration::from_secs(30);

/// Creates `key`, retrying through failover. Returns the revision once acknowledged; a retry
/// that finds the key already present means the interrupted attempt landed, and the value
/// read back says at which revision.
async fn create_acknowledged(store: &EtcdStore, key: &str) -> Revision {
    let deadline = Instant::now() + RECOVERY;
    let mut interrupted = false;
    loop {
        match store.create(key, Bytes::from(key.to_string())).await {
            Ok(revision) => return revision,
            Err(StoreError::AlreadyExists(_)) if interrupted => {
                let kv = store.get(key).await.expect("read back").expect("it exists");
                return kv.mod_revision;
            }
            // Losing the leader fails in-flight proposals after etcd's request timeout (7 s by
            // default); the retry goes to a surviving member.
            Err(StoreError::Backend(_)) if Instant::now() < deadline => {
                interrupted = true;
                // Waiting for a new leader: nothing to wait on but time, bounded by RECOVERY.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("create {key}: {error}"),
        }
    }
}

/// Reads events until `until` is reached, re-watching from the last revision whenever the
/// stream fails (its member died). Returns every (revision, key) seen.
async fn follow(
    store: &EtcdStore,
    mut stream: WatchStream,
    mut last: Revision,
    until: Revision,
) -> Vec<(Revision, String)> {
    let deadline = Instant::now() + RECOVERY;
    let mut seen = Vec::new();
    while last < until {
        assert!(
            Instant::now() < deadline,
            "watch did not reach {until}, stuck at {last}"
        );
        match tokio::time::timeout(RECOVERY, stream.next()).await {
            Ok(Some(Ok(event))) => {
                last = event.revision();
                seen.push((last, event.kv.key));
            }
            Ok(Some(Err(StoreError::Backend(_)))) | Ok(None) => {
                stream = loop {
                    match store.watch("/seq/", last).await {
                        Ok(stream) => break stream,
                        Err(StoreError::Backend(_)) if Instant::now() < deadline => {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        Err(error) => panic!("re-watch from {last}: {error}"),
                    }
                };
            }
            Ok(Some(Err(error))) => panic!("watch: {error}"),
            Err(_) => panic!("no watch event within {RECOVERY:?} at {last}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_member_in_use_loses_no_write_and_no_event() {
    let mut cluster = match EtcdCluster::start(3).await {
        Ok(cluster) => cluster,
        Err(error) => panic!("{error:#}"),
    };
    let store = match EtcdStore::connect(EtcdOptions {
        endpoints: cluster.urls(),
        prefix: "/ha/".to_string(),
        ..EtcdOptions::default()
    })
    .await
    {
        Ok(store) => store,
        Err(error) => panic!("connect: {error}"),
    };
    let stream = store.watch("/seq/", 0).await.expect("watch");
    let mut acknowledged = BTreeMap::new();
    for i in 0..WRITES {
        if i == WRITES / 2 {
            // The store prefers the first endpoint until it fails.
            cluster.members[0].kill();
        }
        let key = format!("/seq/{i:03}");
        let revision = create_acknowledged(&store, &key).await;
        acknowledged.insert(key, revision);
    }
    for (key, revision) in &acknowledged {
        let kv = store
            .get(key)
            .await
            .expect("get")
            .expect("acknowledged write present");
        assert_eq!(kv.mod_revision, *revision, "{key}");
    }
    let newest = acknowledged.values().copied().max().expect("writes");
    let seen = follow(&store, stream, 0, newest).await;
    let expected: Vec<(Revision, String)> = {
        let mut by_revision: Vec<_> = acknowledged.iter().map(|(k, r)| (*r, k.clone())).collect();
        by_revision.sort();
        by_revision
    };
    assert_eq!(
        seen, expected,
        "every write once, in revision order, across the failover"
    );
}
