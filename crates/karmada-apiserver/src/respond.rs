//! Rendering answers: objects and lists in the negotiated shape (plain, Table,
//! PartialObjectMetadata), `Warning` headers, and error Statuses. Every response body the
//! resource endpoints send is built here.

use apimachinery::{ApiError, ResourceDef};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::content::{self, Include, Output};
use crate::handlers::Written;
use crate::hooks;

pub fn written_response(written: Written) -> Response {
    let code = StatusCode::from_u16(written.code).unwrap_or(StatusCode::OK);
    match written.json {
        Some(json) => text_response(code, json, &written.warnings),
        None => json_response(code, &written.object, &written.warnings),
    }
}

/// A Table of `objects` for `def`, carrying `resource_version` when given.
pub fn render_table(
    def: &ResourceDef,
    objects: &[Value],
    include: Include,
    resource_version: Option<&Value>,
) -> Value {
    let mut table = hooks::table(def, objects, include);
    if let Some(rv) = resource_version {
        table["metadata"]["resourceVersion"] = rv.clone();
    }
    table
}

pub fn render(
    def: &ResourceDef,
    code: StatusCode,
    object: Value,
    output: Output,
    include: Include,
    warnings: &[String],
) -> Response {
    let body = match output {
        Output::Json => object,
        Output::PartialMetadata => content::partial_metadata(&object),
        Output::Table => render_table(def, std::slice::from_ref(&object), include, None),
    };
    json_response(code, &body, warnings)
}

pub fn render_list(def: &ResourceDef, list: Value, output: Output, include: Include) -> Response {
    let body = match output {
        Output::Json => list,
        Output::PartialMetadata => {
            let items: Vec<Value> = list["items"]
                .as_array()
                .map(|a| a.iter().map(content::partial_metadata).collect())
                .unwrap_or_default();
            json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": list["metadata"], "items": items})
        }
        Output::Table => {
            let items = list["items"].as_array().cloned().unwrap_or_default();
            let mut table = render_table(
                def,
                &items,
                include,
                list.pointer("/metadata/resourceVersion"),
            );
            if let Some(token) = list.pointer("/metadata/continue") {
                table["metadata"]["continue"] = token.clone();
            }
            table
        }
    };
    json_response(StatusCode::OK, &body, &[])
}

/// A JSON response with `Warning: 299` headers.
pub fn json_response(code: StatusCode, body: &Value, warnings: &[String]) -> Response {
    text_response(code, body.to_string(), warnings)
}

/// [`json_response`] of a body already written as JSON text.
fn text_response(code: StatusCode, json: String, warnings: &[String]) -> Response {
    let mut response = (code, [(header::CONTENT_TYPE, "application/json")], json).into_response();
    for warning in warnings {
        let text = format!(
            "299 - {}",
            serde_json::to_string(warning).unwrap_or_default()
        );
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// The Status response of an error.
pub fn error_response(err: &ApiError) -> Response {
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(code, &err.to_status(), &[]);
    if let Some(seconds) = err.retry_after_seconds
        && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}
