//! Many Events in one request: `POST /api/v1/events` with an `EventList` body creates each item
//! in the namespace its metadata names, exactly as a `POST /api/v1/namespaces/{ns}/events` of it
//! would (validation, defaults, managedFields, admission), and answers with a Status.
//!
//! Why: a workload's propagation records about a dozen Events and the controllers' recorders
//! gather them for a tenth of a second; sent one request each, they were 40 % of the API's
//! requests at a trickle, each paying its frames, routing and wake-ups. kube-apiserver has no
//! such call (it answers 405 there), so our recorders fall back to one create per Event when a
//! server refuses it; `docs/compat.md` lists the extension.
//!
//! Invariants: each item is created or refused on its own, never half-written; the items'
//! store writes are issued together, so the writer commits them as one batch. The caller needs
//! `create` on events in all namespaces (the router authorizes the cluster-wide path).

use apimachinery::{ApiError, FieldError, ResourceDef, Status, StatusCause, StatusDetails};
use serde_json::Value;

use super::WriteOptions;
use super::create::create_object;
use crate::server::ApiServer;

/// Most Events one request may carry.
pub const MAX_ITEMS: usize = 1000;

const ACCEPTED_FORM: &str = "POST /api/v1/events takes {\"kind\": \"EventList\", \"apiVersion\": \"v1\", \"items\": [Event, ...]} with each item's metadata.namespace set; one Event is created with POST /api/v1/namespaces/{namespace}/events";

/// Whether `def` and a request without a namespace make an Event list create.
pub fn is_event_list_create(def: &ResourceDef, namespace: Option<&str>) -> bool {
    namespace.is_none() && def.group.is_empty() && def.version == "v1" && def.plural == "events"
}

/// Creates every item of `list`. `Ok` (a Success Status, code 201) when all were created;
/// otherwise an error with the first refusal's code and reason, and one cause per refused
/// item (`field: items[i]`): the items not named there were created.
pub async fn create_event_list(
    server: &ApiServer,
    def: &ResourceDef,
    list: Value,
    options: &WriteOptions,
) -> Result<Status, ApiError> {
    let items = list_items(list)?;
    let total = items.len();
    let creates = items.into_iter().map(|item| async move {
        let namespace = item
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .map(str::to_string);
        let Some(namespace) = namespace else {
            return Err(ApiError::invalid(
                "",
                "Event",
                item.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                &[FieldError::required(
                    "metadata.namespace",
                    "each Event of the list names its namespace",
                )],
            ));
        };
        create_object(server, def, Some(&namespace), item, options)
            .await
            .map(drop)
    });
    let outcomes = futures::future::join_all(creates).await;
    let refused: Vec<(usize, ApiError)> = outcomes
        .into_iter()
        .enumerate()
        .filter_map(|(index, outcome)| outcome.err().map(|err| (index, err)))
        .collect();
    let Some((_, first)) = refused.first() else {
        return Ok(Status {
            status: "Success".into(),
            message: format!("{total} events created"),
            details: Some(StatusDetails {
                kind: def.plural.clone(),
                ..StatusDetails::default()
            }),
            code: 201,
            ..Status::default()
        });
    };
    let mut error = ApiError::new(
        first.code,
        &first.reason,
        format!(
            "{} of {total} events were not created (the others were): {}",
            refused.len(),
            refused
                .iter()
                .map(|(index, err)| format!("items[{index}]: {}", err.message))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    error.details = Some(StatusDetails {
        kind: def.plural.clone(),
        causes: refused
            .iter()
            .map(|(index, err)| {
                StatusCause::new(&err.reason, err.message.clone(), &format!("items[{index}]"))
            })
            .collect(),
        ..StatusDetails::default()
    });
    Err(error)
}

/// The items of an `EventList`, or why the body is not one.
fn list_items(list: Value) -> Result<Vec<Value>, ApiError> {
    let kind = list.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api_version = list
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind != "EventList" || api_version != "v1" {
        return Err(ApiError::bad_request(format!(
            "expected kind EventList in apiVersion v1, got kind {kind:?} in apiVersion {api_version:?}: {ACCEPTED_FORM}"
        )));
    }
    let items = match list {
        Value::Object(mut map) => map.remove("items"),
        _ => None,
    };
    let Some(Value::Array(items)) = items else {
        return Err(ApiError::invalid(
            "",
            "EventList",
            "",
            &[FieldError::required("items", ACCEPTED_FORM)],
        ));
    };
    if items.len() > MAX_ITEMS {
        return Err(ApiError::invalid(
            "",
            "EventList",
            "",
            &[FieldError::too_many("items", items.len(), MAX_ITEMS)],
        ));
    }
    Ok(items)
}
