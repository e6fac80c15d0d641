//! The objects of a watch whose fingerprint changed: a controller's trigger that ignores what it does not act
//! on (typically the status its own writes change).
//!
//! Why not kube-runtime's `predicate_filter`: it remembers every object by an `ObjectRef` (its kind's five
//! strings, name, namespace, uid and resourceVersion: ~700 bytes with the table slot) and never forgets a
//! deleted one; five controllers filter Works and bindings this way, so those tables held more of the
//! controller-manager's heap than the objects' own metadata. This one remembers a hash of `namespace/name`
//! and a fingerprint, forgets deleted objects, and after a relist forgets the objects the relist no longer
//! has. Two objects whose names hash alike share an entry, which can only let an event through that would
//! have been filtered (the entry holds the other object's fingerprint), never hold one back.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use futures::{Stream, StreamExt};
use kube::runtime::watcher::{self, Event};

use super::CompactObject;

/// The applied objects of `events` that are new or whose `fingerprint` differs from the last one seen. An
/// object without a fingerprint (`None`) always passes.
pub fn changed_objects(
    events: impl Stream<Item = Event<CompactObject>> + Send,
    fingerprint: fn(&CompactObject) -> Option<u64>,
) -> impl Stream<Item = Result<CompactObject, watcher::Error>> + Send {
    let mut seen = Fingerprints::default();
    events.filter_map(move |event| {
        let changed = seen.observe(event, fingerprint).map(Ok);
        futures::future::ready(changed)
    })
}

/// The events of `events` without the applies whose `fingerprint` did not change; deletions and relist markers
/// pass, for a controller that acts on a deletion too.
pub fn changed_events(
    events: impl Stream<Item = Event<CompactObject>> + Send,
    fingerprint: fn(&CompactObject) -> Option<u64>,
) -> impl Stream<Item = Event<CompactObject>> + Send {
    let mut seen = Fingerprints::default();
    events.filter_map(move |event| {
        let passed = match event {
            Event::Apply(object) => seen
                .observe(Event::Apply(object), fingerprint)
                .map(Event::Apply),
            Event::InitApply(object) => seen
                .observe(Event::InitApply(object), fingerprint)
                .map(Event::InitApply),
            Event::Delete(object) => {
                seen.observe(Event::Delete(object.clone()), fingerprint);
                Some(Event::Delete(object))
            }
            Event::Init => {
                seen.observe(Event::Init, fingerprint);
                Some(Event::Init)
            }
            Event::InitDone => {
                seen.observe(Event::InitDone, fingerprint);
                Some(Event::InitDone)
            }
        };
        futures::future::ready(passed)
    })
}

/// The last fingerprint of every object, by a hash of its namespace and name.
#[derive(Default)]
struct Fingerprints {
    last: HashMap<u64, Entry>,
    names: RandomState,
    /// Bumped by every relist; entries the relist did not touch are dropped when it completes.
    epoch: u32,
}

struct Entry {
    fingerprint: u64,
    epoch: u32,
}

impl Fingerprints {
    /// The object of `event` if it should pass.
    fn observe(
        &mut self,
        event: Event<CompactObject>,
        fingerprint: fn(&CompactObject) -> Option<u64>,
    ) -> Option<CompactObject> {
        match event {
            Event::Apply(object) | Event::InitApply(object) => {
                let Some(value) = fingerprint(&object) else {
                    return Some(object);
                };
                let entry = Entry {
                    fingerprint: value,
                    epoch: self.epoch,
                };
                let previous = self.last.insert(self.key(&object), entry);
                match previous {
                    Some(previous) if previous.fingerprint == value => None,
                    _ => Some(object),
                }
            }
            Event::Delete(object) => {
                self.last.remove(&self.key(&object));
                None
            }
            Event::Init => {
                self.epoch = self.epoch.wrapping_add(1);
                None
            }
            Event::InitDone => {
                let epoch = self.epoch;
                self.last.retain(|_, entry| entry.epoch == epoch);
                // A burst grows the table; give the memory back once it is mostly empty.
                if self.last.capacity() > 4 * self.last.len().max(1024) {
                    self.last.shrink_to_fit();
                }
                None
            }
        }
    }
}

