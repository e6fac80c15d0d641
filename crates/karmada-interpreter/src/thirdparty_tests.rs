//! Every operation of each bundled customization beyond CloneSet (tested beside the layer), on objects shaped as
//! their controllers write them.

use apimachinery::quantity::Quantity;
use karmada_api::work::ReplicaRequirements;
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
    // The template says false: it decides (a `flux resume` on the member must not pin the release).
    assert_eq!(
        interpreter.retain(&object, &observed).expect("retain")["spec"]["suspend"],
        false
    );
    let mut unset = object.clone();
    unset["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("suspend");
    assert_eq!(
        interpreter.retain(&unset, &observed).expect("retain")["spec"]["suspend"],
        true,
        "a template without suspend keeps the member's"
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

/// The references as sorted (kind, namespace, name) triples.
fn references(interpreter: &Interpreter, object: &Value) -> Vec<(String, String, String)> {
    let mut found: Vec<_> = interpreter
        .get_dependencies(object)
        .expect("dependencies")
        .into_iter()
        .map(|d| (d.kind, d.namespace, d.name))
        .collect();
    found.sort();
    found
}

fn triples(expected: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    let mut expected: Vec<_> = expected
        .iter()
        .map(|(k, ns, n)| ((*k).to_string(), (*ns).to_string(), (*n).to_string()))
        .collect();
    expected.sort();
    expected
}

fn reflected(interpreter: &Interpreter, object: &Value, status: Value) -> Value {
    let mut member = object.clone();
    member["status"] = status;
    interpreter
        .reflect_status(&member)
        .expect("reflect")
        .expect("status")
}

fn workflow() -> Value {
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
        "metadata": {"name": "etl", "namespace": "data", "generation": 1},
        "spec": {"entrypoint": "main", "serviceAccountName": "etl-runner",
                 "executor": {"serviceAccountName": "etl-executor"},
                 "workflowTemplateRef": {"name": "etl-base"},
                 "artifactRepositoryRef": {"key": "s3"},
                 "arguments": {"parameters": [{"name": "day", "valueFrom": {"configMapKeyRef": {"name": "etl-params", "key": "day"}}}]},
                 "volumes": [{"name": "conf", "configMap": {"name": "etl-conf"}}],
                 "volumeClaimTemplates": [{"metadata": {"name": "workdir"}}],
                 "templates": [
                     {"name": "main", "steps": [[{"name": "extract", "templateRef": {"name": "extractors", "template": "s3"}}],
                                                [{"name": "load", "template": "load"}]]},
                     {"name": "fan", "dag": {"tasks": [{"name": "notify", "templateRef": {"name": "notifiers", "template": "slack", "clusterScope": true}}]}},
                     {"name": "load", "container": {"image": "loader", "env": [{"name": "DB", "valueFrom": {"secretKeyRef": {"name": "db-creds", "key": "url"}}}]},
                      "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "etl-cache"}}]},
                     {"name": "report", "script": {"image": "python", "source": "print(1)", "envFrom": [{"configMapRef": {"name": "report-env"}}]},
                      "serviceAccountName": "reporter"}]}})
}

#[test]
fn argo_workflow() {
    let interpreter = Interpreter::with_bundled();
    let object = workflow();
    assert_eq!(
        interpreter
            .get_replicas(&object)
            .expect("replicas")
            .replicas,
        0,
        "a workflow runs once: nothing to divide"
    );

    let mut observed = object.clone();
    observed["spec"]["suspend"] = json!(true);
    observed["spec"]["shutdown"] = json!("Stop");
    let retained = interpreter.retain(&object, &observed).expect("retain");
    assert_eq!(
        retained["spec"]["suspend"], true,
        "argo suspend on a member"
    );
    assert_eq!(
        retained["spec"]["shutdown"], "Stop",
        "argo stop on a member"
    );
    let mut resumed = object.clone();
    resumed["spec"]["suspend"] = json!(false);
    assert_eq!(
        interpreter.retain(&resumed, &observed).expect("retain")["spec"]["suspend"],
        false,
        "a template that sets suspend decides"
    );

    for (phase, healthy) in [
        (None, false),
        (Some("Pending"), true),
        (Some("Running"), true),
        (Some("Succeeded"), true),
        (Some("Failed"), false),
        (Some("Error"), false),
    ] {
        let mut member = object.clone();
        if let Some(phase) = phase {
            member["status"] = json!({"phase": phase});
        }
        let want = if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        };
        assert_eq!(interpreter.interpret_health(&member), want, "{phase:?}");
    }

    let running = reflected(
        &interpreter,
        &object,
        json!({"phase": "Running", "progress": "1/3", "startedAt": "2026-12-06T05:00:00Z",
               "nodes": {"etl": {"phase": "Running", "type": "Steps"}, "etl-1": {"phase": "Succeeded", "type": "Pod"},
                         "etl-2": {"phase": "Running", "type": "Pod"}}}),
    );
    assert_eq!(running["nodePhases"], json!({"Running": 2, "Succeeded": 1}));
    assert_eq!(
        running.get("nodes"),
        None,
        "the node map stays in the member"
    );
    let done = reflected(
        &interpreter,
        &object,
        json!({"phase": "Succeeded", "progress": "3/3", "startedAt": "2026-12-06T04:00:00Z",
               "finishedAt": "2026-12-06T04:30:00Z"}),
    );
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", running), ("b", done.clone())]))
        .expect("aggregate");
    assert_eq!(
        aggregated["status"],
        json!({"phase": "Running", "progress": "4/6", "startedAt": "2026-12-06T04:00:00Z"}),
        "not finished while a member runs"
    );
    let mut later = done.clone();
    later["finishedAt"] = json!("2026-12-06T05:10:00Z");
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", later), ("b", done.clone())]))
        .expect("aggregate");
    assert_eq!(aggregated["status"]["phase"], "Succeeded");
    assert_eq!(aggregated["status"]["finishedAt"], "2026-12-06T05:10:00Z");
    let failed = reflected(
        &interpreter,
        &object,
        json!({"phase": "Failed", "message": "child 'etl-2' failed", "progress": "2/3"}),
    );
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", done), ("b", failed)]))
        .expect("aggregate");
    assert_eq!(aggregated["status"]["phase"], "Failed");
    assert_eq!(aggregated["status"]["message"], "b: child 'etl-2' failed");

    assert_eq!(
        references(&interpreter, &object),
        triples(&[
            ("ServiceAccount", "data", "etl-runner"),
            ("ServiceAccount", "data", "etl-executor"),
            ("ServiceAccount", "data", "reporter"),
            ("WorkflowTemplate", "data", "etl-base"),
            ("WorkflowTemplate", "data", "extractors"),
            ("ClusterWorkflowTemplate", "", "notifiers"),
            ("ConfigMap", "data", "etl-params"),
            ("ConfigMap", "data", "etl-conf"),
            ("ConfigMap", "data", "report-env"),
            ("ConfigMap", "data", "artifact-repositories"),
            ("Secret", "data", "db-creds"),
            ("PersistentVolumeClaim", "data", "etl-cache"),
        ]),
        "claims from volumeClaimTemplates are the controller's"
    );
}

