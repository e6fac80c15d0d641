//! The APIService availability controller: for each APIService, is its backend there and does
//! it serve its group/version? The answer becomes the `Available` condition (reasons as
//! kube-aggregator gives them: `Local`, `Passed`, `ServiceNotFound`, `MissingEndpoints`,
//! `FailedDiscoveryCheck`), the route requests take ([`super::Routes`]), and the kinds its
//! discovery document lists (served in this server's discovery while it is available).
//!
//! Level-triggered: every pass looks at every APIService; a pass runs when an APIService, a
//! Service or an Endpoints object changes, and every [`RECHECK`] (a backend can go away silently).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::{ApiError, Printer, ResourceDef};
use futures::StreamExt;
use jiff::Timestamp;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::backend::{self, Target, Unavailable};
use super::{GROUP, PLURAL, Route, VERSION};
use crate::background;
use crate::handlers::WriteOptions;
use crate::handlers::read::list_items;
use crate::handlers::update::update_object;
use crate::objects::Part;
use crate::server::ApiServer;
use apimachinery::error_chain;

/// How often every APIService is checked again without a change to trigger it.
pub const RECHECK: Duration = Duration::from_secs(10);
/// Pause before a failed pass starts again.
const RETRY: Duration = Duration::from_millis(500);
/// Time the backend has to answer the discovery check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// The field manager of the condition writes.
const MANAGER: &str = "kube-apiserver";

/// What the controller remembers between passes.
#[derive(Default)]
pub struct State {
    /// Clients by target, so a recheck reuses the connection pool.
    clients: Mutex<Vec<(Target, kube::Client)>>,
    /// The kinds each APIService contributed to the registry (by registry owner key).
    served: Mutex<BTreeMap<String, Vec<ResourceDef>>>,
}

/// Runs until the server's shutdown token is cancelled.
pub async fn run(server: Arc<ApiServer>) {
    background::run_until_shutdown(&server, "APIService availability restarting", RETRY, || {
        watch_and_check(&server)
    })
    .await;
}

async fn watch_and_check(server: &ApiServer) -> Result<(), ApiError> {
    let registry = server.registry();
    let (Some(api_services), Some(services), Some(endpoints)) = (
        registry.lookup(GROUP, VERSION, PLURAL),
        registry.lookup("", "v1", "services"),
        registry.lookup("", "v1", "endpoints"),
    ) else {
        return Ok(());
    };
    let revision = background::current_revision(server).await?;
    let mut changes = futures::stream::select_all([
        background::watch_kind(server, &api_services, revision).await?,
        background::watch_kind(server, &services, revision).await?,
        background::watch_kind(server, &endpoints, revision).await?,
    ]);
    loop {
        check_all(server).await?;
        tokio::select! {
            change = changes.next() => match change {
                None => return Ok(()),
                Some(Err(error)) => return Err(crate::storage::store_error(error)),
                Some(Ok(_)) => {}
            },
            _ = tokio::time::sleep(RECHECK) => {}
        }
    }
}

/// The registry owner key of an APIService's kinds.
fn owner(name: &str) -> String {
    format!("apiservice:{name}")
}

