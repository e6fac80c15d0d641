//! The redb backend's write-ahead journal: how a write becomes durable without a durable redb
//! commit of its own.
//!
//! A durable redb commit writes every page the transaction touched (the B-tree path of each key
//! and event, the table roots, the allocator state) and fsyncs the file; at a steady trickle of
//! writes, each batch pays that whole cost. So the writer commits most batches to redb without
//! durability (visible to readers, kept in memory) after appending the batch's event records to
//! this journal and syncing it, one sequential write and one `fdatasync` of a file whose blocks
//! already exist. Every so often (a checkpoint) the writer commits durably instead; that
//! persists every earlier commit, and the journal starts over under a new epoch. etcd splits
//! its durability the same way: a WAL synced per batch, bbolt committed every 100 ms.
//!
//! Layout: the file is zero-filled to [`PREALLOCATED`] bytes when created (so a sync writes data
//! only, no file-size metadata) and holds records back to back from offset 0:
//! `magic u32 | epoch u64 | first_revision u64 | count u32 | payload_len u32 | crc32 u32 | payload`,
//! the crc covering the header fields before it and the payload; the payload is `count` times
//! `len u32 | event record` (the `events` table's own bytes). Integers are little-endian.
//!
//! Recovery ([`recover`]) replays, in one durable transaction, the events of the records whose
//! epoch is the store's (`meta.journal_epoch`) above the store's revision (a commit made without
//! durability may have reached the file before the process died); it stops at the first record
//! that leaves a gap or does not belong (a torn tail, zeros, or a record of an older epoch left
//! behind the newest). It then sets a fresh epoch, so nothing already in the file can be
//! replayed twice.
//!
//! Invariants: a record is synced before its batch is committed to redb, so no reader sees a
//! write that a crash could lose; a checkpoint's commit carries the next epoch, so the records of
//! the finished epoch are dead the moment it is durable.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use redb::{Database, Durability, ReadableTable};

use super::codec::decode_event;
use super::writer::store_event;
use super::{EVENTS, KV, META, REVISION, backend_error};
use crate::{Revision, StoreError, StoreResult};

/// `meta` entry naming the epoch whose records the journal may replay.
pub(super) const JOURNAL_EPOCH: &str = "journal_epoch";

/// Zero-filled size of a new journal file; a checkpoint comes due before it fills.
pub(super) const PREALLOCATED: u64 = 4 * 1024 * 1024;

const MAGIC: u32 = 0x4b4a_524e; // "KJRN"
const HEADER: usize = 4 + 8 + 8 + 4 + 4 + 4;
/// A payload this large in a header is corruption, not a batch (a batch holds at most
/// `max_batch` writes of at most `MAX_WRITE_BYTES` each, far below on any real run).
const MAX_PAYLOAD: usize = 1 << 31;

/// The journal file beside a store file: `store.redb` → `store.redb.journal`.
pub fn journal_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_os_string();
    name.push(".journal");
    PathBuf::from(name)
}

/// The open journal, owned by the writer thread.
pub(super) struct Journal {
    file: File,
    path: PathBuf,
    /// Where the next record goes: the bytes before it are this epoch's records.
    end: u64,
    epoch: u64,
    /// Reused encoding buffer.
    buffer: Vec<u8>,
    /// Syncs made, for [`super::RedbStore::journal_syncs`].
    syncs: Arc<AtomicU64>,
}

