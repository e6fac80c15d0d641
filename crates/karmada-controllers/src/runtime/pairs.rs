//! Labels or annotations of a cached object, kept in two allocations.
//!
//! Why: a `BTreeMap<String, String>` with a handful of entries is one 544-byte node plus a heap block per key
//! and per value; the controller-manager caches a template, a binding and a Work per member for every workload,
//! each with labels and annotations, and those maps were the largest single part of its heap (a heap profile
//! of the propagation benchmark). Cached metadata never changes, so the pairs can sit back to back in one
//! string, sorted by key, with one array of where each key and value ends. The keys Karmada writes on every
//! binding, Work and claimed template (35 bytes on average, the same few dozen everywhere) are not stored at
//! all: such a key is a number into [`KNOWN_KEYS`].

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use super::ControllerError;
use crate::keys;

/// Keys stored as a number instead of their text: the ones the control plane writes on the objects it caches by
/// the thousand. Append only (nothing persists the numbers, but keeping the order keeps diffs honest).
const KNOWN_KEYS: &[&str] = &[
    keys::LABEL_MANAGED,
    keys::LABEL_WORK_PERMANENT_ID,
    keys::LABEL_RESOURCE_BINDING_PERMANENT_ID,
    keys::LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
    keys::LABEL_PROPAGATION_POLICY_PERMANENT_ID,
    keys::LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
    keys::LABEL_CLAIMED_BY,
    keys::LABEL_RETAIN_REPLICAS,
    keys::ANNOTATION_PROPAGATION_POLICY_NAMESPACE,
    keys::ANNOTATION_PROPAGATION_POLICY_NAME,
    keys::ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME,
    keys::ANNOTATION_RESOURCE_BINDING_NAMESPACE,
    keys::ANNOTATION_RESOURCE_BINDING_NAME,
    keys::ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME,
    keys::ANNOTATION_WORK_NAMESPACE,
    keys::ANNOTATION_WORK_NAME,
    keys::ANNOTATION_CONFLICT_RESOLUTION,
    keys::ANNOTATION_RESOURCE_TEMPLATE_UID,
    keys::ANNOTATION_RESOURCE_TEMPLATE_GENERATION,
    keys::ANNOTATION_MANAGED_LABELS,
    keys::ANNOTATION_MANAGED_ANNOTATIONS,
    keys::ANNOTATION_APPLIED_OVERRIDES,
    keys::ANNOTATION_APPLIED_CLUSTER_OVERRIDES,
    keys::ANNOTATION_LAST_APPLIED,
    karmada_api::work::ANNOTATION_APPLIED_PLACEMENT,
    karmada_scheduler::explain::ANNOTATION_EXPLANATION,
    "app",
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "deployment.kubernetes.io/revision",
    "pod-template-hash",
    "kubernetes.io/metadata.name",
];

/// Marks a stored key end that is a [`KNOWN_KEYS`] index instead.
const KNOWN: u32 = 1 << 31;

static KNOWN_INDEX: LazyLock<HashMap<&'static str, u32>> = LazyLock::new(|| {
    (0u32..)
        .zip(KNOWN_KEYS)
        .map(|(index, key)| (*key, index))
        .collect()
});

/// An immutable, sorted set of string pairs (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pairs {
    /// Every key followed by its value, in key order; a known key takes no room.
    text: Box<str>,
    /// For each pair, the offsets in `text` where its key ends (or `KNOWN | index` of a known key) and where
    /// its value ends.
    ends: Box<[(u32, u32)]>,
}

impl Pairs {
    /// The pairs of `map` (already sorted: a `BTreeMap` iterates in key order).
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<Self, ControllerError> {
        let known = |key: &str| KNOWN_INDEX.get(key).copied();
        let length = map
            .iter()
            .map(|(k, v)| v.len() + if known(k).is_some() { 0 } else { k.len() })
            .sum();
        let mut text = String::with_capacity(length);
        let mut ends = Vec::with_capacity(map.len());
        for (key, value) in map {
            let key_end = match known(key) {
                Some(index) => KNOWN | index,
                None => {
                    text.push_str(key);
                    offset(text.len())?
                }
            };
            text.push_str(value);
            ends.push((key_end, offset(text.len())?));
        }
        Ok(Self {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        })
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        // Keys are sorted and unique, so the first pair whose key is not below `key` is the only candidate.
        let (found, value) = self.pair(self.partition(key))?;
        (found == key).then_some(value)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.ends.len()).filter_map(|index| self.pair(index))
    }

    /// The pairs as a map, as `ObjectMeta` holds them.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    /// The index of the first pair whose key is not below `key`.
    fn partition(&self, key: &str) -> usize {
        let (mut low, mut high) = (0, self.ends.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.pair(middle) {
                Some((found, _)) if found < key => low = middle + 1,
                _ => high = middle,
            }
        }
        low
    }

    fn pair(&self, index: usize) -> Option<(&str, &str)> {
        let start = match index.checked_sub(1) {
            None => 0,
            Some(previous) => self.ends.get(previous)?.1 as usize,
        };
        let (key_end, value_end) = *self.ends.get(index)?;
        if key_end & KNOWN != 0 {
            let key = KNOWN_KEYS.get((key_end & !KNOWN) as usize)?;
            return Some((key, self.text.get(start..value_end as usize)?));
        }
        Some((
            self.text.get(start..key_end as usize)?,
            self.text.get(key_end as usize..value_end as usize)?,
        ))
    }
}

