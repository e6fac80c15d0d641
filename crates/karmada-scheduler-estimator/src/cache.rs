//! Estimator answers kept for a moment: within `ttl` a binding of the same replica requirements reuses a
//! cluster's last answer instead of asking again, less what the scheduler itself has placed there since
//! ([`AnswerCache::assume`]). A burst of workloads then asks each estimator once per `ttl` and requirements, and
//! does not hand one cluster the same free room twice — which asking afresh would, as the member's pods do not
//! exist yet when the next binding is decided.
//!
//! Replicas of other requirements placed on a cluster lower a kept answer by a bound, not by a guess: one
//! replica of requests `S` takes a pod slot and, per resource `r` the kept requirements `T` ask for, `S[r]` of
//! a node's free room, so it removes at most `max(1, max_r ceil(S[r] / T[r]))` replicas of `T` from that node
//! (and from a namespace quota). The answer stays a lower bound of the truth, so a burst of many workload
//! shapes is not sent back to the estimators after every decision. Replicas taken away only free room: the kept
//! answer is still a lower bound, and is marked for a refresh.
//!
//! An answer past the ttl is still served, as stale, for up to [`STALE_FACTOR`] ttls while one refresh is asked
//! for in the background ([`Lookup::Stale`]), so no binding waits for a refresh; only a cluster and
//! requirements never asked (or long unasked) are waited for.
//!
//! Limit: an answer fetched after the ttl counts room that replicas placed before it still hold once their pods
//! exist, but not while they are being created — as Karmada's estimator without its
//! SchedulingOvercommitProtection gate.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use karmada_api::ReplicaRequirements;

/// Replica requirements as the cache keys and compares them: a hash of their JSON, and the per-replica resource
/// requests in milli-units (a request that does not parse is left out: it cannot be compared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    hash: u64,
    requests: Arc<BTreeMap<String, i128>>,
}

