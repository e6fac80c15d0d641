use std::cell::Cell;

use kube::api::DynamicObject;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::aggregate::{aggregated_status_items, sort_items};
use super::*;

fn resource() -> ObjectReference {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"
    }))
    .expect("reference")
}

/// A Work of the binding in `cluster`, at `version`: applied with `ready` ready replicas, or not applied yet.
fn work_json(cluster: &str, name: &str, version: u64, ready: Option<i64>) -> Value {
    let (conditions, statuses) = match ready {
        Some(ready) => (
            json!([{"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": "",
                    "lastTransitionTime": "2026-12-06T00:00:00Z"}]),
            json!([{"identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                                   "resource": "deployments", "namespace": "default", "name": "web"},
                    "status": {"readyReplicas": ready}, "health": "Healthy"}]),
        ),
        None => (json!([]), json!([])),
    };
    json!({
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": format!("karmada-es-{cluster}"),
                     "resourceVersion": version.to_string()},
        "spec": {"workload": {"manifests": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                             "metadata": {"name": "web", "namespace": "default"}}]}},
        "status": {"conditions": conditions, "manifestStatuses": statuses},
    })
}

fn compact(value: &Value) -> Arc<CompactObject> {
    let object: DynamicObject = serde_json::from_value(value.clone()).expect("object");
    Arc::new(CompactObject::from_dynamic(&object).expect("compact"))
}

fn whole(value: &Value) -> Work {
    serde_json::from_value(value.clone()).expect("work")
}

/// What the aggregation of every Work, all decoded, comes to.
fn recomputed(works: &[Value]) -> Vec<AggregatedStatusItem> {
    let works: Vec<Work> = works.iter().map(whole).collect();
    aggregated_status_items(&resource(), &works)
}

/// Collects with a decoder that counts its calls.
fn collect(
    works: &[Value],
    binding_version: &str,
    stored: &[AggregatedStatusItem],
    known: Option<&Basis>,
) -> (Collected, usize) {
    let objects: Vec<_> = works.iter().map(compact).collect();
    let calls = Cell::new(0);
    let mut collected = collect_items(
        &resource(),
        &objects,
        binding_version,
        stored,
        known,
        |object| {
            calls.set(calls.get() + 1);
            object.decode::<Work>()
        },
    );
    sort_items(&mut collected.items);
    (collected, calls.get())
}

#[test]
fn without_a_basis_every_work_is_decoded() {
    let works = [
        work_json("m2", "web-1", 5, Some(2)),
        work_json("m1", "web-1", 6, None),
    ];
    let (collected, calls) = collect(&works, "10", &[], None);
    assert_eq!((collected.decoded, calls), (2, 2));
    assert_eq!(collected.items, recomputed(&works));
}

#[test]
fn only_works_changed_since_the_stored_items_are_decoded() {
    let before = [
        work_json("m1", "web-1", 5, None),
        work_json("m2", "web-1", 6, None),
        work_json("m3", "web-1", 7, Some(1)),
    ];
    let (first, _) = collect(&before, "10", &[], None);
    // The binding was written with those items; it is now at version 11.
    let stored = first.items.clone();
    let basis = first.basis.at("11");
    let after = [
        work_json("m1", "web-1", 8, Some(3)),
        before[1].clone(),
        before[2].clone(),
    ];
    let (second, calls) = collect(&after, "11", &stored, Some(&basis));
    assert_eq!((second.decoded, calls), (1, 1), "only m1's Work changed");
    assert_eq!(second.items, recomputed(&after));
}

#[test]
fn a_basis_for_another_binding_version_is_not_trusted() {
    let works = [work_json("m1", "web-1", 5, Some(1))];
    let (first, _) = collect(&works, "10", &[], None);
    let basis = first.basis.at("11");
    // Someone else wrote the binding (version 12): its items may not be the ones computed.
    let tampered: Vec<AggregatedStatusItem> = Vec::new();
    let (second, calls) = collect(&works, "12", &tampered, Some(&basis));
    assert_eq!(calls, 1);
    assert_eq!(second.items, recomputed(&works));
}

#[test]
fn two_works_of_one_cluster_are_both_decoded() {
    let works = [
        work_json("m1", "web-1", 5, Some(1)),
        work_json("m1", "web-2", 6, None),
    ];
    let (first, _) = collect(&works, "10", &[], None);
    let basis = first.basis.at("11");
    let (second, calls) = collect(&works, "11", &first.items, Some(&basis));
    assert_eq!(calls, 2);
    assert_eq!(second.items, recomputed(&works));
}

#[test]
fn a_stored_item_that_is_missing_is_computed() {
    let works = [
        work_json("m1", "web-1", 5, Some(1)),
        work_json("m2", "web-1", 6, Some(2)),
    ];
    let (first, _) = collect(&works, "10", &[], None);
    let basis = first.basis.at("11");
    let partial: Vec<AggregatedStatusItem> = first
        .items
        .iter()
        .filter(|item| item.cluster_name == "m1")
        .cloned()
        .collect();
    let (second, calls) = collect(&works, "11", &partial, Some(&basis));
    assert_eq!(calls, 1, "m2 has no stored item");
    assert_eq!(second.items, recomputed(&works));
}

#[test]
fn the_memo_forgets_when_full() {
    let memo = BasisMemo::default();
    memo.set("kept", Basis::default().at("1"));
    assert_eq!(
        memo.get("kept").map(|b| b.binding_version.clone()),
        Some("1".into())
    );
    for i in 0..REMEMBERED {
        memo.set(&format!("b{i}"), Basis::default());
    }
    assert!(memo.get("kept").is_none());
    memo.forget(&format!("b{}", REMEMBERED - 1));
    assert!(memo.get(&format!("b{}", REMEMBERED - 1)).is_none());
}

proptest! {
    /// However Works change between reconciles, and whether or not each status write lands, the items equal a
    /// full recomputation: the controller's loop, modelled with a binding version that moves on every write.
    #[test]
    fn reused_items_always_equal_a_full_recomputation(
        steps in prop::collection::vec(
            (prop::collection::vec((0usize..4, prop::option::of(0i64..3)), 0..4), any::<bool>()),
            1..12,
        )
    ) {
        let clusters = ["m1", "m2", "m3", "m4"];
        let mut ready: Vec<Option<i64>> = vec![None; clusters.len()];
        let mut versions: Vec<u64> = vec![1; clusters.len()];
        let mut next_version = 10u64;
        let memo = BasisMemo::default();
        let mut binding_version = "1".to_string();
        let mut stored: Vec<AggregatedStatusItem> = Vec::new();
        for (changes, write_lands) in steps {
            let unchanged = changes.is_empty();
            for (cluster, value) in changes {
                ready[cluster] = value;
                next_version += 1;
                versions[cluster] = next_version;
            }
            let works: Vec<Value> = clusters
                .iter()
                .enumerate()
                .map(|(i, cluster)| work_json(cluster, "web-1", versions[i], ready[i]))
                .collect();
            let known = memo.get("id");
            let (collected, _) = collect(&works, &binding_version, &stored, known.as_deref());
            prop_assert_eq!(&collected.items, &recomputed(&works));
            if unchanged && known.is_some_and(|basis| basis.binding_version == binding_version) {
                prop_assert_eq!(collected.decoded, 0, "nothing changed since the stored items");
            }
            if collected.items == stored {
                memo.set("id", collected.basis.at(&binding_version));
            } else {
                memo.forget("id");
                if write_lands {
                    next_version += 1;
                    binding_version = next_version.to_string();
                    stored = collected.items;
                    memo.set("id", collected.basis.at(&binding_version));
                }
            }
        }
    }
}
