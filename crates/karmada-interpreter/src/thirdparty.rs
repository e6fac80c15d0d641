//! The third-party layer: customizations bundled with karmada-rs for popular CRDs (written here, in
//! `customizations/`), below users' customizations and above native. Each file is one
//! ResourceInterpreterCustomization, loaded exactly as a user's would be.

use karmada_api::config::ResourceInterpreterCustomization;

use crate::declarative::{ConfigurableInterpreter, LuaVm};

/// The bundled customization files, by file name.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "kruise-cloneset.yaml",
        include_str!("../customizations/kruise-cloneset.yaml"),
    ),
    (
        "kruise-advanced-statefulset.yaml",
        include_str!("../customizations/kruise-advanced-statefulset.yaml"),
    ),
    (
        "kruise-daemonset.yaml",
        include_str!("../customizations/kruise-daemonset.yaml"),
    ),
    (
        "argo-rollout.yaml",
        include_str!("../customizations/argo-rollout.yaml"),
    ),
    (
        "flux-helmrelease.yaml",
        include_str!("../customizations/flux-helmrelease.yaml"),
    ),
    (
        "volcano-job.yaml",
        include_str!("../customizations/volcano-job.yaml"),
    ),
    (
        "argo-workflow.yaml",
        include_str!("../customizations/argo-workflow.yaml"),
    ),
    (
        "flux-kustomization.yaml",
        include_str!("../customizations/flux-kustomization.yaml"),
    ),
    (
        "kubeflow-pytorchjob.yaml",
        include_str!("../customizations/kubeflow-pytorchjob.yaml"),
    ),
    (
        "flink-deployment.yaml",
        include_str!("../customizations/flink-deployment.yaml"),
    ),
];

/// The bundled customizations, parsed.
///
/// # Panics
/// Never for the shipped files: a test parses and checks every one.
pub fn bundled_customizations() -> Vec<ResourceInterpreterCustomization> {
    BUNDLED
        .iter()
        .filter_map(|(_, text)| serde_saphyr::from_str(text).ok())
        .collect()
}

/// The third-party layer, ready to use.
pub fn third_party_interpreter() -> ConfigurableInterpreter {
    let layer = ConfigurableInterpreter::new(LuaVm::default());
    layer.load(&bundled_customizations());
    layer
}

#[cfg(test)]
mod tests {
    use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
    use serde_json::{Value, json};

    use super::*;
    use crate::Interpreter;
    use crate::declarative::check_customization;

    #[test]
    fn every_bundled_customization_parses_and_checks_clean() {
        assert_eq!(bundled_customizations().len(), BUNDLED.len());
        let vm = LuaVm::default();
        for (file, text) in BUNDLED {
            let customization: ResourceInterpreterCustomization =
                serde_saphyr::from_str(text).expect(file);
            assert_eq!(
                check_customization(&vm, &customization),
                Vec::new(),
                "{file}"
            );
        }
    }

    fn clone_set(replicas: i64, status: Value) -> Value {
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
               "metadata": {"name": "web", "namespace": "shop", "generation": 3},
               "spec": {"replicas": replicas, "updateStrategy": {"paused": false},
                        "template": {"spec": {"containers": [{"name": "web", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                                                              "envFrom": [{"configMapRef": {"name": "web-config"}}]}]}}},
               "status": status})
    }

    #[test]
    fn clone_set_every_operation() {
        let interpreter = Interpreter::with_bundled();
        let object = clone_set(6, json!({}));
        let info = interpreter.get_replicas(&object).expect("replicas");
        assert_eq!(info.replicas, 6);
        let requests =
            serde_json::to_value(info.requirements.expect("requirements").resource_request)
                .expect("json");
        assert_eq!(requests, json!({"cpu": "500m", "memory": "1Gi"}));
        let revised = interpreter.revise_replica(&object, 4).expect("revise");
        assert_eq!(revised.pointer("/spec/replicas"), Some(&json!(4)));
        let mut observed = object.clone();
        observed["spec"]["updateStrategy"]["paused"] = json!(true);
        let retained = interpreter.retain(&object, &observed).expect("retain");
        assert_eq!(
            retained.pointer("/spec/updateStrategy/paused"),
            Some(&json!(true))
        );
        let member = clone_set(
            4,
            json!({"replicas": 4, "readyReplicas": 4, "availableReplicas": 4, "updatedReplicas": 4,
                                          "updatedReadyReplicas": 4, "observedGeneration": 3, "updateRevision": "web-7d9",
                                          "labelSelector": "app=web", "collisionCount": 0}),
        );
        let reflected = interpreter
            .reflect_status(&member)
            .expect("reflect")
            .expect("status");
        assert_eq!(reflected.get("collisionCount"), None);
        assert_eq!(reflected.get("generation"), Some(&json!(3)));
        assert_eq!(
            interpreter.interpret_health(&member),
            ResourceHealth::Healthy
        );
        let mut lagging = member.clone();
        lagging["status"]["availableReplicas"] = json!(3);
        assert_eq!(
            interpreter.interpret_health(&lagging),
            ResourceHealth::Unhealthy
        );
        let mut other = reflected.clone();
        for field in [
            "replicas",
            "readyReplicas",
            "availableReplicas",
            "updatedReplicas",
            "updatedReadyReplicas",
        ] {
            other[field] = json!(2);
        }
        let items: Vec<AggregatedStatusItem> = serde_json::from_value(json!([
            {"clusterName": "member1", "status": reflected, "applied": true},
            {"clusterName": "member2", "status": other, "applied": true},
        ]))
        .expect("items");
        let aggregated = interpreter
            .aggregate_status(&object, &items)
            .expect("aggregate");
        assert_eq!(aggregated.pointer("/status/replicas"), Some(&json!(6)));
        assert_eq!(
            aggregated.pointer("/status/availableReplicas"),
            Some(&json!(6))
        );
        assert_eq!(
            aggregated.pointer("/status/observedGeneration"),
            Some(&json!(3))
        );
        assert_eq!(
            aggregated.pointer("/status/labelSelector"),
            Some(&json!("app=web"))
        );
        let dependencies = interpreter.get_dependencies(&object).expect("dependencies");
        assert_eq!(
            dependencies
                .iter()
                .map(|d| (d.kind.as_str(), d.name.as_str(), d.namespace.as_str()))
                .collect::<Vec<_>>(),
            vec![("ConfigMap", "web-config", "shop")]
        );
    }
}

#[cfg(test)]
#[path = "thirdparty_tests.rs"]
mod kinds_tests;
