//! Whether a pod may run on a node: node selector, required node affinity, taints and
//! tolerations. Shared by the scheduler and the DaemonSet controller.
//!
//! Semantics follow Kubernetes: nodeSelectorTerms are ORed, expressions within a term ANDed, an
//! empty term matches nothing; `Gt`/`Lt` compare integers; only `NoSchedule` and `NoExecute`
//! taints repel (`PreferNoSchedule` only scores, which is not modeled).

use serde_json::Value;

use crate::meta;

/// Why a node was filtered out, worded as kube-scheduler words it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unfit {
    Unschedulable,
    UntoleratedTaint { key: String, value: String },
    NodeAffinity,
    Insufficient(&'static str),
    TooManyPods,
}

impl Unfit {
    pub fn message(&self) -> String {
        match self {
            Unfit::Unschedulable => "node(s) were unschedulable".to_string(),
            Unfit::UntoleratedTaint { key, value } => {
                format!("node(s) had untolerated taint {{{key}: {value}}}")
            }
            Unfit::NodeAffinity => "node(s) didn't match Pod's node affinity/selector".to_string(),
            Unfit::Insufficient(resource) => format!("Insufficient {resource}"),
            Unfit::TooManyPods => "Too many pods".to_string(),
        }
    }

    /// Whether evicting lower-priority pods could help (only for resource shortages).
    pub fn preemption_could_help(&self) -> bool {
        matches!(self, Unfit::Insufficient(_) | Unfit::TooManyPods)
    }
}

/// Does this toleration tolerate this taint?
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = meta::str_at(toleration, "/effect");
    if !effect.is_empty() && effect != meta::str_at(taint, "/effect") {
        return false;
    }
    let key = meta::str_at(toleration, "/key");
    let operator = match meta::str_at(toleration, "/operator") {
        "" => "Equal",
        other => other,
    };
    if key.is_empty() {
        // An empty key with Exists tolerates everything.
        return operator == "Exists";
    }
    if key != meta::str_at(taint, "/key") {
        return false;
    }
    match operator {
        "Exists" => true,
        "Equal" => meta::str_at(toleration, "/value") == meta::str_at(taint, "/value"),
        _ => false,
    }
}

/// The first NoSchedule/NoExecute taint of the node the pod does not tolerate.
pub fn untolerated_taint(pod: &Value, node: &Value) -> Option<Unfit> {
    let tolerations = pod.pointer("/spec/tolerations").and_then(Value::as_array);
    let taints = node.pointer("/spec/taints").and_then(Value::as_array)?;
    taints
        .iter()
        .filter(|t| matches!(meta::str_at(t, "/effect"), "NoSchedule" | "NoExecute"))
        .find(|taint| !tolerations.is_some_and(|ts| ts.iter().any(|t| tolerates(t, taint))))
        .map(|taint| Unfit::UntoleratedTaint {
            key: meta::str_at(taint, "/key").to_string(),
            value: meta::str_at(taint, "/value").to_string(),
        })
}

/// Whether the node has a NoExecute taint the pod does not tolerate (it would be evicted).
pub fn has_untolerated_no_execute_taint(pod: &Value, node: &Value) -> bool {
    let tolerations = pod.pointer("/spec/tolerations").and_then(Value::as_array);
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| meta::str_at(t, "/effect") == "NoExecute")
        .any(|taint| !tolerations.is_some_and(|ts| ts.iter().any(|t| tolerates(t, taint))))
}

/// `spec.unschedulable` unless the pod tolerates the unschedulable taint.
pub fn unschedulable(pod: &Value, node: &Value) -> bool {
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) != Some(true) {
        return false;
    }
    let taint =
        serde_json::json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"});
    let tolerated = pod
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .is_some_and(|ts| ts.iter().any(|t| tolerates(t, &taint)));
    !tolerated
}

/// nodeSelector and required node affinity.
pub fn matches_node_affinity(pod: &Value, node: &Value) -> bool {
    let labels = meta::labels(node);
    if let Some(selector) = pod.pointer("/spec/nodeSelector").and_then(Value::as_object) {
        let all_match = selector
            .iter()
            .all(|(key, value)| labels.get(key).and_then(Value::as_str) == value.as_str());
        if !all_match {
            return false;
        }
    }
    let Some(required) =
        pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
    else {
        return true;
    };
    let terms = required.get("nodeSelectorTerms").and_then(Value::as_array);
    terms.is_some_and(|terms| terms.iter().any(|term| term_matches(term, node, &labels)))
}

fn term_matches(term: &Value, node: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    let expressions = term.get("matchExpressions").and_then(Value::as_array);
    let fields = term.get("matchFields").and_then(Value::as_array);
    let count = expressions.map_or(0, Vec::len) + fields.map_or(0, Vec::len);
    if count == 0 {
        return false;
    }
    let label_ok = expressions.into_iter().flatten().all(|e| {
        let key = meta::str_at(e, "/key");
        requirement_matches(e, labels.get(key).and_then(Value::as_str))
    });
    // Only `metadata.name` is a supported field.
    let field_ok = fields.into_iter().flatten().all(|e| {
        meta::str_at(e, "/key") == "metadata.name" && requirement_matches(e, Some(meta::name(node)))
    });
    label_ok && field_ok
}

