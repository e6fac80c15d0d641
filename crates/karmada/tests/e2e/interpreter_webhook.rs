//! An interpreter webhook end to end: a Workload CRD is taught to Karmada by a
//! ResourceInterpreterWebhookConfiguration pointing at an HTTPS webhook this test serves (its own CA in the
//! configuration's caBundle), and goes through the same division, aggregation and failover as the Lua-taught
//! kind in `interpreter.rs`.

use std::sync::{Arc, Mutex};

use apiserver_auth::authn::Authenticator;
use apiserver_auth::pki::Pki;
use axum::Router;
use axum::routing::post;
use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::interpreter::{Kind, apply_text, divides_aggregates_and_fails_over};
use crate::plane::Plane;

const WORKLOAD: Kind = Kind {
    group_version: "workload.example.io/v1alpha1",
    kind: "Workload",
    resource: "workloads.workload.example.io",
    crd_fixture: "interpreter/workload-crd.yaml",
};

const OPERATIONS: [&str; 5] = [
    "InterpretReplica",
    "ReviseReplica",
    "InterpretStatus",
    "AggregateStatus",
    "InterpretHealth",
];

fn json_patch(operations: Value) -> Value {
    json!(base64::engine::general_purpose::STANDARD.encode(operations.to_string()))
}

/// The Workload's interpreter, as its author would write the webhook: the response to one context.
fn interpret(context: &Value) -> Value {
    let request = &context["request"];
    let object = &request["object"];
    let mut response = json!({"uid": request["uid"], "successful": true});
    match request["operation"].as_str().unwrap_or_default() {
        "InterpretReplica" => {
            response["replicas"] = object["spec"]["replicas"].clone();
            let requests =
                &object["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"];
            response["replicaRequirements"] = json!({"resourceRequest": requests});
        }
        "ReviseReplica" => {
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json_patch(
                json!([{"op": "replace", "path": "/spec/replicas", "value": request["replicas"]}]),
            );
        }
        "InterpretStatus" => response["rawStatus"] = object["status"].clone(),
        "AggregateStatus" => {
            let items = request["aggregatedStatus"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let sum = |field: &str| -> i64 {
                items
                    .iter()
                    .filter_map(|i| i["status"][field].as_i64())
                    .sum()
            };
            let selector = items
                .iter()
                .find_map(|i| i["status"]["labelSelector"].as_str())
                .unwrap_or_default();
            let status = json!({"replicas": sum("replicas"), "readyReplicas": sum("readyReplicas"),
                                "availableReplicas": sum("availableReplicas"), "labelSelector": selector});
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json_patch(json!([{"op": "add", "path": "/status", "value": status}]));
        }
        "InterpretHealth" => {
            let wanted = object["spec"]["replicas"].as_i64().unwrap_or_default();
            let available = object["status"]["availableReplicas"]
                .as_i64()
                .unwrap_or_default();
            response["healthy"] = json!(available >= wanted);
        }
        other => {
            response["successful"] = json!(false);
            response["status"] = json!({"message": format!("{other} is not served"), "code": 400});
        }
    }
    json!({"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterContext", "response": response})
}

/// The webhook server: HTTPS on loopback with a certificate of its own CA; records the operations asked.
struct Webhook {
    _runtime: tokio::runtime::Runtime,
    cancel: CancellationToken,
    url: String,
    ca_pem: String,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn start_webhook(dir: &std::path::Path) -> Webhook {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let cancel = CancellationToken::new();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let pki = Pki::load_or_create(dir, &[]).expect("webhook pki");
    let tls = apiserver_auth::tls::server_config(&pki).expect("tls");
    let record = Arc::clone(&asked);
    let router = Router::new().route(
        "/interpret",
        post(move |body: String| {
            let record = Arc::clone(&record);
            async move {
                let context: Value = serde_json::from_str(&body).unwrap_or_default();
                record.lock().expect("lock").push(
                    context["request"]["operation"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                );
                (
                    [(http::header::CONTENT_TYPE, "application/json")],
                    interpret(&context).to_string(),
                )
            }
        }),
    );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    runtime.spawn(karmada_apiserver::serve::serve(
        listener,
        Some(tls),
        Arc::new(Authenticator::new(None)),
        router,
        cancel.clone(),
    ));
    Webhook {
        _runtime: runtime,
        cancel,
        url: format!("https://127.0.0.1:{port}/interpret"),
        ca_pem: pki.ca_cert_pem().to_string(),
        asked,
    }
}

#[test]
fn a_crd_taught_by_a_webhook_divides_aggregates_and_fails_over() {
    let plane = Plane::start_with(&["member1", "member2"], &["--enable-failover"]);
    let webhook = start_webhook(&plane.karmada.dir.path().join("webhook-pki"));
    let configuration = json!({
        "apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterWebhookConfiguration",
        "metadata": {"name": "workloads"},
        "webhooks": [{
            "name": "workloads.example.io",
            "rules": [{"operations": OPERATIONS, "apiGroups": ["workload.example.io"],
                       "apiVersions": ["v1alpha1"], "kinds": ["Workload"]}],
            "clientConfig": {"url": webhook.url,
                             "caBundle": base64::engine::general_purpose::STANDARD.encode(&webhook.ca_pem)},
            "interpreterContextVersions": ["v1alpha1"],
            "timeoutSeconds": 5,
        }],
    });
    divides_aggregates_and_fails_over(&plane, &WORKLOAD, || {
        apply_text(&plane, None, "webhook.json", &configuration.to_string());
    });
    let asked = webhook.asked.lock().expect("lock").clone();
    for operation in OPERATIONS {
        assert!(
            asked.iter().any(|a| a == operation),
            "{operation} never asked: {asked:?}"
        );
    }
}