fn kustomization() -> Value {
    json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system", "generation": 2},
        "spec": {"interval": "10m", "path": "./apps", "prune": true, "serviceAccountName": "kustomize-apps",
                 "sourceRef": {"kind": "GitRepository", "name": "fleet", "namespace": "shared"},
                 "dependsOn": [{"name": "infra"}],
                 "decryption": {"provider": "sops", "secretRef": {"name": "sops-age"}},
                 "postBuild": {"substitute": {"env": "prod"},
                               "substituteFrom": [{"kind": "ConfigMap", "name": "cluster-vars", "optional": true},
                                                  {"kind": "Secret", "name": "cluster-secrets"}]}}})
}

fn ready(status: &str, generation: i64, revision: &str) -> Value {
    json!({"observedGeneration": generation, "lastAppliedRevision": revision, "lastAttemptedRevision": revision,
           "conditions": [{"type": "Ready", "status": status, "reason": "ReconciliationSucceeded",
                           "message": format!("Applied revision: {revision}")}]})
}

#[test]
fn flux_kustomization() {
    let interpreter = Interpreter::with_bundled();
    let object = kustomization();
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
        true,
        "flux suspend on a member"
    );
    let mut resumed = object.clone();
    resumed["spec"]["suspend"] = json!(false);
    assert_eq!(
        interpreter.retain(&resumed, &observed).expect("retain")["spec"]["suspend"],
        false,
        "a template that sets suspend decides"
    );

    let stale_failed =
        json!({"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "False"}]});
    for (case, suspend, status, healthy) in [
        ("ready", false, ready("True", 2, "main@sha1:1"), true),
        ("not ready", false, ready("False", 2, "main@sha1:1"), false),
        (
            "reconciling",
            false,
            ready("Unknown", 2, "main@sha1:1"),
            false,
        ),
        ("behind", false, ready("True", 1, "main@sha1:1"), false),
        ("no status", false, Value::Null, false),
        ("suspended", true, stale_failed, true),
    ] {
        let mut member = object.clone();
        member["spec"]["suspend"] = json!(suspend);
        if !status.is_null() {
            member["status"] = status;
        }
        let want = if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        };
        assert_eq!(interpreter.interpret_health(&member), want, "{case}");
    }

    let a = reflected(&interpreter, &object, ready("True", 2, "main@sha1:2"));
    assert_eq!(a["generation"], 2);
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", a.clone()), ("b", a.clone())]))
        .expect("aggregate");
    assert_eq!(
        aggregated["status"]["conditions"][0]["message"],
        "2/2 clusters ready"
    );
    assert_eq!(aggregated["status"]["conditions"][0]["status"], "True");
    assert_eq!(aggregated["status"]["lastAppliedRevision"], "main@sha1:2");
    assert_eq!(aggregated["status"]["observedGeneration"], 2);

    let mut failing = object.clone();
    failing["spec"]["suspend"] = json!(true);
    let mut b_status = ready("False", 1, "main@sha1:1");
    b_status["conditions"][0]["message"] = json!("kustomize build failed");
    let b = reflected(&interpreter, &failing, b_status);
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", a), ("b", b)]))
        .expect("aggregate");
    assert_eq!(aggregated["status"]["conditions"][0]["status"], "False");
    assert_eq!(
        aggregated["status"]["conditions"][0]["message"],
        "1/2 clusters ready (1 suspended); b: kustomize build failed"
    );
    assert_eq!(
        aggregated["status"].get("lastAppliedRevision"),
        None,
        "members applied different revisions"
    );
    assert_eq!(
        aggregated["status"].get("observedGeneration"),
        None,
        "a member behind holds observedGeneration back"
    );

    assert_eq!(
        references(&interpreter, &object),
        triples(&[
            ("GitRepository", "shared", "fleet"),
            ("Kustomization", "flux-system", "infra"),
            ("Secret", "flux-system", "sops-age"),
            ("ServiceAccount", "flux-system", "kustomize-apps"),
            ("ConfigMap", "flux-system", "cluster-vars"),
            ("Secret", "flux-system", "cluster-secrets"),
        ])
    );
    let mut remote = object.clone();
    remote["spec"]["kubeConfig"] = json!({"secretRef": {"name": "prod-kubeconfig"}});
    let found = references(&interpreter, &remote);
    assert!(found.contains(&triples(&[("Secret", "flux-system", "prod-kubeconfig")])[0]));
    assert!(
        !found.iter().any(|(kind, _, _)| kind == "ServiceAccount"),
        "with a kubeConfig the account lives in the remote cluster: {found:?}"
    );
}

