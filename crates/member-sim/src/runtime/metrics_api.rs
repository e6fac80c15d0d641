//! Serves `metrics.k8s.io/v1beta1` from this cluster's pods and nodes and the loads in force
//! (the pure shapes are [`crate::resource_metrics`]): the metrics-server a real member runs.

use std::sync::Arc;

use apimachinery::{ApiError, ResourceDef};
use async_trait::async_trait;
use jiff::Timestamp;
use karmada_apiserver::ApiServer;
use karmada_apiserver::handlers::read::list_items;
use karmada_apiserver::provided::ProvidedResources;
use serde_json::Value;
use tokio::sync::watch;

use crate::faults::Faults;
use crate::resource_metrics;

/// The provider; reads the loads from the fault state as it changes.
pub struct SimMetrics {
    faults: watch::Receiver<Faults>,
}

impl SimMetrics {
    pub fn new(faults: watch::Receiver<Faults>) -> Arc<Self> {
        Arc::new(Self { faults })
    }
}

/// Every stored object of the core kind `plural` in `namespace`.
pub(crate) async fn stored(
    server: &ApiServer,
    plural: &str,
    namespace: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    let def = server
        .registry()
        .lookup("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))?;
    list_items(server, &def, namespace).await
}

#[async_trait]
impl ProvidedResources for SimMetrics {
    fn defs(&self) -> Vec<ResourceDef> {
        apiserver_views::metrics_api::resource_defs()
    }

    async fn list(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, ApiError> {
        let loads = self.faults.borrow().loads.clone();
        let now = Timestamp::now();
        match def.kind.as_str() {
            "PodMetrics" => Ok(stored(server, "pods", namespace)
                .await?
                .iter()
                .filter_map(|pod| resource_metrics::pod_metrics(pod, &loads, now))
                .collect()),
            _ => {
                let pods = stored(server, "pods", None).await?;
                Ok(stored(server, "nodes", None)
                    .await?
                    .iter()
                    .map(|node| resource_metrics::node_metrics(node, &pods, &loads, now))
                    .collect())
            }
        }
    }
}
