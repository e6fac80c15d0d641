//! Crash safety of the redb backend: a child process (this same test binary, re-executed)
//! creates keys as fast as it can from several tasks and prints each acknowledged write; the
//! parent SIGKILLs it after a fixed number of acknowledgements, reopens the store, and checks
//! that every acknowledged write is there intact, that no stored value is torn, and that new
//! writes continue above the last acknowledged revision. It runs twice: with checkpoints every
//! few KiB of journal (the kill lands among epochs), and with none, so that every acknowledged
//! write comes back from the journal alone. A third run has half the writers write under a
//! relaxed prefix (acknowledged without a sync of their own): the other half's acknowledged
//! writes must all survive, and what survives of the relaxed ones is intact and leaves no gap in
//! the revisions.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use store::redb_backend::{RedbOptions, RedbStore};
use store::{RangeRequest, Revision, Store};

/// Set in the child's environment to the database path; selects the writer role.
const CHILD_ENV: &str = "STORE_CRASH_CHILD_DB";
/// Set in the child's environment to its `checkpoint_journal_bytes`.
const CHECKPOINT_ENV: &str = "STORE_CRASH_CHILD_CHECKPOINT_BYTES";
/// Set in the child's environment when odd writers write relaxed keys.
const RELAXED_ENV: &str = "STORE_CRASH_CHILD_RELAXED";
/// The relaxed prefix of the third run; under `/crash/` so one range sees every key.
const RELAXED_PREFIX: &str = "/crash/relaxed/";
const ACKS_BEFORE_KILL: usize = 1000;
const WRITERS: usize = 8;

fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `key|filler|checksum`: the filler makes values span pages; the checksum exposes tearing.
fn value_for(key: &str, n: usize) -> String {
    let filler: String = std::iter::repeat_n(key, 1 + n % 97).collect();
    let body = format!("{key}|{filler}");
    format!("{body}|{:016x}", fnv1a(body.as_bytes()))
}

/// The key a value was written for, if its checksum holds.
fn verified_key(value: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(value).ok()?;
    let (body, checksum) = text.rsplit_once('|')?;
    if format!("{:016x}", fnv1a(body.as_bytes())) != checksum {
        return None;
    }
    body.split_once('|').map(|(key, _)| key)
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let replayed = crash_and_check(
        "crash::acknowledged_writes_survive_sigkill",
        16 * 1024,
        false,
    );
    assert!(
        replayed < ACKS_BEFORE_KILL,
        "checkpoints ran: {replayed} writes replayed"
    );
}

#[test]
fn acknowledged_writes_survive_sigkill_from_the_journal_alone() {
    // No checkpoint by size: every acknowledged write comes back from the journal or from
    // what redb's commits made without durability left in the file (the writer acknowledges
    // batches before their redb commit, so how many of each is a matter of timing).
    crash_and_check(
        "crash::acknowledged_writes_survive_sigkill_from_the_journal_alone",
        u64::MAX,
        false,
    );
}

#[test]
fn acknowledged_writes_survive_sigkill_among_relaxed_writes() {
    // No checkpoint by size: every acknowledged write comes back from the journal or from
    // what redb's commits made without durability left in the file (the writer acknowledges
    // batches before their redb commit, so how many of each is a matter of timing).
    crash_and_check(
        "crash::acknowledged_writes_survive_sigkill_among_relaxed_writes",
        u64::MAX,
        true,
    );
}

/// In the child: writes until killed. In the parent: runs the child, kills it, checks the
/// reopened store; returns how many writes the reopen replayed from the journal.
fn crash_and_check(test_name: &str, checkpoint_bytes: u64, relaxed: bool) -> usize {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        let bytes = std::env::var(CHECKPOINT_ENV)
            .expect("checkpoint bytes in the child's environment")
            .parse()
            .expect("numeric checkpoint bytes");
        run_child_writer(Path::new(&path), bytes, std::env::var(RELAXED_ENV).is_ok());
        std::process::exit(0);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let acked = run_and_kill_child(&path, test_name, checkpoint_bytes, relaxed);
    assert!(
        acked.keys().all(|key| !key.starts_with(RELAXED_PREFIX)),
        "only strict writes are counted as acknowledged"
    );
    assert!(acked.len() >= ACKS_BEFORE_KILL);

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let store = RedbStore::open(&path, RedbOptions::default()).expect("reopen after kill");
        let replayed = store.replayed_from_journal();
        for (key, revision) in &acked {
            let kv = store
                .get(key)
                .await
                .expect("get")
                .unwrap_or_else(|| panic!("acknowledged key {key} (revision {revision}) lost"));
            assert_eq!(
                (kv.create_revision, kv.mod_revision),
                (*revision, *revision),
                "{key}"
            );
            assert_eq!(
                verified_key(&kv.value),
                Some(key.as_str()),
                "{key} value corrupt"
            );
        }
        let all = store
            .range(RangeRequest {
                prefix: "/crash/".into(),
                ..Default::default()
            })
            .await
            .expect("range");
        assert!(all.kvs.len() >= acked.len());
        for kv in &all.kvs {
            assert_eq!(
                verified_key(&kv.value),
                Some(kv.key.as_str()),
                "torn value at {}",
                kv.key
            );
        }
        let last_acked = acked.values().copied().max().unwrap_or(0);
        let current = store.current_revision().await.expect("revision");
        assert!(current >= last_acked);
        assert_eq!(
            current,
            all.kvs.len() as Revision,
            "one revision per surviving create"
        );
        let next = store
            .create("/after-crash", Bytes::new())
            .await
            .expect("create after crash");
        assert_eq!(next, current + 1);
        replayed
    })
}