impl Journal {
    /// Opens (creating and zero-filling if needed) the journal at `path` for `epoch`, whose
    /// records start at offset 0.
    pub(super) fn open(path: &Path, epoch: u64) -> StoreResult<Journal> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_error(path, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| io_error(path, "stat", e))?
            .len();
        if len < PREALLOCATED {
            let zeros = vec![0u8; (PREALLOCATED - len) as usize];
            file.write_all_at(&zeros, len)
                .and_then(|()| file.sync_all())
                .map_err(|e| io_error(path, "preallocate", e))?;
        }
        Ok(Journal {
            file,
            path: path.to_path_buf(),
            end: 0,
            epoch,
            buffer: Vec::new(),
            syncs: Arc::default(),
        })
    }

    /// Bytes of records written in this epoch.
    pub(super) fn len(&self) -> u64 {
        self.end
    }

    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The counter of syncs, shared with whoever reports it.
    pub(super) fn syncs(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.syncs)
    }

    /// Appends one batch's event records (revisions `first_revision`, `first_revision + 1`, …)
    /// and, with `sync`, syncs them (and every record before them). On failure nothing counts as
    /// written: the next append overwrites it.
    pub(super) fn append(
        &mut self,
        first_revision: Revision,
        records: &[Vec<u8>],
        sync: bool,
    ) -> StoreResult<()> {
        let buffer = &mut self.buffer;
        buffer.clear();
        buffer.resize(HEADER, 0);
        for record in records {
            buffer.extend_from_slice(&len_u32(record.len())?.to_le_bytes());
            buffer.extend_from_slice(record);
        }
        let payload_len = len_u32(buffer.len() - HEADER)?;
        buffer[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        buffer[4..12].copy_from_slice(&self.epoch.to_le_bytes());
        buffer[12..20].copy_from_slice(&first_revision.to_le_bytes());
        buffer[20..24].copy_from_slice(&len_u32(records.len())?.to_le_bytes());
        buffer[24..28].copy_from_slice(&payload_len.to_le_bytes());
        let crc = checksum(&buffer[..28], &buffer[HEADER..]);
        buffer[28..HEADER].copy_from_slice(&crc.to_le_bytes());
        self.file
            .write_all_at(buffer, self.end)
            .map_err(|e| io_error(&self.path, "append to", e))?;
        if sync {
            self.file
                .sync_data()
                .map_err(|e| io_error(&self.path, "sync", e))?;
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        self.end += buffer.len() as u64;
        Ok(())
    }

    /// Starts `epoch` at offset 0, after a checkpoint made the old one's records dead.
    pub(super) fn restart(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.end = 0;
    }
}

fn checksum(header: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(header);
    hasher.update(payload);
    hasher.finalize()
}

fn len_u32(len: usize) -> StoreResult<u32> {
    u32::try_from(len)
        .map_err(|_| StoreError::Backend(format!("journal record of {len} bytes is too large")))
}

fn io_error(path: &Path, what: &str, error: std::io::Error) -> StoreError {
    StoreError::Backend(format!("cannot {what} journal {}: {error}", path.display()))
}

/// An epoch different from `previous` and from zero (which a store without one reads).
pub(super) fn next_epoch(previous: u64) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    // splitmix64 of everything at hand: epochs of different stores and runs do not collide.
    let mut z = previous
        .wrapping_add(nanos)
        .wrapping_add(u64::from(std::process::id()) << 32)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    if z == 0 || z == previous {
        previous.wrapping_add(1).max(1)
    } else {
        z
    }
}

/// One record read back: its first revision and its event records.
struct Record {
    epoch: u64,
    first_revision: Revision,
    events: Vec<Vec<u8>>,
}

