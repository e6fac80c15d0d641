//! FederatedResourceQuota enforcement at admission (Karmada's resourcebinding.karmada.io webhook with the
//! FederatedQuotaEnforcement behaviour): a ResourceBinding whose scheduled replicas would raise its namespace's
//! use past a quota's `overall` is refused, naming the resource and what remains. Only a binding that asks for
//! more than it had is checked, so scaling down or rescheduling the same amount is never refused; the use is
//! counted from the namespace's other bindings as stored (the arithmetic is
//! `karmada_api::policy::quota_usage`).

use std::collections::BTreeMap;

use apimachinery::{ApiError, ResourceDef};
use karmada_api::policy::FederatedResourceQuota;
use karmada_api::policy::quota_usage::{add, binding_usage, exceeded};
use serde_json::Value;

use crate::handlers::read::list_items;
use crate::server::ApiServer;

fn is_resource_binding(def: &ResourceDef) -> bool {
    def.group == "work.karmada.io" && def.kind == "ResourceBinding"
}

async fn stored(
    server: &ApiServer,
    group: &str,
    version: &str,
    plural: &str,
    namespace: &str,
) -> Result<Vec<Value>, ApiError> {
    match server.registry().lookup(group, version, plural) {
        Some(def) => list_items(server, &def, Some(namespace)).await,
        None => Ok(Vec::new()),
    }
}

/// Refuses `object` (a ResourceBinding being written over `old`) when it would exceed a quota.
pub async fn check(
    server: &ApiServer,
    def: &ResourceDef,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !is_resource_binding(def) {
        return Ok(());
    }
    let requested = binding_usage(object);
    let before = old.map(binding_usage).unwrap_or_default();
    let grows = requested
        .iter()
        .any(|(resource, amount)| *amount > before.get(resource).copied().unwrap_or(0));
    if !grows {
        return Ok(());
    }
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let quotas = stored(
        server,
        karmada_api::policy::GROUP,
        karmada_api::policy::VERSION,
        "federatedresourcequotas",
        namespace,
    )
    .await?;
    if quotas.is_empty() {
        return Ok(());
    }
    let name = object.pointer("/metadata/name").and_then(Value::as_str);
    let mut current = BTreeMap::new();
    for binding in stored(
        server,
        "work.karmada.io",
        "v1alpha2",
        "resourcebindings",
        namespace,
    )
    .await?
    {
        if binding.pointer("/metadata/name").and_then(Value::as_str) != name {
            add(&mut current, &binding_usage(&binding));
        }
    }
    for quota in quotas {
        let Ok(quota) = serde_json::from_value::<FederatedResourceQuota>(quota) else {
            continue;
        };
        if let Some(message) = exceeded(&quota, &current, &requested) {
            return Err(ApiError::forbidden(format!(
                "admission webhook \"resourcebinding.karmada.io\" denied the request: {message}"
            )));
        }
    }
    Ok(())
}
