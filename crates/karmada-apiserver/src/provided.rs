//! Kinds served from a provider instead of the store, read-only: what kube-aggregator's
//! APIServices do for metrics-server, in process. A member-sim provides `metrics.k8s.io` from its
//! pods and the load it is told; the control plane provides it aggregated over its members.
//!
//! The provider lists a namespace (or everything); this module applies the request's selectors,
//! finds a named object and shapes the `{Kind}List`, so a provider only produces objects.

use apimachinery::{ApiError, ResourceDef};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::handlers::not_found;
use crate::handlers::read::ListParams;
use crate::server::ApiServer;

/// Produces the objects of the kinds it serves.
#[async_trait]
pub trait ProvidedResources: Send + Sync {
    /// The kinds this provider serves (they join discovery).
    fn defs(&self) -> Vec<ResourceDef>;

    /// Every object of `def` in `namespace` (every namespace when `None`).
    async fn list(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, ApiError>;
}

/// One object by name (404 when the provider has none).
pub async fn get(
    provider: &dyn ProvidedResources,
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    provider
        .list(server, def, namespace)
        .await?
        .into_iter()
        .find(|object| object.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| not_found(def, name))
}

/// The `{Kind}List` of the objects the selectors of `params` match.
pub async fn list(
    provider: &dyn ProvidedResources,
    server: &ApiServer,
    def: &ResourceDef,
    namespace: Option<&str>,
    params: &ListParams,
) -> Result<Value, ApiError> {
    let items: Vec<Value> = provider
        .list(server, def, namespace)
        .await?
        .into_iter()
        .filter(|object| params.filter.matches(object))
        .collect();
    Ok(json!({
        "kind": format!("{}List", def.kind),
        "apiVersion": def.api_version(),
        "metadata": {},
        "items": items,
    }))
}