fn replica_template(cpu: &str, secret: &str) -> Value {
    json!({"spec": {"containers": [{"name": "pytorch", "image": "trainer",
                                    "resources": {"requests": {"cpu": cpu, "nvidia.com/gpu": "1"}},
                                    "envFrom": [{"secretRef": {"name": secret}}]}]}})
}

fn pytorch_job() -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "ml", "generation": 1},
        "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                 "pytorchReplicaSpecs": {
                     "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": replica_template("1", "hf-token")},
                     "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": replica_template("4", "s3-creds")}}}})
}

fn condition(kind: &str, status: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": format!("PyTorchJob{kind}"), "message": message,
           "lastTransitionTime": "2026-12-06T05:00:00Z"})
}

#[test]
fn kubeflow_pytorch_job() {
    let interpreter = Interpreter::with_bundled();
    let object = pytorch_job();
    let info = interpreter.get_replicas(&object).expect("replicas");
    assert_eq!(info.replicas, 4, "one Master and three Workers");
    assert_eq!(
        requests(&info.requirements.expect("requirements")).0,
        4.0,
        "sized by a Worker"
    );
    let components = interpreter.get_components(&object).expect("components");
    let sizes: Vec<(&str, i32, f64)> = components
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.replicas,
                component_requests(c.replica_requirements.as_ref()).0,
            )
        })
        .collect();
    assert_eq!(sizes, vec![("Master", 1, 1.0), ("Worker", 3, 4.0)]);
    assert_eq!(
        interpreter.revise_replica(&object, 2).expect("revise"),
        object,
        "a training job is not divided"
    );

    for (case, conditions, healthy) in [
        ("no status", None, false),
        (
            "created",
            Some(vec![condition("Created", "True", "")]),
            true,
        ),
        (
            "running",
            Some(vec![
                condition("Created", "True", ""),
                condition("Running", "True", ""),
            ]),
            true,
        ),
        (
            "succeeded",
            Some(vec![
                condition("Running", "False", ""),
                condition("Succeeded", "True", ""),
            ]),
            true,
        ),
        (
            "failed",
            Some(vec![
                condition("Running", "False", ""),
                condition("Failed", "True", "Worker 2 exited"),
            ]),
            false,
        ),
    ] {
        let mut member = object.clone();
        if let Some(conditions) = conditions {
            member["status"] = json!({"conditions": conditions});
        }
        let want = if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        };
        assert_eq!(interpreter.interpret_health(&member), want, "{case}");
    }

    let running = reflected(
        &interpreter,
        &object,
        json!({"conditions": [condition("Created", "True", ""), condition("Running", "True", "training")],
               "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 3}},
               "startTime": "2026-12-06T05:00:00Z", "lastReconcileTime": "2026-12-06T05:01:00Z"}),
    );
    assert_eq!(running.get("lastReconcileTime"), None);
    let succeeded = reflected(
        &interpreter,
        &object,
        json!({"conditions": [condition("Running", "False", ""), condition("Succeeded", "True", "done")],
               "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"succeeded": 3}},
               "startTime": "2026-12-06T04:00:00Z", "completionTime": "2026-12-06T04:50:00Z"}),
    );
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", running), ("b", succeeded.clone())]))
        .expect("aggregate");
    let status = &aggregated["status"];
    assert_eq!(status["conditions"][0]["type"], "Running");
    assert_eq!(status["conditions"][0]["message"], "a: training");
    assert_eq!(
        status["replicaStatuses"]["Worker"],
        json!({"active": 3, "succeeded": 3, "failed": 0})
    );
    assert_eq!(status["startTime"], "2026-12-06T04:00:00Z");
    assert_eq!(status.get("completionTime"), None, "a member still trains");
    let aggregated = interpreter
        .aggregate_status(
            &object,
            &items(&[("a", succeeded.clone()), ("b", succeeded)]),
        )
        .expect("aggregate");
    assert_eq!(aggregated["status"]["conditions"][0]["type"], "Succeeded");
    assert_eq!(
        aggregated["status"]["completionTime"],
        "2026-12-06T04:50:00Z"
    );

    assert_eq!(
        references(&interpreter, &object),
        triples(&[("Secret", "ml", "hf-token"), ("Secret", "ml", "s3-creds")])
    );
}

