//! Rendering one binding: the template read through the dynamic API, the pure [`desired_works`], and each
//! Work created or updated with the read resourceVersion.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use karmada_api::policy::{ANNOTATION_APPLIED_CLUSTER_OVERRIDES, ANNOTATION_APPLIED_OVERRIDES};
use karmada_api::{Cluster, ClusterOverridePolicy, OverridePolicy, ResourceBinding, Work};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::discovery::Scope;
use tokio::sync::RwLock;

use super::super::works::{BindingScope, WorkInput, desired_works};
use super::{Context, typed_all};
use crate::execution::queue::object_ref;
use crate::runtime::{ControllerError, resources, typed};

/// The API resources of templates, found by the control plane's discovery and cached.
#[derive(Clone, Default)]
pub(super) struct TemplateResources {
    cache: Arc<RwLock<HashMap<(String, String), TemplateResource>>>,
}

/// A template kind's resource and whether it is namespaced.
type TemplateResource = (ApiResource, bool);

impl TemplateResources {
    pub(super) async fn api(
        &self,
        client: &kube::Client,
        api_version: &str,
        kind: &str,
        namespace: &str,
    ) -> Result<kube::Api<DynamicObject>, ControllerError> {
        let key = (api_version.to_string(), kind.to_string());
        let cached = self.cache.read().await.get(&key).cloned();
        let (resource, namespaced) = match cached {
            Some(found) => found,
            None => {
                let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
                let gvk = GroupVersionKind::gvk(group, version, kind);
                let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
                    .await
                    .map_err(|e| {
                        ControllerError::Invalid(format!(
                            "resource template kind {api_version}, Kind={kind} is not served: {e}"
                        ))
                    })?;
                let found = (resource, capabilities.scope == Scope::Namespaced);
                self.cache.write().await.insert(key, found.clone());
                found
            }
        };
        Ok(if namespaced {
            kube::Api::namespaced_with(client.clone(), namespace, &resource)
        } else {
            kube::Api::all_with(client.clone(), &resource)
        })
    }
}

pub(super) enum Rendering {
    Retry(Duration),
    Failed(String),
    Api(ControllerError),
}

impl From<ControllerError> for Rendering {
    fn from(err: ControllerError) -> Self {
        Rendering::Api(err)
    }
}

/// Reads the template and writes the desired Works; the per-cluster failures and whether anything was written.
pub(super) async fn render(
    scope: BindingScope,
    binding: &ResourceBinding,
    existing: &[Work],
    ctx: &Context,
) -> Result<(Vec<String>, bool), Rendering> {
    let reference = &binding.spec.resource;
    let described = if reference.namespace.is_empty() {
        format!(
            "{}, Kind={} {}",
            reference.api_version, reference.kind, reference.name
        )
    } else {
        format!(
            "{}, Kind={} {}/{}",
            reference.api_version, reference.kind, reference.namespace, reference.name
        )
    };
    let api = ctx
        .templates
        .api(
            &ctx.client,
            &reference.api_version,
            &reference.kind,
            &reference.namespace,
        )
        .await
        .map_err(|e| Rendering::Failed(e.to_string()))?;
    let template = api
        .get_opt(&reference.name)
        .await
        .map_err(ControllerError::from)?;
    let Some(template) = template else {
        return Err(Rendering::Failed(format!(
            "resource template {described} not found"
        )));
    };
    let template = typed::to_json(&template)?;
    let clusters: Vec<Cluster> = typed_all(&ctx.clusters);
    let cluster_override_policies: Vec<ClusterOverridePolicy> =
        typed_all(&ctx.cluster_override_policies);
    let override_policies: Vec<OverridePolicy> = typed_all(&ctx.override_policies);
    let desired = desired_works(WorkInput {
        scope,
        binding_metadata: &binding.metadata,
        binding_spec: &binding.spec,
        template: &template,
        clusters: &clusters,
        cluster_override_policies: &cluster_override_policies,
        override_policies: &override_policies,
        interpreter: &ctx.config.interpreter,
        existing_works: existing,
    })
    .map_err(|e| Rendering::Failed(e.to_string()))?;
    let mut wrote = false;
    for work in &desired.works {
        match upsert_work(ctx, &work.work).await? {
            Upserted::Written => wrote = true,
            Upserted::Unchanged => {}
            Upserted::Pending => return Err(Rendering::Retry(Duration::from_millis(500))),
        }
    }
    Ok((
        desired.failures.iter().map(ToString::to_string).collect(),
        wrote,
    ))
}

pub(super) enum Upserted {
    Written,
    Unchanged,
    /// The Work is still being deleted; create it again once it is gone.
    Pending,
}

/// The live Work with the desired spec, labels, annotations and finalizer merged in (others' keys kept;
/// applied-override records replaced, so a policy that stopped applying is no longer listed).
pub fn merge_work(live: &Work, desired: &Work) -> Work {
    let mut merged = live.clone();
    merged.spec = desired.spec.clone();
    let labels = merged.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.extend(desired.metadata.labels.clone().unwrap_or_default());
    let annotations = merged
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    annotations.remove(ANNOTATION_APPLIED_OVERRIDES);
    annotations.remove(ANNOTATION_APPLIED_CLUSTER_OVERRIDES);
    annotations.extend(desired.metadata.annotations.clone().unwrap_or_default());
    let finalizers = merged.metadata.finalizers.get_or_insert_with(Vec::new);
    for f in desired.metadata.finalizers.iter().flatten() {
        if !finalizers.contains(f) {
            finalizers.push(f.clone());
        }
    }
    merged
}

pub(super) async fn upsert_work(
    ctx: &Context,
    desired: &Work,
) -> Result<Upserted, ControllerError> {
    let namespace = desired.metadata.namespace.clone().unwrap_or_default();
    let name = desired.metadata.name.clone().unwrap_or_default();
    let api = resources::namespaced(&ctx.client, &resources::work(), &namespace);
    let cached = ctx
        .works
        .get(&object_ref(&resources::work(), Some(&namespace), &name));
    let Some(cached) = cached else {
        let body = typed::to_dynamic(desired, &resources::work())?;
        // AlreadyExists is a 409: the controller retries once the cache has caught up.
        api.create(&PostParams::default(), &body).await?;
        return Ok(Upserted::Written);
    };
    let live: Work = cached.decode()?;
    if live.metadata.deletion_timestamp.is_some() {
        return Ok(Upserted::Pending);
    }
    let merged = merge_work(&live, desired);
    if merged == live {
        return Ok(Upserted::Unchanged);
    }
    let body = typed::to_dynamic(&merged, &resources::work())?;
    api.replace(&name, &PostParams::default(), &body).await?;
    Ok(Upserted::Written)
}