impl Shape {
    pub fn of(requirements: Option<&ReplicaRequirements>) -> Self {
        let text = requirements
            .and_then(|r| serde_json::to_string(r).ok())
            .unwrap_or_default();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let requests = requirements
            .map(|r| {
                r.resource_request
                    .iter()
                    .filter_map(|(name, quantity)| {
                        apimachinery::quantity::parse_milli(&quantity.0)
                            .ok()
                            .map(|milli| (name.clone(), milli))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            hash: hasher.finish(),
            requests: Arc::new(requests),
        }
    }

    /// The key answers are kept under.
    pub fn key(&self) -> u64 {
        self.hash
    }

    /// The most replicas of `self` that one replica of `placed` can take the room of, on any node or quota:
    /// a pod slot, and per resource `self` requests, the rounded-up share `placed` requests of it.
    fn displaced_by(&self, placed: &Shape) -> i64 {
        if self.hash == placed.hash {
            return 1;
        }
        self.requests
            .iter()
            .filter(|(_, wanted)| **wanted > 0)
            .map(|(name, wanted)| {
                let taken = placed.requests.get(name).copied().unwrap_or(0).max(0);
                i64::try_from((taken + wanted - 1) / wanted).unwrap_or(i64::MAX)
            })
            .fold(1, i64::max)
    }
}

/// How many ttls a stale answer is still served for while it is refreshed.
pub const STALE_FACTOR: u32 = 10;

/// What the cache holds for a cluster and requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Younger than the ttl.
    Fresh(i64),
    /// Older than the ttl (or marked for a refresh) but younger than [`STALE_FACTOR`] ttls: serve it, and
    /// refresh.
    Stale(i64),
    Missing,
}

#[derive(Debug, Clone)]
struct Answer {
    replicas: i64,
    at: Instant,
    shape: Shape,
    /// Room was freed since: still a lower bound, but worth asking again.
    refresh: bool,
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

    /// `cluster`'s answer for `shape`, if a fresh one is kept.
    pub fn get(&self, cluster: &str, shape: &Shape, now: Instant) -> Option<i64> {
        match self.lookup(cluster, shape, now) {
            Lookup::Fresh(replicas) => Some(replicas),
            Lookup::Stale(_) | Lookup::Missing => None,
        }
    }

    /// What is kept for `cluster` and `shape`, fresh or stale.
    pub fn lookup(&self, cluster: &str, shape: &Shape, now: Instant) -> Lookup {
        if self.ttl.is_zero() {
            return Lookup::Missing;
        }
        self.classify(&self.lock(), cluster, shape, now)
    }

    /// [`Self::lookup`] of every cluster in `clusters`, under one lock.
    pub fn lookup_all(&self, clusters: &[Arc<str>], shape: &Shape, now: Instant) -> Vec<Lookup> {
        if self.ttl.is_zero() {
            return vec![Lookup::Missing; clusters.len()];
        }
        let entries = self.lock();
        clusters
            .iter()
            .map(|cluster| self.classify(&entries, cluster, shape, now))
            .collect()
    }

    fn classify(
        &self,
        entries: &HashMap<String, HashMap<u64, Answer>>,
        cluster: &str,
        shape: &Shape,
        now: Instant,
    ) -> Lookup {
        let Some(answer) = entries.get(cluster).and_then(|a| a.get(&shape.hash)) else {
            return Lookup::Missing;
        };
        let age = now.saturating_duration_since(answer.at);
        if age >= self.ttl.saturating_mul(STALE_FACTOR) {
            Lookup::Missing
        } else if age >= self.ttl || answer.refresh {
            Lookup::Stale(answer.replicas)
        } else {
            Lookup::Fresh(answer.replicas)
        }
    }

    /// Keeps `cluster`'s fresh answer for `shape`.
    pub fn put(&self, cluster: &str, shape: &Shape, replicas: i64, now: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.lock();
        let answers = entries.entry(cluster.to_string()).or_default();
        let kept = self.ttl.saturating_mul(STALE_FACTOR);
        answers.retain(|_, answer| now.saturating_duration_since(answer.at) < kept);
        answers.insert(
            shape.hash,
            Answer {
                replicas,
                at: now,
                shape: shape.clone(),
                refresh: false,
            },
        );
    }

    /// Drops `cluster`'s answer for `shape` (its estimator failed to answer again: as Karmada, a cluster whose
    /// estimator does not answer gets the general estimate alone).
    pub fn forget(&self, cluster: &str, shape: &Shape) {
        if let Some(answers) = self.lock().get_mut(cluster) {
            answers.remove(&shape.hash);
        }
    }

    /// The scheduler placed `delta` more replicas of `placed` on `cluster` (negative: it took some away): every
    /// answer kept for the cluster loses what those replicas can take of its room.
    pub fn assume(&self, cluster: &str, placed: &Shape, delta: i64) {
        if delta == 0 {
            return;
        }
        let mut entries = self.lock();
        let Some(answers) = entries.get_mut(cluster) else {
            return;
        };
        for answer in answers.values_mut() {
            if delta < 0 {
                answer.refresh = true;
            } else {
                let lost = delta.saturating_mul(answer.shape.displaced_by(placed));
                answer.replicas = answer.replicas.saturating_sub(lost).max(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(requests: serde_json::Value) -> Shape {
        let requirements: ReplicaRequirements =
            serde_json::from_value(serde_json::json!({ "resourceRequest": requests }))
                .expect("requirements");
        Shape::of(Some(&requirements))
    }

    #[test]
    fn answers_are_reused_within_the_ttl_less_what_was_placed() {
        let cache = AnswerCache::new(Duration::from_secs(1));
        let start = Instant::now();
        let one_cpu = shape(serde_json::json!({"cpu": "1"}));
        cache.put("m1", &one_cpu, 10, start);
        assert_eq!(
            cache.get("m1", &one_cpu, start + Duration::from_millis(500)),
            Some(10)
        );
        cache.assume("m1", &one_cpu, 3);
        assert_eq!(cache.get("m1", &one_cpu, start), Some(7), "three placed");
        assert_eq!(
            cache.lookup_all(&[Arc::from("m1"), Arc::from("m9")], &one_cpu, start),
            vec![Lookup::Fresh(7), Lookup::Missing],
            "every cluster of a binding at once"
        );
        cache.assume("m1", &one_cpu, 20);
        assert_eq!(cache.get("m1", &one_cpu, start), Some(0), "never below 0");
        assert_eq!(
            cache.get("m1", &one_cpu, start + Duration::from_secs(1)),
            None,
            "no longer fresh"
        );
        assert_eq!(
            cache.lookup("m1", &one_cpu, start + Duration::from_secs(1)),
            Lookup::Stale(0),
            "served while refreshed"
        );
        assert_eq!(
            cache.lookup("m1", &one_cpu, start + Duration::from_secs(10)),
            Lookup::Missing
        );
        let off = AnswerCache::new(Duration::ZERO);
        off.put("m1", &one_cpu, 10, start);
        assert_eq!(off.get("m1", &one_cpu, start), None);
    }

    #[test]
    fn other_requirements_lose_at_most_what_the_placed_replicas_can_take() {
        let cache = AnswerCache::new(Duration::from_secs(1));
        let start = Instant::now();
        let small = shape(serde_json::json!({"cpu": "500m", "memory": "1Gi"}));
        let large = shape(serde_json::json!({"cpu": "2", "memory": "1Gi"}));
        let gpu = shape(serde_json::json!({"nvidia.com/gpu": "1"}));
        cache.put("m1", &small, 100, start);
        cache.put("m1", &gpu, 8, start);
        // One 2-CPU replica takes the room of ceil(2 / 0.5) = 4 small ones; a pod slot of a GPU one.
        cache.assume("m1", &large, 3);
        assert_eq!(cache.get("m1", &small, start), Some(88));
        assert_eq!(cache.get("m1", &gpu, start), Some(5));
        // A small replica takes at most one large replica's room (its pod slot, and a share rounded up).
        cache.put("m1", &large, 10, start);
        cache.assume("m1", &small, 4);
        assert_eq!(cache.get("m1", &large, start), Some(6));
        assert_eq!(cache.get("m1", &small, start), Some(84));
    }

    #[test]
    fn replicas_taken_away_keep_the_answer_and_ask_for_a_refresh() {
        let cache = AnswerCache::new(Duration::from_secs(1));
        let start = Instant::now();
        let one_cpu = shape(serde_json::json!({"cpu": "1"}));
        cache.put("m2", &one_cpu, 5, start);
        cache.assume("m2", &one_cpu, -2);
        assert_eq!(
            cache.lookup("m2", &one_cpu, start),
            Lookup::Stale(5),
            "freed room: still a lower bound, refreshed in the background"
        );
        cache.put("m2", &one_cpu, 7, start);
        assert_eq!(cache.lookup("m2", &one_cpu, start), Lookup::Fresh(7));
    }

    #[test]
    fn the_shape_is_the_requirements() {
        let a = shape(serde_json::json!({"cpu": "1"}));
        let b = shape(serde_json::json!({"cpu": "2"}));
        assert_eq!(a, shape(serde_json::json!({"cpu": "1"})));
        assert_ne!(a.hash, b.hash);
        assert_ne!(a.hash, Shape::of(None).hash);
        assert_eq!(Shape::of(None).displaced_by(&a), 1, "a pod slot at least");
    }

    /// A member as the estimator sees it: per node, free CPU (milli), free memory (bytes) and free pod slots.
    type Nodes = Vec<(i128, i128, i128)>;

    /// How many replicas of (cpu, memory) fit, node by node (a zero request does not bound).
    fn fits(nodes: &Nodes, cpu: i128, memory: i128) -> i64 {
        nodes
            .iter()
            .map(|&(free_cpu, free_memory, slots)| {
                let by_cpu = if cpu > 0 { free_cpu / cpu } else { i128::MAX };
                let by_memory = if memory > 0 {
                    free_memory / memory
                } else {
                    i128::MAX
                };
                i64::try_from(slots.min(by_cpu).min(by_memory).max(0)).expect("small")
            })
            .sum()
    }

    proptest::proptest! {
        /// However replicas of one shape land on a member's nodes, every other shape's count drops by no more
        /// than the bound `assume` takes off, so a kept answer stays a lower bound.
        #[test]
        fn the_bound_holds_for_any_placement(
            nodes in proptest::collection::vec((0i128..16_000, 0i128..(64i128 << 30), 0i128..30), 1..6),
            kept in (0i128..4000, 0i128..(8i128 << 30)),
            placed in (0i128..4000, 0i128..(8i128 << 30)),
            choices in proptest::collection::vec(0usize..6, 0..40),
        ) {
            let requests = |(cpu, memory): (i128, i128)| {
                shape(serde_json::json!({"cpu": format!("{cpu}m"), "memory": memory.to_string()}))
            };
            let (kept_shape, placed_shape) = (requests(kept), requests(placed));
            let before = fits(&nodes, kept.0, kept.1);
            let mut after_nodes = nodes.clone();
            let mut landed = 0i64;
            for choice in choices {
                let index = choice % after_nodes.len();
                let node = &mut after_nodes[index];
                if node.0 >= placed.0 && node.1 >= placed.1 && node.2 >= 1 {
                    node.0 -= placed.0;
                    node.1 -= placed.1;
                    node.2 -= 1;
                    landed += 1;
                }
            }
            let after = fits(&after_nodes, kept.0, kept.1);
            let bound = before - landed * kept_shape.displaced_by(&placed_shape);
            proptest::prop_assert!(after >= bound.max(0), "before {before}, {landed} placed, after {after}, bound {bound}");
        }
    }
}
