//! What the detector does with one resource template (docs/karmada.md, "Resource detector", steps 1–7): skip it, keep
//! applying the policy that claims it, claim it for a new policy, release a claim whose policy is gone, retry,
//! or wait for a matching policy.
//!
//! With the PropagationPolicyPreemption gate on, a matching policy that may preempt the current claimer (see
//! [`can_preempt`]) takes the template over; PropagationPolicies are preferred over ClusterPropagationPolicies,
//! then the usual best-policy order applies. Preemption only moves to strictly higher priority (or from a
//! ClusterPropagationPolicy to a PropagationPolicy), so decisions never oscillate.

use karmada_api::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use serde_json::Value;

use super::claim::{Claim, current_claim, policy_id};
use super::matching::{ImplicitPriority, PolicyRef, best, can_preempt, select_policy};
use super::skip::{DetectorFilter, SkipReason};

/// The detector's decision for one template.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision<'a> {
    /// Never propagated.
    Skip(SkipReason),
    /// Claimed by this policy, which still exists and selects it: (re)build the binding.
    Apply(PolicyRef<'a>),
    /// Claim for this policy (first claim or preemption), then build the binding.
    Claim(PolicyRef<'a>),
    /// The claiming policy is gone: remove claim metadata carrying this id from the binding, then the template.
    Release { policy_id: String },
    /// The claiming policy is being deleted: try again later.
    Retry(String),
    /// The claiming policy no longer selects the template; its update handler releases it.
    Unchanged,
    /// No policy selects the template: wait for one.
    Waiting,
}

fn same_id(policy: PolicyRef<'_>, id: &str) -> bool {
    policy_id(policy).is_ok_and(|own| own == id)
}

/// Decides for `template` given every PropagationPolicy and ClusterPropagationPolicy.
pub fn decide<'a>(
    template: &Value,
    filter: &DetectorFilter,
    propagation_policies: &'a [PropagationPolicy],
    cluster_propagation_policies: &'a [ClusterPropagationPolicy],
    preemption_enabled: bool,
) -> Decision<'a> {
    if let Some(reason) = filter.skip_reason(template) {
        return Decision::Skip(reason);
    }
    let current = match current_claim(template) {
        None => {
            return match select_policy(template, propagation_policies, cluster_propagation_policies)
            {
                Some(policy) => Decision::Claim(policy),
                None => Decision::Waiting,
            };
        }
        Some(Claim::Propagation {
            namespace,
            name,
            id,
        }) => propagation_policies
            .iter()
            .map(PolicyRef::Namespaced)
            .find(|p| p.namespace() == namespace && p.name() == name && same_id(*p, &id))
            .ok_or(id),
        Some(Claim::Cluster { name, id }) => cluster_propagation_policies
            .iter()
            .map(PolicyRef::Cluster)
            .find(|p| p.name() == name && same_id(*p, &id))
            .ok_or(id),
    };
    let current = match current {
        Ok(policy) => policy,
        Err(policy_id) => return Decision::Release { policy_id },
    };
    if current.metadata().deletion_timestamp.is_some() {
        return Decision::Retry(format!(
            "{} {} is being deleted",
            if current.is_cluster() {
                "ClusterPropagationPolicy"
            } else {
                "PropagationPolicy"
            },
            current.name()
        ));
    }
    if preemption_enabled
        && let Some(preemptor) = preemptor(
            template,
            current,
            propagation_policies,
            cluster_propagation_policies,
        )
    {
        return Decision::Claim(preemptor);
    }
    if current.matches(template) == ImplicitPriority::Mismatch {
        return Decision::Unchanged;
    }
    Decision::Apply(current)
}

fn preemptor<'a>(
    template: &Value,
    current: PolicyRef<'a>,
    propagation_policies: &'a [PropagationPolicy],
    cluster_propagation_policies: &'a [ClusterPropagationPolicy],
) -> Option<PolicyRef<'a>> {
    let eligible = |p: &PolicyRef<'_>| can_preempt(*p, current, template);
    best(
        propagation_policies
            .iter()
            .map(PolicyRef::Namespaced)
            .filter(eligible),
        template,
    )
    .or_else(|| {
        best(
            cluster_propagation_policies
                .iter()
                .map(PolicyRef::Cluster)
                .filter(eligible),
            template,
        )
    })
}