/// The child's store: checkpoints only by journal size, at `checkpoint_bytes`.
fn child_options(checkpoint_bytes: u64, relaxed: bool) -> RedbOptions {
    RedbOptions {
        checkpoint_interval: Duration::from_secs(3600),
        checkpoint_journal_bytes: checkpoint_bytes,
        relaxed_prefixes: if relaxed {
            vec![RELAXED_PREFIX.to_string()]
        } else {
            Vec::new()
        },
        ..RedbOptions::default()
    }
}

/// Kills the child if the parent panics before its planned SIGKILL, so no writer outlives the test.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns the child writer, collects acknowledgements until enough arrived, then SIGKILLs it.
fn run_and_kill_child(
    path: &Path,
    test_name: &str,
    checkpoint_bytes: u64,
    relaxed: bool,
) -> BTreeMap<String, Revision> {
    let mut command = Command::new(std::env::current_exe().expect("test binary path"));
    command
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .env(CHECKPOINT_ENV, checkpoint_bytes.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if relaxed {
        command.env(RELAXED_ENV, "1");
    }
    let mut child = KillOnDrop(command.spawn().expect("spawn child writer"));
    let stdout = child.0.stdout.take().expect("child stdout");
    let (lines_tx, lines) = mpsc::sync_channel(1024);
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut acked = BTreeMap::new();
    while acked.len() < ACKS_BEFORE_KILL {
        let line = match lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(error) => {
                panic!(
                    "child writer stalled or died after {} acks: {error}",
                    acked.len()
                );
            }
        };
        if let Some(rest) = line.strip_prefix("ACK ") {
            let (revision, key) = rest.split_once(' ').expect("ACK <revision> <key>");
            acked.insert(key.to_string(), revision.parse().expect("numeric revision"));
        } else {
            assert!(!line.starts_with("ERR"), "child writer failed: {line}");
        }
    }
    child.0.kill().expect("SIGKILL child");
    child.0.wait().expect("reap child");
    // Acknowledgements printed before the kill still count.
    for line in lines.iter() {
        let ack = line
            .strip_prefix("ACK ")
            .and_then(|rest| rest.split_once(' '));
        if let Some((revision, key)) = ack {
            acked.insert(key.to_string(), revision.parse().expect("numeric revision"));
        }
    }
    reader.join().expect("reader thread");
    acked
}

/// The child role: write forever from several tasks, acknowledging each durable create (`ACK`)
/// and, with `relaxed`, each relaxed create from the odd writers (`RELAXED`).
fn run_child_writer(path: &Path, checkpoint_bytes: u64, relaxed: bool) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = std::sync::Arc::new(
            RedbStore::open(path, child_options(checkpoint_bytes, relaxed))
                .expect("child opens store"),
        );
        let mut tasks = Vec::new();
        for writer in 0..WRITERS {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let relaxed_writer = relaxed && writer % 2 == 1;
                for n in 0.. {
                    let key = if relaxed_writer {
                        format!("{RELAXED_PREFIX}{writer}/{n:06}")
                    } else {
                        format!("/crash/{writer}/{n:06}")
                    };
                    match store.create(&key, Bytes::from(value_for(&key, n))).await {
                        Ok(revision) => {
                            let mut out = std::io::stdout().lock();
                            let tag = if relaxed_writer { "RELAXED" } else { "ACK" };
                            let _ = writeln!(out, "{tag} {revision} {key}");
                            let _ = out.flush();
                        }
                        Err(error) => {
                            let _ = writeln!(std::io::stdout().lock(), "ERR {key}: {error}");
                            std::process::exit(1);
                        }
                    }
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
    });
}

#[test]
fn checksum_detects_a_changed_byte() {
    let value = value_for("/crash/1/000001", 3);
    assert_eq!(verified_key(value.as_bytes()), Some("/crash/1/000001"));
    let mut torn = value.into_bytes();
    torn[20] ^= 1;
    assert_eq!(verified_key(&torn), None);
    assert_eq!(verified_key(b"no separators"), None);
}
