//! API aggregation end to end: a small TLS server in the test plays an aggregated API
//! (`wardle.example.com/v1alpha1`, flunders); an APIService points the API server at it through
//! an ExternalName Service. kubectl then lists flunders through the API server, the backend
//! sees the caller in the front-proxy headers and never its credentials, discovery lists the
//! group, and APIServices whose backend is missing are unavailable and answer 503.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use apiserver_auth::authn::Authenticator;
use apiserver_auth::pki::Pki;
use axum::Router;
use axum::extract::Request;
use axum::routing::get;
use base64::Engine;
use http::HeaderMap;
use karmada_apiserver::{ApiServer, ApiServerOptions};
use serde_json::{Value, json};
use store::Store;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(60);
const GV: &str = "/apis/wardle.example.com/v1alpha1";

/// The backend's answer to a flunder list: one flunder recording the headers it was reached with.
fn flunders(headers: &HeaderMap) -> Value {
    let all = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "FlunderList", "metadata": {"resourceVersion": "1"},
        "items": [{
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "first-flunder", "namespace": "default",
                         "creationTimestamp": "2026-12-06T00:00:00Z",
                         "annotations": {
                             "seen-user": all("x-remote-user").join(","),
                             "seen-groups": all("x-remote-group").join(","),
                             "seen-authorization": all("authorization").join(","),
                         }},
        }],
    })
}