/// Names in the policy's `dependentOverrides` that do not exist yet (OverridePolicies of the policy's
/// namespace for a PropagationPolicy, ClusterOverridePolicies for a ClusterPropagationPolicy). The detector
/// retries until this is empty.
pub fn missing_dependent_overrides(
    policy: PolicyRef<'_>,
    override_policies: &[OverridePolicy],
    cluster_override_policies: &[ClusterOverridePolicy],
) -> Vec<String> {
    policy
        .spec()
        .dependent_overrides
        .iter()
        .filter(|wanted| {
            if policy.is_cluster() {
                !cluster_override_policies
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(wanted.as_str()))
            } else {
                !override_policies.iter().any(|p| {
                    p.metadata.name.as_deref() == Some(wanted.as_str())
                        && p.metadata.namespace.as_deref() == Some(policy.namespace())
                })
            }
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use apimachinery::merge_patch;
    use karmada_api::policy::PreemptionBehavior;
    use serde_json::json;

    use super::*;
    use crate::detector::claim;

    fn template() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx", "namespace": "default"}})
    }

    fn pp(name: &str, priority: i32, preempt: bool) -> PropagationPolicy {
        let mut policy: PropagationPolicy = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "labels": {"propagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}], "priority": priority}
        }))
        .expect("pp");
        if preempt {
            policy.spec.preemption = Some(PreemptionBehavior::Always);
        }
        policy
    }

    fn cpp(name: &str) -> ClusterPropagationPolicy {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}
        }))
        .expect("cpp")
    }

    fn claimed_by(policy: PolicyRef<'_>) -> Value {
        let patch = claim(&template(), policy).expect("id").expect("patch");
        merge_patch(&template(), &patch)
    }

    fn name_of(decision: &Decision<'_>) -> String {
        match decision {
            Decision::Apply(p) => format!("apply {}", p.name()),
            Decision::Claim(p) => format!("claim {}", p.name()),
            Decision::Release { policy_id } => format!("release {policy_id}"),
            Decision::Retry(_) => "retry".into(),
            Decision::Unchanged => "unchanged".into(),
            Decision::Waiting => "waiting".into(),
            Decision::Skip(_) => "skip".into(),
        }
    }

    #[test]
    fn decision_table() {
        let filter = DetectorFilter::default();
        let low = pp("low", 1, false);
        let high = pp("high", 5, true);
        let global = cpp("global");
        let mut deleting = pp("low", 1, false);
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        let mut stopped_matching = pp("low", 1, false);
        stopped_matching.spec.resource_selectors[0].name = "other".into();
        let by_low = claimed_by(PolicyRef::Namespaced(&low));
        let by_global = claimed_by(PolicyRef::Cluster(&global));
        let mut skipped = template();
        skipped["metadata"]["namespace"] = json!("karmada-system");
        type Case = (
            &'static str,
            Value,
            Vec<PropagationPolicy>,
            Vec<ClusterPropagationPolicy>,
            bool,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                "reserved namespace",
                skipped,
                vec![low.clone()],
                vec![],
                false,
                "skip",
            ),
            (
                "first claim",
                template(),
                vec![low.clone()],
                vec![global.clone()],
                false,
                "claim low",
            ),
            (
                "nothing matches",
                template(),
                vec![],
                vec![],
                false,
                "waiting",
            ),
            (
                "claimed policy applied again",
                by_low.clone(),
                vec![low.clone(), high.clone()],
                vec![],
                false,
                "apply low",
            ),
            (
                "claimed policy gone",
                by_low.clone(),
                vec![high.clone()],
                vec![],
                false,
                "release low-id",
            ),
            (
                "claimed policy deleting",
                by_low.clone(),
                vec![deleting],
                vec![],
                false,
                "retry",
            ),
            (
                "claimed policy stopped matching",
                by_low.clone(),
                vec![stopped_matching],
                vec![],
                false,
                "unchanged",
            ),
            (
                "preemption by higher pp",
                by_low.clone(),
                vec![low.clone(), high.clone()],
                vec![],
                true,
                "claim high",
            ),
            (
                "pp preempts cpp",
                by_global.clone(),
                vec![high.clone()],
                vec![global.clone()],
                true,
                "claim high",
            ),
            (
                "cpp claim kept without preemption",
                by_global,
                vec![low.clone()],
                vec![global],
                true,
                "apply global",
            ),
        ];
        for (name, template, pps, cpps, preemption, expected) in cases {
            let decision = decide(&template, &filter, &pps, &cpps, preemption);
            assert_eq!(name_of(&decision), expected, "{name}");
        }
    }

    #[test]
    fn dependent_overrides() {
        let mut policy = pp("p", 0, false);
        policy.spec.dependent_overrides = vec!["op-a".into(), "op-b".into()];
        let op: OverridePolicy =
            serde_json::from_value(json!({"metadata": {"name": "op-a", "namespace": "default"}}))
                .expect("op");
        let elsewhere: OverridePolicy =
            serde_json::from_value(json!({"metadata": {"name": "op-b", "namespace": "other"}}))
                .expect("op");
        assert_eq!(
            missing_dependent_overrides(PolicyRef::Namespaced(&policy), &[op, elsewhere], &[]),
            vec!["op-b".to_string()]
        );
    }
}
