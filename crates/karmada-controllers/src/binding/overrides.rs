//! Karmada's override manager: which OverridePolicies and ClusterOverridePolicies apply to a resource in one
//! cluster, in which order, and what they produce (docs/karmada.md, "Override policies").
//!
//! Order: every matching ClusterOverridePolicy first, then (namespaced resources only) the OverridePolicies of
//! the resource's namespace; within each set ascending by implicit priority (match-all < labelSelector < name;
//! no selectors = match-all) then by name, so the most specific policy is applied last and wins. A policy's
//! rules apply in order when their `targetCluster` (absent = every cluster) matches the cluster with
//! ClusterAffinity semantics; the deprecated top-level `targetCluster` + `overriders` count as one rule only when
//! `overrideRules` is empty. (Admission moves a top-level `targetCluster` given beside `overrideRules` into the
//! rules, so such policies arrive here already in rule form.)
//!
//! Invariant: errors are values naming the policy and rule; the template passed in is never modified.

use std::collections::BTreeMap;

use karmada_api::policy::{
    ANNOTATION_APPLIED_CLUSTER_OVERRIDES, ANNOTATION_APPLIED_OVERRIDES, OverrideSpec, Overriders,
};
use karmada_api::{Cluster, ClusterAffinity, ClusterOverridePolicy, OverridePolicy};
use karmada_scheduler::affinity::CompiledAffinity;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::overriders::apply_overriders;
use crate::detector::{ImplicitPriority, implicit_priority};

/// An override policy could not be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{policy}: {location}: {message}")]
pub struct OverrideError {
    /// e.g. `OverridePolicy production/nginx-image-override`.
    pub policy: String,
    /// e.g. `overrideRules[0].targetCluster` or `overrideRules[0].overriders.imageOverrider[0]`.
    pub location: String,
    pub message: String,
}

/// One applied rule as recorded in the Work's applied-overrides annotations (Karmada's policy shadow).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyShadow {
    pub policy_name: String,
    pub overriders: Overriders,
}

/// The manifest after overrides and the record of what was applied.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedOverrides {
    pub manifest: Value,
    pub applied_cluster_overrides: Vec<PolicyShadow>,
    pub applied_overrides: Vec<PolicyShadow>,
}

impl AppliedOverrides {
    /// The Work annotations recording the applied policies (only those with something applied).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let mut annotations = BTreeMap::new();
        for (key, shadows) in [
            (
                ANNOTATION_APPLIED_CLUSTER_OVERRIDES,
                &self.applied_cluster_overrides,
            ),
            (ANNOTATION_APPLIED_OVERRIDES, &self.applied_overrides),
        ] {
            if !shadows.is_empty()
                && let Ok(text) = serde_json::to_string(shadows)
            {
                annotations.insert(key.to_string(), text);
            }
        }
        annotations
    }
}

/// Whether `cluster` satisfies `affinity` (exclude, labelSelector, fieldSelector, clusterNames; the scheduler's
/// matcher). An invalid affinity is an error, not a mismatch.
pub fn cluster_affinity_matches(
    affinity: &ClusterAffinity,
    cluster: &Cluster,
) -> Result<bool, String> {
    let compiled =
        CompiledAffinity::compile(affinity, "targetCluster").map_err(|e| e.to_string())?;
    Ok(compiled.matches(cluster).is_ok())
}

struct Candidate<'a> {
    describe: String,
    name: &'a str,
    spec: &'a OverrideSpec,
    priority: ImplicitPriority,
}

fn candidates<'a>(
    policies: impl Iterator<Item = (String, &'a str, &'a OverrideSpec)>,
    template: &Value,
) -> Vec<Candidate<'a>> {
    let mut matching: Vec<Candidate<'a>> = policies
        .map(|(describe, name, spec)| Candidate {
            describe,
            name,
            spec,
            priority: implicit_priority(&spec.resource_selectors, template),
        })
        .filter(|c| c.priority > ImplicitPriority::Mismatch)
        .collect();
    matching.sort_by(|a, b| a.priority.cmp(&b.priority).then(a.name.cmp(b.name)));
    matching
}

/// The rules of a policy as (location, target, overriders).
fn rules(spec: &OverrideSpec) -> Vec<(String, Option<&ClusterAffinity>, &Overriders)> {
    if !spec.override_rules.is_empty() {
        return spec
            .override_rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                (
                    format!("overrideRules[{i}]"),
                    rule.target_cluster.as_ref(),
                    &rule.overriders,
                )
            })
            .collect();
    }
    match &spec.overriders {
        Some(overriders) => vec![(
            "overriders".to_string(),
            spec.target_cluster.as_ref(),
            overriders,
        )],
        None => Vec::new(),
    }
}

