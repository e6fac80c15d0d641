//! Pruning a resource template into a manifest for a member (docs/karmada.md, "Manifest pruning"): server-set metadata
//! and `.status` removed, plus the per-kind fields a member must generate itself.
//!
//! Removed: metadata `creationTimestamp`, `deletionTimestamp`, `deletionGracePeriodSeconds`, `generation`,
//! `managedFields`, `resourceVersion`, `selfLink`, `uid`, `ownerReferences`, `finalizers`; the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation; `.status`. Deployment: the
//! `deployment.kubernetes.io/revision` annotation. Job: `ttlSecondsAfterFinished`, and unless `manualSelector`
//! the generated selector and pod-template labels. ServiceAccount: its auto-generated `<name>-token-*` secrets.
//! Service: `clusterIP`/`clusterIPs` unless headless (`None`). PersistentVolumeClaim: the
//! `volume.kubernetes.io/selected-node` annotation. Service-account token Secret: `data` and the
//! `kubernetes.io/service-account.uid` annotation.

use serde_json::{Map, Value};

use crate::keys::ANNOTATION_LAST_APPLIED;

const SERVER_METADATA: &[&str] = &[
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
    "uid",
    "ownerReferences",
    "finalizers",
];

const JOB_GENERATED_LABELS: &[&str] = &[
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];

fn remove_annotation(root: &mut Map<String, Value>, key: &str) {
    if let Some(annotations) = root
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.remove(key);
    }
}

fn spec_mut(root: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    root.get_mut("spec").and_then(Value::as_object_mut)
}

/// A pruned copy of `template`.
pub fn prune_manifest(template: &Value) -> Value {
    let mut manifest = template.clone();
    let Some(root) = manifest.as_object_mut() else {
        return manifest;
    };
    root.remove("status");
    let api_version = root
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = root
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(metadata) = root.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in SERVER_METADATA {
            metadata.remove(*key);
        }
    }
    remove_annotation(root, ANNOTATION_LAST_APPLIED);
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    match (group, kind.as_str()) {
        ("apps", "Deployment") => remove_annotation(root, "deployment.kubernetes.io/revision"),
        ("batch", "Job") => {
            if let Some(spec) = spec_mut(root) {
                spec.remove("ttlSecondsAfterFinished");
                if spec.get("manualSelector").and_then(Value::as_bool) != Some(true) {
                    spec.remove("selector");
                    if let Some(labels) = spec
                        .get_mut("template")
                        .and_then(|t| t.get_mut("metadata"))
                        .and_then(|m| m.get_mut("labels"))
                        .and_then(Value::as_object_mut)
                    {
                        for label in JOB_GENERATED_LABELS {
                            labels.remove(*label);
                        }
                    }
                }
            }
        }
        ("", "ServiceAccount") => {
            let prefix = format!("{name}-token-");
            if let Some(secrets) = root.get_mut("secrets").and_then(Value::as_array_mut) {
                secrets.retain(|s| {
                    !s.get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| n.starts_with(&prefix))
                });
                if secrets.is_empty() {
                    root.remove("secrets");
                }
            }
        }
        ("", "Service") => {
            if let Some(spec) = spec_mut(root)
                && spec.get("clusterIP").and_then(Value::as_str) != Some("None")
            {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
        }
        ("", "PersistentVolumeClaim") => {
            remove_annotation(root, "volume.kubernetes.io/selected-node")
        }
        ("", "Secret")
            if root.get("type").and_then(Value::as_str)
                == Some("kubernetes.io/service-account-token") =>
        {
            root.remove("data");
            remove_annotation(root, "kubernetes.io/service-account.uid");
        }
        _ => {}
    }
    manifest
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn common_metadata_and_status_are_pruned() {
        let template = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "uid": "u", "resourceVersion": "5", "generation": 2,
                         "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{}], "selfLink": "/x",
                         "ownerReferences": [{}], "finalizers": ["f"], "labels": {"app": "web"},
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}",
                                         "deployment.kubernetes.io/revision": "3", "keep": "me"}},
            "spec": {"replicas": 6},
            "status": {"replicas": 6}
        });
        let pruned = prune_manifest(&template);
        assert_eq!(
            pruned,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"}, "annotations": {"keep": "me"}},
                   "spec": {"replicas": 6}})
        );
    }

    #[test]
    fn per_kind_pruning_table() {
        let cases = vec![
            (
                "job auto selector",
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                       "spec": {"ttlSecondsAfterFinished": 10, "selector": {"matchLabels": {"controller-uid": "u"}},
                                "template": {"metadata": {"labels": {"app": "j", "controller-uid": "u", "job-name": "j"}}}}}),
                "/spec",
                json!({"template": {"metadata": {"labels": {"app": "j"}}}}),
            ),
            (
                "job manual selector kept",
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                       "spec": {"manualSelector": true, "selector": {"matchLabels": {"app": "j"}}, "template": {}}}),
                "/spec/selector",
                json!({"matchLabels": {"app": "j"}}),
            ),
            (
                "service cluster ip",
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                       "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 80}]}}),
                "/spec",
                json!({"ports": [{"port": 80}]}),
            ),
            (
                "headless service keeps None",
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "None"}}),
                "/spec/clusterIP",
                json!("None"),
            ),
            (
                "service account token secrets",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"},
                       "secrets": [{"name": "sa-token-x1"}, {"name": "mine"}]}),
                "/secrets",
                json!([{"name": "mine"}]),
            ),
            (
                "pvc selected node",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": "p", "annotations": {"volume.kubernetes.io/selected-node": "n1", "a": "b"}}}),
                "/metadata/annotations",
                json!({"a": "b"}),
            ),
            (
                "service account token secret",
                json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                       "metadata": {"name": "t", "annotations": {"kubernetes.io/service-account.uid": "u", "kubernetes.io/service-account.name": "sa"}},
                       "data": {"token": "x"}}),
                "",
                json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                       "metadata": {"name": "t", "annotations": {"kubernetes.io/service-account.name": "sa"}}}),
            ),
        ];
        for (name, template, pointer, expected) in cases {
            assert_eq!(
                prune_manifest(&template).pointer(pointer),
                Some(&expected),
                "{name}"
            );
        }
    }
}