/// One look at every APIService.
async fn check_all(server: &ApiServer) -> Result<(), ApiError> {
    let Some(def) = server.registry().lookup(GROUP, VERSION, PLURAL) else {
        return Ok(());
    };
    let api_services = list_items(server, &def, None).await?;
    let mut routes = BTreeMap::new();
    let mut present = BTreeSet::new();
    for api_service in &api_services {
        let name = str_at(api_service, "/metadata/name").to_string();
        let group = str_at(api_service, "/spec/group").to_string();
        let version = str_at(api_service, "/spec/version").to_string();
        present.insert(owner(&name));
        let (condition, route, kinds) = if api_service.pointer("/spec/service/name").is_none() {
            (
                Condition::available("Local", "Local APIServices are always available"),
                None,
                None,
            )
        } else {
            match check(server, api_service, &group, &version).await {
                Ok((url, client, kinds)) => (
                    Condition::available("Passed", "all checks passed"),
                    Some(Route::Available {
                        api_service: name.clone(),
                        url,
                        client,
                    }),
                    Some(kinds),
                ),
                Err(unavailable) => (
                    Condition::unavailable(unavailable.reason, &unavailable.message),
                    Some(Route::Unavailable {
                        api_service: name.clone(),
                        reason: unavailable.reason.to_string(),
                        message: unavailable.message,
                    }),
                    None,
                ),
            }
        };
        if let Some(route) = route {
            routes.insert((group, version), route);
        }
        publish_kinds(server, &owner(&name), kinds.unwrap_or_default());
        write_condition(server, &def, api_service, &condition).await?;
    }
    let gone: Vec<String> = server
        .aggregator
        .checks
        .served
        .lock()
        .keys()
        .filter(|key| !present.contains(*key))
        .cloned()
        .collect();
    for key in gone {
        publish_kinds(server, &key, Vec::new());
    }
    server.aggregator.routes.replace(routes);
    Ok(())
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Serves `kinds` on behalf of the APIService `key` (none: stops serving them), touching the
/// registry only when they change (a new registry starts a new discovery cache).
fn publish_kinds(server: &ApiServer, key: &str, kinds: Vec<ResourceDef>) {
    let mut served = server.aggregator.checks.served.lock();
    let before = served.get(key).cloned().unwrap_or_default();
    if before == kinds {
        return;
    }
    if kinds.is_empty() {
        served.remove(key);
        server.update_registry(|registry| registry.without_crd(key));
    } else {
        served.insert(key.to_string(), kinds.clone());
        server.update_registry(|registry| registry.with_crd(key, kinds));
    }
}

/// The backend's URL, client and served kinds, or why it is not available.
async fn check(
    server: &ApiServer,
    api_service: &Value,
    group: &str,
    version: &str,
) -> Result<(String, kube::Client, Vec<ResourceDef>), Unavailable> {
    let target = backend::resolve(server, api_service).await?;
    let client = client_for(server, &target).map_err(|message| Unavailable {
        reason: "FailedDiscoveryCheck",
        message,
    })?;
    let path = format!("/apis/{group}/{version}");
    let failing = |detail: String| Unavailable {
        reason: "FailedDiscoveryCheck",
        message: format!(
            "failing or missing response from {}{path}: {detail}",
            target.url
        ),
    };
    let request = http::Request::get(&path)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(|e| failing(e.to_string()))?;
    let document = tokio::time::timeout(CHECK_TIMEOUT, client.request::<Value>(request))
        .await
        .map_err(|_| failing(format!("no answer within {}s", CHECK_TIMEOUT.as_secs())))?
        .map_err(|e| failing(error_chain(&e)))?;
    Ok((
        target.url.clone(),
        client,
        kinds_of(group, version, &document),
    ))
}

fn client_for(server: &ApiServer, target: &Target) -> Result<kube::Client, String> {
    let mut clients = server.aggregator.checks.clients.lock();
    if let Some((_, client)) = clients.iter().find(|(t, _)| t == target) {
        return Ok(client.clone());
    }
    let client = backend::client(target)?;
    clients.push((target.clone(), client.clone()));
    Ok(client)
}

/// The kinds an `APIResourceList` names (subresources are not kinds).
pub fn kinds_of(group: &str, version: &str, document: &Value) -> Vec<ResourceDef> {
    document
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| !str_at(r, "/name").contains('/') && !str_at(r, "/kind").is_empty())
        .map(|r| {
            let strings = |key: &str| -> Vec<String> {
                r.get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            };
            let kind = str_at(r, "/kind").to_string();
            let singular = match str_at(r, "/singularName") {
                "" => kind.to_ascii_lowercase(),
                given => given.to_string(),
            };
            ResourceDef {
                group: group.to_string(),
                version: version.to_string(),
                plural: str_at(r, "/name").to_string(),
                singular,
                kind,
                namespaced: r
                    .get("namespaced")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                short_names: strings("shortNames"),
                categories: strings("categories"),
                status_subresource: false,
                scale_subresource: None,
                builtin: false,
                tracks_generation: false,
                printer: Printer::Columns(Vec::new()),
                schema: None,
                storage_version: true,
            }
        })
        .collect()
}

/// The `Available` condition to hold.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Condition {
    status: &'static str,
    reason: String,
    message: String,
}

