//! Byte layouts of the redb backend's records.
//!
//! Current value (`kv` table, keyed by the key):
//! `create_revision u64 LE | mod_revision u64 LE | value bytes`, or, when the top bit of
//! `create_revision` is set, `create_revision u64 LE | mod_revision u64 LE | value_len u32 | lz4 block`.
//!
//! Event (`events` table, keyed by revision):
//! `kind u8 | key_len u32 LE | key | kv_create u64 | kv_mod u64 | value_len u32 | value |
//! has_prev u8 [| prev_create u64 | prev_mod u64 | prev_len u32 | prev_value]`, or, when the kind
//! carries [`COMPRESSED`], `kind u8 | key_len u32 LE | key | kv_create u64 | kv_mod u64 |
//! has_prev u8 [| prev_create u64 | prev_mod u64] | value_len u32 | prev_len u32 | lz4 block of
//! value ++ prev_value`. The previous value's key is the event's key.
//!
//! Why compress: redb copies every page a commit touches, and a Kubernetes object of a few KiB
//! fills a page of its own, its event (value and previous value) two more. In the propagation
//! benchmark that was about 28 MB/s of page writes for 540 store writes/s, and the disk's fsyncs
//! stalled for 100-300 ms under it. JSON objects shrink several times under lz4, and an event's
//! value and previous value, nearly identical, compress together into little more than one.
//! The uncompressed layouts stay readable, so stores written before compression still open.
//!
//! Decoding never panics: a record too short or with an unknown tag is reported as
//! [`StoreError::Backend`] naming what was malformed.

use bytes::Bytes;

use crate::{EventKind, KeyValue, Revision, StoreError, StoreResult, WatchEvent};

const PUT: u8 = 1;
const DELETE: u8 = 2;
/// Flag on an event's kind: its values are one lz4 block.
const COMPRESSED: u8 = 0x80;
/// Flag in a current value's `create_revision` (revisions never reach 2^63): the value is an lz4 block.
const COMPRESSED_VALUE: u64 = 1 << 63;
/// Shorter values are stored as they are: lz4 gains little on them.
const COMPRESS_FROM: usize = 256;
/// Largest uncompressed length a record may declare: a write's value and its previous value. A
/// corrupt length beyond it is reported rather than allocated.
const MAX_UNPACKED: usize = 2 * super::MAX_WRITE_BYTES;

/// `bytes` as an lz4 block, or `None` when that would not be worth it.
fn pack(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() < COMPRESS_FROM {
        return None;
    }
    let packed = lz4_flex::block::compress(bytes);
    // Worth it only if it saves more than the length field it needs.
    (packed.len() + 4 < bytes.len()).then_some(packed)
}

fn unpack(packed: &[u8], len: usize, what: &str) -> StoreResult<Vec<u8>> {
    if len > MAX_UNPACKED {
        return Err(malformed(
            what,
            &format!("declared length {len} is too large"),
        ));
    }
    let unpacked = lz4_flex::block::decompress(packed, len)
        .map_err(|e| malformed(what, &format!("lz4: {e}")))?;
    if unpacked.len() != len {
        return Err(malformed(
            what,
            &format!("lz4 block holds {} bytes, {len} declared", unpacked.len()),
        ));
    }
    Ok(unpacked)
}

pub(super) fn encode_kv(
    create_revision: Revision,
    mod_revision: Revision,
    value: &[u8],
) -> StoreResult<Vec<u8>> {
    let Some(packed) = pack(value) else {
        let mut out = Vec::with_capacity(16 + value.len());
        out.extend_from_slice(&create_revision.to_le_bytes());
        out.extend_from_slice(&mod_revision.to_le_bytes());
        out.extend_from_slice(value);
        return Ok(out);
    };
    let mut out = Vec::with_capacity(20 + packed.len());
    out.extend_from_slice(&(create_revision | COMPRESSED_VALUE).to_le_bytes());
    out.extend_from_slice(&mod_revision.to_le_bytes());
    out.extend_from_slice(&length(value.len())?.to_le_bytes());
    out.extend_from_slice(&packed);
    Ok(out)
}

pub(super) fn decode_kv(key: &str, record: &[u8]) -> StoreResult<KeyValue> {
    let mut reader = Reader::new(record, "stored value");
    let create_revision = reader.u64()?;
    let mod_revision = reader.u64()?;
    let value = if create_revision & COMPRESSED_VALUE == 0 {
        Bytes::copy_from_slice(reader.rest())
    } else {
        let len = reader.u32()? as usize;
        Bytes::from(unpack(reader.rest(), len, "stored value")?)
    };
    Ok(KeyValue {
        key: key.to_string(),
        value,
        create_revision: create_revision & !COMPRESSED_VALUE,
        mod_revision,
    })
}

