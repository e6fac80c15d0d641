//! Test harness: a server on a MemoryStore, requests through the Router with `oneshot`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use karmada_apiserver::{ApiServer, ApiServerOptions, router};
use serde_json::{Value, json};
use store::Store;
use store::memory::MemoryStore;
use tower::ServiceExt;

pub struct Harness {
    pub server: Arc<ApiServer>,
    pub store: Arc<MemoryStore>,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub raw: bytes::Bytes,
}

impl Reply {
    pub fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or_default()
    }
    pub fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or_default()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.server.options.cancel.cancel();
    }
}

impl Harness {
    pub async fn new() -> Self {
        Self::with_options(ApiServerOptions::default()).await
    }

    pub async fn with_options(options: ApiServerOptions) -> Self {
        Self::with_store(Arc::new(MemoryStore::new()), options).await
    }

    /// A server over an existing store (restart scenarios).
    pub async fn with_store(store: Arc<MemoryStore>, options: ApiServerOptions) -> Self {
        let server = ApiServer::new(store.clone() as Arc<dyn Store>, options)
            .await
            .expect("server starts");
        Self { server, store }
    }

    pub fn router(&self) -> axum::Router {
        router(Arc::clone(&self.server))
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        self.request_with(method, path, content_type, None, body)
            .await
    }

    pub async fn request_with(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        accept: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let mut builder = Request::builder().method(method).uri(path);
        if let Some(ct) = content_type {
            builder = builder.header("content-type", ct);
        }
        if let Some(accept) = accept {
            builder = builder.header("accept", accept);
        }
        let request = builder.body(Body::from(body)).expect("request builds");
        let response = self
            .router()
            .oneshot(request)
            .await
            .expect("router answers");
        let status = response.status();
        let headers = response.headers().clone();
        let raw = response
            .into_body()
            .collect()
            .await
            .expect("body reads")
            .to_bytes();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            raw,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, None, Vec::new()).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request(
            Method::POST,
            path,
            Some("application/json"),
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request(
            Method::PUT,
            path,
            Some("application/json"),
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.request(
            Method::PATCH,
            path,
            Some(content_type),
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn delete(&self, path: &str, body: Option<&Value>) -> Reply {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        self.request(Method::DELETE, path, Some("application/json"), bytes)
            .await
    }

    pub async fn revision(&self) -> u64 {
        self.store.current_revision().await.expect("revision")
    }

    /// Waits until `check` holds, polling GETs (bounded).
    pub async fn wait_for<F>(&self, what: &str, mut check: F)
    where
        F: AsyncFnMut() -> bool,
    {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if check().await {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn create_configmap(&self, ns: &str, name: &str, data: Value) -> Reply {
        let reply = self
            .post(
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
        reply
    }
}

pub fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}
            }
        }
    })
}