fn requirement_matches(expression: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = expression
        .get("values")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let compare = |ordering: std::cmp::Ordering| -> bool {
        let (Some(actual), [bound]) = (value, values.as_slice()) else {
            return false;
        };
        match (actual.parse::<i64>(), bound.parse::<i64>()) {
            (Ok(actual), Ok(bound)) => actual.cmp(&bound) == ordering,
            _ => false,
        }
    };
    match meta::str_at(expression, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => compare(std::cmp::Ordering::Greater),
        "Lt" => compare(std::cmp::Ordering::Less),
        _ => false,
    }
}

/// The non-resource filters in kube-scheduler's order; the first failure wins.
pub fn placement_unfit(pod: &Value, node: &Value) -> Option<Unfit> {
    if unschedulable(pod, node) {
        return Some(Unfit::Unschedulable);
    }
    if let Some(taint) = untolerated_taint(pod, node) {
        return Some(taint);
    }
    if !matches_node_affinity(pod, node) {
        return Some(Unfit::NodeAffinity);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": "n1", "labels": labels}, "spec": {"taints": taints}})
    }

    fn affinity(expressions: Value) -> Value {
        json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}}})
    }

    #[test]
    fn node_affinity_operators() {
        let n = node(json!({"zone": "a", "cores": "8"}), json!([]));
        let cases = [
            (
                json!([{"key": "zone", "operator": "In", "values": ["a", "b"]}]),
                true,
            ),
            (
                json!([{"key": "zone", "operator": "In", "values": ["b"]}]),
                false,
            ),
            (
                json!([{"key": "zone", "operator": "NotIn", "values": ["b"]}]),
                true,
            ),
            (
                json!([{"key": "gpu", "operator": "NotIn", "values": ["x"]}]),
                true,
            ),
            (json!([{"key": "zone", "operator": "Exists"}]), true),
            (json!([{"key": "gpu", "operator": "Exists"}]), false),
            (json!([{"key": "gpu", "operator": "DoesNotExist"}]), true),
            (
                json!([{"key": "cores", "operator": "Gt", "values": ["4"]}]),
                true,
            ),
            (
                json!([{"key": "cores", "operator": "Gt", "values": ["8"]}]),
                false,
            ),
            (
                json!([{"key": "cores", "operator": "Lt", "values": ["16"]}]),
                true,
            ),
            (
                json!([{"key": "zone", "operator": "Lt", "values": ["16"]}]),
                false,
            ),
            (
                json!([{"key": "zone", "operator": "In", "values": ["a"]}, {"key": "gpu", "operator": "Exists"}]),
                false,
            ),
        ];
        for (expressions, expected) in cases {
            assert_eq!(
                matches_node_affinity(&affinity(expressions.clone()), &n),
                expected,
                "{expressions}"
            );
        }
        let empty_terms = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}}});
        assert!(!matches_node_affinity(&empty_terms, &n));
        let by_name = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}});
        assert!(matches_node_affinity(&by_name, &n));
        assert!(matches_node_affinity(
            &json!({"spec": {"nodeSelector": {"zone": "a"}}}),
            &n
        ));
        assert!(!matches_node_affinity(
            &json!({"spec": {"nodeSelector": {"zone": "b"}}}),
            &n
        ));
    }

    #[test]
    fn tolerations() {
        let taint = json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"});
        let cases = [
            (
                json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}),
                true,
            ),
            (json!({"key": "dedicated", "value": "gpu"}), true),
            (json!({"key": "dedicated", "operator": "Exists"}), true),
            (json!({"operator": "Exists"}), true),
            (json!({"key": "dedicated", "value": "cpu"}), false),
            (
                json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}),
                false,
            ),
            (json!({"key": "other", "operator": "Exists"}), false),
        ];
        for (toleration, expected) in cases {
            assert_eq!(tolerates(&toleration, &taint), expected, "{toleration}");
        }
    }

    #[test]
    fn filter_order_and_messages() {
        let tainted = node(
            json!({}),
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
        );
        let pod = json!({"spec": {"nodeSelector": {"zone": "x"}}});
        assert_eq!(
            placement_unfit(&pod, &tainted).map(|u| u.message()),
            Some("node(s) had untolerated taint {node.kubernetes.io/not-ready: }".to_string())
        );
        let prefer = node(
            json!({}),
            json!([{"key": "k", "effect": "PreferNoSchedule"}]),
        );
        assert_eq!(placement_unfit(&pod, &prefer), Some(Unfit::NodeAffinity));
        let mut cordoned = node(json!({}), json!([]));
        meta::set_path(&mut cordoned, &["spec", "unschedulable"], json!(true));
        assert_eq!(
            placement_unfit(&json!({}), &cordoned),
            Some(Unfit::Unschedulable)
        );
        let tolerant = json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}});
        assert_eq!(placement_unfit(&tolerant, &cordoned), None);
    }
}
