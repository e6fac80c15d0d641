//! Templates the detector never propagates (docs/karmada.md, "Reserved namespaces and skipped APIs",
//! "Resource detector" step 1).

use std::fmt;

use serde_json::Value;

use crate::keys::LABEL_CLAIMED_BY;
use crate::reserved::{
    SkippedApis, SkippedNamespaces, is_never_propagated_api, is_reserved_namespace,
};

/// Why a template is not propagated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// In `karmada-system`, `karmada-cluster` or a `karmada-es-*` namespace.
    ReservedNamespace(String),
    /// In a namespace matching `--skipped-propagating-namespaces`.
    SkippedNamespace(String),
    /// A Karmada API group, events, leases, or listed in `--skipped-propagating-apis`.
    SkippedApi(String),
    /// `kube-system/extension-apiserver-authentication`, always ignored.
    AlwaysIgnored,
    /// Labelled `resourcetemplate.karmada.io/claimed-by`: another Karmada feature owns it.
    ClaimedByOther(String),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReservedNamespace(ns) => write!(f, "namespace {ns} is reserved for Karmada"),
            Self::SkippedNamespace(ns) => {
                write!(f, "namespace {ns} matches --skipped-propagating-namespaces")
            }
            Self::SkippedApi(api) => write!(f, "{api} is never propagated"),
            Self::AlwaysIgnored => {
                f.write_str("kube-system/extension-apiserver-authentication is never propagated")
            }
            Self::ClaimedByOther(owner) => write!(f, "claimed by {owner}"),
        }
    }
}

/// The detector's filter, built from its flags.
#[derive(Clone, Debug, Default)]
pub struct DetectorFilter {
    pub skipped_namespaces: SkippedNamespaces,
    pub skipped_apis: SkippedApis,
}

impl DetectorFilter {
    /// Why `template` is not propagated, or `None` when it may be.
    pub fn skip_reason(&self, template: &Value) -> Option<SkipReason> {
        let text = |pointer: &str| {
            template
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (api_version, kind, namespace) = (
            text("/apiVersion"),
            text("/kind"),
            text("/metadata/namespace"),
        );
        if is_never_propagated_api(api_version, kind)
            || self.skipped_apis.matches(api_version, kind)
        {
            return Some(SkipReason::SkippedApi(format!("{api_version} {kind}")));
        }
        if api_version == "v1"
            && kind == "ConfigMap"
            && namespace == "kube-system"
            && text("/metadata/name") == "extension-apiserver-authentication"
        {
            return Some(SkipReason::AlwaysIgnored);
        }
        if !namespace.is_empty() {
            if is_reserved_namespace(namespace) {
                return Some(SkipReason::ReservedNamespace(namespace.to_string()));
            }
            if self.skipped_namespaces.matches(namespace) {
                return Some(SkipReason::SkippedNamespace(namespace.to_string()));
            }
        }
        let claimed_by = template
            .pointer("/metadata/labels")
            .and_then(|labels| labels.get(LABEL_CLAIMED_BY))
            .and_then(Value::as_str);
        claimed_by.map(|owner| SkipReason::ClaimedByOther(owner.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(api_version: &str, kind: &str, namespace: &str, name: &str) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}})
    }

    #[test]
    fn skip_table() {
        let filter = DetectorFilter::default();
        let mut claimed = object("v1", "Service", "default", "web");
        claimed["metadata"]["labels"] =
            json!({"resourcetemplate.karmada.io/claimed-by": "multiclusterservice"});
        let cases = [
            (object("apps/v1", "Deployment", "default", "web"), None),
            (
                object("apps/v1", "Deployment", "karmada-system", "x"),
                Some("reserved"),
            ),
            (
                object("apps/v1", "Deployment", "karmada-es-member1", "x"),
                Some("reserved"),
            ),
            (
                object("v1", "ConfigMap", "kube-public", "x"),
                Some("skipped-propagating-namespaces"),
            ),
            (
                object(
                    "policy.karmada.io/v1alpha1",
                    "PropagationPolicy",
                    "default",
                    "x",
                ),
                Some("never propagated"),
            ),
            (
                object("v1", "Event", "default", "x"),
                Some("never propagated"),
            ),
            (
                object(
                    "v1",
                    "ConfigMap",
                    "kube-system",
                    "extension-apiserver-authentication",
                ),
                Some("never propagated"),
            ),
            (
                object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "admin"),
                None,
            ),
            (claimed, Some("claimed by multiclusterservice")),
        ];
        for (template, expected) in cases {
            let reason = filter.skip_reason(&template).map(|r| r.to_string());
            match expected {
                None => assert_eq!(reason, None, "{template}"),
                Some(fragment) => {
                    let reason = reason.unwrap_or_default();
                    assert!(reason.contains(fragment), "{template}: {reason}");
                }
            }
        }
    }
}
