//! Which namespaces auto-propagate to every member cluster (docs/karmada.md, "Namespace auto-propagation").
//!
//! Every Namespace propagates except Karmada's reserved ones (`karmada-system`, `karmada-cluster`,
//! `karmada-es-*`), `default`, namespaces matching `--skipped-propagating-namespaces` (default `kube-.*`), and
//! namespaces labelled `namespace.karmada.io/skip-auto-propagation: "true"`. Adding the label later does not
//! remove the namespace from members that already have it; that is the controller's business (it simply stops
//! creating Works), so this function only answers "should it be propagated now".

use serde_json::Value;

use crate::keys::LABEL_SKIP_AUTO_PROPAGATION;
use crate::reserved::{SkippedNamespaces, is_reserved_namespace};

/// Why a namespace is or is not propagated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespacePropagation {
    Propagate,
    Reserved,
    Default,
    SkippedByFlag,
    SkipLabel,
}

/// Decides for a Namespace object.
pub fn should_propagate(namespace: &Value, skipped: &SkippedNamespaces) -> NamespacePropagation {
    let name = namespace
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if is_reserved_namespace(name) {
        return NamespacePropagation::Reserved;
    }
    if name == "default" {
        return NamespacePropagation::Default;
    }
    if skipped.matches(name) {
        return NamespacePropagation::SkippedByFlag;
    }
    let skip_label = namespace
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(LABEL_SKIP_AUTO_PROPAGATION))
        .and_then(Value::as_str);
    if skip_label == Some("true") {
        return NamespacePropagation::SkipLabel;
    }
    NamespacePropagation::Propagate
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn namespace(name: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    }

    #[test]
    fn namespace_table() {
        let defaults = SkippedNamespaces::default();
        let cases = [
            (
                namespace("microservices", json!({})),
                NamespacePropagation::Propagate,
            ),
            (
                namespace(
                    "production",
                    json!({"namespace.karmada.io/skip-auto-propagation": "false"}),
                ),
                NamespacePropagation::Propagate,
            ),
            (
                namespace(
                    "quiet",
                    json!({"namespace.karmada.io/skip-auto-propagation": "true"}),
                ),
                NamespacePropagation::SkipLabel,
            ),
            (
                namespace("default", json!({})),
                NamespacePropagation::Default,
            ),
            (
                namespace("karmada-system", json!({})),
                NamespacePropagation::Reserved,
            ),
            (
                namespace("karmada-cluster", json!({})),
                NamespacePropagation::Reserved,
            ),
            (
                namespace("karmada-es-member1", json!({})),
                NamespacePropagation::Reserved,
            ),
            (
                namespace("kube-system", json!({})),
                NamespacePropagation::SkippedByFlag,
            ),
            (
                namespace("kube-node-lease", json!({})),
                NamespacePropagation::SkippedByFlag,
            ),
        ];
        for (object, expected) in cases {
            assert_eq!(should_propagate(&object, &defaults), expected, "{object}");
        }
        let custom = SkippedNamespaces::new(&["team-.*"]).expect("valid");
        assert_eq!(
            should_propagate(&namespace("kube-system", json!({})), &custom),
            NamespacePropagation::Propagate
        );
        assert_eq!(
            should_propagate(&namespace("team-a", json!({})), &custom),
            NamespacePropagation::SkippedByFlag
        );
    }
}
