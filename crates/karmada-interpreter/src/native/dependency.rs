//! InterpretDependency: the ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims a workload's pod
//! template refers to, in the workload's namespace; and for a ServiceImport, its derived Service
//! (`derived-<name>`) and the EndpointSlices labelled `kubernetes.io/service-name: derived-<name>`, as Karmada's
//! native interpreter has it, so the importing clusters get the Service and its endpoints with the import.
//!
//! References are read from volumes (configMap, secret, persistentVolumeClaim, projected sources), from every
//! container's `env[].valueFrom` and `envFrom`, from `imagePullSecrets`, and from `serviceAccountName` unless it
//! is empty or `default` (every namespace has that one). A StatefulSet's claims named like its
//! `volumeClaimTemplates` are created by the member itself and are not dependencies.

use serde_json::Value;

use karmada_api::mcs::derived_service_name;

use super::{SERVICE_IMPORT, STATEFUL_SET, is, kind_of, pod_spec_pointer};
use crate::InterpretError;
use crate::interpreter::{DependencyLabelSelector, DependentObjectReference};
use crate::value::{array_at, str_at};

fn reference(kind: &str, namespace: &str, name: &str) -> Option<DependentObjectReference> {
    (!name.is_empty()).then(|| DependentObjectReference {
        api_version: "v1".into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
        label_selector: None,
    })
}

/// Label naming the Service an EndpointSlice belongs to.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

fn service_import_dependencies(object: &Value) -> Vec<DependentObjectReference> {
    let namespace = str_at(object, "/metadata/namespace");
    let name = str_at(object, "/metadata/name");
    if name.is_empty() {
        return Vec::new();
    }
    let derived = derived_service_name(name);
    let slices = DependentObjectReference {
        api_version: "discovery.k8s.io/v1".into(),
        kind: "EndpointSlice".into(),
        namespace: namespace.into(),
        name: String::new(),
        label_selector: Some(DependencyLabelSelector {
            match_labels: [(SERVICE_NAME_LABEL.to_string(), derived.clone())].into(),
        }),
    };
    reference("Service", namespace, &derived)
        .into_iter()
        .chain([slices])
        .collect()
}

pub(crate) fn pod_spec_references(
    pod_spec: &Value,
    namespace: &str,
) -> Vec<DependentObjectReference> {
    let mut found = Vec::new();
    let mut push = |kind: &str, name: &str| found.extend(reference(kind, namespace, name));
    for volume in array_at(pod_spec, "/volumes") {
        push("ConfigMap", str_at(volume, "/configMap/name"));
        push("Secret", str_at(volume, "/secret/secretName"));
        push(
            "PersistentVolumeClaim",
            str_at(volume, "/persistentVolumeClaim/claimName"),
        );
        for source in array_at(volume, "/projected/sources") {
            push("ConfigMap", str_at(source, "/configMap/name"));
            push("Secret", str_at(source, "/secret/name"));
        }
    }
    for list in ["/containers", "/initContainers", "/ephemeralContainers"] {
        for container in array_at(pod_spec, list) {
            for env in array_at(container, "/env") {
                push("ConfigMap", str_at(env, "/valueFrom/configMapKeyRef/name"));
                push("Secret", str_at(env, "/valueFrom/secretKeyRef/name"));
            }
            for env_from in array_at(container, "/envFrom") {
                push("ConfigMap", str_at(env_from, "/configMapRef/name"));
                push("Secret", str_at(env_from, "/secretRef/name"));
            }
        }
    }
    for secret in array_at(pod_spec, "/imagePullSecrets") {
        push("Secret", str_at(secret, "/name"));
    }
    let service_account = str_at(pod_spec, "/serviceAccountName");
    if service_account != "default" {
        push("ServiceAccount", service_account);
    }
    found
}

