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
        let version = spec_version(cluster)?;
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

/// What a cached client was built from: the spec (endpoint, secret, TLS settings), not the resourceVersion,
/// which every status update bumps, so the connection pool survives status churn. The generation names the spec
/// without serializing it on every call (a hot path: each apply asks); an object without one is keyed on its
/// serialized spec.
fn spec_version(cluster: &Cluster) -> Result<String, ControllerError> {
    match (&cluster.metadata.uid, cluster.metadata.generation) {
        (Some(uid), Some(generation)) => Ok(format!("{uid}/{generation}")),
        _ => Ok(serde_json::to_string(&cluster.spec)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(generation: Option<i64>, endpoint: &str, ready: &str) -> Cluster {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "m1", "uid": "u1", "generation": generation},
            "spec": {"apiEndpoint": endpoint, "syncMode": "Push"},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "x", "message": "",
                                       "lastTransitionTime": "2026-12-06T00:00:00Z"}]},
        }))
        .expect("cluster")
    }

    #[test]
    fn a_client_is_rebuilt_only_when_the_spec_changes() {
        let version = |c: &Cluster| spec_version(c).expect("version");
        let first = cluster(Some(1), "https://a", "True");
        assert_eq!(
            version(&first),
            version(&cluster(Some(1), "https://a", "False"))
        );
        assert_ne!(
            version(&first),
            version(&cluster(Some(2), "https://b", "True"))
        );
        // Without a generation the spec itself is the key.
        let untracked = cluster(None, "https://a", "True");
        assert_eq!(
            version(&untracked),
            version(&cluster(None, "https://a", "False"))
        );
        assert_ne!(
            version(&untracked),
            version(&cluster(None, "https://b", "True"))
        );
    }
}
