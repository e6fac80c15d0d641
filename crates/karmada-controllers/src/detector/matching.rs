//! Which (Cluster)PropagationPolicy claims a resource template (docs/karmada.md, "Resource detector").
//!
//! A selector matches when apiVersion and kind are equal and its namespace (if any) is the template's; then a
//! `name` must equal the template's name (labelSelector ignored), else a labelSelector must match, else it
//! matches everything. Implicit priority is the best over a policy's selectors: Name (3) > LabelSelector (2) >
//! MatchAll (1) > mismatch (0). Among candidates of one kind the highest explicit `priority` wins, then the
//! highest implicit priority, then the smallest name. PropagationPolicies of the template's namespace are
//! considered first; ClusterPropagationPolicies only when none matches. Policies being deleted are ignored.
//! Preemption (`preemption: Always`, behind a feature gate) lets a PropagationPolicy take a template from a
//! lower-priority PropagationPolicy or from any ClusterPropagationPolicy, and a ClusterPropagationPolicy take it
//! from a lower-priority ClusterPropagationPolicy.

use apimachinery::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::policy::PreemptionBehavior;
use karmada_api::{ClusterPropagationPolicy, PropagationPolicy, PropagationSpec, ResourceSelector};
use serde_json::Value;

/// How specifically a selector matches a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ImplicitPriority {
    Mismatch = 0,
    MatchAll = 1,
    LabelSelector = 2,
    Name = 3,
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// How `selector` matches `template`. A label selector that cannot be parsed matches nothing.
pub fn selector_priority(selector: &ResourceSelector, template: &Value) -> ImplicitPriority {
    if selector.api_version != text(template, "/apiVersion")
        || selector.kind != text(template, "/kind")
    {
        return ImplicitPriority::Mismatch;
    }
    if !selector.namespace.is_empty() && selector.namespace != text(template, "/metadata/namespace")
    {
        return ImplicitPriority::Mismatch;
    }
    if !selector.name.is_empty() {
        return if selector.name == text(template, "/metadata/name") {
            ImplicitPriority::Name
        } else {
            ImplicitPriority::Mismatch
        };
    }
    let Some(label_selector) = &selector.label_selector else {
        return ImplicitPriority::MatchAll;
    };
    let parsed = serde_json::to_value(label_selector)
        .ok()
        .and_then(|value| LabelSelector::from_label_selector(&value).ok());
    match parsed {
        Some(parsed) if parsed.matches_object(template) => ImplicitPriority::LabelSelector,
        _ => ImplicitPriority::Mismatch,
    }
}

/// The best priority over `selectors`; an empty list matches everything (as override policies treat it).
pub fn implicit_priority(selectors: &[ResourceSelector], template: &Value) -> ImplicitPriority {
    if selectors.is_empty() {
        return ImplicitPriority::MatchAll;
    }
    selectors
        .iter()
        .map(|selector| selector_priority(selector, template))
        .max()
        .unwrap_or(ImplicitPriority::Mismatch)
}

/// Either kind of propagation policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PolicyRef<'a> {
    Namespaced(&'a PropagationPolicy),
    Cluster(&'a ClusterPropagationPolicy),
}

impl<'a> PolicyRef<'a> {
    pub fn metadata(&self) -> &'a ObjectMeta {
        match self {
            Self::Namespaced(policy) => &policy.metadata,
            Self::Cluster(policy) => &policy.metadata,
        }
    }

    pub fn spec(&self) -> &'a PropagationSpec {
        match self {
            Self::Namespaced(policy) => &policy.spec,
            Self::Cluster(policy) => &policy.spec,
        }
    }

    pub fn name(&self) -> &'a str {
        self.metadata().name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> &'a str {
        self.metadata().namespace.as_deref().unwrap_or_default()
    }

    pub fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster(_))
    }

    /// Explicit priority; 0 when unset.
    pub fn priority(&self) -> i32 {
        self.spec().priority.unwrap_or(0)
    }

    pub fn preempts(&self) -> bool {
        self.spec().preemption == Some(PreemptionBehavior::Always)
    }

    fn deleting(&self) -> bool {
        self.metadata().deletion_timestamp.is_some()
    }

    /// How this policy matches `template`, taking the PropagationPolicy namespace rule into account.
    pub fn matches(&self, template: &Value) -> ImplicitPriority {
        if let Self::Namespaced(_) = self
            && self.namespace() != text(template, "/metadata/namespace")
        {
            return ImplicitPriority::Mismatch;
        }
        let selectors = &self.spec().resource_selectors;
        if selectors.is_empty() {
            // Propagation policies require at least one selector; an empty list selects nothing.
            return ImplicitPriority::Mismatch;
        }
        implicit_priority(selectors, template)
    }
}

