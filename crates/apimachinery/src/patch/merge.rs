//! RFC 7386 JSON merge patch: objects merge recursively, `null` deletes, everything else
//! (lists included) replaces.

use serde_json::Value;

/// Applies `patch` to a copy of `document`.
pub fn merge_patch(document: &Value, patch: &Value) -> Value {
    let mut result = document.clone();
    json_patch::merge(&mut result, patch);
    result
}

/// The merge patch taking `from` to `to`: `merge_patch(from, merge_diff(from, to)) == to` whenever `to` holds no
/// `null` (a merge patch cannot write one). Only what differs is in it: unchanged fields are left out, removed
/// ones are `null`, and a list that changed is sent whole.
pub fn merge_diff(from: &Value, to: &Value) -> Value {
    let (Value::Object(old), Value::Object(new)) = (from, to) else {
        return to.clone();
    };
    let mut patch = serde_json::Map::new();
    for key in old.keys().filter(|key| !new.contains_key(*key)) {
        patch.insert(key.clone(), Value::Null);
    }
    for (key, value) in new {
        match old.get(key) {
            Some(previous) if previous == value => {}
            Some(previous @ Value::Object(_)) if value.is_object() => {
                patch.insert(key.clone(), merge_diff(previous, value));
            }
            _ => {
                patch.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(patch)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rfc7386_examples() {
        let cases: &[(Value, Value, Value)] = &[
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (doc, patch, expected) in cases {
            assert_eq!(merge_patch(doc, patch), *expected, "{doc} + {patch}");
        }
    }

    #[test]
    fn kubectl_scale_and_label_patches() {
        let live = json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}});
        let patched = merge_patch(
            &live,
            &json!({"spec": {"replicas": 3}, "metadata": {"labels": {"tier": "fe", "app": null}}}),
        );
        assert_eq!(
            patched,
            json!({"metadata": {"name": "web", "labels": {"tier": "fe"}}, "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}})
        );
    }

    #[test]
    fn diffs_carry_only_what_changed() {
        let from = json!({"replicas": 3, "readyReplicas": 1, "conditions": [{"type": "A"}], "nested": {"a": 1, "b": 2}});
        let to = json!({"replicas": 3, "readyReplicas": 3, "conditions": [{"type": "B"}], "nested": {"a": 1}});
        assert_eq!(
            merge_diff(&from, &to),
            json!({"readyReplicas": 3, "conditions": [{"type": "B"}], "nested": {"b": null}})
        );
        assert_eq!(merge_diff(&to, &to), json!({}));
        assert_eq!(merge_diff(&json!(null), &to), to);
        assert_eq!(merge_diff(&json!({"a": 1}), &json!({})), json!({"a": null}));
    }

    fn json_without_nulls() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            any::<bool>().prop_map(Value::from),
            (0i64..4).prop_map(Value::from),
            "[ab]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::btree_map("[abc]", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn the_diff_applied_to_its_source_gives_its_target(
            from in json_without_nulls(),
            to in json_without_nulls(),
        ) {
            proptest::prop_assert_eq!(merge_patch(&from, &merge_diff(&from, &to)), to);
        }
    }
}