/// As a JSON object, like the map it came from.
impl serde::Serialize for Pairs {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

fn offset(length: usize) -> Result<u32, ControllerError> {
    u32::try_from(length)
        .ok()
        .filter(|length| length & KNOWN == 0)
        .ok_or_else(|| {
            ControllerError::Invalid("an object's labels or annotations exceed 2 GiB".into())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn looks_up_every_key_and_nothing_else() {
        let source = map(&[
            ("app", "web"),
            ("", "empty key"),
            ("work.karmada.io/permanent-id", "9b1a"),
            ("empty-value", ""),
            ("ünïcode", "välue"),
        ]);
        let pairs = Pairs::from_map(&source).expect("pairs");
        assert_eq!(pairs.len(), 5);
        for (key, value) in &source {
            assert_eq!(pairs.get(key), Some(value.as_str()), "{key}");
        }
        for absent in ["ap", "apps", "zzz", "work.karmada.io/permanent", "a"] {
            assert_eq!(pairs.get(absent), None, "{absent}");
        }
        assert_eq!(pairs.to_map(), source);
        assert_eq!(
            serde_json::to_value(&pairs).expect("json"),
            serde_json::to_value(&source).expect("json")
        );
    }

    #[test]
    fn an_empty_set_has_nothing() {
        let pairs = Pairs::from_map(&BTreeMap::new()).expect("pairs");
        assert!(pairs.is_empty());
        assert_eq!(pairs.get(""), None);
        assert_eq!(pairs.iter().count(), 0);
    }

    #[test]
    fn known_keys_take_no_room_and_read_back_in_order() {
        let source = map(&[
            (keys::LABEL_MANAGED, "true"),
            ("a-first", "1"),
            (keys::LABEL_WORK_PERMANENT_ID, "id"),
            ("zz-last", "2"),
            (keys::ANNOTATION_RESOURCE_BINDING_NAME, "web"),
        ]);
        let pairs = Pairs::from_map(&source).expect("pairs");
        assert_eq!(pairs.text.len(), "a-first1zz-last2trueidweb".len());
        assert_eq!(pairs.to_map(), source);
        let keys: Vec<&str> = pairs.iter().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted, "iteration stays in key order");
        assert_eq!(pairs.get(keys::LABEL_WORK_PERMANENT_ID), Some("id"));
        assert_eq!(pairs.get("karmada.io/manage"), None);
    }

    #[test]
    fn every_known_key_is_distinct() {
        assert_eq!(KNOWN_INDEX.len(), KNOWN_KEYS.len());
    }

    /// A key from the known set or a random one.
    fn any_key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(KNOWN_KEYS).prop_map(str::to_string),
            ".{0,12}",
        ]
    }

    proptest! {
        #[test]
        fn round_trips_maps_of_known_and_other_keys(
            source in prop::collection::btree_map(any_key(), ".{0,12}", 0..20),
            probe in any_key(),
        ) {
            let pairs = Pairs::from_map(&source).expect("pairs");
            prop_assert_eq!(pairs.to_map(), source.clone());
            prop_assert_eq!(pairs.get(&probe), source.get(&probe).map(String::as_str));
            prop_assert_eq!(pairs.iter().count(), source.len());
            prop_assert_eq!(
                serde_json::to_value(&pairs).expect("json"),
                serde_json::to_value(&source).expect("json")
            );
        }

        #[test]
        fn round_trips_any_map(source in prop::collection::btree_map(".{0,12}", ".{0,12}", 0..20),
                               probe in ".{0,12}") {
            let pairs = Pairs::from_map(&source).expect("pairs");
            prop_assert_eq!(pairs.to_map(), source.clone());
            prop_assert_eq!(pairs.get(&probe), source.get(&probe).map(String::as_str));
            for (key, value) in &source {
                prop_assert_eq!(pairs.get(key), Some(value.as_str()));
            }
        }
    }
}
