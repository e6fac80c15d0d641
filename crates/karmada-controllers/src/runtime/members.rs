//! Clients of member clusters, for the controllers that act on members (execution, work status).
//!
//! In production a member's client is built from its Cluster's endpoint and credentials Secret
//! ([`crate::cluster::api::member_client`]) and cached until the Cluster's spec changes. Tests and
//! embedders may pin a client per cluster name ([`MemberClients::pin`]), e.g. an in-process member-sim.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use karmada_api::Cluster;
use tokio::sync::RwLock;

use super::ControllerError;

#[derive(Clone)]
pub struct MemberClients {
    control_plane: kube::Client,
    timeout: Duration,
    pinned: Arc<RwLock<HashMap<String, kube::Client>>>,
    /// cluster name → (Cluster spec the client was built from, client)
    cache: Arc<RwLock<HashMap<String, (String, kube::Client)>>>,
}

impl MemberClients {
    /// Clients built from Cluster objects read through `control_plane`; each request is bounded by `timeout`.
    pub fn new(control_plane: kube::Client, timeout: Duration) -> Self {
        Self {
            control_plane,
            timeout,
            pinned: Arc::default(),
            cache: Arc::default(),
        }
    }

    /// Uses `client` for cluster `name` whatever its Cluster object says.
    pub async fn pin(&self, name: &str, client: kube::Client) {
        self.pinned.write().await.insert(name.to_string(), client);
    }

    /// The client of `cluster`.
    pub async fn client(&self, cluster: &Cluster) -> Result<kube::Client, ControllerError> {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        if let Some(client) = self.pinned.read().await.get(&name) {
            return Ok(client.clone());
        }
        // Keyed on the spec (endpoint, secret, TLS settings), not the resourceVersion, which every status
        // update bumps: the connection pool survives status churn.
        let version = serde_json::to_string(&cluster.spec)?;
        if let Some((built_from, client)) = self.cache.read().await.get(&name)
            && *built_from == version
        {
            return Ok(client.clone());
        }
        let client = crate::cluster::api::member_client(&self.control_plane, cluster, self.timeout)
            .await
            .map_err(|e| ControllerError::Member {
                cluster: name.clone(),
                message: e.to_string(),
            })?;
        self.cache
            .write()
            .await
            .insert(name, (version, client.clone()));
        Ok(client)
    }

    /// Forgets the cached client of a removed cluster.
    pub async fn forget(&self, name: &str) {
        self.cache.write().await.remove(name);
    }
}
