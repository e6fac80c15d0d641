//! Every operation of each bundled customization beyond CloneSet (tested beside the layer), on objects shaped as
//! their controllers write them.

use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
use serde_json::{Value, json};

use super::*;
use crate::{Interpreter, Target};

fn items(statuses: &[(&str, Value)]) -> Vec<AggregatedStatusItem> {
    statuses
        .iter()
        .map(|(cluster, status)| AggregatedStatusItem {
            cluster_name: (*cluster).to_string(),
            status: Some(status.clone()),
            applied: true,
            ..AggregatedStatusItem::default()
        })
        .collect()
}

fn pod_template() -> Value {
    json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}},
                                    "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "token", "key": "t"}}}]}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}})
}

#[test]
fn every_bundled_kind_has_a_crd_fixture() {
    let mut served = Vec::new();
    for file in [
        "interpreter/crds.yaml",
        "interpreter/kruise-cloneset-crd.yaml",
    ] {
        for crd in test_fixtures::documents(file) {
            let group = crd["spec"]["group"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
                served.push(Target::new(
                    format!("{group}/{}", version["name"].as_str().unwrap_or_default()),
                    crd["spec"]["names"]["kind"].as_str().unwrap_or_default(),
                ));
            }
        }
    }
    for customization in bundled_customizations() {
        let target = Target::new(
            customization.spec.target.api_version.clone(),
            customization.spec.target.kind.clone(),
        );
        assert!(served.contains(&target), "no CRD fixture serves {target:?}");
    }
}

#[test]
fn advanced_statefulset() {
    let interpreter = Interpreter::with_bundled();
    let object = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "data", "generation": 2},
        "spec": {"replicas": 3, "template": pod_template(), "volumeClaimTemplates": [{"metadata": {"name": "data"}}]}});
    let info = interpreter.get_replicas(&object).expect("replicas");
    assert_eq!(info.replicas, 3);
    assert!(info.requirements.is_some());
    assert_eq!(
        interpreter.revise_replica(&object, 1).expect("revise")["spec"]["replicas"],
        1
    );
    let mut member = object.clone();
    member["status"] = json!({"replicas": 2, "availableReplicas": 2, "updatedReplicas": 2, "observedGeneration": 2, "updateRevision": "db-1"});
    member["spec"]["replicas"] = json!(2);
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Healthy
    );
    let reflected = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["generation"], 2);
    let mut lagging = reflected.clone();
    lagging["observedGeneration"] = json!(1);
    let aggregated = interpreter
        .aggregate_status(
            &object,
            &items(&[("a", reflected.clone()), ("b", reflected.clone())]),
        )
        .expect("aggregate");
    assert_eq!(aggregated["status"]["replicas"], 4);
    assert_eq!(aggregated["status"]["observedGeneration"], 2);
    assert_eq!(aggregated["status"]["updateRevision"], "db-1");
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", reflected), ("b", lagging)]))
        .expect("aggregate");
    assert_eq!(
        aggregated["status"].get("observedGeneration"),
        None,
        "a member behind holds observedGeneration back"
    );
    member["status"]["availableReplicas"] = json!(1);
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Unhealthy
    );
    let dependencies = interpreter.get_dependencies(&object).expect("dependencies");
    assert_eq!(
        dependencies
            .iter()
            .map(|d| d.kind.as_str())
            .collect::<Vec<_>>(),
        vec!["Secret"],
        "claim templates are not dependencies"
    );
}

#[test]
fn kruise_daemonset() {
    let interpreter = Interpreter::with_bundled();
    let object = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "ops", "generation": 1}, "spec": {"template": pod_template()}});
    assert_eq!(
        interpreter
            .get_replicas(&object)
            .expect("replicas")
            .replicas,
        0,
        "one pod per node: nothing to divide"
    );
    let mut member = object.clone();
    member["status"] = json!({"desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3, "numberReady": 3,
                              "currentNumberScheduled": 3, "observedGeneration": 1, "daemonSetHash": "h1"});
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Healthy
    );
    let reflected = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    let aggregated = interpreter
        .aggregate_status(
            &object,
            &items(&[("a", reflected.clone()), ("b", reflected)]),
        )
        .expect("aggregate");
    assert_eq!(aggregated["status"]["desiredNumberScheduled"], 6);
    assert_eq!(aggregated["status"]["numberAvailable"], 6);
    assert_eq!(aggregated["status"]["observedGeneration"], 1);
    member["status"]["numberAvailable"] = json!(2);
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Unhealthy
    );
    assert_eq!(
        interpreter
            .get_dependencies(&object)
            .expect("dependencies")
            .len(),
        2
    );
}

