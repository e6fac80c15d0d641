//! Get and list. A list is served from one store snapshot: the first page fixes the revision,
//! and the `continue` token carries that revision and the last key examined, so every page of
//! one list sees the same state (or gets 410 once that revision is compacted).

use apimachinery::{ApiError, ResourceDef};
use base64::Engine as _;
use serde_json::{Value, json};
use store::{RangeRequest, StoreError};

use super::not_found;
use crate::selectors::Filter;
use crate::server::ApiServer;
use crate::storage;

/// Returns one object (404 if absent).
pub async fn get_object(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    server
        .read_object(def, namespace, name)
        .await?
        .map(|(object, _)| object)
        .ok_or_else(|| not_found(def, name))
}

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionMatch {
    NotOlderThan,
    Exact,
}

/// The query parameters of a list.
#[derive(Clone, Debug)]
pub struct ListParams {
    pub filter: Filter,
    pub limit: usize,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub version_match: Option<VersionMatch>,
}

impl ListParams {
    pub fn parse(kind: &str, query: impl Fn(&str) -> Option<String>) -> Result<Self, ApiError> {
        let filter = Filter::parse(
            query("labelSelector").as_deref(),
            query("fieldSelector").as_deref(),
            kind,
        )?;
        let limit = match query("limit").filter(|l| !l.is_empty()) {
            Some(l) => l
                .parse::<i64>()
                .map_err(|_| {
                    ApiError::bad_request(format!(
                        "limit: Invalid value: \"{l}\": must be an integer"
                    ))
                })?
                .max(0) as usize,
            None => 0,
        };
        let version_match = match query("resourceVersionMatch").as_deref() {
            None | Some("") => None,
            Some("NotOlderThan") => Some(VersionMatch::NotOlderThan),
            Some("Exact") => Some(VersionMatch::Exact),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
                )));
            }
        };
        Ok(Self {
            filter,
            limit,
            continue_token: query("continue").filter(|c| !c.is_empty()),
            resource_version: query("resourceVersion").filter(|rv| !rv.is_empty()),
            version_match,
        })
    }
}

fn encode_continue(revision: u64, last_key: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str, prefix: &str) -> Result<(u64, String), ApiError> {
    let bad = || {
        ApiError::bad_request(format!(
            "continue key is not valid: {token:?} is not a continue token this server issued"
        ))
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    let revision = value.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = value.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    if !start.starts_with(prefix) {
        return Err(bad());
    }
    Ok((revision, start.to_string()))
}

/// Lists a collection, honouring selectors, paging and resourceVersion semantics. Returns the
/// `{Kind}List` object.
pub async fn list_objects(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    params: &ListParams,
) -> Result<Value, ApiError> {
    let page = collect(server, def, namespace, params, false).await?;
    let items: Vec<Value> = match page.items {
        Items::Objects(items) => items,
        Items::Raw(_) => Vec::new(),
    };
    Ok(json!({
        "kind": format!("{}List", def.kind),
        "apiVersion": def.api_version(),
        "metadata": page.metadata,
        "items": items,
    }))
}

/// Every object of `def` in `namespace` (all namespaces when `None`), no selectors, one snapshot: for the
/// server's own readers (providers, admission checks).
pub async fn list_items(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    let params = ListParams {
        filter: Filter::everything(&def.kind),
        limit: 0,
        continue_token: None,
        resource_version: None,
        version_match: None,
    };
    let mut list = list_objects(server, def, namespace, &params).await?;
    Ok(match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    })
}

/// The same list as [`list_objects`], already serialised: items are spliced from the stored
/// bytes without being parsed when no selector needs to look inside them. This is what keeps a
/// LIST of ten thousand objects cheap.
pub async fn list_objects_json(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    params: &ListParams,
) -> Result<String, ApiError> {
    let raw = params.filter.is_everything();
    let page = collect(server, def, namespace, params, raw).await?;
    let mut out = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
        Value::String(format!("{}List", def.kind)),
        Value::String(def.api_version()),
        page.metadata
    );
    // One buffer, written once: big transient copies are what a long-running server's heap
    // keeps after a large LIST.
    match page.items {
        Items::Raw(items) => {
            out.reserve(items.iter().map(|item| item.len() + 1).sum::<usize>() + 2);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(item);
            }
        }
        Items::Objects(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&item.to_string());
            }
        }
    }
    out.push_str("]}");
    Ok(out)
}

/// Listed items: parsed objects, or (no selector) stamped JSON straight from the store.
enum Items {
    Objects(Vec<Value>),
    Raw(Vec<String>),
}

impl Items {
    fn len(&self) -> usize {
        match self {
            Items::Objects(items) => items.len(),
            Items::Raw(items) => items.len(),
        }
    }
}

struct Page {
    items: Items,
    metadata: Value,
}

async fn collect(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    params: &ListParams,
    raw: bool,
) -> Result<Page, ApiError> {
    let prefix = storage::collection_prefix(def, namespace);
    let (mut revision, mut start_after) = match &params.continue_token {
        Some(token) => {
            let (rev, start) = decode_continue(token, &prefix)?;
            (Some(rev), Some(start))
        }
        None => (None, None),
    };
    if revision.is_none()
        && let Some(rv) = &params.resource_version
    {
        let requested = storage::parse_resource_version(rv)?;
        if params.version_match == Some(VersionMatch::Exact) {
            revision = Some(requested);
        } else if requested > 0 {
            let current = server
                .store
                .current_revision()
                .await
                .map_err(storage::store_error)?;
            if requested > current {
                return Err(ApiError::new(
                    504,
                    "Timeout",
                    format!("Too large resource version: {requested}, current: {current}"),
                ));
            }
        }
    }
    let mut items = if raw {
        Items::Raw(Vec::new())
    } else {
        Items::Objects(Vec::new())
    };
    let mut continue_token = None;
    loop {
        let want = if params.limit == 0 {
            0
        } else {
            params.limit - items.len()
        };
        let request = RangeRequest {
            prefix: prefix.clone(),
            start_after: start_after.clone(),
            limit: want,
            revision,
        };
        let page = match server.store.range(request).await {
            Ok(page) => page,
            Err(StoreError::Compacted {
                requested,
                compacted,
            }) if params.continue_token.is_some() => {
                let _ = (requested, compacted);
                return Err(ApiError::new(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            Err(err) => return Err(storage::store_error(err)),
        };
        revision = Some(page.revision);
        for kv in &page.kvs {
            match &mut items {
                Items::Raw(raw) => raw.push(storage::stamped_json(def, kv)?),
                Items::Objects(_) if params.filter.labels_exclude(&kv.value) => {}
                Items::Objects(objects) => {
                    let object = storage::decode(def, kv)?;
                    if params.filter.matches(&object) {
                        objects.push(object);
                    }
                }
            }
        }
        let last_key = page.kvs.last().map(|kv| kv.key.clone());
        if !page.more || last_key.is_none() {
            break;
        }
        if params.limit > 0 && items.len() >= params.limit {
            if let Some(last) = last_key {
                continue_token = Some(encode_continue(page.revision, &last));
            }
            break;
        }
        start_after = last_key;
    }
    let mut metadata = json!({"resourceVersion": revision.unwrap_or_default().to_string()});
    if let Some(token) = continue_token {
        metadata["continue"] = Value::String(token);
    }
    Ok(Page { items, metadata })
}