fn flink_deployment() -> Value {
    json!({"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "clicks", "namespace": "stream", "generation": 2},
        "spec": {"image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
                 "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2",
                                        "kubernetes.secrets": "s3-creds:/opt/s3, tls:/opt/tls",
                                        "kubernetes.container.image.pull-secrets": "regcred;mirror"},
                 "podTemplate": {"apiVersion": "v1", "kind": "Pod",
                                 "spec": {"nodeSelector": {"pool": "stream"},
                                          "containers": [{"name": "flink-main-container", "envFrom": [{"secretRef": {"name": "kafka-creds"}}]},
                                                         {"name": "log-shipper", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}},
                 "jobManager": {"resource": {"cpu": 1, "memory": "2048m"}},
                 "taskManager": {"resource": {"cpu": 1.5, "memory": "4g"},
                                 "podTemplate": {"spec": {"volumes": [{"name": "udf", "configMap": {"name": "udfs"}}]}}},
                 "job": {"jarURI": "local:///opt/flink/usrlib/clicks.jar", "parallelism": 4, "upgradeMode": "savepoint", "state": "running"}}})
}

/// The cpu and memory one replica requests, as numbers (0 when absent).
fn component_requests(requirements: Option<&Value>) -> (f64, f64) {
    let amount = |name: &str| {
        requirements
            .and_then(|r| r["resourceRequest"][name].as_str())
            .map_or(0.0, |q| Quantity::parse(q).expect("quantity").as_f64())
    };
    (amount("cpu"), amount("memory"))
}

fn requests(requirements: &ReplicaRequirements) -> (f64, f64) {
    component_requests(Some(&serde_json::to_value(requirements).expect("json")))
}

#[test]
fn flink_deployment_sizes() {
    const MI: f64 = 1024.0 * 1024.0;
    let interpreter = Interpreter::with_bundled();
    let object = flink_deployment();
    let info = interpreter.get_replicas(&object).expect("replicas");
    assert_eq!(
        info.replicas, 3,
        "one JobManager and parallelism 4 over 2 slots"
    );
    let requirements = info.requirements.expect("requirements");
    assert_eq!(
        requests(&requirements),
        (1.6, 4096.0 * MI + 64.0 * MI),
        "a TaskManager, with the shared template's sidecar"
    );
    assert_eq!(
        requirements
            .node_claim
            .expect("node claim")
            .node_selector
            .get("pool")
            .map(String::as_str),
        Some("stream")
    );
    let components = interpreter.get_components(&object).expect("components");
    let sizes: Vec<(&str, i32, (f64, f64))> = components
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.replicas,
                component_requests(c.replica_requirements.as_ref()),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        vec![
            ("jobmanager", 1, (1.1, 2048.0 * MI + 64.0 * MI)),
            ("taskmanager", 2, (1.6, 4096.0 * MI + 64.0 * MI))
        ]
    );

    // Flink's memory syntax is binary; what it cannot read is a Kubernetes quantity.
    for (memory, bytes) in [
        ("2048m", 2048.0 * MI),
        ("2048M", 2048.0 * MI),
        ("2 gb", 2048.0 * MI),
        ("512k", 512.0 * 1024.0),
        ("1073741824", 1024.0 * MI),
        ("1t", 1024.0 * 1024.0 * MI),
        ("2Gi", 2048.0 * MI),
        ("2gib", 2048.0 * MI),
        ("1.5g", 1.5e9),
    ] {
        let mut sized = object.clone();
        sized["spec"]["podTemplate"] = Value::Null;
        sized["spec"]["taskManager"] =
            json!({"replicas": 1, "resource": {"cpu": 0.1, "memory": memory}});
        let requirements = interpreter
            .get_replicas(&sized)
            .expect("replicas")
            .requirements
            .expect("requirements");
        assert_eq!(requests(&requirements), (0.1, bytes), "{memory}");
    }

    let mut session = object.clone();
    session["spec"]["job"] = Value::Null;
    session["spec"]["jobManager"]["replicas"] = json!(2);
    let info = interpreter.get_replicas(&session).expect("replicas");
    assert_eq!(info.replicas, 2, "a session cluster starts no TaskManager");
    assert_eq!(
        requests(&info.requirements.expect("requirements")).0,
        1.1,
        "sized by a JobManager then"
    );

    let mut kubernetes_style = object.clone();
    kubernetes_style["spec"]["podTemplate"] = Value::Null;
    kubernetes_style["spec"]["taskManager"]["resources"] =
        json!({"requests": {"cpu": "3"}, "limits": {"cpu": "4", "memory": "8Gi"}});
    assert_eq!(
        requests(
            &interpreter
                .get_replicas(&kubernetes_style)
                .expect("replicas")
                .requirements
                .expect("requirements")
        ),
        (3.0, 8192.0 * MI),
        "resources wins over resource, a request over a limit"
    );
}