/// The best of `candidates` for `template` (explicit priority, implicit priority, name), ignoring policies
/// being deleted and those that do not match.
pub(crate) fn best<'a>(
    candidates: impl Iterator<Item = PolicyRef<'a>>,
    template: &Value,
) -> Option<PolicyRef<'a>> {
    candidates
        .filter(|policy| !policy.deleting())
        .map(|policy| (policy, policy.matches(template)))
        .filter(|(_, implicit)| *implicit > ImplicitPriority::Mismatch)
        .min_by(|(a, a_implicit), (b, b_implicit)| {
            b.priority()
                .cmp(&a.priority())
                .then(b_implicit.cmp(a_implicit))
                .then(a.name().cmp(b.name()))
        })
        .map(|(policy, _)| policy)
}

/// The policy that claims `template` at first claim: the best matching PropagationPolicy of its namespace,
/// else the best matching ClusterPropagationPolicy, else none.
pub fn select_policy<'a>(
    template: &Value,
    propagation_policies: &'a [PropagationPolicy],
    cluster_propagation_policies: &'a [ClusterPropagationPolicy],
) -> Option<PolicyRef<'a>> {
    best(
        propagation_policies.iter().map(PolicyRef::Namespaced),
        template,
    )
    .or_else(|| {
        best(
            cluster_propagation_policies.iter().map(PolicyRef::Cluster),
            template,
        )
    })
}

