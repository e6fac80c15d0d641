//! Estimator answers kept for a moment: within `ttl` a binding of the same replica requirements reuses a
//! cluster's last answer instead of asking again, less what the scheduler itself has placed there since
//! ([`AnswerCache::assume`]). A burst of similar workloads then asks each estimator once per `ttl` and does not
//! hand one cluster the same free room twice — which asking afresh would, as the member's pods do not exist yet
//! when the next binding is decided. An answer for other requirements on a cluster that received replicas is
//! dropped (how much of it the new replicas took is unknown), as is every answer for a cluster that lost some.
//!
//! An answer past the ttl is still served, as stale, for up to [`STALE_FACTOR`] ttls while one refresh is asked
//! for in the background ([`Lookup::Stale`]), so no binding waits for a refresh; only a cluster and
//! requirements never asked (or long unasked) are waited for.
//!
//! Limit: an answer fetched after the ttl counts room that replicas placed before it still hold once their pods
//! exist, but not while they are being created — as Karmada's estimator without its
//! SchedulingOvercommitProtection gate.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use karmada_api::ReplicaRequirements;

/// Replica requirements reduced to a hash (the JSON of the requirements).
pub fn shape_of(requirements: Option<&ReplicaRequirements>) -> u64 {
    let text = requirements
        .and_then(|r| serde_json::to_string(r).ok())
        .unwrap_or_default();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// How many ttls a stale answer is still served for while it is refreshed.
pub const STALE_FACTOR: u32 = 10;

/// What the cache holds for a cluster and requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Younger than the ttl.
    Fresh(i64),
    /// Older than the ttl but younger than [`STALE_FACTOR`] ttls: serve it, and refresh.
    Stale(i64),
    Missing,
}

#[derive(Debug, Clone, Copy)]
struct Answer {
    replicas: i64,
    at: Instant,
}

/// Answers by cluster and requirements shape.
#[derive(Debug)]
pub struct AnswerCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, HashMap<u64, Answer>>>,
}

impl AnswerCache {
    /// A cache keeping answers for `ttl` (zero keeps none).
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<u64, Answer>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `cluster`'s answer for `shape`, if one younger than the ttl is kept.
    pub fn get(&self, cluster: &str, shape: u64, now: Instant) -> Option<i64> {
        match self.lookup(cluster, shape, now) {
            Lookup::Fresh(replicas) => Some(replicas),
            Lookup::Stale(_) | Lookup::Missing => None,
        }
    }

    /// What is kept for `cluster` and `shape`, fresh or stale.
    pub fn lookup(&self, cluster: &str, shape: u64, now: Instant) -> Lookup {
        if self.ttl.is_zero() {
            return Lookup::Missing;
        }
        let entries = self.lock();
        let Some(answer) = entries.get(cluster).and_then(|a| a.get(&shape)) else {
            return Lookup::Missing;
        };
        let age = now.saturating_duration_since(answer.at);
        if age < self.ttl {
            Lookup::Fresh(answer.replicas)
        } else if age < self.ttl.saturating_mul(STALE_FACTOR) {
            Lookup::Stale(answer.replicas)
        } else {
            Lookup::Missing
        }
    }

    /// Keeps `cluster`'s fresh answer for `shape`.
    pub fn put(&self, cluster: &str, shape: u64, replicas: i64, now: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.lock();
        let answers = entries.entry(cluster.to_string()).or_default();
        let kept = self.ttl.saturating_mul(STALE_FACTOR);
        answers.retain(|_, answer| now.saturating_duration_since(answer.at) < kept);
        answers.insert(shape, Answer { replicas, at: now });
    }

    /// The scheduler placed `delta` more replicas of `shape` on `cluster` (negative: it took some away).
    pub fn assume(&self, cluster: &str, shape: u64, delta: i64) {
        if delta == 0 {
            return;
        }
        let mut entries = self.lock();
        let Some(answers) = entries.get_mut(cluster) else {
            return;
        };
        if delta < 0 {
            answers.clear();
            return;
        }
        answers.retain(|kept, _| *kept == shape);
        if let Some(answer) = answers.get_mut(&shape) {
            answer.replicas = (answer.replicas - delta).max(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_reused_within_the_ttl_less_what_was_placed() {
        let cache = AnswerCache::new(Duration::from_secs(1));
        let start = Instant::now();
        cache.put("m1", 7, 10, start);
        cache.put("m1", 8, 4, start);
        assert_eq!(
            cache.get("m1", 7, start + Duration::from_millis(500)),
            Some(10)
        );
        cache.assume("m1", 7, 3);
        assert_eq!(cache.get("m1", 7, start), Some(7), "three placed");
        assert_eq!(
            cache.get("m1", 8, start),
            None,
            "another shape's answer no longer holds"
        );
        cache.assume("m1", 7, 20);
        assert_eq!(cache.get("m1", 7, start), Some(0), "never below 0");
        assert_eq!(
            cache.get("m1", 7, start + Duration::from_secs(1)),
            None,
            "no longer fresh"
        );
        assert_eq!(
            cache.lookup("m1", 7, start + Duration::from_secs(1)),
            Lookup::Stale(0),
            "served while refreshed"
        );
        assert_eq!(
            cache.lookup("m1", 7, start + Duration::from_secs(10)),
            Lookup::Missing
        );
        cache.put("m2", 7, 5, start);
        cache.assume("m2", 7, -2);
        assert_eq!(
            cache.get("m2", 7, start),
            None,
            "freed room is unknown: asked again"
        );
        let off = AnswerCache::new(Duration::ZERO);
        off.put("m1", 7, 10, start);
        assert_eq!(off.get("m1", 7, start), None);
    }

    #[test]
    fn the_shape_is_the_requirements() {
        let a: ReplicaRequirements =
            serde_json::from_value(serde_json::json!({"resourceRequest": {"cpu": "1"}}))
                .expect("a");
        let b: ReplicaRequirements =
            serde_json::from_value(serde_json::json!({"resourceRequest": {"cpu": "2"}}))
                .expect("b");
        assert_eq!(shape_of(Some(&a)), shape_of(Some(&a.clone())));
        assert_ne!(shape_of(Some(&a)), shape_of(Some(&b)));
        assert_ne!(shape_of(Some(&a)), shape_of(None));
    }
}
