//! Claim metadata: the labels and annotations on a template naming the policy that propagates it
//! (docs/karmada.md, "Labels and annotations", "Resource detector" step 8). Patches are JSON merge patches (RFC 7386)
//! on the template.
//!
//! Invariant: a template is claimed only when the policy's permanent-id label and its name annotation(s) are all
//! present; claiming by one kind of policy removes any claim metadata of the other kind.

use serde_json::{Map, Value, json};

use super::binding::DetectorError;
use super::matching::PolicyRef;
use crate::keys::{
    ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME, ANNOTATION_PROPAGATION_POLICY_NAME,
    ANNOTATION_PROPAGATION_POLICY_NAMESPACE, LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
    LABEL_PROPAGATION_POLICY_PERMANENT_ID,
};

/// Which policy claims a template, as its metadata says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    Propagation {
        namespace: String,
        name: String,
        id: String,
    },
    Cluster {
        name: String,
        id: String,
    },
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/labels")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
}

/// The claim on `template`: a PropagationPolicy claim if complete, else a ClusterPropagationPolicy claim if
/// complete, else none.
pub fn current_claim(template: &Value) -> Option<Claim> {
    if let (Some(namespace), Some(name), Some(id)) = (
        annotation(template, ANNOTATION_PROPAGATION_POLICY_NAMESPACE),
        annotation(template, ANNOTATION_PROPAGATION_POLICY_NAME),
        label(template, LABEL_PROPAGATION_POLICY_PERMANENT_ID),
    ) {
        return Some(Claim::Propagation {
            namespace: namespace.into(),
            name: name.into(),
            id: id.into(),
        });
    }
    match (
        annotation(template, ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME),
        label(template, LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID),
    ) {
        (Some(name), Some(id)) => Some(Claim::Cluster {
            name: name.into(),
            id: id.into(),
        }),
        _ => None,
    }
}

/// The permanent id of a policy (set by admission); an error when missing.
pub fn policy_id(policy: PolicyRef<'_>) -> Result<&str, DetectorError> {
    let key = if policy.is_cluster() {
        LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID
    } else {
        LABEL_PROPAGATION_POLICY_PERMANENT_ID
    };
    policy
        .metadata()
        .labels
        .as_ref()
        .and_then(|labels| labels.get(key))
        .map(String::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| DetectorError::MissingPermanentId {
            policy: describe(policy),
            label: key,
        })
}

pub(crate) fn describe(policy: PolicyRef<'_>) -> String {
    if policy.is_cluster() {
        format!("ClusterPropagationPolicy {}", policy.name())
    } else {
        format!("PropagationPolicy {}/{}", policy.namespace(), policy.name())
    }
}

/// Merge patch that claims `template` for `policy`; `None` when the template already carries exactly this claim.
pub fn claim(template: &Value, policy: PolicyRef<'_>) -> Result<Option<Value>, DetectorError> {
    let id = policy_id(policy)?;
    let mut labels = Map::new();
    let mut annotations = Map::new();
    let set = |map: &mut Map<String, Value>, key: &str, value: &str, current: Option<&str>| {
        if current != Some(value) {
            map.insert(key.into(), json!(value));
        }
    };
    let remove = |map: &mut Map<String, Value>, key: &str, present: bool| {
        if present {
            map.insert(key.into(), Value::Null);
        }
    };
    let (own_label, other_label) = if policy.is_cluster() {
        (
            LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
            LABEL_PROPAGATION_POLICY_PERMANENT_ID,
        )
    } else {
        (
            LABEL_PROPAGATION_POLICY_PERMANENT_ID,
            LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
        )
    };
    set(&mut labels, own_label, id, label(template, own_label));
    remove(
        &mut labels,
        other_label,
        label(template, other_label).is_some(),
    );
    if policy.is_cluster() {
        set(
            &mut annotations,
            ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME,
            policy.name(),
            annotation(template, ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME),
        );
        for key in [
            ANNOTATION_PROPAGATION_POLICY_NAMESPACE,
            ANNOTATION_PROPAGATION_POLICY_NAME,
        ] {
            remove(&mut annotations, key, annotation(template, key).is_some());
        }
    } else {
        set(
            &mut annotations,
            ANNOTATION_PROPAGATION_POLICY_NAMESPACE,
            policy.namespace(),
            annotation(template, ANNOTATION_PROPAGATION_POLICY_NAMESPACE),
        );
        set(
            &mut annotations,
            ANNOTATION_PROPAGATION_POLICY_NAME,
            policy.name(),
            annotation(template, ANNOTATION_PROPAGATION_POLICY_NAME),
        );
        remove(
            &mut annotations,
            ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME,
            annotation(template, ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME).is_some(),
        );
    }
    Ok(metadata_patch(labels, annotations))
}

