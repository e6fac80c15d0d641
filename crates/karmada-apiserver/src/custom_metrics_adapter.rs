//! karmada-metrics-adapter's custom metrics, in process: the control plane's
//! `custom.metrics.k8s.io` pod metrics, aggregated over the Ready members (asked as
//! `member_fanout` asks them, with the request's path and selectors). Each item names its member
//! in `metadata.annotations["resource.karmada.io/query-from-cluster"]` (a `MetricValue` has no
//! metadata of its own; clients that do not know the field ignore it), so pods of the same name
//! in two members stay apart. Discovery lists the union of the members' metrics; a metric no
//! Ready member knows is a 404, as one adapter answers it.

use std::sync::Arc;

use apimachinery::ApiError;
use apiserver_views::custom_metrics_api::{GROUP, VERSIONS};
use async_trait::async_trait;
use serde_json::Value;

use crate::custom_metrics::{CustomMetricsProvider, PodMetricQuery, metric_not_found};
use crate::member_fanout::{MemberError, ask_ready_members, name_member};
use crate::server::ApiServer;

/// The provider; register it in `ApiServerOptions::custom_metrics`.
pub struct CustomMetricsAdapter;

impl CustomMetricsAdapter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self)
    }
}

async fn member_get(client: kube::Client, path: String) -> Result<Value, MemberError> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| MemberError::Other(e.to_string()))?;
    Ok(client.request::<Value>(request).await?)
}

/// The member path that asks what `query` asks.
pub fn member_path(query: &PodMetricQuery) -> String {
    let mut parameters = form_urlencoded::Serializer::new(String::new());
    if !query.label_selector.is_empty() {
        parameters.append_pair("labelSelector", &query.label_selector);
    }
    if !query.metric_label_selector.is_empty() {
        parameters.append_pair("metricLabelSelector", &query.metric_label_selector);
    }
    let parameters = parameters.finish();
    let path = format!(
        "/apis/{GROUP}/{}/namespaces/{}/pods/{}/{}",
        query.version,
        query.namespace,
        query.name.as_deref().unwrap_or("*"),
        query.metric
    );
    if parameters.is_empty() {
        path
    } else {
        format!("{path}?{parameters}")
    }
}

/// The pod metrics a member's discovery document lists.
pub fn metric_names(document: &Value) -> Vec<String> {
    document["resources"]
        .as_array()
        .map(|resources| {
            resources
                .iter()
                .filter_map(|r| r["name"].as_str()?.strip_prefix("pods/"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[async_trait]
impl CustomMetricsProvider for CustomMetricsAdapter {
    async fn pod_metric_names(&self, server: &ApiServer) -> Result<Vec<String>, ApiError> {
        let path = format!("/apis/{GROUP}/{}", VERSIONS[0]);
        let answers = ask_ready_members(server, |client| member_get(client, path.clone())).await?;
        let mut names = Vec::new();
        for (cluster, answer) in answers {
            match answer {
                Ok(document) => names.extend(metric_names(&document)),
                Err(error) => {
                    tracing::info!(cluster, %error, "member custom metrics left out of discovery");
                }
            }
        }
        Ok(names)
    }

    async fn pod_metric_values(
        &self,
        server: &ApiServer,
        query: &PodMetricQuery,
    ) -> Result<Vec<Value>, ApiError> {
        let path = member_path(query);
        let answers = ask_ready_members(server, |client| member_get(client, path.clone())).await?;
        let mut items = Vec::new();
        let mut known = false;
        for (cluster, answer) in answers {
            match answer {
                Ok(mut list) => {
                    known = true;
                    if let Some(Value::Array(found)) = list.get_mut("items").map(Value::take) {
                        for mut item in found {
                            name_member(&mut item, &cluster);
                            items.push(item);
                        }
                    }
                }
                Err(error) if error.is_not_found() => {
                    tracing::debug!(cluster, %error, metric = query.metric, "member has no such metric");
                }
                Err(error) => {
                    tracing::info!(cluster, %error, metric = query.metric, "member custom metrics left out");
                }
            }
        }
        // A named pod no member has is the router's "described metric" 404.
        if !known && query.name.is_none() {
            return Err(metric_not_found(&query.metric, "pods"));
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::LabelSelector;
    use serde_json::json;

    #[test]
    fn members_are_asked_the_same_question() {
        let query = PodMetricQuery {
            version: "v1beta2".into(),
            namespace: "shop".into(),
            name: None,
            metric: "rps".into(),
            labels: LabelSelector::parse("app=web").expect("valid"),
            metric_labels: LabelSelector::everything(),
            label_selector: "app=web,tier in (a,b)".into(),
            metric_label_selector: String::new(),
        };
        assert_eq!(
            member_path(&query),
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/rps?labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29"
        );
        let named = PodMetricQuery {
            name: Some("web-1".into()),
            label_selector: String::new(),
            ..query
        };
        assert_eq!(
            member_path(&named),
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/web-1/rps"
        );
    }

    #[test]
    fn discovery_names_are_the_pod_metrics() {
        let document = json!({"resources": [
            {"name": "pods/rps"}, {"name": "namespaces/rps"}, {"name": "pods/queue_depth"}
        ]});
        assert_eq!(metric_names(&document), ["rps", "queue_depth"]);
    }
}
