//! Names, hashes, randomness and addresses.
//!
//! Hashes are stable across runs (FNV-1a over canonical JSON) so that re-running a controller on
//! the same template yields the same `pod-template-hash`. Randomness is an argument
//! ([`Randomness`]); [`SplitMix64`] is a seeded implementation for tests and deterministic runs.

use std::net::Ipv4Addr;

use serde_json::Value;

/// The alphabet Kubernetes uses for generated name suffixes and encoded hashes: no vowels (no
/// accidental words) and no look-alike characters.
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A source of random numbers, supplied by the caller.
pub trait Randomness {
    fn next_u64(&mut self) -> u64;
}

/// A small seeded generator (SplitMix64): deterministic, good enough for names.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl Randomness for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Five random characters from the safe alphabet, as `generateName` appends.
pub fn random_suffix(randomness: &mut dyn Randomness) -> String {
    (0..5)
        .map(|_| {
            let index = (randomness.next_u64() % SAFE_ALPHABET.len() as u64) as usize;
            char::from(SAFE_ALPHABET[index])
        })
        .collect()
}

/// 32-bit FNV-1a.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// JSON with object keys sorted at every level, so equal values hash equally.
pub fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            let body: Vec<String> = keys
                .into_iter()
                .map(|key| {
                    format!(
                        "{}:{}",
                        Value::String(key.clone()),
                        canonical_json(&fields[key])
                    )
                })
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => {
            format!(
                "[{}]",
                items
                    .iter()
                    .map(canonical_json)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
        other => other.to_string(),
    }
}

/// A stable hash of a value, spelled with the safe alphabet (digits of the decimal hash
/// mapped to letters), like `pod-template-hash` values such as `5d8f7c9b6`.
pub fn stable_hash(value: &Value, collision_count: i64) -> String {
    let mut text = canonical_json(value);
    if collision_count > 0 {
        text.push_str(&collision_count.to_string());
    }
    safe_encode(&fnv32a(text.as_bytes()).to_string())
}

/// Maps each byte onto the safe alphabet.
pub fn safe_encode(text: &str) -> String {
    text.bytes()
        .map(|b| char::from(SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()]))
        .collect()
}

/// A CIDR block such as `10.244.0.0/16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub base: Ipv4Addr,
    pub prefix: u8,
}

/// A CIDR that is not `a.b.c.d/n` with n in 8..=30.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR {0:?}: expected an IPv4 block such as 10.96.0.0/12 (prefix 8..30)")]
pub struct CidrError(pub String);

impl Cidr {
    pub fn parse(text: &str) -> Result<Self, CidrError> {
        let error = || CidrError(text.to_string());
        let (address, prefix) = text.split_once('/').ok_or_else(error)?;
        let base: Ipv4Addr = address.parse().map_err(|_| error())?;
        let prefix: u8 = prefix.parse().map_err(|_| error())?;
        if !(8..=30).contains(&prefix) {
            return Err(error());
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(Self {
            base: Ipv4Addr::from(u32::from(base) & mask),
            prefix,
        })
    }

    /// Number of addresses in the block.
    pub fn size(&self) -> u32 {
        1 << (32 - self.prefix)
    }

    /// The address `offset` places after the network address, if inside the block.
    pub fn nth(&self, offset: u32) -> Option<Ipv4Addr> {
        (offset < self.size()).then(|| Ipv4Addr::from(u32::from(self.base) + offset))
    }

    /// The offset of an address inside the block.
    pub fn offset_of(&self, address: Ipv4Addr) -> Option<u32> {
        let offset = u32::from(address).wrapping_sub(u32::from(self.base));
        (u32::from(address) >= u32::from(self.base) && offset < self.size()).then_some(offset)
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hash_ignores_key_order_and_uses_safe_alphabet() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b = json!({"a": {"x": "s", "y": [1, 2]}, "b": 1});
        assert_eq!(stable_hash(&a, 0), stable_hash(&b, 0));
        assert_ne!(stable_hash(&a, 0), stable_hash(&a, 1));
        assert_ne!(stable_hash(&a, 0), stable_hash(&json!({"b": 2}), 0));
        assert!(
            stable_hash(&a, 0)
                .bytes()
                .all(|c| SAFE_ALPHABET.contains(&c))
        );
    }

    #[test]
    fn suffixes_are_five_safe_characters_and_seeded() {
        let first = random_suffix(&mut SplitMix64(7));
        assert_eq!(first.len(), 5);
        assert!(first.bytes().all(|c| SAFE_ALPHABET.contains(&c)));
        assert_eq!(first, random_suffix(&mut SplitMix64(7)));
        let mut rng = SplitMix64(7);
        assert_ne!(random_suffix(&mut rng), random_suffix(&mut rng));
    }

    #[test]
    fn cidr_arithmetic() {
        let cidr = Cidr::parse("10.96.3.7/12").expect("valid");
        assert_eq!(cidr.to_string(), "10.96.0.0/12");
        assert_eq!(cidr.nth(10), Some(Ipv4Addr::new(10, 96, 0, 10)));
        assert_eq!(cidr.offset_of(Ipv4Addr::new(10, 96, 1, 0)), Some(256));
        assert_eq!(cidr.offset_of(Ipv4Addr::new(10, 112, 0, 0)), None);
        assert_eq!(cidr.nth(cidr.size()), None);
        for bad in ["10.0.0.0", "10.0.0.0/40", "x/8", "10.0.0.0/4"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }
}