impl Condition {
    fn available(reason: &str, message: &str) -> Self {
        Self {
            status: "True",
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn unavailable(reason: &str, message: &str) -> Self {
        Self {
            status: "False",
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// `status.conditions` with `condition` as the Available one; `None` when nothing changes.
/// The transition time moves only when the status does.
fn with_condition(api_service: &Value, condition: &Condition, now: Timestamp) -> Option<Value> {
    let conditions: Vec<Value> = api_service
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let existing = conditions
        .iter()
        .find(|c| str_at(c, "/type") == "Available");
    if let Some(existing) = existing
        && str_at(existing, "/status") == condition.status
        && str_at(existing, "/reason") == condition.reason
        && str_at(existing, "/message") == condition.message
    {
        return None;
    }
    let transition = match existing {
        Some(e) if str_at(e, "/status") == condition.status => {
            e.get("lastTransitionTime").cloned().unwrap_or(Value::Null)
        }
        _ => json!(now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
    };
    let updated = json!({
        "type": "Available",
        "status": condition.status,
        "lastTransitionTime": transition,
        "reason": condition.reason,
        "message": condition.message,
    });
    let mut conditions: Vec<Value> = conditions
        .into_iter()
        .filter(|c| str_at(c, "/type") != "Available")
        .collect();
    conditions.push(updated);
    Some(Value::Array(conditions))
}

async fn write_condition(
    server: &ApiServer,
    def: &ResourceDef,
    api_service: &Value,
    condition: &Condition,
) -> Result<(), ApiError> {
    let Some(conditions) = with_condition(api_service, condition, Timestamp::now()) else {
        return Ok(());
    };
    let mut updated = api_service.clone();
    updated["status"] = json!({"conditions": conditions});
    let name = str_at(api_service, "/metadata/name").to_string();
    match update_object(
        server,
        def,
        None,
        &name,
        updated,
        Part::Status,
        &WriteOptions::internal(MANAGER),
    )
    .await
    {
        // Changed or deleted meanwhile: the next pass sees the new object.
        Err(error) if error.code == 409 || error.code == 404 => Ok(()),
        other => other.map(drop),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn discovery_documents_become_kinds_without_subresources() {
        let document = json!({
            "kind": "APIResourceList", "groupVersion": "wardle.example.com/v1alpha1",
            "resources": [
                {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
                 "verbs": ["get", "list"], "shortNames": ["fl"], "categories": ["all"]},
                {"name": "flunders/status", "namespaced": true, "kind": "Flunder", "verbs": ["get"]},
                {"name": "fischers", "singularName": "", "namespaced": false, "kind": "Fischer", "verbs": ["get"]},
            ],
        });
        let kinds = kinds_of("wardle.example.com", "v1alpha1", &document);
        let summary: Vec<(String, String, bool, Vec<String>)> = kinds
            .iter()
            .map(|d| {
                (
                    d.plural.clone(),
                    d.singular.clone(),
                    d.namespaced,
                    d.short_names.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "flunders".into(),
                    "flunder".into(),
                    true,
                    vec!["fl".to_string()]
                ),
                ("fischers".into(), "fischer".into(), false, vec![]),
            ]
        );
    }

    #[test]
    fn the_condition_changes_only_when_it_must() {
        let now: Timestamp = "2026-12-06T02:00:00Z".parse().unwrap();
        let later: Timestamp = "2026-12-06T03:00:00Z".parse().unwrap();
        let fresh = json!({"metadata": {"name": "v1.x"}});
        let passed = Condition::available("Passed", "all checks passed");
        let conditions = with_condition(&fresh, &passed, now).unwrap();
        assert_eq!(
            conditions,
            json!([{"type": "Available", "status": "True", "lastTransitionTime": "2026-12-06T02:00:00Z",
                    "reason": "Passed", "message": "all checks passed"}])
        );
        let stored = json!({"status": {"conditions": conditions}});
        assert_eq!(with_condition(&stored, &passed, later), None);
        let failing = Condition::unavailable("FailedDiscoveryCheck", "no");
        let flipped = with_condition(&stored, &failing, later).unwrap();
        assert_eq!(flipped[0]["lastTransitionTime"], "2026-12-06T03:00:00Z");
        assert_eq!(flipped[0]["status"], "False");
    }
}