/// A JSON answer (axum's `Json` is not compiled in).
fn json_body(value: Value) -> ([(http::header::HeaderName, &'static str); 1], String) {
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
}

fn backend_router() -> Router {
    Router::new()
        .route(
            GV,
            get(|| async {
                json_body(json!({
                    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "wardle.example.com/v1alpha1",
                    "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": true,
                                   "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]}],
                }))
            }),
        )
        .route(
            &format!("{GV}/namespaces/{{namespace}}/flunders"),
            get(|request: Request| async move { json_body(flunders(request.headers())) }),
        )
}

/// The aggregated API: TLS with a certificate for `api.wardle.svc` from its own CA.
async fn start_backend(dir: &Path, cancel: &CancellationToken) -> Result<(u16, String)> {
    let pki = Pki::load_or_create(dir, &["api.wardle.svc".to_string()])?;
    let tls = apiserver_auth::tls::server_config(&pki)?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(karmada_apiserver::serve::serve(
        listener,
        Some(tls),
        Arc::new(Authenticator::new(None)),
        backend_router(),
        cancel.clone(),
    ));
    Ok((port, pki.ca_cert_pem().to_string()))
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value> {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())?;
    client
        .request::<Value>(request)
        .await
        .with_context(|| format!("{method} {path}"))
}

/// Polls the APIService until its Available condition has `status`; returns the condition.
async fn available(client: &kube::Client, name: &str, status: &str) -> Result<Value> {
    let path = format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}");
    tokio::time::timeout(DEADLINE, async {
        loop {
            if let Ok(object) = send(client, "GET", &path, None).await
                && let Some(condition) = object
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|all| all.iter().find(|c| c["type"] == "Available"))
                && condition["status"] == status
            {
                return condition.clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .with_context(|| format!("APIService {name} never Available={status}"))
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Result<(bool, String, String)> {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg(format!(
            "--cache-dir={}",
            kubeconfig.with_file_name("cache").display()
        ))
        .args(args)
        .output()
        .context("kubectl runs (scripts/setup.sh installs kubectl 1.32)")?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_api_through_the_api_server() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let cancel = CancellationToken::new();
    let (backend_port, backend_ca) = start_backend(&dir.path().join("backend"), &cancel).await?;

    let store: Arc<dyn Store> = Arc::new(store::memory::MemoryStore::new());
    let server = ApiServer::new(store, ApiServerOptions::default()).await?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(karmada_apiserver::serve::serve(
        listener,
        None,
        Arc::new(Authenticator::new(None)),
        karmada_apiserver::router(server.clone()),
        cancel.clone(),
    ));
    let mut config = kube::Config::new(format!("http://{address}").parse()?);
    // The 503s below are the answer under test, not something to retry.
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;

    send(
        &client,
        "POST",
        "/api/v1/namespaces",
        Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle"}})),
    )
    .await?;
    send(
        &client,
        "POST",
        "/api/v1/namespaces/wardle/services",
        Some(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
                    "spec": {"type": "ExternalName", "externalName": "localhost"}}),
        ),
    )
    .await?;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    send(
        &client,
        "POST",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        Some(json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1alpha1.wardle.example.com"},
            "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                     "service": {"namespace": "wardle", "name": "api", "port": backend_port},
                     "caBundle": b64(&backend_ca), "groupPriorityMinimum": 1000, "versionPriority": 15},
        })),
    )
    .await?;
    let condition = available(&client, "v1alpha1.wardle.example.com", "True").await?;
    assert_eq!(condition["reason"], "Passed", "{condition}");

    // Requests for the group go to the backend, with the caller named and its credentials kept here.
    let list = send(
        &client,
        "GET",
        &format!("{GV}/namespaces/default/flunders"),
        None,
    )
    .await?;
    let seen = &list["items"][0]["metadata"]["annotations"];
    assert_eq!(seen["seen-user"], "system:admin", "{list}");
    assert!(
        seen["seen-groups"]
            .as_str()
            .unwrap_or_default()
            .contains("system:masters"),
        "{list}"
    );
    assert_eq!(seen["seen-authorization"], "", "{list}");

    // Discovery lists the aggregated group; kubectl finds and lists its kind.
    let groups = send(&client, "GET", "/apis", None).await?;
    assert!(
        groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|g| g["name"] == "wardle.example.com"),
        "{groups}"
    );
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": format!("http://{address}")}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        })
        .to_string(),
    )?;
    let (ok, stdout, stderr) = kubectl(
        &kubeconfig,
        &["get", "flunders", "-n", "default", "-o", "name"],
    )?;
    assert!(ok, "kubectl get flunders: {stderr}");
    assert_eq!(stdout, "flunder.wardle.example.com/first-flunder\n");

    // A Local APIService is only listed; one whose Service is missing is unavailable and answers 503.
    send(
        &client,
        "POST",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        Some(json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": "v1.local.example.com"},
                    "spec": {"group": "local.example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 1}})),
    )
    .await?;
    assert_eq!(
        available(&client, "v1.local.example.com", "True").await?["reason"],
        "Local"
    );
    send(
        &client,
        "POST",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        Some(json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": "v1.gone.example.com"},
                    "spec": {"group": "gone.example.com", "version": "v1", "insecureSkipTLSVerify": true,
                             "service": {"namespace": "wardle", "name": "nothing-here", "port": 443},
                             "groupPriorityMinimum": 100, "versionPriority": 1}})),
    )
    .await?;
    let condition = available(&client, "v1.gone.example.com", "False").await?;
    assert_eq!(condition["reason"], "ServiceNotFound", "{condition}");
    assert_eq!(
        condition["message"],
        "service/nothing-here in \"wardle\" is not present"
    );
    let answer = client
        .request::<Value>(http::Request::get("/apis/gone.example.com/v1/things").body(Vec::new())?)
        .await;
    match answer {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 503, "{status:?}");
            assert!(status.message.contains("ServiceNotFound"), "{status:?}");
        }
        other => anyhow::bail!("expected a 503, got {other:?}"),
    }
    // A backend that does not answer its discovery check: FailedDiscoveryCheck, with the URL tried.
    let closed_port = test_fixtures::free_port();
    send(
        &client,
        "POST",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        Some(json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": "v1.silent.example.com"},
                    "spec": {"group": "silent.example.com", "version": "v1", "caBundle": b64(&backend_ca),
                             "service": {"namespace": "wardle", "name": "api", "port": closed_port},
                             "groupPriorityMinimum": 100, "versionPriority": 1}})),
    )
    .await?;
    let condition = available(&client, "v1.silent.example.com", "False").await?;
    assert_eq!(condition["reason"], "FailedDiscoveryCheck", "{condition}");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "failing or missing response from https://localhost:{closed_port}/apis/silent.example.com/v1"
        )),
        "{message}"
    );

    let (_, table, stderr) = kubectl(&kubeconfig, &["get", "apiservices"])?;
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        ["NAME", "SERVICE", "AVAILABLE", "AGE"],
        "{table}{stderr}"
    );
    assert!(
        rows.iter()
            .any(|r| r[..3] == ["v1.gone.example.com", "wardle/nothing-here", "False"]),
        "{table}"
    );
    assert!(
        rows.iter()
            .any(|r| r[..3] == ["v1.local.example.com", "Local", "True"]),
        "{table}"
    );
    assert!(
        rows.iter()
            .any(|r| r[..3] == ["v1alpha1.wardle.example.com", "wardle/api", "True"]),
        "{table}"
    );

    cancel.cancel();
    server.shutdown().await;
    Ok(())
}