fn kind_tag(kind: EventKind) -> u8 {
    match kind {
        EventKind::Put => PUT,
        EventKind::Delete => DELETE,
    }
}

pub(super) fn encode_event(event: &WatchEvent) -> StoreResult<Vec<u8>> {
    let prev_value: &[u8] = event.prev.as_ref().map_or(&[], |p| &p.value);
    // The value and the previous value together: an update changes little, so the second
    // compresses to almost nothing against the first.
    let mut values = Vec::with_capacity(event.kv.value.len() + prev_value.len());
    values.extend_from_slice(&event.kv.value);
    values.extend_from_slice(prev_value);
    let Some(packed) = pack(&values) else {
        return encode_event_plain(event);
    };
    let mut out = Vec::with_capacity(55 + event.kv.key.len() + packed.len());
    put_event_head(&mut out, kind_tag(event.kind) | COMPRESSED, &event.kv)?;
    match &event.prev {
        None => out.push(0),
        Some(prev) => {
            out.push(1);
            put_revisions(&mut out, prev);
        }
    }
    out.extend_from_slice(&length(event.kv.value.len())?.to_le_bytes());
    out.extend_from_slice(&length(prev_value.len())?.to_le_bytes());
    out.extend_from_slice(&packed);
    Ok(out)
}

/// The fields both event layouts start with: kind, key, revisions.
fn put_event_head(out: &mut Vec<u8>, tag: u8, kv: &KeyValue) -> StoreResult<()> {
    out.push(tag);
    put_bytes(out, kv.key.as_bytes())?;
    put_revisions(out, kv);
    Ok(())
}

fn put_revisions(out: &mut Vec<u8>, kv: &KeyValue) {
    out.extend_from_slice(&kv.create_revision.to_le_bytes());
    out.extend_from_slice(&kv.mod_revision.to_le_bytes());
}

fn encode_event_plain(event: &WatchEvent) -> StoreResult<Vec<u8>> {
    let prev_len = event.prev.as_ref().map_or(0, |p| p.value.len() + 20);
    let mut out = Vec::with_capacity(34 + event.kv.key.len() + event.kv.value.len() + prev_len);
    put_event_head(&mut out, kind_tag(event.kind), &event.kv)?;
    put_bytes(&mut out, &event.kv.value)?;
    match &event.prev {
        None => out.push(0),
        Some(prev) => {
            out.push(1);
            put_revisions(&mut out, prev);
            put_bytes(&mut out, &prev.value)?;
        }
    }
    Ok(out)
}

/// The key of an event record, read without decoding the values (for prefix filtering).
pub(super) fn event_key(record: &[u8]) -> StoreResult<&str> {
    let mut reader = Reader::new(record, "event");
    reader.u8()?;
    reader.str()
}

pub(super) fn decode_event(record: &[u8]) -> StoreResult<WatchEvent> {
    let mut reader = Reader::new(record, "event");
    let tag = reader.u8()?;
    let kind = match tag & !COMPRESSED {
        PUT => EventKind::Put,
        DELETE => EventKind::Delete,
        _ => return Err(malformed("event", &format!("unknown kind tag {tag}"))),
    };
    if tag & COMPRESSED != 0 {
        return decode_event_packed(kind, reader);
    }
    let key = reader.str()?.to_string();
    let kv = KeyValue {
        create_revision: reader.u64()?,
        mod_revision: reader.u64()?,
        value: Bytes::copy_from_slice(reader.bytes()?),
        key: key.clone(),
    };
    let prev = match reader.u8()? {
        0 => None,
        1 => Some(KeyValue {
            create_revision: reader.u64()?,
            mod_revision: reader.u64()?,
            value: Bytes::copy_from_slice(reader.bytes()?),
            key,
        }),
        other => return Err(malformed("event", &format!("bad prev flag {other}"))),
    };
    Ok(WatchEvent { kind, kv, prev })
}

fn decode_event_packed(kind: EventKind, mut reader: Reader<'_>) -> StoreResult<WatchEvent> {
    let key = reader.str()?.to_string();
    let create_revision = reader.u64()?;
    let mod_revision = reader.u64()?;
    let prev_revisions = match reader.u8()? {
        0 => None,
        1 => Some((reader.u64()?, reader.u64()?)),
        other => return Err(malformed("event", &format!("bad prev flag {other}"))),
    };
    let value_len = reader.u32()? as usize;
    let prev_len = reader.u32()? as usize;
    let mut values = Bytes::from(unpack(reader.rest(), value_len + prev_len, "event")?);
    let prev_value = values.split_off(value_len);
    let prev = match prev_revisions {
        Some((create_revision, mod_revision)) => Some(KeyValue {
            key: key.clone(),
            value: prev_value,
            create_revision,
            mod_revision,
        }),
        None if prev_value.is_empty() => None,
        None => {
            return Err(malformed(
                "event",
                "a previous value without a previous revision",
            ));
        }
    };
    let kv = KeyValue {
        key,
        value: values,
        create_revision,
        mod_revision,
    };
    Ok(WatchEvent { kind, kv, prev })
}