fn apply_set(
    manifest: &mut Value,
    cluster: &Cluster,
    set: Vec<Candidate<'_>>,
) -> Result<Vec<PolicyShadow>, OverrideError> {
    let mut shadows = Vec::new();
    for candidate in set {
        for (location, target, overriders) in rules(candidate.spec) {
            if let Some(target) = target {
                let matched =
                    cluster_affinity_matches(target, cluster).map_err(|message| OverrideError {
                        policy: candidate.describe.clone(),
                        location: format!("{location}.targetCluster"),
                        message,
                    })?;
                if !matched {
                    continue;
                }
            }
            *manifest =
                apply_overriders(manifest, overriders).map_err(|message| OverrideError {
                    policy: candidate.describe.clone(),
                    location: format!("{location}.overriders"),
                    message,
                })?;
            shadows.push(PolicyShadow {
                policy_name: candidate.name.to_string(),
                overriders: overriders.clone(),
            });
        }
    }
    Ok(shadows)
}

/// Applies to `template` every override policy that selects it and targets `cluster`, in Karmada's order.
/// OverridePolicies of other namespaces (and all of them for cluster-scoped templates) are ignored, so callers
/// may pass every policy they have.
pub fn apply_overrides(
    template: &Value,
    cluster: &Cluster,
    cluster_override_policies: &[ClusterOverridePolicy],
    override_policies: &[OverridePolicy],
) -> Result<AppliedOverrides, OverrideError> {
    let namespace = template
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let cluster_set = candidates(
        cluster_override_policies.iter().map(|p| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            (format!("ClusterOverridePolicy {name}"), name, &p.spec)
        }),
        template,
    );
    let namespaced_set = if namespace.is_empty() {
        Vec::new()
    } else {
        candidates(
            override_policies
                .iter()
                .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
                .map(|p| {
                    let name = p.metadata.name.as_deref().unwrap_or_default();
                    (format!("OverridePolicy {namespace}/{name}"), name, &p.spec)
                }),
            template,
        )
    };
    let mut manifest = template.clone();
    let applied_cluster_overrides = apply_set(&mut manifest, cluster, cluster_set)?;
    let applied_overrides = apply_set(&mut manifest, cluster, namespaced_set)?;
    Ok(AppliedOverrides {
        manifest,
        applied_cluster_overrides,
        applied_overrides,
    })
}

#[cfg(test)]
mod tests {
    use apimachinery::GroupVersionKind;
    use karmada_api::admission::{AdmissionContext, Operation, admit};
    use serde_json::json;

    use super::*;

