//! Byte layouts of the redb backend's records.
//!
//! Current value (`kv` table, keyed by the key):
//! `create_revision u64 LE | mod_revision u64 LE | value bytes`.
//!
//! Event (`events` table, keyed by revision):
//! `kind u8 | key_len u32 LE | key | kv_create u64 | kv_mod u64 | value_len u32 | value |
//! has_prev u8 [| prev_create u64 | prev_mod u64 | prev_len u32 | prev_value]`.
//! The previous value's key is the event's key.
//!
//! Decoding never panics: a record too short or with an unknown tag is reported as
//! [`StoreError::Backend`] naming what was malformed.

use bytes::Bytes;

use crate::{EventKind, KeyValue, Revision, StoreError, StoreResult, WatchEvent};

const PUT: u8 = 1;
const DELETE: u8 = 2;

pub(super) fn encode_kv(
    create_revision: Revision,
    mod_revision: Revision,
    value: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + value.len());
    out.extend_from_slice(&create_revision.to_le_bytes());
    out.extend_from_slice(&mod_revision.to_le_bytes());
    out.extend_from_slice(value);
    out
}

pub(super) fn decode_kv(key: &str, record: &[u8]) -> StoreResult<KeyValue> {
    let mut reader = Reader::new(record, "stored value");
    let create_revision = reader.u64()?;
    let mod_revision = reader.u64()?;
    Ok(KeyValue {
        key: key.to_string(),
        value: Bytes::copy_from_slice(reader.rest()),
        create_revision,
        mod_revision,
    })
}

pub(super) fn encode_event(event: &WatchEvent) -> StoreResult<Vec<u8>> {
    let prev_len = event.prev.as_ref().map_or(0, |p| p.value.len() + 20);
    let mut out = Vec::with_capacity(34 + event.kv.key.len() + event.kv.value.len() + prev_len);
    out.push(match event.kind {
        EventKind::Put => PUT,
        EventKind::Delete => DELETE,
    });
    put_bytes(&mut out, event.kv.key.as_bytes())?;
    out.extend_from_slice(&event.kv.create_revision.to_le_bytes());
    out.extend_from_slice(&event.kv.mod_revision.to_le_bytes());
    put_bytes(&mut out, &event.kv.value)?;
    match &event.prev {
        None => out.push(0),
        Some(prev) => {
            out.push(1);
            out.extend_from_slice(&prev.create_revision.to_le_bytes());
            out.extend_from_slice(&prev.mod_revision.to_le_bytes());
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
    let kind = match reader.u8()? {
        PUT => EventKind::Put,
        DELETE => EventKind::Delete,
        other => return Err(malformed("event", &format!("unknown kind tag {other}"))),
    };
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

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> StoreResult<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| {
        StoreError::Backend(format!(
            "a key or value of {} bytes exceeds the 4 GiB limit",
            bytes.len()
        ))
    })?;
    out.extend_from_slice(&len.to_le_bytes());
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

    fn u64(&mut self) -> StoreResult<u64> {
        let mut buf = [0u8; 8];
        buf.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(buf))
    }

    fn bytes(&mut self) -> StoreResult<&'a [u8]> {
        let mut buf = [0u8; 4];
        buf.copy_from_slice(self.take(4)?);
        self.take(u32::from_le_bytes(buf) as usize)
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
        let record = encode_kv(4, 8, b"payload");
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
}
