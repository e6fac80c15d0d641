//! `custom.metrics.k8s.io` (v1beta2 and v1beta1) served from a provider: what kube-aggregator
//! does for a Prometheus adapter's APIService, in process. Only pod metrics exist here:
//! `GET /apis/custom.metrics.k8s.io/{version}/namespaces/{ns}/pods/{name|*}/{metric}` with
//! `labelSelector` (which pods) and `metricLabelSelector` (which series).
//!
//! The paths are not list resources (the metric is the last segment and the version's resources
//! change with the data), so the router hands this group to [`parse`] before its own lookup.
//! This module checks the request (selectors, method), authorizes it as kube-apiserver would
//! (`get` on `pods/<metric>` in the group, the pod's name or `*`), and shapes the answer; a
//! provider (a member-sim's loads, the control plane's members) produces the values.

use std::collections::HashMap;

use apimachinery::{ApiError, LabelSelector, StatusCause, StatusDetails};
use apiserver_auth::RequestAttributes;
use apiserver_views::custom_metrics_api::{self as views, GROUP};
use async_trait::async_trait;
use serde_json::Value;

use crate::server::ApiServer;

/// One request for a pod metric.
#[derive(Clone, Debug, PartialEq)]
pub struct PodMetricQuery {
    pub version: String,
    pub namespace: String,
    /// One pod, or every pod the label selector matches (`*`).
    pub name: Option<String>,
    pub metric: String,
    pub labels: LabelSelector,
    pub metric_labels: LabelSelector,
    /// The selectors as asked, for a provider that forwards the request.
    pub label_selector: String,
    pub metric_label_selector: String,
}

impl PodMetricQuery {
    /// The metric selector as a `MetricValue` carries it (`null` when none was given).
    pub fn selector_value(&self) -> Value {
        if self.metric_labels.is_empty() {
            Value::Null
        } else {
            self.metric_labels.to_label_selector()
        }
    }
}

/// Produces pod metric values.
#[async_trait]
pub trait CustomMetricsProvider: Send + Sync {
    /// The pod metrics that have values now (discovery lists them as `pods/<metric>`).
    async fn pod_metric_names(&self, server: &ApiServer) -> Result<Vec<String>, ApiError>;

    /// The `MetricValue`s (in `query.version`'s shape) of the pods `query` selects;
    /// [`metric_not_found`] when the metric is unknown.
    async fn pod_metric_values(
        &self,
        server: &ApiServer,
        query: &PodMetricQuery,
    ) -> Result<Vec<Value>, ApiError>;
}

/// A request under `/apis/custom.metrics.k8s.io`.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    Group,
    Version(String),
    PodMetric {
        version: String,
        namespace: String,
        /// `*` for every pod.
        name: String,
        metric: String,
    },
    /// Another resource's metric (`nodes`, `namespaces/.../metrics`, ...): none is served.
    OtherMetric {
        resource: String,
        metric: String,
    },
}

/// The request `segments` make when they are in this group (`None` otherwise).
pub fn parse(segments: &[&str]) -> Option<Result<Request, ApiError>> {
    let ["apis", group, rest @ ..] = segments else {
        return None;
    };
    if *group != GROUP {
        return None;
    }
    let parsed = match rest {
        [] => Ok(Request::Group),
        [version, ..] if !views::is_version(version) => Err(ApiError::not_found_path()),
        [version] => Ok(Request::Version((*version).to_string())),
        [version, "namespaces", namespace, "pods", name, metric] => Ok(Request::PodMetric {
            version: (*version).to_string(),
            namespace: (*namespace).to_string(),
            name: unescape(name),
            metric: unescape(metric),
        }),
        [_, "namespaces", _, resource, _, metric] | [_, resource, _, metric] => {
            Ok(Request::OtherMetric {
                resource: (*resource).to_string(),
                metric: (*metric).to_string(),
            })
        }
        [_, "namespaces", _, "metrics", metric] => Ok(Request::OtherMetric {
            resource: "namespaces".into(),
            metric: (*metric).to_string(),
        }),
        _ => Err(ApiError::not_found_path()),
    };
    Some(parsed)
}

/// A path segment with its `%XX` escapes decoded (kubectl sends `*` as `%2A`); kept as given
/// when it is not valid escaped UTF-8.
fn unescape(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(byte) => {
                    decoded.push(byte);
                    i += 3;
                    continue;
                }
                None => return segment.to_string(),
            }
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(decoded).unwrap_or_else(|_| segment.to_string())
}

impl Request {
    /// The version asked for (empty for the group document).
    pub fn version(&self) -> &str {
        match self {
            Request::Version(version) | Request::PodMetric { version, .. } => version,
            Request::Group | Request::OtherMetric { .. } => "",
        }
    }

    /// kube-apiserver's attributes for a metric request (`None`: a discovery document, which
    /// is authorized as a non-resource path).
    pub fn resource_attributes(&self, path: &str) -> Option<RequestAttributes> {
        let Request::PodMetric {
            namespace,
            name,
            metric,
            ..
        } = self
        else {
            return None;
        };
        Some(RequestAttributes {
            verb: "get".into(),
            api_group: GROUP.into(),
            resource: "pods".into(),
            subresource: metric.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
            resource_request: true,
            path: path.to_string(),
        })
    }
}

/// The adapters' 404 for a metric nobody reports.
pub fn metric_not_found(metric: &str, resource: &str) -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        format!("the server could not find the metric {metric} for {resource}"),
    )
}