/// Reads the record at `offset`, or `None` where the journal ends (zeros, a torn or foreign
/// record, the end of the file).
fn read_record(file: &File, offset: u64) -> StoreResult<Option<(Record, u64)>> {
    let mut header = [0u8; HEADER];
    match file.read_exact_at(&mut header, offset) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(StoreError::Backend(format!("cannot read journal: {e}"))),
    }
    let u32_at = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let u64_at = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&header[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    if u32_at(0) != MAGIC {
        return Ok(None);
    }
    let payload_len = u32_at(24) as usize;
    if payload_len > MAX_PAYLOAD {
        return Ok(None);
    }
    let mut payload = vec![0u8; payload_len];
    match file.read_exact_at(&mut payload, offset + HEADER as u64) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(StoreError::Backend(format!("cannot read journal: {e}"))),
    }
    if checksum(&header[..28], &payload) != u32_at(28) {
        return Ok(None);
    }
    let count = u32_at(20) as usize;
    let mut events = Vec::with_capacity(count.min(payload_len / 4));
    let mut at = 0;
    for _ in 0..count {
        let Some(len_bytes) = payload.get(at..at + 4) else {
            return Ok(None);
        };
        let len =
            u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
        let Some(record) = payload.get(at + 4..at + 4 + len) else {
            return Ok(None);
        };
        events.push(record.to_vec());
        at += 4 + len;
    }
    let record = Record {
        epoch: u64_at(4),
        first_revision: u64_at(12),
        events,
    };
    Ok(Some((record, offset + (HEADER + payload_len) as u64)))
}

