//! The detector's typed cache of (Cluster)PropagationPolicies and the names of (Cluster)OverridePolicies, kept
//! from their watches, with an index by the apiVersion/kind their selectors name so one template is decided
//! against the few policies that could select it rather than all of them.
//!
//! Invariant: [`PolicyIndex::candidates`] returns every policy that matches the template plus the policy its
//! claim names, so [`super::decide`] on the candidates decides exactly as it would on all policies.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use serde_json::Value;

use super::claim::{Claim, current_claim};
use super::decide::missing_dependent_overrides;
use super::matching::{ImplicitPriority, PolicyRef};

/// (namespace, name) of a PropagationPolicy.
pub type PolicyName = (String, String);

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn name_of(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

fn namespace_of(meta: &ObjectMeta) -> String {
    meta.namespace.clone().unwrap_or_default()
}

/// apiVersion/kind pairs a policy's selectors name.
pub fn selected_kinds(policy: PolicyRef<'_>) -> BTreeSet<(String, String)> {
    policy
        .spec()
        .resource_selectors
        .iter()
        .map(|s| (s.api_version.clone(), s.kind.clone()))
        .collect()
}

/// Every policy the detector knows.
#[derive(Default)]
pub struct PolicyIndex {
    propagation: HashMap<PolicyName, Arc<PropagationPolicy>>,
    cluster: HashMap<String, Arc<ClusterPropagationPolicy>>,
    /// (namespace, apiVersion, kind) → PropagationPolicies with such a selector.
    propagation_by_kind: HashMap<(String, String, String), BTreeSet<String>>,
    /// (apiVersion, kind) → ClusterPropagationPolicies with such a selector.
    cluster_by_kind: HashMap<(String, String), BTreeSet<String>>,
    overrides: HashSet<PolicyName>,
    cluster_overrides: HashSet<String>,
}

impl PolicyIndex {
    /// Stores `policy`, returning the version it replaces.
    pub fn apply_propagation(
        &mut self,
        policy: PropagationPolicy,
    ) -> Option<Arc<PropagationPolicy>> {
        let key = (namespace_of(&policy.metadata), name_of(&policy.metadata));
        let old = self.delete_propagation(&key);
        for (api_version, kind) in selected_kinds(PolicyRef::Namespaced(&policy)) {
            self.propagation_by_kind
                .entry((key.0.clone(), api_version, kind))
                .or_default()
                .insert(key.1.clone());
        }
        self.propagation.insert(key, Arc::new(policy));
        old
    }

    pub fn propagation_policy(&self, key: &PolicyName) -> Option<Arc<PropagationPolicy>> {
        self.propagation.get(key).cloned()
    }

    pub fn cluster_policy(&self, name: &str) -> Option<Arc<ClusterPropagationPolicy>> {
        self.cluster.get(name).cloned()
    }

    pub fn delete_propagation(&mut self, key: &PolicyName) -> Option<Arc<PropagationPolicy>> {
        let old = self.propagation.remove(key)?;
        for (api_version, kind) in selected_kinds(PolicyRef::Namespaced(&old)) {
            let index = (key.0.clone(), api_version, kind);
            if let Some(names) = self.propagation_by_kind.get_mut(&index) {
                names.remove(&key.1);
                if names.is_empty() {
                    self.propagation_by_kind.remove(&index);
                }
            }
        }
        Some(old)
    }

    pub fn apply_cluster(
        &mut self,
        policy: ClusterPropagationPolicy,
    ) -> Option<Arc<ClusterPropagationPolicy>> {
        let name = name_of(&policy.metadata);
        let old = self.delete_cluster(&name);
        for kind in selected_kinds(PolicyRef::Cluster(&policy)) {
            self.cluster_by_kind
                .entry(kind)
                .or_default()
                .insert(name.clone());
        }
        self.cluster.insert(name, Arc::new(policy));
        old
    }

    pub fn delete_cluster(&mut self, name: &str) -> Option<Arc<ClusterPropagationPolicy>> {
        let old = self.cluster.remove(name)?;
        for kind in selected_kinds(PolicyRef::Cluster(&old)) {
            if let Some(names) = self.cluster_by_kind.get_mut(&kind) {
                names.remove(name);
                if names.is_empty() {
                    self.cluster_by_kind.remove(&kind);
                }
            }
        }
        Some(old)
    }

    pub fn set_override(&mut self, namespace: &str, name: &str, present: bool) {
        let key = (namespace.to_string(), name.to_string());
        if present {
            self.overrides.insert(key);
        } else {
            self.overrides.remove(&key);
        }
    }

    pub fn set_cluster_override(&mut self, name: &str, present: bool) {
        if present {
            self.cluster_overrides.insert(name.to_string());
        } else {
            self.cluster_overrides.remove(name);
        }
    }

    /// The policies [`super::decide`] needs for `template`: those that match it and the one its claim names.
    pub fn candidates(
        &self,
        template: &Value,
    ) -> (Vec<PropagationPolicy>, Vec<ClusterPropagationPolicy>) {
        let api_version = text(template, "/apiVersion").to_string();
        let kind = text(template, "/kind").to_string();
        let namespace = text(template, "/metadata/namespace").to_string();
        let claim = current_claim(template);
        let mut propagation = Vec::new();
        if !namespace.is_empty()
            && let Some(names) = self.propagation_by_kind.get(&(
                namespace.clone(),
                api_version.clone(),
                kind.clone(),
            ))
        {
            for name in names {
                if let Some(policy) = self.propagation.get(&(namespace.clone(), name.clone()))
                    && PolicyRef::Namespaced(policy).matches(template) != ImplicitPriority::Mismatch
                {
                    propagation.push(PropagationPolicy::clone(policy));
                }
            }
        }
        let mut cluster = Vec::new();
        if let Some(names) = self.cluster_by_kind.get(&(api_version, kind)) {
            for name in names {
                if let Some(policy) = self.cluster.get(name)
                    && PolicyRef::Cluster(policy).matches(template) != ImplicitPriority::Mismatch
                {
                    cluster.push(ClusterPropagationPolicy::clone(policy));
                }
            }
        }
        match claim {
            Some(Claim::Propagation {
                namespace, name, ..
            }) => {
                if !propagation
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(name.as_str()))
                    && let Some(policy) = self.propagation.get(&(namespace, name))
                {
                    propagation.push(PropagationPolicy::clone(policy));
                }
            }
            Some(Claim::Cluster { name, .. }) => {
                if !cluster
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(name.as_str()))
                    && let Some(policy) = self.cluster.get(&name)
                {
                    cluster.push(ClusterPropagationPolicy::clone(policy));
                }
            }
            None => {}
        }
        (propagation, cluster)
    }

    /// `dependentOverrides` of `policy` that do not exist yet.
    pub fn missing_overrides(&self, policy: PolicyRef<'_>) -> Vec<String> {
        let wanted = &policy.spec().dependent_overrides;
        if wanted.is_empty() {
            return Vec::new();
        }
        // The pure check compares names only; hand it stand-ins for the overrides that exist.
        let overrides: Vec<OverridePolicy> = wanted
            .iter()
            .filter(|name| {
                self.overrides
                    .contains(&(policy.namespace().to_string(), (*name).clone()))
            })
            .map(|name| OverridePolicy {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(policy.namespace().to_string()),
                    ..ObjectMeta::default()
                },
                ..OverridePolicy::default()
            })
            .collect();
        let cluster_overrides: Vec<ClusterOverridePolicy> = wanted
            .iter()
            .filter(|name| self.cluster_overrides.contains(*name))
            .map(|name| ClusterOverridePolicy {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                ..ClusterOverridePolicy::default()
            })
            .collect();
        missing_dependent_overrides(policy, &overrides, &cluster_overrides)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::detector::decide::{Decision, decide};
    use crate::detector::skip::DetectorFilter;

    fn pp(namespace: &str, name: &str, selectors: Value) -> PropagationPolicy {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"propagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
            "spec": {"resourceSelectors": selectors, "dependentOverrides": ["op-a"]}
        }))
        .expect("pp")
    }

    fn cpp(name: &str, selectors: Value) -> ClusterPropagationPolicy {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
            "spec": {"resourceSelectors": selectors, "dependentOverrides": ["cop-a"]}
        }))
        .expect("cpp")
    }

    fn deployment(namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}}})
    }

    fn names(pair: &(Vec<PropagationPolicy>, Vec<ClusterPropagationPolicy>)) -> Vec<String> {
        pair.0
            .iter()
            .map(|p| format!("pp/{}", name_of(&p.metadata)))
            .chain(
                pair.1
                    .iter()
                    .map(|p| format!("cpp/{}", name_of(&p.metadata))),
            )
            .collect()
    }

    #[test]
    fn candidates_are_the_matching_policies_and_the_claimer() {
        let mut index = PolicyIndex::default();
        index.apply_propagation(pp(
            "default",
            "by-name",
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]),
        ));
        index.apply_propagation(pp(
            "default",
            "other-name",
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "db"}]),
        ));
        index.apply_propagation(pp(
            "other",
            "elsewhere",
            json!([{"apiVersion": "apps/v1", "kind": "Deployment"}]),
        ));
        index.apply_propagation(pp(
            "default",
            "services",
            json!([{"apiVersion": "v1", "kind": "Service"}]),
        ));
        index.apply_cluster(cpp(
            "all-deployments",
            json!([{"apiVersion": "apps/v1", "kind": "Deployment"}]),
        ));
        let cases = [
            (
                deployment("default", "web"),
                vec!["pp/by-name", "cpp/all-deployments"],
            ),
            (deployment("default", "cache"), vec!["cpp/all-deployments"]),
            (
                deployment("other", "web"),
                vec!["pp/elsewhere", "cpp/all-deployments"],
            ),
        ];
        for (template, expected) in cases {
            assert_eq!(names(&index.candidates(&template)), expected, "{template}");
        }
        // A claimer that no longer matches is still a candidate, so decide can see it stopped matching.
        let mut claimed = deployment("default", "cache");
        claimed["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"] =
            json!("other-name-id");
        claimed["metadata"]["annotations"] = json!({
            "propagationpolicy.karmada.io/namespace": "default",
            "propagationpolicy.karmada.io/name": "other-name"});
        let candidates = index.candidates(&claimed);
        assert_eq!(
            names(&candidates),
            vec!["pp/other-name", "cpp/all-deployments"]
        );
        assert_eq!(
            decide(
                &claimed,
                &DetectorFilter::default(),
                &candidates.0,
                &candidates.1,
                false
            ),
            Decision::Unchanged
        );
    }

    #[test]
    fn updates_and_deletes_keep_the_index_exact() {
        let mut index = PolicyIndex::default();
        index.apply_propagation(pp(
            "default",
            "p",
            json!([{"apiVersion": "apps/v1", "kind": "Deployment"}]),
        ));
        // The update moves the policy to Services: Deployments no longer see it.
        let old = index.apply_propagation(pp(
            "default",
            "p",
            json!([{"apiVersion": "v1", "kind": "Service"}]),
        ));
        assert!(old.is_some());
        assert!(index.candidates(&deployment("default", "web")).0.is_empty());
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"}});
        assert_eq!(index.candidates(&service).0.len(), 1);
        assert!(
            index
                .delete_propagation(&("default".into(), "p".into()))
                .is_some()
        );
        assert!(index.candidates(&service).0.is_empty());
        assert!(index.propagation_by_kind.is_empty());
    }

    #[test]
    fn missing_overrides_follow_the_override_names() {
        let mut index = PolicyIndex::default();
        let policy = pp("default", "p", json!([]));
        let cluster = cpp("c", json!([]));
        assert_eq!(
            index.missing_overrides(PolicyRef::Namespaced(&policy)),
            vec!["op-a"]
        );
        index.set_override("other", "op-a", true);
        assert_eq!(
            index.missing_overrides(PolicyRef::Namespaced(&policy)),
            vec!["op-a"],
            "an OverridePolicy of another namespace does not count"
        );
        index.set_override("default", "op-a", true);
        assert!(
            index
                .missing_overrides(PolicyRef::Namespaced(&policy))
                .is_empty()
        );
        assert_eq!(
            index.missing_overrides(PolicyRef::Cluster(&cluster)),
            vec!["cop-a"]
        );
        index.set_cluster_override("cop-a", true);
        assert!(
            index
                .missing_overrides(PolicyRef::Cluster(&cluster))
                .is_empty()
        );
    }
}
