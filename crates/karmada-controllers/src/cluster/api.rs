//! Typed access to `clusters.cluster.karmada.io` through kube's dynamic API, and the member client built from a
//! Cluster's Secret.
//!
//! The Secret in `karmada-cluster` holds what `karmadactl join` stored: `caBundle` (PEM) and either `token` (the
//! ServiceAccount token join obtained from the member, or the kubeconfig's own) or the client certificate pair
//! `tls.crt` / `tls.key` (a member that issued no token, joined with a certificate kubeconfig).

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use karmada_api::Cluster;
use karmada_api::cluster::{GROUP, VERSION};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

/// Secret keys of the member credentials.
pub use member_access::{
    SECRET_KEY_CA_BUNDLE, SECRET_KEY_CLIENT_CERT, SECRET_KEY_CLIENT_KEY, SECRET_KEY_TOKEN,
};

/// Errors of the cluster controllers' API calls.
#[derive(Debug, thiserror::Error)]
pub enum ClusterApiError {
    #[error("API call failed: {0}")]
    Kube(#[from] kube::Error),
    #[error("cluster object is malformed: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("cluster {cluster}: {message}")]
    Credentials { cluster: String, message: String },
}

impl ClusterApiError {
    /// Whether the write lost a race (409) and should simply be retried on the next round.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ClusterApiError::Kube(kube::Error::Api(s)) if s.code == 409)
    }
}

/// The API resource of Cluster.
pub fn cluster_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GROUP, VERSION, "Cluster"),
        "clusters",
    )
}

/// The Cluster API of the control plane.
pub fn clusters(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &cluster_resource())
}

pub fn to_cluster(object: &DynamicObject) -> Result<Cluster, ClusterApiError> {
    Ok(serde_json::from_value(serde_json::to_value(object)?)?)
}

pub fn to_object(cluster: &Cluster) -> Result<DynamicObject, ClusterApiError> {
    let mut value = serde_json::to_value(cluster)?;
    value["apiVersion"] = serde_json::json!(format!("{GROUP}/{VERSION}"));
    value["kind"] = serde_json::json!("Cluster");
    Ok(serde_json::from_value(value)?)
}

/// Lists every Cluster.
pub async fn list_clusters(client: &kube::Client) -> Result<Vec<Cluster>, ClusterApiError> {
    let list = clusters(client).list(&Default::default()).await?;
    list.items.iter().map(to_cluster).collect()
}

/// A client for the member, from the Cluster's endpoint and its Secret. Requests time out after `timeout`.
pub async fn member_client(
    control_plane: &kube::Client,
    cluster: &Cluster,
    timeout: Duration,
) -> Result<kube::Client, ClusterApiError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let fail = |message: String| ClusterApiError::Credentials {
        cluster: name.clone(),
        message,
    };
    let secret_ref = cluster
        .spec
        .secret_ref
        .as_ref()
        .ok_or_else(|| fail("spec.secretRef is not set".into()))?;
    let secret: Secret = Api::namespaced(control_plane.clone(), &secret_ref.namespace)
        .get(&secret_ref.name)
        .await?;
    let data: member_access::SecretData = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, value.0))
        .collect();
    let mut config = member_access::member_config(cluster, &data)
        .await
        .map_err(|e| fail(e.to_string()))?;
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    crate::runtime::client::http1_client(config)
        .map_err(|e| fail(format!("building the member client: {e}")))
}
