//! Whether a member object already says everything a manifest says (pure).
//!
//! The member's API server adds defaults, and its controllers add status and annotations, so the test is
//! containment, not equality: every field the desired object sets must be present with the same value; lists
//! must have the same length with each element contained. Used to skip no-op updates (execution) and to tell
//! drift (work status).

use serde_json::Value;

/// Whether `observed` contains `desired` (see module docs). `status` and `metadata.resourceVersion` of
/// `desired` are ignored: the first is the member's, the second a precondition.
pub fn covers(observed: &Value, desired: &Value) -> bool {
    let (Some(observed), Some(desired)) = (observed.as_object(), desired.as_object()) else {
        return contains(observed, desired);
    };
    desired.iter().all(|(key, value)| match key.as_str() {
        "status" => true,
        "metadata" => {
            let Some(metadata) = value.as_object() else {
                return true;
            };
            let observed_metadata = observed.get("metadata").unwrap_or(&Value::Null);
            metadata
                .iter()
                .filter(|(k, _)| k.as_str() != "resourceVersion")
                .all(|(k, v)| contains(observed_metadata.get(k).unwrap_or(&Value::Null), v))
        }
        _ => contains(observed.get(key).unwrap_or(&Value::Null), value),
    })
}

/// Maps whose values are resource quantities, which API servers store in canonical form ("1000m" → "1").
const QUANTITY_MAPS: &[&str] = &[
    "requests",
    "limits",
    "capacity",
    "allocatable",
    "hard",
    "overhead",
];
/// Fields that are themselves quantities.
const QUANTITY_FIELDS: &[&str] = &["sizeLimit", "storage"];

fn contains(observed: &Value, desired: &Value) -> bool {
    contains_in(observed, desired, false)
}

fn same_quantity(observed: &str, desired: &str) -> bool {
    match (
        apimachinery::Quantity::parse(observed),
        apimachinery::Quantity::parse(desired),
    ) {
        (Ok(o), Ok(d)) => o == d,
        _ => false,
    }
}

fn contains_in(observed: &Value, desired: &Value, quantities: bool) -> bool {
    match (observed, desired) {
        (_, Value::Null) => true,
        (Value::Object(o), Value::Object(d)) => d.iter().all(|(k, v)| {
            let child_quantities = QUANTITY_MAPS.contains(&k.as_str());
            let observed = o.get(k).unwrap_or(&Value::Null);
            if let (Value::String(ov), Value::String(dv)) = (observed, v)
                && (quantities || QUANTITY_FIELDS.contains(&k.as_str()))
            {
                return ov == dv || same_quantity(ov, dv);
            }
            contains_in(observed, v, child_quantities)
        }),
        (Value::Array(o), Value::Array(d)) => {
            o.len() == d.len() && o.iter().zip(d).all(|(o, d)| contains_in(o, d, false))
        }
        (Value::Number(o), Value::Number(d)) => o.as_f64() == d.as_f64(),
        (o, d) => o == d,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn containment_table() {
        let observed = json!({
            "metadata": {"name": "web", "resourceVersion": "9", "labels": {"a": "1", "member": "x"},
                         "annotations": {"deployment.kubernetes.io/revision": "1"}},
            "spec": {"replicas": 2, "strategy": {"type": "RollingUpdate"},
                     "template": {"spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always"}]}}},
            "status": {"readyReplicas": 2},
        });
        let cases = [
            (
                "same fields",
                json!({"metadata": {"name": "web", "labels": {"a": "1"}}, "spec": {"replicas": 2}}),
                true,
            ),
            (
                "defaults added by the member are fine",
                json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
                true,
            ),
            (
                "stale resourceVersion ignored",
                json!({"metadata": {"resourceVersion": "3"}}),
                true,
            ),
            (
                "status ignored",
                json!({"status": {"readyReplicas": 7}}),
                true,
            ),
            ("replicas differ", json!({"spec": {"replicas": 3}}), false),
            (
                "image differs",
                json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
                false,
            ),
            (
                "extra list element",
                json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}, {"name": "d"}]}}}}),
                false,
            ),
            (
                "missing label",
                json!({"metadata": {"labels": {"b": "2"}}}),
                false,
            ),
            ("missing field", json!({"spec": {"paused": true}}), false),
            (
                "null wants nothing",
                json!({"spec": {"paused": null}}),
                true,
            ),
        ];
        for (name, desired, want) in cases {
            assert_eq!(covers(&observed, &desired), want, "{name}");
        }
    }

    #[test]
    fn quantities_compare_by_value_only_where_they_are_quantities() {
        let observed = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1", "memory": "128Mi"}}}],
                                       "volumes": [{"emptyDir": {"sizeLimit": "1Gi"}}]},
                              "metadata": {"labels": {"v": "1"}}});
        let canonical = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1000m", "memory": "128Mi"}}}],
                                        "volumes": [{"emptyDir": {"sizeLimit": "1024Mi"}}]}});
        assert!(covers(&observed, &canonical));
        let more = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "2"}}}]}});
        assert!(!covers(&observed, &more));
        assert!(
            !covers(&observed, &json!({"metadata": {"labels": {"v": "1.0"}}})),
            "labels are not quantities"
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(covers(&json!({"a": 1.0}), &json!({"a": 1})));
    }
}
