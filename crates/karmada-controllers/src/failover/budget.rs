//! Eviction pacing, pure (time passed in): a token-bucket rate limit on evictions (Karmada's
//! `--resource-eviction-rate`, 0.5 per second) and a budget on how many distinct clusters evictions may start
//! from within a sliding interval — our addition: when the control plane loses sight of many members at once
//! (its own network partition), it evicts from a few and waits, instead of emptying every cluster.
//!
//! Evicting more bindings from a cluster already admitted in the window is free: the budget counts clusters, not
//! bindings.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

/// At most `max_clusters` distinct clusters per `interval`.
#[derive(Clone, Debug)]
pub struct EvictionBudget {
    max_clusters: usize,
    interval: SignedDuration,
    admitted: BTreeMap<String, Timestamp>,
    /// The window openings recorded on the Clusters, closed ones included: a task started inside one belongs to
    /// it and says nothing about a later window.
    recorded: BTreeMap<String, Timestamp>,
}

impl EvictionBudget {
    pub fn new(max_clusters: usize, interval: SignedDuration) -> Self {
        Self {
            max_clusters,
            interval,
            admitted: BTreeMap::new(),
            recorded: BTreeMap::new(),
        }
    }

    /// Remembers that `cluster`'s budget window opened at `opened`, as recorded on the Cluster (write-ahead of the
    /// window's first eviction), so a restarted controller keeps counting the window it was in.
    pub fn seed_window(&mut self, cluster: &str, opened: Timestamp, now: Timestamp) {
        self.recorded.insert(cluster.to_string(), opened);
        if self.expired(opened, now) {
            return;
        }
        self.admitted.insert(cluster.to_string(), opened);
    }

    /// Remembers that an eviction from `cluster` started at `at`, as recorded by an existing graceful eviction
    /// task. Inside a recorded window it changes nothing: moving the opening later would let the cluster's next
    /// window open late, and another cluster in within one interval of it. Otherwise the latest start per
    /// cluster is kept: the budget then errs towards holding back.
    pub fn seed(&mut self, cluster: &str, at: Timestamp, now: Timestamp) {
        if self.expired(at, now) {
            return;
        }
        let interval = self.interval;
        let within = |opened: Timestamp| {
            opened <= at && opened.checked_add(interval).is_ok_and(|end| at < end)
        };
        if self
            .recorded
            .get(cluster)
            .is_some_and(|opened| within(*opened))
        {
            return;
        }
        let entry = self.admitted.entry(cluster.to_string()).or_insert(at);
        *entry = (*entry).max(at);
    }

    /// Whether a window opened at `opened` has closed by `now`.
    fn expired(&self, opened: Timestamp, now: Timestamp) -> bool {
        opened
            .checked_add(self.interval)
            .is_ok_and(|end| end <= now)
    }

    /// When `cluster`'s window opened, if it is admitted in a window still open at `now`.
    pub fn window_of(&self, cluster: &str, now: Timestamp) -> Option<Timestamp> {
        self.admitted
            .get(cluster)
            .copied()
            .filter(|opened| !self.expired(*opened, now))
    }

    /// Admits an eviction from `cluster` at `now`, or says when to try again.
    pub fn try_admit(&mut self, cluster: &str, now: Timestamp) -> Result<(), Timestamp> {
        let interval = self.interval;
        let expired = |opened: &Timestamp| opened.checked_add(interval).is_ok_and(|end| end <= now);
        self.admitted.retain(|_, opened| !expired(opened));
        if self.admitted.contains_key(cluster) {
            return Ok(());
        }
        if self.admitted.len() < self.max_clusters {
            self.admitted.insert(cluster.to_string(), now);
            return Ok(());
        }
        let oldest = self.admitted.values().min().copied().unwrap_or(now);
        Err(oldest.checked_add(interval).unwrap_or(Timestamp::MAX))
    }

    /// Clusters admitted in the current window.
    pub fn admitted(&self) -> impl Iterator<Item = &str> {
        self.admitted.keys().map(String::as_str)
    }
}

/// A token bucket: `rate` tokens per second, at most `burst` saved.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Option<Timestamp>,
}