#[test]
fn argo_rollout() {
    let interpreter = Interpreter::with_bundled();
    let object = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
        "metadata": {"name": "web", "namespace": "shop", "generation": 4},
        "spec": {"replicas": 5, "paused": false, "template": pod_template()}});
    let info = interpreter.get_replicas(&object).expect("replicas");
    assert_eq!(info.replicas, 5);
    assert_eq!(
        interpreter.revise_replica(&object, 2).expect("revise")["spec"]["replicas"],
        2
    );
    let mut observed = object.clone();
    observed["spec"]["paused"] = json!(true);
    assert_eq!(
        interpreter.retain(&object, &observed).expect("retain")["spec"]["paused"],
        true
    );
    let mut member = object.clone();
    member["status"] = json!({"replicas": 3, "availableReplicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "phase": "Healthy", "stableRS": "abc"});
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Healthy
    );
    let healthy = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    member["status"]["phase"] = json!("Degraded");
    member["status"]["message"] = json!("ProgressDeadlineExceeded");
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Unhealthy
    );
    let degraded = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", healthy), ("b", degraded)]))
        .expect("aggregate");
    assert_eq!(aggregated["status"]["replicas"], 6);
    assert_eq!(
        aggregated["status"]["phase"], "Degraded",
        "the worst phase wins"
    );
    assert_eq!(aggregated["status"]["message"], "ProgressDeadlineExceeded");
    assert_eq!(
        interpreter
            .get_dependencies(&object)
            .expect("dependencies")
            .len(),
        2
    );
}

#[test]
fn flux_helm_release() {
    let interpreter = Interpreter::with_bundled();
    let object = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "apps", "generation": 3},
        "spec": {"interval": "5m", "suspend": false, "serviceAccountName": "flux-apps",
                 "chart": {"spec": {"chart": "podinfo", "sourceRef": {"kind": "HelmRepository", "name": "podinfo", "namespace": "flux-system"}}},
                 "valuesFrom": [{"kind": "ConfigMap", "name": "podinfo-values"}, {"kind": "Secret", "name": "podinfo-secrets"}]}});
    assert_eq!(
        interpreter
            .get_replicas(&object)
            .expect("replicas")
            .replicas,
        0
    );
    let mut observed = object.clone();
    observed["spec"]["suspend"] = json!(true);
    assert_eq!(
        interpreter.retain(&object, &observed).expect("retain")["spec"]["suspend"],
        true
    );
    let mut member = object.clone();
    member["status"] = json!({"observedGeneration": 3, "lastAttemptedRevision": "6.5.0",
                              "conditions": [{"type": "Ready", "status": "True", "reason": "InstallSucceeded"}]});
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Healthy
    );
    let ready = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    member["status"]["conditions"] = json!([{"type": "Ready", "status": "False", "reason": "InstallFailed", "message": "timed out"}]);
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Unhealthy
    );
    let failed = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", ready.clone()), ("b", failed)]))
        .expect("aggregate");
    assert_eq!(aggregated["status"]["conditions"][0]["status"], "False");
    assert_eq!(
        aggregated["status"]["conditions"][0]["message"],
        "1/2 clusters ready; b: timed out"
    );
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", ready)]))
        .expect("aggregate");
    assert_eq!(aggregated["status"]["conditions"][0]["status"], "True");
    let dependencies = interpreter.get_dependencies(&object).expect("dependencies");
    let names: Vec<(&str, &str, &str)> = dependencies
        .iter()
        .map(|d| (d.kind.as_str(), d.namespace.as_str(), d.name.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("HelmRepository", "flux-system", "podinfo"),
            ("ConfigMap", "apps", "podinfo-values"),
            ("Secret", "apps", "podinfo-secrets"),
            ("ServiceAccount", "apps", "flux-apps")
        ]
    );
}

#[test]
fn volcano_job() {
    let interpreter = Interpreter::with_bundled();
    let object = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "generation": 1},
        "spec": {"minAvailable": 3, "tasks": [{"name": "ps", "replicas": 1, "template": pod_template()},
                                              {"name": "worker", "replicas": 2, "template": pod_template()}]}});
    let info = interpreter.get_replicas(&object).expect("replicas");
    assert_eq!(info.replicas, 3);
    let components = interpreter.get_components(&object).expect("components");
    assert_eq!(
        components
            .iter()
            .map(|c| (c.name.as_str(), c.replicas))
            .collect::<Vec<_>>(),
        vec![("ps", 1), ("worker", 2)]
    );
    assert!(components[0].replica_requirements.is_some());
    let mut member = object.clone();
    member["status"] = json!({"state": {"phase": "Running"}, "running": 3, "minAvailable": 3});
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Healthy
    );
    let running = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    member["status"] = json!({"state": {"phase": "Failed"}, "failed": 1});
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Unhealthy
    );
    let failed = interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status");
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", running), ("b", failed)]))
        .expect("aggregate");
    assert_eq!(aggregated["status"]["running"], 3);
    assert_eq!(aggregated["status"]["failed"], 1);
    assert_eq!(aggregated["status"]["state"]["phase"], "Failed");
    let dependencies = interpreter.get_dependencies(&object).expect("dependencies");
    assert_eq!(
        dependencies.len(),
        2,
        "duplicates across tasks are merged: {dependencies:?}"
    );
}