pub(super) fn get_dependencies(
    object: &Value,
) -> Result<Vec<DependentObjectReference>, InterpretError> {
    let kind = kind_of(object)?;
    if is(&kind, SERVICE_IMPORT) {
        return Ok(service_import_dependencies(object));
    }
    let Some(pod_spec) = pod_spec_pointer(&kind).and_then(|p| object.pointer(p)) else {
        return Ok(Vec::new());
    };
    let namespace = str_at(object, "/metadata/namespace");
    let mut references = pod_spec_references(pod_spec, namespace);
    if is(&kind, STATEFUL_SET) {
        let templates: Vec<&str> = array_at(object, "/spec/volumeClaimTemplates")
            .iter()
            .map(|t| str_at(t, "/metadata/name"))
            .collect();
        references.retain(|r| {
            !(r.kind == "PersistentVolumeClaim" && templates.contains(&r.name.as_str()))
        });
    }
    Ok(references)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::Interpreter;

    fn names(object: &Value) -> Vec<String> {
        Interpreter::native()
            .get_dependencies(object)
            .expect("interpretable")
            .into_iter()
            .map(|d| {
                assert_eq!(d.namespace, "apps");
                assert_eq!(d.api_version, "v1");
                format!("{}/{}", d.kind, d.name)
            })
            .collect()
    }

    fn pod_spec() -> Value {
        json!({
            "serviceAccountName": "runner",
            "imagePullSecrets": [{"name": "registry"}],
            "volumes": [
                {"name": "a", "configMap": {"name": "cm-volume"}},
                {"name": "b", "secret": {"secretName": "secret-volume"}},
                {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "d", "projected": {"sources": [{"configMap": {"name": "cm-projected"}}, {"secret": {"name": "secret-projected"}}, {"serviceAccountToken": {"path": "t"}}]}}
            ],
            "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "secret-envfrom"}}]}],
            "containers": [{
                "name": "app",
                "env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm-env", "key": "a"}}},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "secret-env", "key": "b"}}},
                    {"name": "C", "value": "plain"}
                ],
                "envFrom": [{"configMapRef": {"name": "cm-envfrom"}}, {"configMapRef": {"name": "cm-env"}}]
            }]
        })
    }

    #[test]
    fn every_reference_kind_per_workload_kind() {
        let expected = vec![
            "ConfigMap/cm-env",
            "ConfigMap/cm-envfrom",
            "ConfigMap/cm-projected",
            "ConfigMap/cm-volume",
            "PersistentVolumeClaim/data",
            "Secret/registry",
            "Secret/secret-env",
            "Secret/secret-envfrom",
            "Secret/secret-projected",
            "Secret/secret-volume",
            "ServiceAccount/runner",
        ];
        let template = json!({"spec": pod_spec()});
        let cases = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "apps"}, "spec": {"template": template}}),
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "w", "namespace": "apps"}, "spec": {"template": template}}),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w", "namespace": "apps"}, "spec": {"template": template}}),
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "w", "namespace": "apps"}, "spec": {"jobTemplate": {"spec": {"template": template}}}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "apps"}, "spec": pod_spec()}),
        ];
        for object in cases {
            assert_eq!(names(&object), expected, "{}", object["kind"]);
        }
    }

    #[test]
    fn default_service_account_and_claim_templates_are_not_dependencies() {
        let statefulset = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "apps"},
            "spec": {
                "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
                "template": {"spec": {"serviceAccountName": "default", "containers": [{"name": "db"}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                                {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}]}}
            }
        });
        assert_eq!(names(&statefulset), vec!["PersistentVolumeClaim/shared"]);
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps"}});
        assert!(names(&config_map).is_empty());
    }

    #[test]
    fn a_service_import_depends_on_its_derived_service_and_slices() {
        let import = json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
            "metadata": {"name": "api-server", "namespace": "microservices"},
            "spec": {"type": "ClusterSetIP", "ports": [{"port": 8080}]}
        });
        let found = Interpreter::native()
            .get_dependencies(&import)
            .expect("interpretable");
        let rendered: Vec<String> = found
            .iter()
            .map(|d| {
                assert_eq!(d.namespace, "microservices");
                let selector = d
                    .label_selector
                    .as_ref()
                    .map(|s| s.to_query())
                    .unwrap_or_default();
                format!("{} {} {} [{selector}]", d.api_version, d.kind, d.name)
            })
            .collect();
        assert_eq!(
            rendered,
            [
                "discovery.k8s.io/v1 EndpointSlice  [kubernetes.io/service-name=derived-api-server]",
                "v1 Service derived-api-server []",
            ]
        );
        // The dependencies annotation carries Karmada's shape.
        assert_eq!(
            serde_json::to_value(&found[0]).expect("serializable")["labelSelector"],
            json!({"matchLabels": {"kubernetes.io/service-name": "derived-api-server"}})
        );
    }
}