impl Fingerprints {
    fn key(&self, object: &CompactObject) -> u64 {
        let metadata = object.metadata();
        self.names.hash_one((metadata.namespace(), metadata.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::DynamicObject;

    fn object(name: &str, spec: i64, status: i64) -> CompactObject {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"v": spec}, "status": {"v": status},
        }))
        .expect("object");
        CompactObject::from_dynamic(&object).expect("compact")
    }

    fn spec_of(object: &CompactObject) -> Option<u64> {
        let value: serde_json::Value = object.decode().ok()?;
        value["spec"]["v"].as_u64()
    }

    fn names(passed: &[Option<CompactObject>]) -> Vec<Option<String>> {
        passed
            .iter()
            .map(|o| o.as_ref().map(|o| o.metadata().name().to_string()))
            .collect()
    }

    #[test]
    fn passes_new_and_changed_objects_only() {
        let mut seen = Fingerprints::default();
        let mut observe = |event| seen.observe(event, spec_of);
        let passed = vec![
            observe(Event::Apply(object("a", 1, 0))),
            observe(Event::Apply(object("a", 1, 5))),
            observe(Event::Apply(object("a", 2, 5))),
            observe(Event::Apply(object("b", 2, 0))),
            observe(Event::Delete(object("a", 2, 5))),
            observe(Event::Apply(object("a", 2, 5))),
        ];
        assert_eq!(
            names(&passed),
            [Some("a"), None, Some("a"), Some("b"), None, Some("a")].map(|n| n.map(String::from))
        );
    }

    #[test]
    fn changed_events_drop_unchanged_applies_and_keep_the_rest() {
        let events = futures::stream::iter([
            Event::Init,
            Event::InitApply(object("a", 1, 0)),
            Event::InitDone,
            Event::Apply(object("a", 1, 5)),
            Event::Apply(object("a", 2, 5)),
            Event::Delete(object("a", 2, 5)),
            Event::Apply(object("a", 2, 5)),
        ]);
        let passed: Vec<String> = futures::executor::block_on(
            changed_events(events, spec_of)
                .map(|event| match event {
                    Event::Init => "init".to_string(),
                    Event::InitDone => "done".to_string(),
                    Event::InitApply(o) => format!("initapply {}", spec_of(&o).unwrap_or(0)),
                    Event::Apply(o) => format!("apply {}", spec_of(&o).unwrap_or(0)),
                    Event::Delete(o) => format!("delete {}", spec_of(&o).unwrap_or(0)),
                })
                .collect(),
        );
        // The status-only change (spec 1 again) is dropped; a delete passes and is forgotten, so the same
        // object applied again is new.
        assert_eq!(
            passed,
            [
                "init",
                "initapply 1",
                "done",
                "apply 2",
                "delete 2",
                "apply 2"
            ]
        );
    }

    #[test]
    fn objects_without_a_fingerprint_always_pass() {
        let mut seen = Fingerprints::default();
        let none = |_: &CompactObject| None;
        assert!(
            seen.observe(Event::Apply(object("a", 1, 0)), none)
                .is_some()
        );
        assert!(
            seen.observe(Event::Apply(object("a", 1, 0)), none)
                .is_some()
        );
        assert!(seen.last.is_empty());
    }

    #[test]
    fn a_relist_forgets_what_it_no_longer_has() {
        let mut seen = Fingerprints::default();
        for name in ["a", "b"] {
            seen.observe(Event::Apply(object(name, 1, 0)), spec_of);
        }
        seen.observe(Event::Init, spec_of);
        // Unchanged during the relist: nothing passes.
        assert!(
            seen.observe(Event::InitApply(object("a", 1, 0)), spec_of)
                .is_none()
        );
        seen.observe(Event::InitDone, spec_of);
        assert_eq!(seen.last.len(), 1, "b was deleted while disconnected");
        // b comes back as new.
        assert!(
            seen.observe(Event::Apply(object("b", 1, 0)), spec_of)
                .is_some()
        );
    }
}
