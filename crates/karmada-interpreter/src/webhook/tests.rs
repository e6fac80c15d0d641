//! The webhook layer against a caller that answers in process as a webhook for `Workload` would.

use std::sync::{Arc, Mutex};

use base64::Engine;
use karmada_api::config::{
    ResourceInterpreterWebhook, ResourceInterpreterWebhookConfiguration, RuleWithOperations,
};
use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
use serde_json::{Value, json};

use super::{CONTEXT_API_VERSION, WebhookCaller, WebhookInterpreter};
use crate::{InterpretError, Interpreter, Operation, Target};

/// Answers contexts for `Workload`s and records what it was sent.
#[derive(Default)]
struct WorkloadWebhook {
    seen: Mutex<Vec<(String, Value)>>,
    fail_with: Option<String>,
}

fn patch(operations: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(operations.to_string())
}

impl WebhookCaller for WorkloadWebhook {
    fn call(&self, webhook: &ResourceInterpreterWebhook, context: &Value) -> Result<Value, String> {
        self.seen
            .lock()
            .expect("lock")
            .push((webhook.name.clone(), context.clone()));
        if let Some(message) = &self.fail_with {
            return Err(message.clone());
        }
        let request = &context["request"];
        let object = &request["object"];
        let mut response = json!({"uid": request["uid"], "successful": true});
        match request["operation"].as_str().unwrap_or_default() {
            "InterpretReplica" => {
                response["replicas"] = object["spec"]["replicas"].clone();
                response["replicaRequirements"] = json!({"resourceRequest": {"cpu": "250m"}});
            }
            "ReviseReplica" => {
                response["patchType"] = json!("JSONPatch");
                response["patch"] = json!(patch(
                    json!([{"op": "replace", "path": "/spec/replicas", "value": request["replicas"]}])
                ));
            }
            "Retain" => {
                response["patchType"] = json!("JSONPatch");
                response["patch"] = json!(patch(json!([{"op": "replace", "path": "/spec/paused",
                                                        "value": request["observedObject"]["spec"]["paused"]}])));
            }
            "AggregateStatus" => {
                let ready: i64 = request["aggregatedStatus"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|item| item["status"]["readyReplicas"].as_i64())
                    .sum();
                response["patchType"] = json!("JSONPatch");
                response["patch"] = json!(patch(
                    json!([{"op": "add", "path": "/status", "value": {"readyReplicas": ready}}])
                ));
            }
            "InterpretStatus" => response["rawStatus"] = object["status"].clone(),
            "InterpretHealth" => {
                response["healthy"] =
                    json!(object["status"]["readyReplicas"] == object["spec"]["replicas"]);
            }
            "InterpretDependency" => {
                response["dependencies"] = json!([{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "apps",
                                                   "name": object["spec"]["config"]}]);
            }
            other => {
                return Ok(
                    json!({"response": {"uid": request["uid"], "successful": false,
                                                   "status": {"message": format!("{other} is not served"), "code": 400}}}),
                );
            }
        }
        Ok(
            json!({"apiVersion": CONTEXT_API_VERSION, "kind": "ResourceInterpreterContext", "response": response}),
        )
    }
}

fn configuration(
    name: &str,
    webhook: &str,
    operations: &[&str],
    versions: &[&str],
) -> ResourceInterpreterWebhookConfiguration {
    let list = |values: &[&str]| values.iter().map(|v| (*v).to_string()).collect();
    let mut configuration = ResourceInterpreterWebhookConfiguration {
        webhooks: vec![ResourceInterpreterWebhook {
            name: webhook.to_string(),
            rules: vec![RuleWithOperations {
                operations: list(operations),
                api_groups: list(&["workload.example.io"]),
                api_versions: list(&["v1alpha1"]),
                kinds: list(&["Workload"]),
            }],
            interpreter_context_versions: list(versions),
            ..Default::default()
        }],
        ..Default::default()
    };
    configuration.metadata.name = Some(name.to_string());
    configuration
}

fn workload() -> Value {
    json!({"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload",
           "metadata": {"name": "web", "namespace": "apps"},
           "spec": {"replicas": 6, "paused": false, "config": "web-config"}, "status": {"readyReplicas": 6}})
}

fn interpreter(
    caller: Arc<WorkloadWebhook>,
    configurations: &[ResourceInterpreterWebhookConfiguration],
) -> Interpreter {
    let layer = WebhookInterpreter::new(caller);
    layer.load(configurations);
    Interpreter::with_bundled().with_webhooks(Arc::new(layer))
}