/// Whether `candidate` may take `template` away from `current` under preemption (the feature gate is the
/// caller's to check). The candidate must match the template and ask for `preemption: Always`.
pub fn can_preempt(candidate: PolicyRef<'_>, current: PolicyRef<'_>, template: &Value) -> bool {
    if !candidate.preempts() || candidate.matches(template) == ImplicitPriority::Mismatch {
        return false;
    }
    if candidate.name() == current.name()
        && candidate.namespace() == current.namespace()
        && candidate.is_cluster() == current.is_cluster()
    {
        return false;
    }
    match (candidate.is_cluster(), current.is_cluster()) {
        (false, true) => true,
        (true, false) => false,
        _ => candidate.priority() > current.priority(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}}})
    }

    fn selector(value: Value) -> ResourceSelector {
        serde_json::from_value(value).expect("selector")
    }

    fn pp(
        name: &str,
        namespace: &str,
        priority: Option<i32>,
        selectors: Value,
    ) -> PropagationPolicy {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"resourceSelectors": selectors, "priority": priority}
        }))
        .expect("policy")
    }

    fn cpp(name: &str, priority: Option<i32>, selectors: Value) -> ClusterPropagationPolicy {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"resourceSelectors": selectors, "priority": priority}
        }))
        .expect("policy")
    }

    #[test]
    fn selector_priority_table() {
        let cases = [
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}),
                ImplicitPriority::Name,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}),
                ImplicitPriority::Mismatch,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "labelSelector": {"matchLabels": {"app": "x"}}}),
                ImplicitPriority::Name,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "nginx"}}}),
                ImplicitPriority::LabelSelector,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "x"}}}),
                ImplicitPriority::Mismatch,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
                ImplicitPriority::MatchAll,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default"}),
                ImplicitPriority::MatchAll,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "other"}),
                ImplicitPriority::Mismatch,
            ),
            (
                json!({"apiVersion": "apps/v1beta1", "kind": "Deployment"}),
                ImplicitPriority::Mismatch,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet"}),
                ImplicitPriority::Mismatch,
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(
                selector_priority(&selector(raw.clone()), &template()),
                expected,
                "{raw}"
            );
        }
    }

    #[test]
    fn policy_selection_table() {
        let by_name = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}]);
        let by_label = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "nginx"}}}]);
        let all = json!([{"apiVersion": "apps/v1", "kind": "Deployment"}]);
        let none = json!([{"apiVersion": "v1", "kind": "Service"}]);
        // (case, pps, cpps, expected (is_cluster, name))
        type Case = (
            &'static str,
            Vec<PropagationPolicy>,
            Vec<ClusterPropagationPolicy>,
            Option<(bool, &'static str)>,
        );
        let cases: Vec<Case> = vec![
            (
                "name beats label beats match-all",
                vec![
                    pp("a-all", "default", None, all.clone()),
                    pp("b-label", "default", None, by_label.clone()),
                    pp("c-name", "default", None, by_name.clone()),
                ],
                vec![],
                Some((false, "c-name")),
            ),
            (
                "explicit priority beats implicit",
                vec![
                    pp("a-all", "default", Some(5), all.clone()),
                    pp("c-name", "default", None, by_name.clone()),
                ],
                vec![],
                Some((false, "a-all")),
            ),
            (
                "ties go to the smallest name",
                vec![
                    pp("zeta", "default", None, by_label.clone()),
                    pp("alpha", "default", None, by_label.clone()),
                ],
                vec![],
                Some((false, "alpha")),
            ),
            (
                "pp in another namespace is ignored",
                vec![pp("elsewhere", "other", None, all.clone())],
                vec![cpp("global", None, all.clone())],
                Some((true, "global")),
            ),
            (
                "pp beats cpp regardless of priority",
                vec![pp("local", "default", None, all.clone())],
                vec![cpp("global", Some(100), by_name.clone())],
                Some((false, "local")),
            ),
            (
                "cpp chosen by priority when no pp matches",
                vec![pp("local", "default", None, none.clone())],
                vec![
                    cpp("low", Some(1), by_name.clone()),
                    cpp("high", Some(2), all.clone()),
                ],
                Some((true, "high")),
            ),
            (
                "nothing matches",
                vec![pp("local", "default", None, none.clone())],
                vec![cpp("global", None, none)],
                None,
            ),
        ];
        for (name, pps, cpps, expected) in cases {
            let chosen =
                select_policy(&template(), &pps, &cpps).map(|p| (p.is_cluster(), p.name()));
            assert_eq!(chosen, expected, "{name}");
        }
    }

    #[test]
    fn deleting_policies_are_ignored() {
        let mut deleting = pp(
            "a",
            "default",
            Some(10),
            json!([{"apiVersion": "apps/v1", "kind": "Deployment"}]),
        );
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        let other = pp(
            "b",
            "default",
            None,
            json!([{"apiVersion": "apps/v1", "kind": "Deployment"}]),
        );
        let pps = [deleting, other];
        assert_eq!(
            select_policy(&template(), &pps, &[]).map(|p| p.name()),
            Some("b")
        );
    }

    #[test]
    fn preemption_rules() {
        let all = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}]);
        let mut high_pp = pp("high", "default", Some(10), all.clone());
        high_pp.spec.preemption = Some(PreemptionBehavior::Always);
        let low_pp = pp("low", "default", Some(1), all.clone());
        let mut high_cpp = cpp("high-c", Some(10), all.clone());
        high_cpp.spec.preemption = Some(PreemptionBehavior::Always);
        let low_cpp = cpp("low-c", Some(50), all.clone());
        let lower_cpp = cpp("lower-c", Some(1), all.clone());
        let never_pp = pp("never", "default", Some(100), all);
        let t = template();
        let cases = [
            (
                "pp preempts lower pp",
                PolicyRef::Namespaced(&high_pp),
                PolicyRef::Namespaced(&low_pp),
                true,
            ),
            (
                "pp does not preempt higher pp",
                PolicyRef::Namespaced(&high_pp),
                PolicyRef::Namespaced(&never_pp),
                false,
            ),
            (
                "pp preempts any cpp",
                PolicyRef::Namespaced(&high_pp),
                PolicyRef::Cluster(&low_cpp),
                true,
            ),
            (
                "cpp never preempts pp",
                PolicyRef::Cluster(&high_cpp),
                PolicyRef::Namespaced(&low_pp),
                false,
            ),
            (
                "cpp preempts lower cpp",
                PolicyRef::Cluster(&high_cpp),
                PolicyRef::Cluster(&lower_cpp),
                true,
            ),
            (
                "cpp does not preempt higher cpp",
                PolicyRef::Cluster(&high_cpp),
                PolicyRef::Cluster(&low_cpp),
                false,
            ),
            (
                "preemption Never never preempts",
                PolicyRef::Namespaced(&never_pp),
                PolicyRef::Namespaced(&low_pp),
                false,
            ),
        ];
        for (name, candidate, current, expected) in cases {
            assert_eq!(can_preempt(candidate, current, &t), expected, "{name}");
        }
    }
}
