//! Which namespace Works are known to hold what the controller wants, so a pass reads only the others.
//!
//! Why: every Cluster added or changed re-runs every namespace, and a run read each namespace's Work in every
//! member (one GET per cluster). Joining 100 members one after another made about 100 × 100 reads per
//! propagated namespace, most of them of Works written a moment before.
//!
//! A Work holds when the controller last made it hold the same desired Work (by hash) at some resourceVersion,
//! and the Work watch has seen no other resourceVersion of it since. Any write by someone else, a deletion (its
//! event carries the deletion's revision) or a controller restart (nothing recorded) makes the next pass read it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

use karmada_api::Work;

/// A Work's namespace and name.
type WorkKey = (String, String);

#[derive(Default)]
pub struct AppliedWorks(Mutex<State>);

#[derive(Default)]
struct State {
    /// Work → (hash of the desired Work it was made to hold, resourceVersion that held it).
    applied: HashMap<WorkKey, (u64, String)>,
    /// Work → the newest resourceVersion the Work watch delivered.
    seen: HashMap<WorkKey, String>,
}

impl AppliedWorks {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The Work watch delivered `namespace/name` at `resource_version`.
    pub fn saw(&self, namespace: &str, name: &str, resource_version: &str) {
        self.lock().seen.insert(
            (namespace.to_string(), name.to_string()),
            resource_version.to_string(),
        );
    }

    /// Whether `namespace/name` is known to hold the desired Work hashed `desired`.
    pub fn holds(&self, namespace: &str, name: &str, desired: u64) -> bool {
        let key = (namespace.to_string(), name.to_string());
        let state = self.lock();
        match (state.applied.get(&key), state.seen.get(&key)) {
            (Some((hash, held_at)), Some(seen)) => *hash == desired && held_at == seen,
            _ => false,
        }
    }

    /// `namespace/name` held the desired Work hashed `desired` at `resource_version` (written or read so).
    pub fn record(&self, namespace: &str, name: &str, desired: u64, resource_version: &str) {
        self.lock().applied.insert(
            (namespace.to_string(), name.to_string()),
            (desired, resource_version.to_string()),
        );
    }

    /// Forgets `namespace/name` (its namespace is going: nothing is desired of it any more).
    pub fn forget(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let mut state = self.lock();
        state.applied.remove(&key);
        state.seen.remove(&key);
    }
}

/// The hash [`AppliedWorks`] compares desired Works by: of the serialized Work, so any field counts.
pub fn desired_hash(work: &Work) -> u64 {
    let mut hasher = DefaultHasher::new();
    serde_json::to_string(work)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "karmada-es-member1";
    const NAME: &str = "default-1234";

    #[test]
    fn a_work_holds_only_at_the_version_it_was_seen_to_hold_and_for_the_same_desire() {
        let applied = AppliedWorks::default();
        assert!(!applied.holds(NS, NAME, 7), "nothing recorded");
        applied.record(NS, NAME, 7, "10");
        assert!(
            !applied.holds(NS, NAME, 7),
            "the watch has not delivered it yet"
        );
        applied.saw(NS, NAME, "10");
        assert!(applied.holds(NS, NAME, 7));
        assert!(!applied.holds(NS, NAME, 8), "another desired Work");
        assert!(!applied.holds(NS, "other", 7), "another Work");
    }

    #[test]
    fn a_write_or_deletion_by_someone_else_is_read_again() {
        let applied = AppliedWorks::default();
        applied.record(NS, NAME, 7, "10");
        applied.saw(NS, NAME, "10");
        // Edited by hand, or deleted (a deletion's event carries the deletion's revision).
        applied.saw(NS, NAME, "11");
        assert!(!applied.holds(NS, NAME, 7));
        // The pass that reads it makes it hold again.
        applied.record(NS, NAME, 7, "12");
        applied.saw(NS, NAME, "12");
        assert!(applied.holds(NS, NAME, 7));
    }

    #[test]
    fn a_watch_event_older_than_the_write_does_not_make_it_hold() {
        let applied = AppliedWorks::default();
        applied.saw(NS, NAME, "9");
        applied.record(NS, NAME, 7, "10");
        assert!(!applied.holds(NS, NAME, 7));
    }

    #[test]
    fn a_forgotten_work_is_read_again() {
        let applied = AppliedWorks::default();
        applied.record(NS, NAME, 7, "10");
        applied.saw(NS, NAME, "10");
        applied.forget(NS, NAME);
        assert!(!applied.holds(NS, NAME, 7));
    }

    #[test]
    fn the_hash_follows_every_field() {
        let work = |label: &str| -> Work {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": NAME, "namespace": NS, "labels": {"l": label}},
                "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": "default"}}]}},
            }))
            .expect("work")
        };
        assert_eq!(desired_hash(&work("a")), desired_hash(&work("a")));
        assert_ne!(desired_hash(&work("a")), desired_hash(&work("b")));
    }
}
