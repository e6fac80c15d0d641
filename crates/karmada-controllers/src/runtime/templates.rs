//! Reading resource templates of any kind: apiVersion + kind → plural and scope by discovery, remembered per
//! kind (a kind's plural and scope never change while it is served); the object itself from the process's
//! shared watch of its kind when one is running (the resource detector watches every propagated kind), else
//! from the API server.
//!
//! Why the cache: the binding controller renders a binding several times per rollout or failover, and the
//! binding-status and dependency controllers read the template on every aggregation; a GET each time was a
//! fifth of the API requests of a failover.

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
use kube::discovery::Scope;
use tokio::sync::RwLock;

use super::{ControllerError, Informers, RawObject, resources};

/// (apiVersion, kind).
type KindKey = (String, String);

/// Resolves kinds and reads templates; cheap to clone (the kind cache is shared).
#[derive(Clone)]
pub struct TemplateReader {
    client: kube::Client,
    informers: Informers,
    kinds: Arc<RwLock<HashMap<KindKey, (ApiResource, bool)>>>,
}

impl TemplateReader {
    /// `informers`: the process's shared watches, whose caches are read when they hold the template's kind.
    pub fn new(client: kube::Client, informers: Informers) -> Self {
        Self {
            client,
            informers,
            kinds: Arc::default(),
        }
    }

    /// The API resource of `api_version`/`kind` and whether it is namespaced; `Invalid` when it is not served.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), ControllerError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.kinds.read().await.get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| {
                ControllerError::Invalid(format!(
                    "resource template kind {api_version}, Kind={kind} is not served: {e}"
                ))
            })?;
        let found = (resource, capabilities.scope == Scope::Namespaced);
        self.kinds.write().await.insert(key, found.clone());
        Ok(found)
    }

    /// The dynamic API holding `api_version`/`kind` objects of `namespace` (ignored for cluster-scoped kinds).
    pub async fn api(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
    ) -> Result<Api<DynamicObject>, ControllerError> {
        self.api_of(api_version, kind, namespace).await
    }

    /// [`Self::api`] reading answers as [`RawObject`]s (only their metadata parsed).
    pub async fn raw_api(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
    ) -> Result<Api<RawObject>, ControllerError> {
        self.api_of(api_version, kind, namespace).await
    }

    async fn api_of<K>(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
    ) -> Result<Api<K>, ControllerError>
    where
        K: kube::Resource<DynamicType = ApiResource, Scope = kube::core::DynamicResourceScope>,
    {
        let (resource, namespaced) = self.resolve(api_version, kind).await?;
        Ok(if namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        })
    }

    /// The object, or `None` when it does not exist. A cached copy is used when the kind's watch is running
    /// and has listed, and the copy is at least as new as `at_least` (a resourceVersion the caller has seen,
    /// such as the one a binding records of its template); otherwise the API server is asked.
    pub async fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        at_least: Option<&str>,
    ) -> Result<Option<DynamicObject>, ControllerError> {
        let (resource, namespaced) = self.resolve(api_version, kind).await?;
        if let Some(store) = self
            .informers
            .cached(&resources::all_raw(&self.client, &resource))
            && let Some(cached) = store.get_named(namespaced.then_some(namespace), name)
            && is_at_least(cached.metadata().resource_version.as_deref(), at_least)
        {
            let mut object = cached.to_dynamic()?;
            object.types = Some(TypeMeta {
                api_version: resource.api_version,
                kind: resource.kind,
            });
            return Ok(Some(object));
        }
        self.get_live(api_version, kind, namespace, name).await
    }

    /// The object as the API server has it now, or `None` when it does not exist.
    pub async fn get_live(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<DynamicObject>, ControllerError> {
        let api = self.api(api_version, kind, namespace).await?;
        Ok(api.get_opt(name).await?)
    }

    /// The template a binding refers to (see [`TemplateReader::get`]).
    pub async fn referenced(
        &self,
        resource: &karmada_api::work::ObjectReference,
        at_least: Option<&str>,
    ) -> Result<Option<DynamicObject>, ControllerError> {
        self.get(
            &resource.api_version,
            &resource.kind,
            &resource.namespace,
            &resource.name,
            at_least,
        )
        .await
    }

    /// The template a binding refers to, as the API server has it now.
    pub async fn referenced_live(
        &self,
        resource: &karmada_api::work::ObjectReference,
    ) -> Result<Option<DynamicObject>, ControllerError> {
        self.get_live(
            &resource.api_version,
            &resource.kind,
            &resource.namespace,
            &resource.name,
        )
        .await
    }
}

/// Whether a cached object of resourceVersion `cached` may stand in for one at least as new as `wanted`.
/// resourceVersions are compared as numbers (the store's revisions, as with etcd); one that is not a number
/// is never trusted, so the caller asks the API server.
fn is_at_least(cached: Option<&str>, wanted: Option<&str>) -> bool {
    let Some(cached) = cached.and_then(|v| v.parse::<u64>().ok()) else {
        return false;
    };
    match wanted.filter(|w| !w.is_empty()) {
        None => true,
        Some(wanted) => wanted.parse::<u64>().is_ok_and(|wanted| cached >= wanted),
    }
}

#[cfg(test)]
mod tests {
    use super::is_at_least;

    #[test]
    fn a_cached_copy_is_used_only_when_known_to_be_new_enough() {
        // (cached, wanted, usable)
        let cases = [
            (Some("12"), Some("12"), true),
            (Some("13"), Some("12"), true),
            (Some("11"), Some("12"), false),
            (Some("12"), None, true),
            (Some("12"), Some(""), true),
            (None, None, false),
            (Some("x"), Some("12"), false),
            (Some("12"), Some("y"), false),
            // Numbers, not text: "9" < "10".
            (Some("10"), Some("9"), true),
        ];
        for (cached, wanted, usable) in cases {
            assert_eq!(
                is_at_least(cached, wanted),
                usable,
                "cached {cached:?}, wanted {wanted:?}"
            );
        }
    }
}
