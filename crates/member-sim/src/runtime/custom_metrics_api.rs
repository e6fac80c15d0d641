//! Serves `custom.metrics.k8s.io` pod metrics from this cluster's pods and the loads in force
//! (the pure selection is [`crate::custom_metrics`]): the Prometheus adapter a real member runs.

use std::sync::Arc;

use apimachinery::ApiError;
use apiserver_views::custom_metrics_api::metric_value;
use async_trait::async_trait;
use jiff::Timestamp;
use karmada_apiserver::ApiServer;
use karmada_apiserver::custom_metrics::{CustomMetricsProvider, PodMetricQuery, metric_not_found};
use serde_json::Value;
use tokio::sync::watch;

use crate::custom_metrics::{self, Selection};
use crate::faults::Faults;
use crate::runtime::metrics_api::stored;

/// The provider; reads the loads from the fault state as it changes.
pub struct SimCustomMetrics {
    faults: watch::Receiver<Faults>,
}

impl SimCustomMetrics {
    pub fn new(faults: watch::Receiver<Faults>) -> Arc<Self> {
        Arc::new(Self { faults })
    }
}

#[async_trait]
impl CustomMetricsProvider for SimCustomMetrics {
    async fn pod_metric_names(&self, _server: &ApiServer) -> Result<Vec<String>, ApiError> {
        Ok(custom_metrics::metric_names(&self.faults.borrow().loads))
    }

    async fn pod_metric_values(
        &self,
        server: &ApiServer,
        query: &PodMetricQuery,
    ) -> Result<Vec<Value>, ApiError> {
        let loads = self.faults.borrow().loads.clone();
        if !custom_metrics::is_known(&loads, &query.metric) {
            return Err(metric_not_found(&query.metric, "pods"));
        }
        let pods = stored(server, "pods", Some(&query.namespace)).await?;
        let selection = Selection {
            metric: &query.metric,
            labels: &query.labels,
            metric_labels: &query.metric_labels,
            name: query.name.as_deref(),
        };
        let selector = query.selector_value();
        Ok(
            custom_metrics::pod_values(&pods, &loads, selection, Timestamp::now())
                .iter()
                .map(|value| metric_value(&query.version, &query.metric, &selector, value))
                .collect(),
        )
    }
}
