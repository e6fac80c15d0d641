//! RFC 6902 JSON patch, delegated to the `json-patch` crate; only error wording is ours.

use serde_json::Value;

use super::PatchError;

/// Applies `operations` (a JSON array of `add/remove/replace/move/copy/test` operations) to a
/// copy of `document`.
pub fn json_patch(document: &Value, operations: &Value) -> Result<Value, PatchError> {
    if !operations.is_array() {
        return Err(PatchError::Malformed(
            "json patch must be a JSON array of operations such as {\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":3}"
                .to_string(),
        ));
    }
    let patch: json_patch::Patch = serde_json::from_value(operations.clone()).map_err(|e| {
        PatchError::Malformed(format!(
            "invalid json patch: {e}; each operation needs \"op\" (add, remove, replace, move, copy or test) and \"path\""
        ))
    })?;
    let mut patched = document.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| {
        PatchError::Unprocessable(format!("the json patch could not be applied: {e}"))
    })?;
    Ok(patched)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn operations_apply_in_order() {
        let doc =
            json!({"metadata": {"name": "web", "labels": {"a": "1"}}, "spec": {"replicas": 1}});
        let ops = json!([
            {"op": "test", "path": "/metadata/name", "value": "web"},
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "remove", "path": "/metadata/labels/a"},
            {"op": "copy", "from": "/spec/replicas", "path": "/spec/wanted"},
            {"op": "move", "from": "/spec/wanted", "path": "/spec/previous"}
        ]);
        assert_eq!(
            json_patch(&doc, &ops).expect("applies"),
            json!({"metadata": {"name": "web", "labels": {"b": "2"}}, "spec": {"replicas": 3, "previous": 3}})
        );
    }

    #[test]
    fn failures_leave_no_partial_result() {
        let doc = json!({"spec": {"replicas": 1}});
        let cases: &[(Value, bool)] = &[
            (json!({"op": "add"}), true),
            (json!([{"op": "frobnicate", "path": "/x"}]), true),
            (
                json!([{"op": "replace", "path": "/spec/replicas", "value": 2}, {"op": "test", "path": "/spec/replicas", "value": 1}]),
                false,
            ),
            (json!([{"op": "remove", "path": "/spec/missing"}]), false),
        ];
        for (ops, malformed) in cases {
            let error = json_patch(&doc, ops).expect_err("must fail");
            assert_eq!(
                matches!(error, PatchError::Malformed(_)),
                *malformed,
                "{ops}: {error}"
            );
            assert_eq!(
                error.to_api_error().code,
                if *malformed { 400 } else { 422 }
            );
        }
    }
}
