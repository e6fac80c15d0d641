//! Reaching resource templates of any kind through the dynamic API: apiVersion + kind → plural and scope by
//! discovery, remembered per kind (a kind's plural and scope never change while it is served).

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use tokio::sync::RwLock;

use crate::runtime::ControllerError;

/// (apiVersion, kind).
type KindKey = (String, String);

/// Resolves kinds to dynamic APIs; cheap to clone (the cache is shared).
#[derive(Clone)]
pub struct TemplateResolver {
    client: kube::Client,
    cache: Arc<RwLock<HashMap<KindKey, (ApiResource, bool)>>>,
}

impl TemplateResolver {
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            cache: Arc::default(),
        }
    }

    /// The API resource of `api_version`/`kind` and whether it is namespaced.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), ControllerError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.cache.read().await.get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk).await?;
        let found = (resource, capabilities.scope == Scope::Namespaced);
        self.cache.write().await.insert(key, found.clone());
        Ok(found)
    }

    /// The dynamic API holding `api_version`/`kind` objects of `namespace` (ignored for cluster-scoped kinds).
    pub async fn api(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
    ) -> Result<Api<DynamicObject>, ControllerError> {
        let (resource, namespaced) = self.resolve(api_version, kind).await?;
        Ok(if namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        })
    }

    /// The object, or `None` when it does not exist.
    pub async fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<DynamicObject>, ControllerError> {
        let api = self.api(api_version, kind, namespace).await?;
        Ok(api.get_opt(name).await?)
    }
}
