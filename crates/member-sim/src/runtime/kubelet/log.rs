//! `pods/log`: the lines [`crate::container_logs`] derives from the container's status, as
//! `text/plain`. With `follow=true` the answer stays open and carries each new line as the
//! status changes (the pod is re-read every [`FOLLOW_PERIOD`]); it ends when the pod is gone
//! or the container has terminated.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::ApiError;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::Response;
use http::{StatusCode, header};
use jiff::Timestamp;
use karmada_apiserver::ApiServer;
use karmada_apiserver::respond::error_response;
use serde_json::Value;

use super::{admit, bad_request, first, flag, query_pairs, read};
use crate::container;
use crate::container_logs::{self, LogLine, LogOptions};
use crate::meta;

/// How often a followed log looks for new lines.
const FOLLOW_PERIOD: Duration = Duration::from_secs(1);

pub async fn serve(
    State(server): State<Arc<ApiServer>>,
    Path((namespace, name)): Path<(String, String)>,
    request: Request,
) -> Response {
    logs(server, namespace, name, request)
        .await
        .unwrap_or_else(|e| error_response(&e))
}

fn number(query: &[(String, String)], key: &str) -> Result<Option<i64>, ApiError> {
    first(query, key)
        .map(|text| {
            text.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "{key}: Invalid value: \"{text}\": must be an integer"
                ))
            })
        })
        .transpose()
}

fn options(query: &[(String, String)]) -> Result<LogOptions, ApiError> {
    let since_time = first(query, "sinceTime")
        .map(|text| {
            text.parse::<Timestamp>().map_err(|_| {
                ApiError::bad_request(format!(
                    "sinceTime: Invalid value: \"{text}\": must be an RFC 3339 time such as 2026-01-02T15:04:05Z"
                ))
            })
        })
        .transpose()?;
    Ok(LogOptions {
        previous: flag(query, "previous"),
        timestamps: flag(query, "timestamps"),
        tail_lines: number(query, "tailLines")?,
        since_seconds: number(query, "sinceSeconds")?,
        since_time,
        limit_bytes: number(query, "limitBytes")?,
    })
}

async fn logs(
    server: Arc<ApiServer>,
    namespace: String,
    name: String,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, _body) = request.into_parts();
    let pod = admit(&server, &parts, &namespace, &name, "log").await?;
    let query = query_pairs(&parts);
    let options = options(&query)?;
    let container = meta::str_at(
        container::choose(&pod, first(&query, "container")).map_err(bad_request)?,
        "/name",
    )
    .to_string();
    let lines = container_logs::lines(&pod, &container, &options).map_err(bad_request)?;
    let text = container_logs::render(&lines, &options, Timestamp::now());
    let follow = flag(&query, "follow") && !options.previous && !is_terminated(&pod, &container);
    let body = if follow {
        let shown = lines;
        let state = Follow {
            server,
            namespace,
            name,
            container,
            options: LogOptions {
                tail_lines: None,
                since_seconds: None,
                since_time: None,
                limit_bytes: None,
                ..options
            },
            shown,
            first: Some(text),
        };
        Body::from_stream(futures::stream::unfold(state, Follow::next))
    } else {
        Body::from(text)
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(body)
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn is_terminated(pod: &Value, container: &str) -> bool {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| meta::str_at(s, "/name") == container && s.pointer("/state/terminated").is_some())
}

/// A followed log between chunks.
struct Follow {
    server: Arc<ApiServer>,
    namespace: String,
    name: String,
    container: String,
    /// Render options for new lines (no tail or since filter: those applied to the first chunk).
    options: LogOptions,
    shown: Vec<LogLine>,
    first: Option<String>,
}

impl Follow {
    async fn next(mut self) -> Option<(Result<String, std::io::Error>, Self)> {
        if let Some(text) = self.first.take() {
            return Some((Ok(text), self));
        }
        loop {
            tokio::time::sleep(FOLLOW_PERIOD).await;
            let pod = read(&self.server, "pods", &self.namespace, &self.name)
                .await
                .ok()
                .flatten()?;
            let lines =
                container_logs::lines(&pod, &self.container, &self.options).unwrap_or_default();
            let new: Vec<LogLine> = lines
                .iter()
                .filter(|line| !self.shown.contains(line))
                .cloned()
                .collect();
            let done = is_terminated(&pod, &self.container);
            if !new.is_empty() {
                let text = container_logs::render(&new, &self.options, Timestamp::now());
                self.shown.extend(new);
                return Some((Ok(text), self));
            }
            if done {
                return None;
            }
        }
    }
}
