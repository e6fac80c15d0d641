//! Writes the admin kubeconfig that kubectl and karmadactl use to reach the API server.

use std::path::Path;

use base64::Engine;
use serde_json::json;

/// Credentials and address for one kubeconfig context.
pub struct KubeconfigSpec<'a> {
    pub context: &'a str,
    pub server: &'a str,
    /// PEM of the CA that signed the serving certificate; `None` for plain HTTP.
    pub ca_pem: Option<&'a str>,
    pub client_cert_pem: Option<&'a str>,
    pub client_key_pem: Option<&'a str>,
}

/// Renders the kubeconfig as YAML-compatible JSON (every YAML reader accepts JSON).
pub fn render(spec: &KubeconfigSpec<'_>) -> serde_json::Value {
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem.as_bytes());
    let mut cluster = json!({ "server": spec.server });
    if let Some(ca) = spec.ca_pem {
        cluster["certificate-authority-data"] = json!(b64(ca));
    }
    let mut user = json!({});
    if let (Some(cert), Some(key)) = (spec.client_cert_pem, spec.client_key_pem) {
        user["client-certificate-data"] = json!(b64(cert));
        user["client-key-data"] = json!(b64(key));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": spec.context, "cluster": cluster }],
        "users": [{ "name": format!("{}-admin", spec.context), "user": user }],
        "contexts": [{
            "name": spec.context,
            "context": { "cluster": spec.context, "user": format!("{}-admin", spec.context) },
        }],
        "current-context": spec.context,
        "preferences": {},
    })
}

/// Writes atomically (temp file + rename) with owner-only permissions: it holds a private key.
pub fn write(path: &Path, spec: &KubeconfigSpec<'_>) -> std::io::Result<()> {
    let body = serde_json::to_vec_pretty(&render(spec)).map_err(std::io::Error::other)?;
    apiserver_auth::files::write_private(path, &body)
}