/// A bad selector parameter: 400 naming it, with the accepted form.
fn bad_selector(parameter: &str, value: &str, message: &str) -> ApiError {
    let message = format!(
        "{parameter} {value:?}: {message}; expected the form app=web,tier in (a,b),!canary"
    );
    ApiError {
        details: Some(StatusDetails::with_causes(vec![StatusCause::new(
            "FieldValueInvalid",
            message.clone(),
            parameter,
        )])),
        ..ApiError::bad_request(message)
    }
}

fn selector(
    query: &HashMap<String, String>,
    parameter: &str,
) -> Result<(LabelSelector, String), ApiError> {
    let text = query.get(parameter).cloned().unwrap_or_default();
    if text.trim().is_empty() {
        return Ok((LabelSelector::everything(), String::new()));
    }
    let parsed =
        LabelSelector::parse(&text).map_err(|e| bad_selector(parameter, &text, &e.message))?;
    Ok((parsed, text))
}

/// Answers `request` (GET only) with `provider`'s values.
pub async fn serve(
    server: &ApiServer,
    provider: &dyn CustomMetricsProvider,
    method: &http::Method,
    request: Request,
    query: &HashMap<String, String>,
) -> Result<Value, ApiError> {
    if method != http::Method::GET {
        return Err(ApiError::method_not_allowed(format!(
            "{GROUP} is read-only: only GET is served ({method})"
        )));
    }
    match request {
        Request::Group => Ok(views::legacy_group()),
        Request::Version(version) => {
            let mut names = provider.pod_metric_names(server).await?;
            names.sort();
            names.dedup();
            Ok(views::resource_list(&version, &names))
        }
        Request::OtherMetric { resource, metric } => Err(metric_not_found(&metric, &resource)),
        Request::PodMetric {
            version,
            namespace,
            name,
            metric,
        } => {
            let (labels, label_selector) = selector(query, "labelSelector")?;
            let (metric_labels, metric_label_selector) = selector(query, "metricLabelSelector")?;
            let query = PodMetricQuery {
                version: version.clone(),
                namespace,
                name: (name != "*").then(|| name.clone()),
                metric: metric.clone(),
                labels,
                metric_labels,
                label_selector,
                metric_label_selector,
            };
            let items = provider.pod_metric_values(server, &query).await?;
            if items.is_empty() && query.name.is_some() {
                return Err(ApiError::new(
                    404,
                    "NotFound",
                    format!(
                        "the server could not find the described metric {metric} for pods {name}"
                    ),
                ));
            }
            Ok(views::metric_value_list(&version, items))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_in_the_group_are_parsed() {
        let pod = |name: &str| Request::PodMetric {
            version: "v1beta2".into(),
            namespace: "shop".into(),
            name: name.into(),
            metric: "rps".into(),
        };
        let cases: Vec<(&str, Option<Result<Request, u16>>)> = vec![
            ("/apis/custom.metrics.k8s.io", Some(Ok(Request::Group))),
            (
                "/apis/custom.metrics.k8s.io/v1beta1",
                Some(Ok(Request::Version("v1beta1".into()))),
            ),
            (
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/rps",
                Some(Ok(pod("*"))),
            ),
            (
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/web-1/rps",
                Some(Ok(pod("web-1"))),
            ),
            (
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/%2A/rps",
                Some(Ok(pod("*"))),
            ),
            (
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/%2/rps",
                Some(Ok(pod("%2"))),
            ),
            (
                "/apis/custom.metrics.k8s.io/v1beta2/nodes/*/rps",
                Some(Ok(Request::OtherMetric {
                    resource: "nodes".into(),
                    metric: "rps".into(),
                })),
            ),
            (
                "/apis/custom.metrics.k8s.io/v9/namespaces/shop/pods/*/rps",
                Some(Err(404)),
            ),
            (
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop",
                Some(Err(404)),
            ),
            ("/apis/metrics.k8s.io/v1beta1/pods", None),
            ("/api/v1/pods", None),
        ];
        for (path, want) in cases {
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            let got = parse(&segments).map(|r| r.map_err(|e| e.code));
            assert_eq!(got, want, "{path}");
        }
    }

    #[test]
    fn metric_requests_are_authorized_as_pod_subresources() {
        let request = Request::PodMetric {
            version: "v1beta2".into(),
            namespace: "shop".into(),
            name: "*".into(),
            metric: "rps".into(),
        };
        let attributes = request
            .resource_attributes("/p")
            .expect("a resource request");
        assert_eq!(
            (
                attributes.verb.as_str(),
                attributes.api_group.as_str(),
                attributes.resource.as_str(),
                attributes.subresource.as_str(),
                attributes.name.as_str(),
                attributes.namespace.as_str()
            ),
            ("get", GROUP, "pods", "rps", "*", "shop")
        );
        assert!(Request::Group.resource_attributes("/p").is_none());
    }

    #[test]
    fn bad_selectors_name_their_parameter() {
        let query = HashMap::from([("metricLabelSelector".to_string(), "a in (b".to_string())]);
        let error = selector(&query, "metricLabelSelector").expect_err("malformed");
        assert_eq!(error.code, 400);
        assert!(
            error.message.starts_with("metricLabelSelector \"a in (b\""),
            "{}",
            error.message
        );
        assert!(
            error.message.contains("expected the form"),
            "{}",
            error.message
        );
        let causes = &error.details.expect("details").causes;
        assert_eq!(causes[0].field, "metricLabelSelector");
        let (everything, text) = selector(&HashMap::new(), "labelSelector").expect("empty");
        assert!(everything.is_empty() && text.is_empty());
    }
}