fn length(len: usize) -> StoreResult<u32> {
    u32::try_from(len).map_err(|_| {
        StoreError::Backend(format!(
            "a key or value of {len} bytes exceeds the 4 GiB limit"
        ))
    })
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> StoreResult<()> {
    out.extend_from_slice(&length(bytes.len())?.to_le_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

fn malformed(what: &str, detail: &str) -> StoreError {
    StoreError::Backend(format!("malformed {what} record: {detail}"))
}

/// A bounds-checked cursor over a record.
struct Reader<'a> {
    rest: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(record: &'a [u8], what: &'static str) -> Self {
        Reader { rest: record, what }
    }

    fn take(&mut self, n: usize) -> StoreResult<&'a [u8]> {
        if self.rest.len() < n {
            return Err(malformed(
                self.what,
                &format!("needed {n} more bytes, {} left", self.rest.len()),
            ));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u8(&mut self) -> StoreResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> StoreResult<u32> {
        let mut buf = [0u8; 4];
        buf.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(buf))
    }

    fn u64(&mut self) -> StoreResult<u64> {
        let mut buf = [0u8; 8];
        buf.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(buf))
    }

    fn bytes(&mut self) -> StoreResult<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    fn str(&mut self) -> StoreResult<&'a str> {
        let what = self.what;
        std::str::from_utf8(self.bytes()?).map_err(|e| malformed(what, &format!("key: {e}")))
    }

    fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, value: &'static [u8], create: Revision, modified: Revision) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Bytes::from_static(value),
            create_revision: create,
            mod_revision: modified,
        }
    }

    #[test]
    fn events_round_trip() {
        let cases = [
            WatchEvent {
                kind: EventKind::Put,
                kv: kv("/a/1", b"{\"x\":1}", 3, 3),
                prev: None,
            },
            WatchEvent {
                kind: EventKind::Put,
                kv: kv("/a/1", b"", 3, 9),
                prev: Some(kv("/a/1", b"old", 3, 7)),
            },
            WatchEvent {
                kind: EventKind::Delete,
                kv: kv("/b", b"last", 2, 12),
                prev: Some(kv("/b", b"last", 2, 11)),
            },
        ];
        for event in cases {
            let record = encode_event(&event).expect("encodes");
            assert_eq!(event_key(&record).expect("key"), event.kv.key);
            assert_eq!(decode_event(&record).expect("decodes"), event);
        }
    }

    #[test]
    fn values_round_trip_and_truncation_is_an_error() {
        let record = encode_kv(4, 8, b"payload").expect("encodes");
        assert_eq!(
            decode_kv("/k", &record).expect("decodes"),
            kv("/k", b"payload", 4, 8)
        );
        assert!(decode_kv("/k", &record[..10]).is_err());
        let event = encode_event(&WatchEvent {
            kind: EventKind::Put,
            kv: kv("/k", b"value", 1, 1),
            prev: None,
        })
        .expect("encodes");
        for cut in 0..event.len() {
            assert!(decode_event(&event[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// A Kubernetes object's JSON, a few KiB, as the control plane stores them.
    fn object(generation: u32) -> Vec<u8> {
        let containers: Vec<String> = (0..8)
            .map(|i| {
                format!(
                    r#"{{"name":"c{i}","image":"registry.example/app-{i}:v1.{generation}","ports":[{{"containerPort":{}}}],"resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}}}}"#,
                    8000 + i
                )
            })
            .collect();
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"web-{generation}","namespace":"default","uid":"6f1c2a9e-{generation:04}","generation":{generation},"labels":{{"app":"web","tier":"frontend"}}}},"spec":{{"replicas":3,"template":{{"spec":{{"containers":[{}]}}}}}},"status":{{"observedGeneration":{generation},"replicas":3}}}}"#,
            containers.join(",")
        )
        .into_bytes()
    }

    fn kv_owned(key: &str, value: Vec<u8>, create: Revision, modified: Revision) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Bytes::from(value),
            create_revision: create,
            mod_revision: modified,
        }
    }

    #[test]
    fn objects_are_stored_compressed_and_read_back_whole() {
        let value = object(7);
        let record = encode_kv(5, 9, &value).expect("encodes");
        assert!(
            record.len() * 2 < value.len(),
            "{} bytes stored for a {}-byte object",
            record.len(),
            value.len()
        );
        assert_eq!(
            decode_kv("/k", &record).expect("decodes"),
            kv_owned("/k", value, 5, 9)
        );

        // An update's event holds the new and the previous object, which differ in a few bytes:
        // together they cost about one object.
        let update = WatchEvent {
            kind: EventKind::Put,
            kv: kv_owned("/apps/web", object(8), 5, 12),
            prev: Some(kv_owned("/apps/web", object(7), 5, 9)),
        };
        let record = encode_event(&update).expect("encodes");
        assert!(
            record.len() < update.kv.value.len() / 2,
            "{} bytes stored for an event of two {}-byte objects",
            record.len(),
            update.kv.value.len()
        );
        assert_eq!(event_key(&record).expect("key"), "/apps/web");
        assert_eq!(decode_event(&record).expect("decodes"), update);

        for event in [
            WatchEvent {
                kind: EventKind::Put,
                kv: kv_owned("/apps/new", object(1), 13, 13),
                prev: None,
            },
            WatchEvent {
                kind: EventKind::Delete,
                kv: kv_owned("/apps/web", object(8), 5, 14),
                prev: Some(kv_owned("/apps/web", object(8), 5, 12)),
            },
        ] {
            let record = encode_event(&event).expect("encodes");
            assert_ne!(record[0] & COMPRESSED, 0, "stored compressed");
            assert_eq!(decode_event(&record).expect("decodes"), event);
        }
    }

    #[test]
    fn records_written_before_compression_still_decode() {
        // The plain layouts, as every record was written before compression, for large values too.
        let event = WatchEvent {
            kind: EventKind::Put,
            kv: kv_owned("/apps/web", object(2), 1, 4),
            prev: Some(kv_owned("/apps/web", object(1), 1, 3)),
        };
        let plain = encode_event_plain(&event).expect("encodes");
        assert_eq!(plain[0], PUT);
        assert_eq!(decode_event(&plain).expect("decodes"), event);

        let value = object(2);
        let mut plain = Vec::new();
        plain.extend_from_slice(&1u64.to_le_bytes());
        plain.extend_from_slice(&4u64.to_le_bytes());
        plain.extend_from_slice(&value);
        assert_eq!(
            decode_kv("/apps/web", &plain).expect("decodes"),
            kv_owned("/apps/web", value, 1, 4)
        );
    }

    #[test]
    fn damaged_compressed_records_are_errors() {
        let event = encode_event(&WatchEvent {
            kind: EventKind::Put,
            kv: kv_owned("/apps/web", object(3), 1, 6),
            prev: Some(kv_owned("/apps/web", object(2), 1, 5)),
        })
        .expect("encodes");
        let value = encode_kv(1, 6, &object(3)).expect("encodes");
        for cut in 0..event.len() {
            assert!(decode_event(&event[..cut]).is_err(), "event cut at {cut}");
        }
        for cut in 0..value.len() {
            assert!(
                decode_kv("/k", &value[..cut]).is_err(),
                "value cut at {cut}"
            );
        }
        // A declared length beyond any write is refused before anything is allocated for it.
        let mut huge = value.clone();
        huge[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        let error = decode_kv("/k", &huge).expect_err("too large");
        assert!(error.to_string().contains("too large"), "{error}");
        // A block that decodes to fewer bytes than declared.
        let mut short = value;
        let declared = u32::from_le_bytes(short[16..20].try_into().expect("4 bytes"));
        short[16..20].copy_from_slice(&(declared + 1).to_le_bytes());
        assert!(decode_kv("/k", &short).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_event_round_trips(
            key in "/[a-z]{1,12}",
            value in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            prev in proptest::option::of(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)),
            repeat in 0usize..4,
            delete in proptest::prelude::any::<bool>(),
        ) {
            // Repetition makes some cases compressible and leaves others not.
            let value = value.repeat(repeat + 1);
            let event = WatchEvent {
                kind: if delete { EventKind::Delete } else { EventKind::Put },
                kv: kv_owned(&key, value.clone(), 2, 9),
                prev: prev.map(|p| kv_owned(&key, p, 2, 8)),
            };
            let record = encode_event(&event).expect("encodes");
            proptest::prop_assert_eq!(event_key(&record).expect("key"), key.as_str());
            proptest::prop_assert_eq!(decode_event(&record).expect("decodes"), event);
            let stored = encode_kv(2, 9, &value).expect("encodes");
            proptest::prop_assert_eq!(decode_kv(&key, &stored).expect("decodes"), kv_owned(&key, value, 2, 9));
        }
    }
}
