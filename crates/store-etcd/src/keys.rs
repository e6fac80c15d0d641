//! Pure translation between the store's view (keys without the namespace prefix, revisions
//! counted from 0) and etcd's (namespaced byte keys, revisions counted from 1).
//!
//! Invariants:
//! - an empty etcd is at revision 1 while an empty store is at revision 0, so every etcd
//!   revision is the store revision plus [`REVISION_OFFSET`]; all replicas apply the same
//!   offset, so resourceVersions agree between API servers sharing one etcd;
//! - a namespace is empty or ends with `/`, so the range for one namespace never includes a
//!   sibling namespace that merely shares its first characters (`/a/` vs `/ab/`).

use bytes::Bytes;
use store::{KeyValue, Revision, StoreError, StoreResult};

/// etcd revision = store revision + this.
pub const REVISION_OFFSET: i64 = 1;

/// Appended to the namespace prefix: the key holding a restored namespace's revision offset.
pub const OFFSET_KEY_SUFFIX: &str = "\0karmada-rs/revision-offset";

/// The store revision of an etcd revision under `offset` (etcd revision = store revision +
/// offset). etcd's revision 0 ("never compacted") and anything below the offset map to 0.
fn to_store_at(offset: i64, etcd_revision: i64) -> Revision {
    if etcd_revision <= 0 {
        return 0;
    }
    u64::try_from(etcd_revision.saturating_sub(offset)).unwrap_or(0)
}

/// The etcd revision of a store revision under `offset`. A revision below etcd's first one
/// predates a restore (whose offset moved every revision up) and is reported as compacted.
fn to_etcd_at(offset: i64, revision: Revision) -> StoreResult<i64> {
    let etcd = i64::try_from(revision)
        .ok()
        .and_then(|r| r.checked_add(offset))
        .ok_or_else(|| {
            StoreError::Backend(format!(
                "revision {revision} is out of etcd's range (offset {offset})"
            ))
        })?;
    if etcd < 1 {
        return Err(StoreError::Compacted {
            requested: revision,
            compacted: to_store_at(offset, 1),
        });
    }
    Ok(etcd)
}

/// Checks a namespace prefix: empty, or ending with `/`.
pub fn validate_namespace(prefix: &str) -> Result<(), String> {
    if prefix.is_empty() || prefix.ends_with('/') {
        Ok(())
    } else {
        Err(format!(
            "etcd key prefix {prefix:?} must be empty or end with '/' (e.g. \"/karmada/\"), so \
             that it cannot overlap a sibling prefix"
        ))
    }
}

/// The smallest key greater than every key starting with `prefix` (etcd's "prefix end").
/// An empty result means "no upper bound"; etcd spells that as a single zero byte.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Maps store keys into one namespace of etcd's key space and back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespace {
    prefix: String,
    /// etcd revision = store revision + offset: [`REVISION_OFFSET`] unless a restore moved
    /// the revisions up (see `restore`), in which case it is read from etcd at connect.
    offset: i64,
}

impl Namespace {
    /// A namespace; `prefix` must pass [`validate_namespace`].
    pub fn new(prefix: &str) -> Result<Self, String> {
        validate_namespace(prefix)?;
        Ok(Namespace {
            prefix: prefix.to_string(),
            offset: REVISION_OFFSET,
        })
    }

    /// The same namespace with revisions mapped under `offset`.
    pub fn with_offset(mut self, offset: i64) -> Self {
        self.offset = offset;
        self
    }

    /// etcd revision = store revision + this.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The store revision of an etcd revision.
    pub fn to_store(&self, etcd_revision: i64) -> Revision {
        to_store_at(self.offset, etcd_revision)
    }

    /// The etcd revision of a store revision; a revision from before a restore is `Compacted`.
    pub fn to_etcd(&self, revision: Revision) -> StoreResult<i64> {
        to_etcd_at(self.offset, revision)
    }

    /// Where a restore records this namespace's revision offset. It sorts before every store
    /// key (they start with `/`), and `range` hides it.
    pub fn offset_key(&self) -> Vec<u8> {
        let mut key = self.etcd_key("");
        key.extend_from_slice(OFFSET_KEY_SUFFIX.as_bytes());
        key
    }

