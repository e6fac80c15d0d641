//! RFC 7386 JSON merge patch: objects merge recursively, `null` deletes, everything else
//! (lists included) replaces.

use serde_json::Value;

/// Applies `patch` to a copy of `document`.
pub fn merge_patch(document: &Value, patch: &Value) -> Value {
    let Value::Object(patch_map) = patch else {
        return patch.clone();
    };
    let mut result = match document {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    for (key, value) in patch_map {
        if value.is_null() {
            result.remove(key);
        } else {
            let merged = merge_patch(result.get(key).unwrap_or(&Value::Null), value);
            result.insert(key.clone(), merged);
        }
    }
    Value::Object(result)
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
}
