//! The HTTPS caller against a webhook served on loopback with a CA of its own.

use std::sync::Arc;

use apiserver_auth::authn::Authenticator;
use apiserver_auth::pki::Pki;
use axum::Router;
use axum::routing::post;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use karmada_api::config::ResourceInterpreterWebhook;
use karmada_interpreter::webhook::WebhookCaller;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::HttpsWebhookCaller;

/// Serves `/echo` (answers the request's uid) and `/hang` (never answers) over TLS; returns its base URL.
async fn serve(pki: &Pki, cancel: &CancellationToken) -> String {
    let router = Router::new()
        .route(
            "/echo",
            post(|body: String| async move {
                let context: Value = serde_json::from_str(&body).unwrap_or_default();
                json!({"response": {"uid": context["request"]["uid"], "successful": true}})
                    .to_string()
            }),
        )
        .route("/hang", post(std::future::pending::<String>));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("https://{}", listener.local_addr().expect("address"));
    tokio::spawn(karmada_apiserver::serve::serve(
        listener,
        Some(apiserver_auth::tls::server_config(pki).expect("tls")),
        Arc::new(Authenticator::new(None)),
        router,
        cancel.clone(),
    ));
    base
}

fn webhook(config: WebhookClientConfig) -> ResourceInterpreterWebhook {
    ResourceInterpreterWebhook {
        name: "w.example.io".into(),
        client_config: config,
        timeout_seconds: Some(1),
        interpreter_context_versions: vec!["v1alpha1".into()],
        ..Default::default()
    }
}

fn url(url: String, ca: &Pki) -> WebhookClientConfig {
    WebhookClientConfig {
        url: Some(url),
        ca_bundle: Some(ByteString(ca.ca_cert_pem().as_bytes().to_vec())),
        service: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_verified_by_the_ca_bundle_and_bounded_by_the_timeout() {
    let dir = tempfile::tempdir().expect("dir");
    let pki = Pki::load_or_create(&dir.path().join("webhook"), &[]).expect("pki");
    let stranger = Pki::load_or_create(&dir.path().join("other"), &[]).expect("pki");
    let cancel = CancellationToken::new();
    let base = serve(&pki, &cancel).await;
    let caller = HttpsWebhookCaller::default();
    let context = json!({"request": {"uid": "u-1"}});

    let answer = caller
        .call(&webhook(url(format!("{base}/echo"), &pki)), &context)
        .expect("answered");
    assert_eq!(answer["response"]["uid"], "u-1");

    let cases = [
        (url(format!("{base}/echo"), &stranger), "certificate"),
        (url(format!("{base}/hang"), &pki), "no answer within 1s"),
        (url(base.replace("https", "http"), &pki), "https only"),
        (WebhookClientConfig::default(), "neither url nor service"),
    ];
    for (config, expected) in cases {
        let err = caller
            .call(&webhook(config.clone()), &context)
            .expect_err("refused");
        assert!(err.contains(expected), "{config:?}: {err}");
    }
    cancel.cancel();
}