fn metadata_patch(labels: Map<String, Value>, annotations: Map<String, Value>) -> Option<Value> {
    let mut metadata = Map::new();
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    (!metadata.is_empty()).then(|| json!({"metadata": metadata}))
}

/// Merge patch removing the claim of the policy with permanent id `policy_id` from an object (template or
/// binding); `None` when the object is not claimed by that policy. Used when the policy is deleted or stops
/// matching.
pub fn unclaim(object: &Value, policy_id: &str) -> Option<Value> {
    let mut labels = Map::new();
    let mut annotations = Map::new();
    if label(object, LABEL_PROPAGATION_POLICY_PERMANENT_ID) == Some(policy_id) {
        labels.insert(LABEL_PROPAGATION_POLICY_PERMANENT_ID.into(), Value::Null);
        for key in [
            ANNOTATION_PROPAGATION_POLICY_NAMESPACE,
            ANNOTATION_PROPAGATION_POLICY_NAME,
        ] {
            if annotation(object, key).is_some() {
                annotations.insert(key.into(), Value::Null);
            }
        }
    }
    if label(object, LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID) == Some(policy_id) {
        labels.insert(
            LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID.into(),
            Value::Null,
        );
        if annotation(object, ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME).is_some() {
            annotations.insert(
                ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME.into(),
                Value::Null,
            );
        }
    }
    metadata_patch(labels, annotations)
}

#[cfg(test)]
mod tests {
    use apimachinery::merge_patch;
    use karmada_api::{ClusterPropagationPolicy, PropagationPolicy};

    use super::*;

    fn pp() -> PropagationPolicy {
        serde_json::from_value(
            json!({"metadata": {"name": "nginx-ha-policy", "namespace": "production",
            "labels": {"propagationpolicy.karmada.io/permanent-id": "pp-id"}}}),
        )
        .expect("pp")
    }

    fn cpp() -> ClusterPropagationPolicy {
        serde_json::from_value(json!({"metadata": {"name": "global",
            "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": "cpp-id"}}}))
        .expect("cpp")
    }

    fn template() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx-ha", "namespace": "production"}})
    }

    #[test]
    fn claim_by_pp_then_read_back() {
        let policy = pp();
        let patch = claim(&template(), PolicyRef::Namespaced(&policy))
            .expect("id")
            .expect("changes");
        let claimed = merge_patch(&template(), &patch);
        assert_eq!(
            current_claim(&claimed),
            Some(Claim::Propagation {
                namespace: "production".into(),
                name: "nginx-ha-policy".into(),
                id: "pp-id".into()
            })
        );
        assert_eq!(
            claim(&claimed, PolicyRef::Namespaced(&policy)).expect("id"),
            None,
            "idempotent"
        );
        let released = merge_patch(
            &claimed,
            &unclaim(&claimed, "pp-id").expect("claimed by pp-id"),
        );
        assert_eq!(current_claim(&released), None);
        assert_eq!(unclaim(&released, "pp-id"), None);
        assert_eq!(unclaim(&claimed, "someone-else"), None);
    }

    #[test]
    fn pp_claim_removes_cpp_metadata() {
        let cluster_policy = cpp();
        let by_cpp = merge_patch(
            &template(),
            &claim(&template(), PolicyRef::Cluster(&cluster_policy))
                .expect("id")
                .expect("changes"),
        );
        assert_eq!(
            current_claim(&by_cpp),
            Some(Claim::Cluster {
                name: "global".into(),
                id: "cpp-id".into()
            })
        );
        let policy = pp();
        let by_pp = merge_patch(
            &by_cpp,
            &claim(&by_cpp, PolicyRef::Namespaced(&policy))
                .expect("id")
                .expect("changes"),
        );
        assert_eq!(
            by_pp.pointer("/metadata/labels/clusterpropagationpolicy.karmada.io~1permanent-id"),
            None
        );
        assert_eq!(
            by_pp.pointer("/metadata/annotations/clusterpropagationpolicy.karmada.io~1name"),
            None
        );
        assert!(matches!(
            current_claim(&by_pp),
            Some(Claim::Propagation { .. })
        ));
    }

    #[test]
    fn policy_without_permanent_id_is_an_error() {
        let mut policy = pp();
        policy.metadata.labels = None;
        let error = claim(&template(), PolicyRef::Namespaced(&policy)).expect_err("no id");
        assert!(
            error
                .to_string()
                .contains("propagationpolicy.karmada.io/permanent-id"),
            "{error}"
        );
    }
}
