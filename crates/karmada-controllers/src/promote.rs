//! What `karmadactl promote` / `apply` and the dashboard's promote action write besides the object itself: the
//! (Cluster)PropagationPolicy that propagates it, named by Karmada's promote rule ([`crate::names`]), and (for
//! promote) the member object turned into a resource template. Pure: one place builds both, for every caller.

use serde_json::{Map, Value, json};

const ANNOTATION_CONFLICT_RESOLUTION: &str = "work.karmada.io/conflict-resolution";
const POLICY_API_VERSION: &str = "policy.karmada.io/v1alpha1";

/// Where a policy sends its object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// No cluster affinity: every cluster.
    All,
    /// `placement.clusterAffinity.clusterNames`.
    Clusters(Vec<String>),
}

/// The object a policy selects.
#[derive(Clone, Copy, Debug)]
pub struct Selected<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    /// Empty for cluster-scoped objects (then the policy is a ClusterPropagationPolicy).
    pub namespace: &'a str,
    /// Go's GroupVersionKind string, `apps/v1, Kind=Deployment`: part of the policy name's hash.
    pub gvk: &'a str,
}

/// The policy for one object. `overwrite` adds `conflictResolution: Overwrite` (promote: the member's object
/// exists and must be adopted).
pub fn propagation_policy(selected: Selected<'_>, targets: &Targets, overwrite: bool) -> Value {
    let name = crate::names::promote_policy_name(selected.namespace, selected.gvk, selected.name);
    let mut selector = json!({
        "apiVersion": selected.api_version,
        "kind": selected.kind,
        "name": selected.name,
    });
    let mut metadata = json!({"name": name});
    let kind = if selected.namespace.is_empty() {
        "ClusterPropagationPolicy"
    } else {
        selector["namespace"] = selected.namespace.into();
        metadata["namespace"] = selected.namespace.into();
        "PropagationPolicy"
    };
    let placement = match targets {
        Targets::All => json!({}),
        Targets::Clusters(names) => json!({"clusterAffinity": {"clusterNames": names}}),
    };
    let mut spec = json!({"resourceSelectors": [selector], "placement": placement});
    if overwrite {
        spec["conflictResolution"] = "Overwrite".into();
    }
    json!({"apiVersion": POLICY_API_VERSION, "kind": kind, "metadata": metadata, "spec": spec})
}

/// Metadata fields the server owns: a template created from a member's object must not carry them.
const SERVER_METADATA: [&str; 9] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "ownerReferences",
];

/// The member's object as a resource template: no status, no server-owned metadata, the member-allocated
/// Service IPs dropped (the control plane allocates its own), and the conflict-resolution annotation so the
/// member's object is adopted.
pub fn template_from_member(object: &Value) -> Value {
    let mut template = object.clone();
    if let Some(map) = template.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = template["metadata"].as_object_mut() {
        for key in SERVER_METADATA {
            meta.remove(key);
        }
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !annotations.is_object() {
            *annotations = Value::Object(Map::new());
        }
        annotations[ANNOTATION_CONFLICT_RESOLUTION] = "overwrite".into();
    }
    if template["kind"] == "Service"
        && template["apiVersion"] == "v1"
        && let Some(spec) = template["spec"].as_object_mut()
    {
        // Headless Services keep `None`: it is intent, not an allocation.
        if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
    }
    template
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promote_policy_targets_the_cluster_and_overwrites() {
        let policy = propagation_policy(
            Selected {
                api_version: "apps/v1",
                kind: "Deployment",
                name: "nginx",
                namespace: "default",
                gvk: "apps/v1, Kind=Deployment",
            },
            &Targets::Clusters(vec!["member1".into()]),
            true,
        );
        assert_eq!(policy["kind"], "PropagationPolicy");
        assert_eq!(policy["metadata"]["namespace"], "default");
        assert_eq!(
            policy["metadata"]["name"],
            crate::names::promote_policy_name("default", "apps/v1, Kind=Deployment", "nginx")
        );
        assert!(
            policy["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("nginx-"))
        );
        assert_eq!(
            policy["spec"]["resourceSelectors"],
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "namespace": "default"}])
        );
        assert_eq!(
            policy["spec"]["placement"],
            json!({"clusterAffinity": {"clusterNames": ["member1"]}})
        );
        assert_eq!(policy["spec"]["conflictResolution"], "Overwrite");
    }

    #[test]
    fn cluster_scoped_objects_get_a_cluster_policy_for_all_clusters() {
        let policy = propagation_policy(
            Selected {
                api_version: "rbac.authorization.k8s.io/v1",
                kind: "ClusterRole",
                name: "system:foo",
                namespace: "",
                gvk: "rbac.authorization.k8s.io/v1, Kind=ClusterRole",
            },
            &Targets::All,
            false,
        );
        assert_eq!(policy["kind"], "ClusterPropagationPolicy");
        assert!(policy["metadata"].get("namespace").is_none());
        assert!(
            policy["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("system.foo-"))
        );
        assert_eq!(policy["spec"]["placement"], json!({}));
        assert!(policy["spec"].get("conflictResolution").is_none());
        assert!(
            policy["spec"]["resourceSelectors"][0]
                .get("namespace")
                .is_none()
        );
    }

    #[test]
    fn member_objects_lose_server_fields_and_gain_the_overwrite_annotation() {
        let member = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7",
                         "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [],
                         "labels": {"app": "web"}},
            "spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ports": [{"port": 80}]},
            "status": {"loadBalancer": {}}
        });
        let template = template_from_member(&member);
        assert_eq!(
            template,
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                             "annotations": {"work.karmada.io/conflict-resolution": "overwrite"}},
                "spec": {"ports": [{"port": 80}]}
            })
        );
        let headless = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "h"},
                              "spec": {"clusterIP": "None"}});
        assert_eq!(template_from_member(&headless)["spec"]["clusterIP"], "None");
    }
}