    fn cluster(name: &str, labels: Value) -> Cluster {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": labels}, "spec": {"syncMode": "Push"}}),
        )
        .expect("cluster")
    }

    fn image(manifest: &Value) -> &str {
        manifest
            .pointer("/spec/template/spec/containers/0/image")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The seed policy as stored after admission (which moves the top-level targetCluster into the rule).
    fn admitted_seed_policy() -> OverridePolicy {
        let mut raw = test_fixtures::document("seed-001/override-policy.yaml");
        let gvk = GroupVersionKind::new("policy.karmada.io", "v1alpha1", "OverridePolicy");
        let context = AdmissionContext {
            new_id: "id".into(),
            now: "2026-01-01T00:00:00Z".into(),
        };
        let warnings = admit(&gvk, Operation::Create, &mut raw, None, &context)
            .expect("seed policy is admitted");
        assert!(
            warnings.iter().any(|w| w.contains("targetCluster")),
            "{warnings:?}"
        );
        serde_json::from_value(raw).expect("override policy")
    }

    #[test]
    fn seed_001_override_changes_only_cluster_gcp() {
        let policy = admitted_seed_policy();
        let template = test_fixtures::document("seed-001/nginx-deploy.yaml");
        let gcp = apply_overrides(
            &template,
            &cluster("cluster-gcp", json!({})),
            &[],
            std::slice::from_ref(&policy),
        )
        .expect("applies");
        assert_eq!(image(&gcp.manifest), "gcr.io/my-project/nginx:1.27-alpine");
        assert_eq!(gcp.applied_overrides.len(), 1);
        assert_eq!(gcp.applied_overrides[0].policy_name, "nginx-image-override");
        let annotations = gcp.annotations();
        let recorded: Value =
            serde_json::from_str(&annotations["policy.karmada.io/applied-overrides"])
                .expect("json annotation");
        assert_eq!(
            recorded,
            json!([{"policyName": "nginx-image-override",
                    "overriders": {"imageOverrider": [{"component": "Registry", "operator": "replace", "value": "gcr.io/my-project"}]}}])
        );
        assert!(!annotations.contains_key("policy.karmada.io/applied-cluster-overrides"));

        let aws = apply_overrides(
            &template,
            &cluster("cluster-aws", json!({})),
            &[],
            &[policy],
        )
        .expect("applies");
        assert_eq!(aws.manifest, template, "cluster-aws is untouched");
        assert!(aws.annotations().is_empty());
    }

    fn label_policy<T: serde::de::DeserializeOwned>(
        name: &str,
        namespace: Option<&str>,
        selectors: Value,
        value: &str,
    ) -> T {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"resourceSelectors": selectors,
                     "overrideRules": [{"overriders": {"labelsOverrider": [{"operator": "add", "value": {"winner": value, name: "applied"}}]}}]}
        }))
        .expect("policy")
    }

    #[test]
    fn order_cluster_first_then_namespaced_by_specificity_then_name() {
        let template = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"}}});
        let by_name = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]);
        let by_label = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "web"}}}]);
        let mismatch = json!([{"apiVersion": "v1", "kind": "Service"}]);
        let cops: Vec<ClusterOverridePolicy> = vec![
            label_policy("c-name", None, by_name.clone(), "c-name"),
            label_policy("c-all", None, json!([]), "c-all"),
        ];
        let ops: Vec<OverridePolicy> = vec![
            label_policy("z-name", Some("prod"), by_name, "z-name"),
            label_policy("b-label", Some("prod"), by_label.clone(), "b-label"),
            label_policy("a-label", Some("prod"), by_label, "a-label"),
            label_policy("m-all", Some("prod"), json!([]), "m-all"),
            label_policy("other-ns", Some("staging"), json!([]), "other-ns"),
            label_policy("no-match", Some("prod"), mismatch, "no-match"),
        ];
        let result = apply_overrides(&template, &cluster("member1", json!({})), &cops, &ops)
            .expect("applies");
        let names = |shadows: &[PolicyShadow]| {
            shadows
                .iter()
                .map(|s| s.policy_name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&result.applied_cluster_overrides),
            vec!["c-all", "c-name"]
        );
        assert_eq!(
            names(&result.applied_overrides),
            vec!["m-all", "a-label", "b-label", "z-name"]
        );
        assert_eq!(
            result.manifest.pointer("/metadata/labels/winner"),
            Some(&json!("z-name"))
        );
        assert_eq!(result.manifest.pointer("/metadata/labels/other-ns"), None);

        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}});
        let result = apply_overrides(&namespace, &cluster("member1", json!({})), &cops, &ops)
            .expect("applies");
        assert_eq!(names(&result.applied_cluster_overrides), vec!["c-all"]);
        assert!(
            result.applied_overrides.is_empty(),
            "cluster-scoped objects only get ClusterOverridePolicies"
        );
    }

    #[test]
    fn target_cluster_affinity_and_deprecated_form() {
        let template = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "prod"}});
        let policy: OverridePolicy = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "prod"},
            "spec": {"overrideRules": [
                {"targetCluster": {"labelSelector": {"matchLabels": {"env": "edge"}}},
                 "overriders": {"annotationsOverrider": [{"operator": "add", "value": {"edge": "yes"}}]}},
                {"targetCluster": {"clusterNames": ["a", "b"], "exclude": ["b"]},
                 "overriders": {"annotationsOverrider": [{"operator": "add", "value": {"named": "yes"}}]}}
            ]}
        }))
        .expect("policy");
        let cases = [
            (
                cluster("a", json!({"env": "edge"})),
                json!({"edge": "yes", "named": "yes"}),
            ),
            (cluster("b", json!({"env": "edge"})), json!({"edge": "yes"})),
            (cluster("c", json!({})), Value::Null),
        ];
        for (target, expected) in cases {
            let result = apply_overrides(&template, &target, &[], std::slice::from_ref(&policy))
                .expect("applies");
            let annotations = result
                .manifest
                .pointer("/metadata/annotations")
                .cloned()
                .unwrap_or(Value::Null);
            assert_eq!(annotations, expected, "{:?}", target.metadata.name);
        }
        let deprecated: OverridePolicy = serde_json::from_value(json!({
            "metadata": {"name": "old", "namespace": "prod"},
            "spec": {"targetCluster": {"clusterNames": ["a"]},
                     "overriders": {"labelsOverrider": [{"operator": "add", "value": {"old": "yes"}}]}}
        }))
        .expect("policy");
        let on_a = apply_overrides(
            &template,
            &cluster("a", json!({})),
            &[],
            std::slice::from_ref(&deprecated),
        )
        .expect("a");
        assert_eq!(
            on_a.manifest.pointer("/metadata/labels/old"),
            Some(&json!("yes"))
        );
        let on_c =
            apply_overrides(&template, &cluster("c", json!({})), &[], &[deprecated]).expect("c");
        assert_eq!(on_c.manifest, template);
    }

    #[test]
    fn bad_pointer_is_an_error_naming_policy_and_rule() {
        let template = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "prod"}});
        let policy: OverridePolicy = serde_json::from_value(json!({
            "metadata": {"name": "broken", "namespace": "prod"},
            "spec": {"overrideRules": [{"overriders": {"plaintext": [{"path": "/data/missing/deep", "operator": "replace", "value": "x"}]}}]}
        }))
        .expect("policy");
        let error = apply_overrides(&template, &cluster("a", json!({})), &[], &[policy])
            .expect_err("bad pointer");
        assert_eq!(error.policy, "OverridePolicy prod/broken");
        assert_eq!(error.location, "overrideRules[0].overriders");
        assert!(error.message.starts_with("plaintext:"), "{error}");
    }
}