/// Replays the journal at `path` into `db` (see the module comment) and moves the store to a
/// fresh epoch, durably. Returns that epoch and how many writes were replayed. Blocks on file I/O.
pub(super) fn recover(db: &Database, path: &Path) -> StoreResult<(u64, usize)> {
    let file = match File::open(path) {
        Ok(file) => Some(file),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(path, "open", e)),
    };
    let mut txn = db.begin_write().map_err(backend_error)?;
    txn.set_durability(Durability::Immediate)
        .map_err(backend_error)?;
    let mut replayed = 0;
    let epoch = {
        let mut meta = txn.open_table(META).map_err(backend_error)?;
        let mut kv = txn.open_table(KV).map_err(backend_error)?;
        let mut events = txn.open_table(EVENTS).map_err(backend_error)?;
        let read = |name: &str| -> StoreResult<u64> {
            Ok(meta
                .get(name)
                .map_err(backend_error)?
                .map(|v| v.value())
                .unwrap_or(0))
        };
        let epoch = read(JOURNAL_EPOCH)?;
        let mut revision = read(REVISION)?;
        let mut offset = 0;
        while let Some(file) = file.as_ref()
            && epoch != 0
            && let Some((record, next)) = read_record(file, offset)?
        {
            // A record at or below the store's revision is already in it: redb may have kept a
            // commit made without durability (the process died, its file writes did not), and the
            // writer acknowledges batches before their redb commit, so later records still count.
            if record.epoch != epoch || record.first_revision > revision + 1 {
                break;
            }
            for bytes in &record.events {
                let event = decode_event(bytes)?;
                if event.kv.mod_revision <= revision {
                    continue;
                }
                if event.kv.mod_revision != revision + 1 {
                    return Err(StoreError::Backend(format!(
                        "journal {} holds revision {} where {} was expected",
                        path.display(),
                        event.kv.mod_revision,
                        revision + 1
                    )));
                }
                store_event(&mut kv, &mut events, &event, bytes)?;
                revision = event.kv.mod_revision;
                replayed += 1;
            }
            offset = next;
        }
        let fresh = next_epoch(epoch);
        meta.insert(REVISION, revision).map_err(backend_error)?;
        meta.insert(JOURNAL_EPOCH, fresh).map_err(backend_error)?;
        fresh
    };
    txn.commit().map_err(backend_error)?;
    if replayed > 0 {
        tracing::info!(writes = replayed, journal = %path.display(), "replayed the store's journal");
    }
    Ok((epoch, replayed))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use redb::ReadableDatabase;

    use super::*;
    use crate::redb_backend::codec::{decode_kv, encode_event};
    use crate::{EventKind, KeyValue, WatchEvent};

    struct Fixture {
        _dir: tempfile::TempDir,
        db: Database,
        journal: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.redb");
        let db = Database::create(&path).expect("create");
        super::super::initialize(&db).expect("tables");
        Fixture {
            journal: journal_path(&path),
            _dir: dir,
            db,
        }
    }

    fn put(key: &str, revision: Revision) -> Vec<u8> {
        let event = WatchEvent {
            kind: EventKind::Put,
            kv: KeyValue {
                key: key.to_string(),
                value: Bytes::from(format!("value of {key}")),
                create_revision: revision,
                mod_revision: revision,
            },
            prev: None,
        };
        encode_event(&event).expect("encode")
    }

    fn stored(db: &Database, key: &str) -> Option<KeyValue> {
        let txn = db.begin_read().expect("read");
        let kv = txn.open_table(KV).expect("kv");
        kv.get(key)
            .expect("get")
            .map(|record| decode_kv(key, record.value()).expect("decode"))
    }

    fn revision(db: &Database) -> Revision {
        let txn = db.begin_read().expect("read");
        super::super::read_counters(&txn).expect("counters").0
    }

    #[test]
    fn replays_this_epochs_records_once() {
        let f = fixture();
        let (epoch, replayed) = recover(&f.db, &f.journal).expect("first open");
        assert_eq!(replayed, 0);
        let mut journal = Journal::open(&f.journal, epoch).expect("journal");
        journal
            .append(1, &[put("/a", 1), put("/b", 2)], true)
            .expect("append");
        journal.append(3, &[put("/c", 3)], true).expect("append");

        let (next, replayed) = recover(&f.db, &f.journal).expect("recover");
        assert_eq!(replayed, 3);
        assert_ne!(next, epoch);
        assert_eq!(revision(&f.db), 3);
        assert_eq!(stored(&f.db, "/c").map(|kv| kv.mod_revision), Some(3));
        // The records are still in the file, but of a finished epoch.
        assert_eq!(recover(&f.db, &f.journal).expect("again").1, 0);
        assert_eq!(revision(&f.db), 3);
    }

    /// The writer acknowledges batches before their redb commit, and a commit made without
    /// durability may reach the file before the process dies: the store then opens ahead of the
    /// journal's first records, and what follows them must still be replayed.
    #[test]
    fn records_the_store_already_holds_are_skipped_not_a_stop() {
        let f = fixture();
        let (epoch, _) = recover(&f.db, &f.journal).expect("first open");
        let mut journal = Journal::open(&f.journal, epoch).expect("journal");
        journal
            .append(1, &[put("/a", 1), put("/b", 2)], true)
            .expect("append");
        journal.append(3, &[put("/c", 3)], true).expect("append");
        journal.append(4, &[put("/d", 4)], true).expect("append");
        // The store already holds revisions 1 and 2 (the middle of a record is the hard case:
        // hold only revision 1 of the first record).
        {
            let txn = f.db.begin_write().expect("write");
            {
                let mut kv = txn.open_table(KV).expect("kv");
                let mut events = txn.open_table(EVENTS).expect("events");
                let record = put("/a", 1);
                store_event(
                    &mut kv,
                    &mut events,
                    &decode_event(&record).expect("decode"),
                    &record,
                )
                .expect("store");
                let mut meta = txn.open_table(META).expect("meta");
                meta.insert(REVISION, 1).expect("revision");
            }
            txn.commit().expect("commit");
        }
        let (_, replayed) = recover(&f.db, &f.journal).expect("recover");
        assert_eq!(replayed, 3, "revisions 2, 3 and 4");
        assert_eq!(revision(&f.db), 4);
        assert_eq!(stored(&f.db, "/b").map(|kv| kv.mod_revision), Some(2));
        assert_eq!(stored(&f.db, "/d").map(|kv| kv.mod_revision), Some(4));
    }

    #[test]
    fn unsynced_records_count_only_their_syncs_and_replay_like_the_others() {
        let f = fixture();
        let (epoch, _) = recover(&f.db, &f.journal).expect("first open");
        let mut journal = Journal::open(&f.journal, epoch).expect("journal");
        let syncs = journal.syncs();
        journal
            .append(1, &[put("/event", 1)], false)
            .expect("append");
        assert_eq!(syncs.load(Ordering::Relaxed), 0);
        journal
            .append(2, &[put("/object", 2)], true)
            .expect("append");
        assert_eq!(syncs.load(Ordering::Relaxed), 1);
        journal
            .append(3, &[put("/later-event", 3)], false)
            .expect("append");

        let (_, replayed) = recover(&f.db, &f.journal).expect("recover");
        assert_eq!(
            replayed, 3,
            "a process that dies leaves its writes in the file"
        );
        assert_eq!(
            stored(&f.db, "/later-event").map(|kv| kv.mod_revision),
            Some(3)
        );
    }

    #[test]
    fn a_torn_record_ends_the_replay() {
        let f = fixture();
        let (epoch, _) = recover(&f.db, &f.journal).expect("first open");
        let mut journal = Journal::open(&f.journal, epoch).expect("journal");
        journal.append(1, &[put("/a", 1)], true).expect("append");
        let torn_at = journal.len();
        journal.append(2, &[put("/b", 2)], true).expect("append");
        journal.append(3, &[put("/c", 3)], true).expect("append");
        // One flipped byte in the second record's payload, as a torn write leaves.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&f.journal)
            .expect("open");
        let mut byte = [0u8; 1];
        let at = torn_at + HEADER as u64 + 6;
        file.read_exact_at(&mut byte, at).expect("read");
        file.write_all_at(&[byte[0] ^ 0x40], at).expect("write");

        assert_eq!(recover(&f.db, &f.journal).expect("recover").1, 1);
        assert!(stored(&f.db, "/a").is_some());
        assert!(stored(&f.db, "/b").is_none());
        assert!(
            stored(&f.db, "/c").is_none(),
            "nothing after the tear is trusted"
        );
        assert_eq!(revision(&f.db), 1);
    }

    #[test]
    fn a_record_that_does_not_continue_the_revision_is_not_replayed() {
        let f = fixture();
        let (epoch, _) = recover(&f.db, &f.journal).expect("first open");
        let mut journal = Journal::open(&f.journal, epoch).expect("journal");
        journal
            .append(5, &[put("/later", 5)], true)
            .expect("append");
        assert_eq!(recover(&f.db, &f.journal).expect("recover").1, 0);
        assert_eq!(revision(&f.db), 0);
    }

    #[test]
    fn a_store_without_an_epoch_ignores_a_journal_left_beside_it() {
        let f = fixture();
        // A journal of another store (a restore into a directory that kept one).
        let mut journal = Journal::open(&f.journal, 7).expect("journal");
        journal
            .append(1, &[put("/stale", 1)], true)
            .expect("append");
        let (epoch, replayed) = recover(&f.db, &f.journal).expect("recover");
        assert_eq!(replayed, 0);
        assert_ne!(epoch, 0);
        assert!(stored(&f.db, "/stale").is_none());
    }

    #[test]
    fn an_offline_backup_holds_the_writes_only_the_journal_has() {
        let Fixture {
            _dir: dir,
            db,
            journal: journal_file,
        } = fixture();
        let (epoch, _) = recover(&db, &journal_file).expect("first open");
        let mut journal = Journal::open(&journal_file, epoch).expect("journal");
        journal.append(1, &[put("/kept", 1)], true).expect("append");
        // The process ends here without a checkpoint: redb's file has not got the write.
        drop(db);
        let source = dir.path().join("store.redb");
        let out = dir.path().join("backup.redb");
        let revision = crate::redb_backend::backup::backup_file(&source, &out).expect("backup");
        assert_eq!(revision, 1);
        let copy = Database::open(&out).expect("open backup");
        assert_eq!(stored(&copy, "/kept").map(|kv| kv.mod_revision), Some(1));
    }

    #[test]
    fn epochs_differ_from_the_last_and_from_zero() {
        let mut epoch = 0;
        for _ in 0..1000 {
            let next = next_epoch(epoch);
            assert_ne!(next, epoch);
            assert_ne!(next, 0);
            epoch = next;
        }
    }
}