    /// The etcd key of a store key.
    pub fn etcd_key(&self, key: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + key.len());
        out.extend_from_slice(self.prefix.as_bytes());
        out.extend_from_slice(key.as_bytes());
        out
    }

    /// The etcd key range `[start, end)` holding every store key that starts with `prefix`.
    /// etcd rejects an empty key, so "everything" starts at the zero byte, as etcd spells it.
    pub fn prefix_range(&self, prefix: &str) -> (Vec<u8>, Vec<u8>) {
        let start = self.etcd_key(prefix);
        let end = prefix_end(&start);
        if start.is_empty() {
            return (vec![0], end);
        }
        (start, end)
    }

    /// A key to point revision probes at (count-only reads, compaction probes). etcd needs
    /// some non-empty key; whether it exists does not matter.
    pub fn probe_key(&self) -> Vec<u8> {
        let mut key = self.etcd_key("");
        key.push(0);
        key
    }

    /// The store's view of an etcd key-value.
    pub fn key_value(&self, kv: &etcd_client::KeyValue) -> StoreResult<KeyValue> {
        Ok(KeyValue {
            key: self.store_key(kv.key())?,
            value: Bytes::copy_from_slice(kv.value()),
            create_revision: self.to_store(kv.create_revision()),
            mod_revision: self.to_store(kv.mod_revision()),
        })
    }

    /// The store key of an etcd key; fails for keys outside the namespace or not UTF-8.
    pub fn store_key(&self, etcd_key: &[u8]) -> StoreResult<String> {
        let rest = etcd_key
            .strip_prefix(self.prefix.as_bytes())
            .ok_or_else(|| {
                StoreError::Backend(format!(
                    "etcd returned key {:?} outside the prefix {:?}",
                    String::from_utf8_lossy(etcd_key),
                    self.prefix
                ))
            })?;
        String::from_utf8(rest.to_vec()).map_err(|_| {
            StoreError::Backend(format!(
                "etcd key {:?} is not UTF-8; this store only writes UTF-8 keys",
                String::from_utf8_lossy(etcd_key)
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_the_last_byte_below_the_maximum() {
        let cases: [(&[u8], &[u8]); 5] = [
            (b"/a/", b"/a0"),
            (b"a", b"b"),
            (b"a\xff", b"b"),
            (b"\xff\xff", b"\0"),
            (b"", b"\0"),
        ];
        for (prefix, end) in cases {
            assert_eq!(prefix_end(prefix), end, "prefix {prefix:?}");
        }
    }

    #[test]
    fn revisions_round_trip_with_the_offset() {
        let ns = Namespace::new("").expect("valid");
        for revision in [0, 1, 41, i64::MAX as u64 - 1] {
            let etcd = ns.to_etcd(revision).expect("representable");
            assert_eq!(etcd, revision as i64 + 1);
            assert_eq!(ns.to_store(etcd), revision);
        }
        assert!(ns.to_etcd(i64::MAX as u64).is_err());
        assert_eq!(
            ns.to_store(0),
            0,
            "etcd's 'never compacted' maps to store 0"
        );
    }

    #[test]
    fn a_restored_offset_moves_revisions_up_and_compacts_the_old_ones() {
        // Restored at etcd revision 11 with a bump of 1000: etcd 11 is store 1010.
        let ns = Namespace::new("/k/").expect("valid").with_offset(1 - 1000);
        assert_eq!(ns.to_store(11), 1010);
        assert_eq!(ns.to_etcd(1010).expect("representable"), 11);
        assert!(matches!(
            ns.to_etcd(500),
            Err(StoreError::Compacted { requested: 500, .. })
        ));
        assert_eq!(ns.to_store(0), 0);
        assert_eq!(ns.offset_key(), b"/k/\0karmada-rs/revision-offset".to_vec());
    }

    #[test]
    fn namespaces_must_end_with_a_slash() {
        let cases = [
            ("", true),
            ("/", true),
            ("/registry/", true),
            ("/registry", false),
            ("karmada", false),
        ];
        for (prefix, ok) in cases {
            assert_eq!(validate_namespace(prefix).is_ok(), ok, "prefix {prefix:?}");
        }
    }

    #[test]
    fn keys_map_into_the_namespace_and_back() {
        let ns = Namespace::new("/t1/").expect("valid");
        assert_eq!(ns.etcd_key("/a/b"), b"/t1//a/b");
        assert_eq!(ns.store_key(b"/t1//a/b").expect("inside"), "/a/b");
        assert!(ns.store_key(b"/t2//a").is_err());
        assert!(ns.store_key(b"/t1/\xff").is_err());
        let (start, end) = ns.prefix_range("");
        assert_eq!(
            (start.as_slice(), end.as_slice()),
            (&b"/t1/"[..], &b"/t10"[..])
        );
        let everything = Namespace::new("").expect("valid").prefix_range("");
        assert_eq!(
            everything,
            (vec![0], vec![0]),
            "etcd's spelling of all keys"
        );
        assert_eq!(Namespace::new("").expect("valid").probe_key(), vec![0]);
    }
}
