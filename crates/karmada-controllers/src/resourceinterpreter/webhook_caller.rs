//! Delivers interpreter webhook contexts over HTTPS: the webhook's `clientConfig.url`, or its `service` when
//! that Service is an ExternalName (there is no cluster DNS for the control plane to resolve `*.svc` with),
//! verified against the `caBundle` (the server name `<service>.<namespace>.svc` for a Service, as Kubernetes
//! checks it), within `timeoutSeconds` (default 10).
//!
//! The interpreter's operations are synchronous; a call runs on a runtime of its own (one thread, started on
//! the first call) and the caller's thread waits for it — handed off with `block_in_place` when it is a worker
//! of a multi-threaded runtime, so the controllers' other tasks keep running meanwhile.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use k8s_openapi::api::core::v1::Service;
use karmada_api::config::ResourceInterpreterWebhook;
use karmada_interpreter::webhook::WebhookCaller;
use kube::Api;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::Value;

/// Karmada's default `timeoutSeconds`.
const DEFAULT_TIMEOUT_SECONDS: i32 = 10;
/// The default port of a Service reference.
const DEFAULT_SERVICE_PORT: i32 = 443;

/// Where one webhook is reached.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Endpoint {
    /// `https://host:port`.
    base: String,
    path: String,
    server_name: Option<String>,
    ca_bundle: Vec<u8>,
}

/// The HTTPS caller of [`karmada_interpreter::webhook::WebhookInterpreter`].
#[derive(Default)]
pub struct HttpsWebhookCaller {
    control_plane: OnceLock<kube::Client>,
    runtime: OnceLock<Result<BackgroundRuntime, String>>,
    clients: Arc<Mutex<HashMap<Endpoint, kube::Client>>>,
}

/// A runtime that may be dropped anywhere (dropping a tokio runtime inside another one panics).
struct BackgroundRuntime(Option<tokio::runtime::Runtime>);

impl Drop for BackgroundRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl HttpsWebhookCaller {
    /// The control plane the webhooks' Services are read from.
    pub fn set_control_plane(&self, client: kube::Client) {
        let _ = self.control_plane.set(client);
    }

    fn handle(&self) -> Result<tokio::runtime::Handle, String> {
        let runtime = self.runtime.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("interpreter-webhooks")
                .enable_all()
                .build()
                .map(|runtime| BackgroundRuntime(Some(runtime)))
                .map_err(|e| format!("cannot start the webhook runtime: {e}"))
        });
        match runtime {
            Ok(BackgroundRuntime(Some(runtime))) => Ok(runtime.handle().clone()),
            Ok(BackgroundRuntime(None)) => Err("the webhook runtime is shut down".into()),
            Err(err) => Err(err.clone()),
        }
    }
}

impl WebhookCaller for HttpsWebhookCaller {
    fn call(&self, webhook: &ResourceInterpreterWebhook, context: &Value) -> Result<Value, String> {
        let seconds = webhook
            .timeout_seconds
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, 30);
        let timeout = Duration::from_secs(u64::try_from(seconds).unwrap_or(10));
        let handle = self.handle()?;
        let config = webhook.client_config.clone();
        let control_plane = self.control_plane.get().cloned();
        let clients = Arc::clone(&self.clients);
        let body = context.to_string().into_bytes();
        let (answer, answered) = mpsc::sync_channel(1);
        handle.spawn(async move {
            let outcome = tokio::time::timeout(timeout, async {
                let endpoint = endpoint(&config, control_plane.as_ref()).await?;
                deliver(&clients, &endpoint, body).await
            })
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {seconds}s (timeoutSeconds)")));
            let _ = answer.send(outcome);
        });
        // The task's own timeout answers first; the margin only covers a runtime that stopped.
        let wait = || answered.recv_timeout(timeout + Duration::from_secs(1));
        let outcome = match tokio::runtime::Handle::try_current() {
            Ok(current)
                if current.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread =>
            {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        outcome.map_err(|_| format!("no answer within {seconds}s (timeoutSeconds)"))?
    }
}

/// Where `config` points.
async fn endpoint(
    config: &WebhookClientConfig,
    control_plane: Option<&kube::Client>,
) -> Result<Endpoint, String> {
    let ca_bundle = config
        .ca_bundle
        .as_ref()
        .map(|b| b.0.clone())
        .unwrap_or_default();
    if let Some(url) = config.url.as_deref() {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("clientConfig.url {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!(
                "clientConfig.url {url:?}: webhooks are called over https only"
            ));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("clientConfig.url {url:?} has no host"))?;
        return Ok(Endpoint {
            base: format!("https://{authority}"),
            path: uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
            server_name: None,
            ca_bundle,
        });
    }
    let Some(service) = &config.service else {
        return Err("clientConfig has neither url nor service".into());
    };
    let control_plane = control_plane
        .ok_or("the control plane client is not set yet to resolve clientConfig.service")?;
    let api: Api<Service> = Api::namespaced(control_plane.clone(), &service.namespace);
    let found = api
        .get(&service.name)
        .await
        .map_err(|e| format!("Service {}/{}: {e}", service.namespace, service.name))?;
    let host = found
        .spec
        .and_then(|spec| spec.external_name)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| {
            format!(
                "Service {}/{} is not an ExternalName Service; point it at the webhook's host or give clientConfig.url",
                service.namespace, service.name
            )
        })?;
    Ok(Endpoint {
        base: format!(
            "https://{host}:{}",
            service.port.unwrap_or(DEFAULT_SERVICE_PORT)
        ),
        path: service.path.clone().unwrap_or_else(|| "/".into()),
        server_name: Some(format!("{}.{}.svc", service.name, service.namespace)),
        ca_bundle,
    })
}

/// POSTs `body` to `endpoint` with a client kept per endpoint.
async fn deliver(
    clients: &Mutex<HashMap<Endpoint, kube::Client>>,
    endpoint: &Endpoint,
    body: Vec<u8>,
) -> Result<Value, String> {
    let kept = clients
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(endpoint)
        .cloned();
    let client = match kept {
        Some(client) => client,
        None => {
            let client = client(endpoint)?;
            clients
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(endpoint.clone(), client.clone());
            client
        }
    };
    let request = http::Request::post(&endpoint.path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(body)
        .map_err(|e| e.to_string())?;
    client.request::<Value>(request).await.map_err(|e| {
        format!(
            "POST {}{}: {}",
            endpoint.base,
            endpoint.path,
            apimachinery::error_chain(&e)
        )
    })
}

fn client(endpoint: &Endpoint) -> Result<kube::Client, String> {
    let uri: http::Uri = endpoint
        .base
        .parse()
        .map_err(|e| format!("{}: {e}", endpoint.base))?;
    let mut config = kube::Config::new(uri);
    config.tls_server_name = endpoint.server_name.clone();
    let roots: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(&endpoint.ca_bundle)
        .filter_map(Result::ok)
        .map(|der| der.to_vec())
        .collect();
    if !roots.is_empty() {
        config.root_cert = Some(roots);
    }
    kube::Client::try_from(config).map_err(|e| e.to_string())
}
