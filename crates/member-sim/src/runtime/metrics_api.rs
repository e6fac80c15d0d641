//! Serves `metrics.k8s.io/v1beta1` from this cluster's pods and nodes and the loads in force
//! (the pure shapes are [`crate::resource_metrics`]): the metrics-server a real member runs.

use std::sync::Arc;

use apimachinery::{ApiError, ResourceDef};
use async_trait::async_trait;
use jiff::Timestamp;
use karmada_apiserver::ApiServer;
use karmada_apiserver::handlers::read::{ListParams, list_objects};
use karmada_apiserver::provided::ProvidedResources;
use karmada_apiserver::selectors::Filter;
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
async fn stored(
    server: &ApiServer,
    plural: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    let def = server
        .registry()
        .lookup("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))?;
    let params = ListParams {
        filter: Filter::everything(kind),
        limit: 0,
        continue_token: None,
        resource_version: None,
        version_match: None,
    };
    let list = list_objects(server, &def, namespace, &params).await?;
    Ok(match list.get("items") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    })
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
            "PodMetrics" => Ok(stored(server, "pods", "Pod", namespace)
                .await?
                .iter()
                .filter_map(|pod| resource_metrics::pod_metrics(pod, &loads, now))
                .collect()),
            _ => {
                let pods = stored(server, "pods", "Pod", None).await?;
                Ok(stored(server, "nodes", "Node", None)
                    .await?
                    .iter()
                    .map(|node| resource_metrics::node_metrics(node, &pods, &loads, now))
                    .collect())
            }
        }
    }
}
