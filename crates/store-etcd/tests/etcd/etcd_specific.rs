//! Behaviour only the etcd backend has: namespaces sharing one etcd, the revision mapping,
//! connection and configuration errors, TLS client certificates, snapshots, the write rate.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use store::{EventKind, RangeRequest, Store, StoreError};
use store_etcd::{EtcdOptions, EtcdStore, EtcdTls};

use crate::harness::{EtcdServer, etcdctl_installed};

/// Longest wait for a watch event or a stream's end.
const WAIT: Duration = Duration::from_secs(20);

async fn server() -> EtcdServer {
    match EtcdServer::start().await {
        Ok(server) => server,
        Err(error) => panic!("{error:#}"),
    }
}

async fn connect(options: EtcdOptions) -> EtcdStore {
    let endpoints = options.endpoints.join(",");
    match EtcdStore::connect(options).await {
        Ok(store) => store,
        Err(error) => panic!("connecting to {endpoints}: {error}"),
    }
}

fn bytes(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

#[tokio::test]
async fn namespaces_sharing_one_etcd_are_isolated() {
    let etcd = server().await;
    let a = connect(etcd.options("/tenant/")).await;
    let b = connect(etcd.options("/tenant2/")).await;
    let mut watch_a = a.watch("", 0).await.expect("watch a");
    a.create("/k", bytes("in a")).await.expect("create in a");
    b.create("/k", bytes("in b")).await.expect("same key in b");
    let marker = a.create("/marker", bytes("m")).await.expect("marker");
    for (store, value) in [(&a, "in a"), (&b, "in b")] {
        let all = store.range(RangeRequest::default()).await.expect("range");
        let first = all.kvs.first().expect("one key at least");
        assert_eq!(
            (first.key.as_str(), &first.value[..]),
            ("/k", value.as_bytes())
        );
    }
    assert_eq!(a.count("").await.expect("count a"), 2);
    assert_eq!(b.count("").await.expect("count b"), 1);
    // a's watcher sees its own two writes and nothing from b in between.
    let first = tokio::time::timeout(WAIT, watch_a.next())
        .await
        .expect("event");
    assert_eq!(first.expect("some").expect("ok").kv.key, "/k");
    let second = tokio::time::timeout(WAIT, watch_a.next())
        .await
        .expect("event");
    assert_eq!(second.expect("some").expect("ok").revision(), marker);
}

#[tokio::test]
async fn keys_and_revisions_map_onto_etcd_with_the_documented_offset() {
    let etcd = server().await;
    let store = connect(etcd.options("/ns/")).await;
    assert_eq!(
        store.current_revision().await.expect("revision"),
        0,
        "empty etcd"
    );
    let revision = store.create("/a/b", bytes("v")).await.expect("create");
    assert_eq!(revision, 1, "the first write is store revision 1");
    let mut raw = store.client().clone();
    let resp = raw.get("/ns//a/b", None).await.expect("raw get");
    let kv = resp.kvs().first().expect("stored under prefix + key");
    assert_eq!(kv.value(), b"v");
    assert_eq!(
        kv.mod_revision(),
        revision as i64 + store_etcd::keys::REVISION_OFFSET
    );
    // A write outside the namespace is invisible, but it does advance the shared revision.
    raw.put("/elsewhere", "x", None).await.expect("raw put");
    assert_eq!(store.count("").await.expect("count"), 1);
    assert_eq!(store.current_revision().await.expect("revision"), 2);
}

#[tokio::test]
async fn a_deleted_key_arrives_on_a_watch_with_its_last_value() {
    let etcd = server().await;
    let store = connect(etcd.options("")).await;
    let created = store.create("/d", bytes("v1")).await.expect("create");
    let mut stream = store.watch("/d", created).await.expect("watch");
    let (deleted_at, _) = store.delete("/d", Some(created)).await.expect("delete");
    let event = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("event in time")
        .expect("stream open")
        .expect("event");
    assert_eq!(event.kind, EventKind::Delete);
    assert_eq!(
        (
            &event.kv.value[..],
            event.kv.create_revision,
            event.kv.mod_revision
        ),
        (&b"v1"[..], created, deleted_at)
    );
}

#[tokio::test]
async fn configuration_errors_say_what_is_accepted() {
    let cases = [
        (
            EtcdOptions {
                prefix: "/registry".to_string(),
                ..EtcdOptions::default()
            },
            "must be empty or end with '/'",
        ),
        (
            EtcdOptions {
                endpoints: Vec::new(),
                ..EtcdOptions::default()
            },
            "no etcd endpoints",
        ),
        (
            EtcdOptions {
                tls: Some(EtcdTls {
                    ca_file: "/nonexistent/ca.pem".into(),
                    cert_file: "/nonexistent/cert.pem".into(),
                    key_file: "/nonexistent/key.pem".into(),
                }),
                ..EtcdOptions::default()
            },
            "/nonexistent/ca.pem",
        ),
    ];
    for (options, wanted) in cases {
        match EtcdStore::connect(options.clone()).await {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains(wanted), "{options:?}: {message}")
            }
            Err(other) => panic!("{options:?}: unexpected {other}"),
            Ok(_) => panic!("{options:?}: connected"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_etcd_is_a_backend_error_naming_the_endpoints() {
    // A port nothing listens on: bind, note it, release it.
    let port = test_fixtures::free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let options = EtcdOptions {
        endpoints: vec![endpoint.clone()],
        dial_timeout: Duration::from_millis(500),
        ..EtcdOptions::default()
    };
    match EtcdStore::connect(options).await {
        Err(StoreError::Backend(message)) => assert!(message.contains(&endpoint), "{message}"),
        Err(other) => panic!("unexpected {other}"),
        Ok(_) => panic!("connected to nothing"),
    }
}

#[tokio::test]
async fn a_watch_ends_with_an_error_when_etcd_goes_away() {
    let etcd = server().await;
    let store = connect(etcd.options("")).await;
    let mut stream = store.watch("/", 0).await.expect("watch");
    drop(etcd);
    match tokio::time::timeout(WAIT, stream.next()).await {
        Ok(Some(Err(StoreError::Backend(message)))) => {
            assert!(message.contains("etcd"), "{message}")
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    let end = tokio::time::timeout(WAIT, stream.next()).await;
    assert!(matches!(end, Ok(None)), "the stream ends after the error");
}

#[tokio::test]
async fn client_certificates_authenticate_to_a_tls_etcd() {
    let pki = tempfile::tempdir().expect("tempdir");
    let tls = crate::certs::write_pki(pki.path()).expect("certificates");
    let etcd = match EtcdServer::start_tls(&tls).await {
        Ok(server) => server,
        Err(error) => panic!("{error:#}"),
    };
    assert!(etcd.url.starts_with("https://"));
    let client_tls = EtcdTls {
        ca_file: tls.ca_file.clone(),
        cert_file: pki.path().join("client.pem"),
        key_file: pki.path().join("client-key.pem"),
    };
    let store = connect(EtcdOptions {
        tls: Some(client_tls.clone()),
        ..etcd.options("/secure/")
    })
    .await;
    let revision = store
        .create("/k", bytes("v"))
        .await
        .expect("create over TLS");
    let kv = store.get("/k").await.expect("get").expect("present");
    assert_eq!((&kv.value[..], kv.mod_revision), (&b"v"[..], revision));
    // Presenting the server's pair (not valid for client auth) or no TLS at all is refused.
    let refused = [
        Some(EtcdTls {
            cert_file: tls.cert_file.clone(),
            key_file: tls.key_file.clone(),
            ..client_tls
        }),
        None,
    ];
    for tls in refused {
        let options = EtcdOptions {
            tls: tls.clone(),
            dial_timeout: Duration::from_secs(2),
            ..etcd.options("/secure/")
        };
        match EtcdStore::connect(options).await {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains(&etcd.url), "{tls:?}: {message}")
            }
            Err(other) => panic!("{tls:?}: unexpected {other}"),
            Ok(_) => panic!("{tls:?}: connected without a valid client certificate"),
        }
    }
}

/// bbolt's meta page magic, little-endian at offset 16 of an etcd database file.
const BOLT_MAGIC: [u8; 4] = 0xED0C_DAEDu32.to_le_bytes();

#[tokio::test]
async fn a_snapshot_restores_into_a_fresh_etcd() {
    let etcd = server().await;
    let store = connect(etcd.options("/backup/")).await;
    for i in 0..20 {
        store
            .create(&format!("/k/{i:02}"), bytes(&format!("v{i}")))
            .await
            .expect("create");
    }
    let (last, _) = store.delete("/k/00", None).await.expect("delete");
    let out = etcd.scratch("snapshot.db");
    let size = store.snapshot(&out).await.expect("snapshot");
    let file = std::fs::read(&out).expect("snapshot file");
    assert_eq!(file.len() as u64, size);
    assert_eq!(file.get(16..20), Some(&BOLT_MAGIC[..]), "a bbolt database");
    assert!(
        etcdctl_installed(),
        "etcdctl is needed to restore the snapshot: install Debian's etcd-client (scripts/setup.sh does)"
    );
    let restored = match EtcdServer::start_restored(&out).await {
        Ok(server) => server,
        Err(error) => panic!("{error:#}"),
    };
    let copy = connect(restored.options("/backup/")).await;
    let keys = copy.range(RangeRequest::default()).await.expect("range");
    assert_eq!(keys.kvs.len(), 19);
    assert_eq!(keys.kvs.first().map(|kv| kv.key.as_str()), Some("/k/01"));
    // Revisions carry over, so resourceVersions keep increasing after a restore.
    assert!(copy.current_revision().await.expect("revision") >= last);
    let next = copy
        .create("/after", bytes("x"))
        .await
        .expect("write after restore");
    assert!(next > last);
}

/// Creates in the raw-rate test: enough to exercise 16 concurrent clients while keeping the
/// suite fast; set `STORE_ETCD_BENCH_KEYS=5000` for the benchmark's full measurement.
fn bench_keys() -> usize {
    std::env::var("STORE_ETCD_BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

#[tokio::test]
async fn raw_create_rate_with_16_clients() {
    let etcd = server().await;
    let store: Arc<dyn Store> = Arc::new(connect(etcd.options("")).await);
    let keys = bench_keys();
    let result = store::bench::raw_create_rate(store.clone(), 16, keys, 1024).await;
    eprintln!(
        "etcd raw create rate: {:.0} creates/s (p50 {:?}, p99 {:?}, {} ok, {} errors)",
        result.ops_per_sec, result.p50, result.p99, result.total, result.errors
    );
    assert_eq!((result.total, result.errors), (keys, 0));
    assert_eq!(store.count("/bench/").await.expect("count"), keys as u64);
}

#[tokio::test]
async fn a_dead_endpoint_beside_a_live_one_does_not_stop_the_store() {
    let etcd = server().await;
    let dead_port = test_fixtures::free_port();
    let store = connect(EtcdOptions {
        endpoints: vec![format!("http://127.0.0.1:{dead_port}"), etcd.url.clone()],
        ..etcd.options("")
    })
    .await;
    for i in 0..20 {
        let key = format!("/k/{i}");
        let revision = store.create(&key, bytes("v")).await.expect("create");
        let kv = store.get(&key).await.expect("get").expect("present");
        assert_eq!(kv.mod_revision, revision);
    }
}

#[tokio::test]
async fn a_snapshot_into_a_missing_directory_fails_clearly() {
    let etcd = server().await;
    let store = connect(etcd.options("")).await;
    let out = etcd.scratch("no/such/dir/snapshot.db");
    match store.snapshot(&out).await {
        Err(StoreError::Backend(message)) => {
            assert!(message.contains("no/such/dir"), "{message}")
        }
        other => panic!("expected a backend error naming the path, got {other:?}"),
    }
    assert!(!out.exists());
}

/// A restore moves every revision far up and compacts the old ones: a watcher from a revision
/// seen before the restore is told `Compacted` (410 to API clients) instead of waiting for a
/// revision the restored store would reuse; the offset survives a snapshot, a restore and
/// a reconnect, so every replica agrees.
#[tokio::test]
async fn bumped_revisions_survive_a_snapshot_restore_and_reconnect() {
    let etcd = server().await;
    let mut store = connect(etcd.options("/plane/")).await;
    let mut last = 0;
    for i in 0..10 {
        last = store
            .create(&format!("/k/{i}"), bytes("v"))
            .await
            .expect("create");
    }
    let seen_after_backup = last + 5;
    let bumped = store.bump_revisions(1000).await.expect("bump");
    assert!(bumped > last + 1000, "{bumped}");
    let out = etcd.scratch("bumped.db");
    store.snapshot(&out).await.expect("snapshot");
    drop(store);
    if !etcdctl_installed() {
        panic!("etcdctl (Debian's etcd-client) is needed to check restores");
    }
    let restored = match EtcdServer::start_restored(&out).await {
        Ok(server) => server,
        Err(error) => panic!("{error:#}"),
    };
    let copy = connect(restored.options("/plane/")).await;
    let keys = copy.range(RangeRequest::default()).await.expect("range");
    assert_eq!(keys.kvs.len(), 10, "the offset record is not an object");
    assert!(keys.kvs.iter().all(|kv| kv.mod_revision > 1000));
    assert_eq!(copy.current_revision().await.expect("revision"), bumped);
    assert!(copy.compacted_revision().await.expect("compacted") >= bumped);
    for old in [last, seen_after_backup] {
        match copy.watch("/", old).await {
            Err(StoreError::Compacted { .. }) => {}
            Err(other) => panic!("watch from {old}: {other}"),
            Ok(_) => panic!("a watch from {old} (before the restore) must be refused"),
        }
    }
    let mut watch = copy
        .watch("/", bumped)
        .await
        .expect("watch from the restore");
    let next = copy.create("/after", bytes("x")).await.expect("write");
    assert_eq!(next, bumped + 1);
    let event = tokio::time::timeout(WAIT, watch.next())
        .await
        .expect("event in time")
        .expect("stream open")
        .expect("event");
    assert_eq!((event.kv.key.as_str(), event.revision()), ("/after", next));
    // Another namespace of the same etcd keeps its own, unmoved, mapping.
    let other = connect(restored.options("/other/")).await;
    let rev = other.create("/x", bytes("y")).await.expect("create");
    assert!(rev < 1000, "{rev}");
}

/// An unpaged range (the API server's LIST without a limit) larger than gRPC's default 4 MiB
/// message limit comes back whole, and so does a watch replaying it.
#[tokio::test]
async fn a_range_larger_than_grpc_default_message_limit_is_read_whole() {
    let etcd = server().await;
    let store = connect(etcd.options("/big/")).await;
    let value = "x".repeat(1024 * 1024);
    for i in 0..6 {
        store
            .create(&format!("/k/{i}"), bytes(&value))
            .await
            .expect("create 1 MiB");
    }
    let all = store.range(RangeRequest::default()).await.expect("range");
    assert_eq!(all.kvs.len(), 6);
    assert!(all.kvs.iter().all(|kv| kv.value.len() == value.len()));
    let mut watch = store.watch("/", 0).await.expect("watch");
    for _ in 0..6 {
        let event = tokio::time::timeout(WAIT, watch.next())
            .await
            .expect("event in time")
            .expect("open")
            .expect("event");
        assert_eq!(event.kv.value.len(), value.len());
    }
}