#[test]
fn every_operation_is_answered_by_the_webhook() {
    let caller = Arc::new(WorkloadWebhook::default());
    let interpreter = interpreter(
        Arc::clone(&caller),
        &[configuration(
            "workloads",
            "workloads.example.io",
            &["*"],
            &["v1alpha1"],
        )],
    );
    let object = workload();

    let replicas = interpreter.get_replicas(&object).expect("replicas");
    assert_eq!(replicas.replicas, 6);
    assert_eq!(
        replicas
            .requirements
            .expect("requirements")
            .resource_request["cpu"]
            .0,
        "250m"
    );
    assert_eq!(
        interpreter.revise_replica(&object, 4).expect("revised")["spec"]["replicas"],
        4
    );
    let mut observed = object.clone();
    observed["spec"]["paused"] = json!(true);
    assert_eq!(
        interpreter.retain(&object, &observed).expect("retained")["spec"]["paused"],
        true
    );
    let items = [("member1", 4), ("member2", 1)].map(|(cluster, ready)| AggregatedStatusItem {
        cluster_name: cluster.to_string(),
        status: Some(json!({"readyReplicas": ready})),
        applied: true,
        ..Default::default()
    });
    assert_eq!(
        interpreter
            .aggregate_status(&object, &items)
            .expect("aggregated")["status"],
        json!({"readyReplicas": 5})
    );
    assert_eq!(
        interpreter.reflect_status(&object),
        Ok(Some(json!({"readyReplicas": 6})))
    );
    assert_eq!(
        interpreter.interpret_health(&object),
        ResourceHealth::Healthy
    );
    let mut degraded = object.clone();
    degraded["status"]["readyReplicas"] = json!(2);
    assert_eq!(
        interpreter.interpret_health(&degraded),
        ResourceHealth::Unhealthy
    );
    let dependencies = interpreter.get_dependencies(&object).expect("dependencies");
    assert_eq!(dependencies.len(), 1);
    assert_eq!(
        (dependencies[0].kind.as_str(), dependencies[0].name.as_str()),
        ("ConfigMap", "web-config")
    );

    let seen = caller.seen.lock().expect("lock");
    let operations: Vec<&str> = seen
        .iter()
        .map(|(_, c)| c["request"]["operation"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        operations,
        [
            "InterpretReplica",
            "ReviseReplica",
            "Retain",
            "AggregateStatus",
            "InterpretStatus",
            "InterpretHealth",
            "InterpretHealth",
            "InterpretDependency"
        ]
    );
    let revise = &seen[1].1["request"];
    assert_eq!(
        (revise["replicas"].clone(), revise["namespace"].clone()),
        (json!(4), json!("apps"))
    );
    assert_eq!(
        seen[3].1["request"]["aggregatedStatus"][1]["clusterName"],
        "member2"
    );
    let uids: std::collections::BTreeSet<&str> = seen
        .iter()
        .filter_map(|(_, c)| c["request"]["uid"].as_str())
        .collect();
    assert_eq!(uids.len(), seen.len(), "each call has its own uid");
}

#[test]
fn rules_decide_which_operations_and_kinds_reach_the_webhook() {
    let caller = Arc::new(WorkloadWebhook::default());
    let interpreter = interpreter(
        Arc::clone(&caller),
        &[configuration(
            "workloads",
            "w.example.io",
            &["InterpretReplica"],
            &["v1alpha1"],
        )],
    );
    let target = Target::new("workload.example.io/v1alpha1", "Workload");
    assert!(interpreter.hook_enabled(&target, Operation::InterpretReplica));
    assert!(!interpreter.hook_enabled(&target, Operation::ReviseReplica));
    // An unclaimed operation keeps its default; a native kind stays native.
    assert_eq!(interpreter.revise_replica(&workload(), 2), Ok(workload()));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
    assert_eq!(
        interpreter.get_replicas(&deployment).map(|r| r.replicas),
        Ok(3)
    );
    assert_eq!(caller.seen.lock().expect("lock").len(), 0);
}

#[test]
fn configurations_are_taken_in_name_order() {
    let caller = Arc::new(WorkloadWebhook::default());
    let interpreter = interpreter(
        Arc::clone(&caller),
        &[
            configuration("b-second", "second.example.io", &["*"], &["v1alpha1"]),
            configuration("a-first", "first.example.io", &["*"], &["v1alpha1"]),
        ],
    );
    interpreter.get_replicas(&workload()).expect("replicas");
    assert_eq!(caller.seen.lock().expect("lock")[0].0, "first.example.io");
}

#[test]
fn failures_name_the_webhook_and_the_cause() {
    let caller = Arc::new(WorkloadWebhook {
        fail_with: Some("connection refused".into()),
        ..Default::default()
    });
    let interpreter = interpreter(
        caller,
        &[configuration(
            "workloads",
            "w.example.io",
            &["*"],
            &["v1alpha1"],
        )],
    );
    let err = interpreter
        .get_replicas(&workload())
        .expect_err("unreachable");
    assert!(
        matches!(&err, InterpretError::Webhook { operation, message, .. }
                     if operation == "InterpretReplica (webhook w.example.io)" && message == "connection refused"),
        "{err}"
    );
    assert_eq!(
        interpreter.interpret_health(&workload()),
        ResourceHealth::Unknown
    );

    let interpreter = self::interpreter(
        Arc::new(WorkloadWebhook::default()),
        &[configuration("workloads", "w.example.io", &["*"], &["v2"])],
    );
    let err = interpreter
        .get_replicas(&workload())
        .expect_err("version")
        .to_string();
    assert!(
        err.contains("interpreterContextVersions") && err.contains("v1alpha1"),
        "{err}"
    );
}
