//! From an APIService's `spec.service` to a client of its endpoint: the Service's address
//! (an `ExternalName` Service's name; else the first address of its Endpoints, as
//! kube-aggregator's endpoint routing picks), and TLS as the APIService says (its `caBundle`
//! verifying the name `<service>.<namespace>.svc`, as kube-aggregator checks it, or no
//! verification with `insecureSkipTLSVerify`).

use std::time::Duration;

use base64::Engine;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::Value;

use crate::server::ApiServer;

/// A backend that does not accept the connection by then is failing its check.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an APIService is not available: its condition's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    pub reason: &'static str,
    pub message: String,
}

impl Unavailable {
    fn new(reason: &'static str, message: String) -> Self {
        Self { reason, message }
    }
}

/// What the client of one APIService's backend is built from; equal targets share a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `https://host:port`.
    pub url: String,
    /// The name the backend's certificate must carry.
    pub server_name: String,
    pub ca_bundle: Vec<u8>,
    pub insecure: bool,
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The endpoint of `api_service`'s Service.
pub async fn resolve(server: &ApiServer, api_service: &Value) -> Result<Target, Unavailable> {
    let namespace = str_at(api_service, "/spec/service/namespace");
    let name = str_at(api_service, "/spec/service/name");
    let port = api_service
        .pointer("/spec/service/port")
        .and_then(Value::as_i64)
        .unwrap_or(443);
    let not_present = || {
        Unavailable::new(
            "ServiceNotFound",
            format!("service/{name} in \"{namespace}\" is not present"),
        )
    };
    let service = read(server, "services", namespace, name)
        .await
        .ok_or_else(not_present)?;
    let host = if str_at(&service, "/spec/type") == "ExternalName" {
        (str_at(&service, "/spec/externalName").to_string(), port)
    } else {
        endpoint_address(server, &service, port).await?
    };
    let ca_bundle = api_service
        .pointer("/spec/caBundle")
        .and_then(Value::as_str)
        .map(|b64| {
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap_or_default()
        })
        .unwrap_or_default();
    let (address, port) = host;
    let address = if address.contains(':') {
        format!("[{address}]")
    } else {
        address
    };
    Ok(Target {
        url: format!("https://{address}:{port}"),
        server_name: format!("{name}.{namespace}.svc"),
        ca_bundle,
        insecure: api_service
            .pointer("/spec/insecureSkipTLSVerify")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// An address of the Service's Endpoints and the endpoint port behind the Service port `port`.
async fn endpoint_address(
    server: &ApiServer,
    service: &Value,
    port: i64,
) -> Result<(String, i64), Unavailable> {
    let namespace = str_at(service, "/metadata/namespace");
    let name = str_at(service, "/metadata/name");
    let service_port = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        })
        .ok_or_else(|| {
            Unavailable::new(
                "ServicePortError",
                format!("service/{name} in \"{namespace}\" is not listening on port {port}"),
            )
        })?;
    let port_name = str_at(service_port, "/name");
    let missing = || {
        Unavailable::new(
            "MissingEndpoints",
            format!(
                "endpoints for service/{name} in \"{namespace}\" have no addresses with port name \"{port_name}\""
            ),
        )
    };
    let endpoints = read(server, "endpoints", namespace, name)
        .await
        .ok_or_else(missing)?;
    for subset in endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let address = subset.pointer("/addresses/0/ip").and_then(Value::as_str);
        let endpoint_port = subset
            .get("ports")
            .and_then(Value::as_array)
            .and_then(|ports| ports.iter().find(|p| str_at(p, "/name") == port_name))
            .and_then(|p| p.get("port").and_then(Value::as_i64));
        if let (Some(address), Some(endpoint_port)) = (address, endpoint_port) {
            return Ok((address.to_string(), endpoint_port));
        }
    }
    Err(missing())
}

async fn read(server: &ApiServer, plural: &str, namespace: &str, name: &str) -> Option<Value> {
    let def = server.registry().lookup("", "v1", plural)?;
    server
        .read_object(&def, Some(namespace), name)
        .await
        .ok()
        .flatten()
        .map(|(object, _)| object)
}

/// A client of `target`: no credentials of its own (the caller's identity travels in headers).
pub fn client(target: &Target) -> Result<kube::Client, String> {
    let uri = target
        .url
        .parse::<http::Uri>()
        .map_err(|e| format!("{}: {e}", target.url))?;
    let mut config = kube::Config::new(uri);
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    // No read timeout: a forwarded watch may be silent for minutes.
    config.read_timeout = None;
    config.accept_invalid_certs = target.insecure;
    config.tls_server_name = Some(target.server_name.clone());
    if !target.insecure {
        let roots: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(&target.ca_bundle)
            .filter_map(Result::ok)
            .map(|der| der.to_vec())
            .collect();
        config.root_cert = Some(roots);
    }
    kube::Client::try_from(config).map_err(|e| e.to_string())
}