impl RateLimiter {
    /// A full bucket. A non-positive rate admits nothing after the burst.
    pub fn new(rate: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: rate.max(0.0),
            burst,
            tokens: burst,
            last: None,
        }
    }

    /// Takes one token at `now`, or says how long until one is available.
    pub fn try_take(&mut self, now: Timestamp) -> Result<(), SignedDuration> {
        if let Some(last) = self.last
            && now > last
        {
            let elapsed = now.duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        }
        if self.last.is_none_or(|last| now > last) {
            self.last = Some(now);
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        if self.rate <= 0.0 {
            return Err(SignedDuration::from_hours(1));
        }
        let wait = (1.0 - self.tokens) / self.rate;
        Err(SignedDuration::try_from_secs_f64(wait).unwrap_or(SignedDuration::from_secs(1)))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::failover::safety::budget_holds;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).expect("t")
    }

    #[test]
    fn budget_counts_clusters_not_bindings() {
        let mut budget = EvictionBudget::new(2, SignedDuration::from_secs(60));
        assert_eq!(budget.try_admit("a", t(0)), Ok(()));
        assert_eq!(budget.try_admit("a", t(1)), Ok(()));
        assert_eq!(budget.try_admit("b", t(2)), Ok(()));
        assert_eq!(budget.try_admit("c", t(3)), Err(t(60)));
        assert_eq!(budget.try_admit("b", t(4)), Ok(()));
        assert_eq!(budget.try_admit("c", t(60)), Ok(()));
        assert_eq!(budget.try_admit("a", t(61)), Err(t(62)));
    }

    #[test]
    fn a_restarted_budget_counts_the_evictions_its_tasks_record() {
        let mut budget = EvictionBudget::new(1, SignedDuration::from_secs(60));
        budget.seed("old", t(-90), t(0));
        budget.seed("a", t(-40), t(0));
        budget.seed("a", t(-30), t(0));
        assert_eq!(budget.try_admit("a", t(0)), Ok(()), "a is in the window");
        assert_eq!(
            budget.try_admit("b", t(1)),
            Err(t(30)),
            "the window a's latest task opened is full"
        );
        assert_eq!(budget.try_admit("b", t(30)), Ok(()));
    }

    #[test]
    fn a_task_inside_a_recorded_window_leaves_its_opening() {
        let mut budget = EvictionBudget::new(1, SignedDuration::from_secs(60));
        budget.seed_window("a", t(-50), t(0));
        budget.seed("a", t(-20), t(0));
        assert_eq!(budget.window_of("a", t(0)), Some(t(-50)));
        // The recorded window closes at 10: a's eviction at 15 opens a new one, which holds b back until 75.
        assert_eq!(budget.try_admit("b", t(5)), Err(t(10)));
        assert_eq!(budget.try_admit("a", t(15)), Ok(()));
        assert_eq!(budget.try_admit("b", t(16)), Err(t(75)));
        // So does a task inside a recorded window that has closed since.
        let mut budget = EvictionBudget::new(1, SignedDuration::from_secs(60));
        budget.seed_window("a", t(-70), t(0));
        budget.seed("a", t(-15), t(0));
        assert_eq!(budget.window_of("a", t(0)), None);
        assert_eq!(budget.try_admit("b", t(1)), Ok(()));
        // A task past the recorded window shows a newer one opened: the latest start counts.
        let mut budget = EvictionBudget::new(1, SignedDuration::from_secs(60));
        budget.seed_window("a", t(-100), t(-50));
        budget.seed("a", t(-30), t(0));
        assert_eq!(budget.window_of("a", t(0)), Some(t(-30)));
    }

    #[test]
    fn zero_budget_admits_nothing() {
        let mut budget = EvictionBudget::new(0, SignedDuration::from_secs(60));
        assert!(budget.try_admit("a", t(0)).is_err());
    }

    #[test]
    fn rate_limiter_refills() {
        let mut limiter = RateLimiter::new(0.5, 2);
        assert_eq!(limiter.try_take(t(0)), Ok(()));
        assert_eq!(limiter.try_take(t(0)), Ok(()));
        assert_eq!(limiter.try_take(t(0)), Err(SignedDuration::from_secs(2)));
        assert_eq!(limiter.try_take(t(1)), Err(SignedDuration::from_secs(1)));
        assert_eq!(limiter.try_take(t(2)), Ok(()));
    }

    proptest! {
        #[test]
        fn budget_never_exceeded(
            max in 1usize..4,
            steps in prop::collection::vec((0i64..30, 0usize..6), 1..80),
        ) {
            let interval = SignedDuration::from_secs(60);
            let mut budget = EvictionBudget::new(max, interval);
            let mut now = 0;
            let mut admitted = Vec::new();
            for (advance, cluster) in steps {
                now += advance;
                let name = format!("c{cluster}");
                if budget.try_admit(&name, t(now)).is_ok() {
                    admitted.push((t(now), name));
                }
            }
            // The budget admits a cluster for a whole window from its first admission; count admissions at
            // their window start only.
            let mut firsts: Vec<(Timestamp, String)> = Vec::new();
            for (at, name) in admitted {
                let open = firsts.iter().any(|(s, n)| *n == name && s.checked_add(interval).is_ok_and(|e| at < e));
                if !open { firsts.push((at, name)); }
            }
            prop_assert!(budget_holds(&firsts, max, interval));
        }
    }
}