#[test]
fn flink_deployment_state() {
    let interpreter = Interpreter::with_bundled();
    let object = flink_deployment();
    let stable = json!({"lifecycleState": "STABLE", "jobManagerDeploymentStatus": "READY",
                        "jobStatus": {"state": "RUNNING", "jobName": "clicks", "jobId": "a1", "startTime": "1764990000000"},
                        "taskManager": {"replicas": 2, "labelSelector": "app=clicks"}, "observedGeneration": 2,
                        "reconciliationStatus": {"state": "DEPLOYED"}});
    for (case, patch, healthy) in [
        ("stable", json!({}), true),
        (
            "upgrading",
            json!({"lifecycleState": "UPGRADING", "jobManagerDeploymentStatus": "DEPLOYING",
                   "jobStatus": {"state": "RECONCILING"}}),
            true,
        ),
        (
            "lifecycle failed",
            json!({"lifecycleState": "FAILED"}),
            false,
        ),
        (
            "job failed",
            json!({"jobStatus": {"state": "FAILED"}}),
            false,
        ),
        (
            "jobmanager error",
            json!({"jobManagerDeploymentStatus": "ERROR"}),
            false,
        ),
    ] {
        let mut member = object.clone();
        member["status"] = stable.clone();
        for (field, value) in patch.as_object().expect("patch") {
            member["status"][field] = value.clone();
        }
        let want = if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        };
        assert_eq!(interpreter.interpret_health(&member), want, "{case}");
    }
    assert_eq!(
        interpreter.interpret_health(&object),
        ResourceHealth::Unhealthy,
        "no operator took it"
    );

    let a = reflected(&interpreter, &object, stable.clone());
    assert_eq!(a.get("reconciliationStatus"), None);
    let mut restarting = stable;
    restarting["lifecycleState"] = json!("UPGRADING");
    restarting["jobManagerDeploymentStatus"] = json!("DEPLOYING");
    restarting["jobStatus"] =
        json!({"state": "RESTARTING", "jobName": "clicks", "startTime": "1764900000000"});
    restarting["taskManager"] = json!({"replicas": 1});
    restarting["error"] = json!("TaskManager lost");
    let b = reflected(&interpreter, &object, restarting);
    let aggregated = interpreter
        .aggregate_status(&object, &items(&[("a", a), ("b", b)]))
        .expect("aggregate");
    assert_eq!(
        aggregated["status"],
        json!({"jobStatus": {"state": "RESTARTING", "jobName": "clicks", "startTime": "1764900000000"},
               "lifecycleState": "UPGRADING", "jobManagerDeploymentStatus": "DEPLOYING",
               "taskManager": {"replicas": 3}, "error": "b: TaskManager lost"})
    );

    assert_eq!(
        references(&interpreter, &object),
        triples(&[
            ("ServiceAccount", "stream", "flink"),
            ("Secret", "stream", "kafka-creds"),
            ("ConfigMap", "stream", "udfs"),
            ("Secret", "stream", "s3-creds"),
            ("Secret", "stream", "tls"),
            ("Secret", "stream", "regcred"),
            ("Secret", "stream", "mirror"),
        ])
    );
}
