//! Rendering one binding: the template (from the shared cache of its kind when fresh enough, see
//! [`crate::runtime::TemplateReader`]), the pure [`desired_works`], and each Work created or updated with the
//! read resourceVersion.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use karmada_api::policy::{ANNOTATION_APPLIED_CLUSTER_OVERRIDES, ANNOTATION_APPLIED_OVERRIDES};
use karmada_api::{Cluster, ClusterOverridePolicy, OverridePolicy, ResourceBinding, Work};
use kube::api::PostParams;

use super::super::works::{BindingScope, WorkInput, desired_works};
use super::{Context, typed_all};
use crate::runtime::{ControllerError, resources, typed};

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
    let template = ctx
        .templates
        .referenced(reference, Some(&reference.resource_version))
        .await
        .map_err(|e| match e {
            invalid @ ControllerError::Invalid(_) => Rendering::Failed(invalid.to_string()),
            other => Rendering::Api(other),
        })?;
    let Some(template) = template else {
        return Err(Rendering::Failed(format!(
            "resource template {described} not found"
        )));
    };
    let template = typed::to_json(&template)?;
    let clusters: Vec<Arc<Cluster>> = ctx
        .clusters
        .state()
        .iter()
        .filter_map(|c| ctx.typed_clusters.typed_compact(c).ok())
        .collect();
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
        match upsert_work(ctx, &work.work, existing).await? {
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

/// Creates `desired`, or updates the live Work when the merge changes it. `existing` holds the binding's
/// Works already decoded for this reconcile; another cached Work of that name (made for someone else) is
/// decoded here.
pub(super) async fn upsert_work(
    ctx: &Context,
    desired: &Work,
    existing: &[Work],
) -> Result<Upserted, ControllerError> {
    let namespace = desired.metadata.namespace.clone().unwrap_or_default();
    let name = desired.metadata.name.clone().unwrap_or_default();
    let api = resources::namespaced(&ctx.client, &resources::work(), &namespace);
    let decoded = existing.iter().find(|w| {
        w.metadata.namespace.as_deref() == Some(namespace.as_str())
            && w.metadata.name.as_deref() == Some(name.as_str())
    });
    let live: std::borrow::Cow<'_, Work> = match decoded {
        Some(work) => std::borrow::Cow::Borrowed(work),
        None => match ctx.works.get_named(Some(&namespace), &name) {
            Some(cached) => std::borrow::Cow::Owned(cached.decode()?),
            None => {
                let body = typed::to_dynamic(desired, &resources::work())?;
                // AlreadyExists is a 409: the controller retries once the cache has caught up.
                api.create(&PostParams::default(), &body).await?;
                return Ok(Upserted::Written);
            }
        },
    };
    let live: &Work = &live;
    if live.metadata.deletion_timestamp.is_some() {
        return Ok(Upserted::Pending);
    }
    let merged = merge_work(live, desired);
    if merged == *live {
        return Ok(Upserted::Unchanged);
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        let (old, new) = (serde_json::to_value(live)?, serde_json::to_value(&merged)?);
        tracing::debug!(work = %name, namespace, differs_at = %first_difference(&old, &new, String::new()), "updating Work");
    }
    let body = typed::to_dynamic(&merged, &resources::work())?;
    api.replace(&name, &PostParams::default(), &body).await?;
    Ok(Upserted::Written)
}

/// The JSON pointer of the first place `a` and `b` differ (for the debug log of Work updates).
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: String) -> String {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) if p == q => {}
                    (Some(p), Some(q)) => return first_difference(p, q, format!("{at}/{key}")),
                    _ => return format!("{at}/{key}"),
                }
            }
            at
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    return first_difference(p, q, format!("{at}/{i}"));
                }
            }
            at
        }
        _ => format!("{at}: {a} → {b}"),
    }
}
