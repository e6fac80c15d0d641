//! The attached bindings of a workload's dependencies, as pure functions (docs/karmada.md, "Dependencies distributor",
//! "Generated names", "Labels and annotations").
//!
//! An attached binding is a ResourceBinding for a dependency (a ConfigMap, Secret, ...) named like any binding
//! ([`binding_name`]), controlled by the dependency object, without placement of its own: its clusters are the
//! union of the `requiredBy` snapshots, one per independent binding that needs it, each a copy of that binding's
//! `spec.clusters`. Each independent binding labels it `resourcebinding.karmada.io/depended-by-<key>` with the
//! independent binding's permanent id. When the last independent binding lets go, an attached binding that no
//! policy claims is deleted; one a policy claims keeps living on its own placement.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use karmada_api::ResourceBinding;
use karmada_api::work::{
    self, BINDING_VERSION, BindingSnapshot, GROUP, LABEL_RESOURCE_BINDING_PERMANENT_ID,
    ObjectReference, ResourceBindingSpec,
};
use karmada_interpreter::DependentObjectReference;
use serde_json::Value;

use crate::names::{binding_name, depended_by_label_key};

/// Finalizer on independent bindings whose attached bindings must be released before they go.
pub const FINALIZER: &str = "karmada.io/binding-dependencies-distributor";
/// Annotation on the independent binding listing its dependencies (JSON).
pub const ANNOTATION_DEPENDENCIES: &str = "resourcebinding.karmada.io/dependencies";

/// Why an attached binding cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DistributorError {
    #[error(
        "binding {0} has no resourcebinding.karmada.io/permanent-id label; admission assigns one on create"
    )]
    MissingBindingId(String),
    #[error("dependency object: {0}")]
    InvalidDependency(String),
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn name_of(meta: &ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// The snapshot of `parent` an attached binding carries.
fn snapshot_of(parent: &ResourceBinding) -> BindingSnapshot {
    let (namespace, name) = name_of(&parent.metadata);
    BindingSnapshot {
        namespace,
        name,
        clusters: parent.spec.clusters.clone(),
    }
}

/// The attached binding `parent` wants for `dependency` (the dependency object as JSON).
pub fn attached_binding(
    parent: &ResourceBinding,
    dependency: &Value,
) -> Result<ResourceBinding, DistributorError> {
    let (parent_namespace, parent_name) = name_of(&parent.metadata);
    let parent_id = parent
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_RESOURCE_BINDING_PERMANENT_ID))
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            DistributorError::MissingBindingId(format!("{parent_namespace}/{parent_name}"))
        })?;
    let api_version = text(dependency, "/apiVersion");
    let kind = text(dependency, "/kind");
    let name = text(dependency, "/metadata/name");
    let uid = text(dependency, "/metadata/uid");
    if api_version.is_empty() || kind.is_empty() || name.is_empty() || uid.is_empty() {
        return Err(DistributorError::InvalidDependency(
            "apiVersion, kind, metadata.name and metadata.uid are required".into(),
        ));
    }
    let namespace = text(dependency, "/metadata/namespace");
    Ok(ResourceBinding {
        api_version: format!("{GROUP}/{BINDING_VERSION}"),
        kind: "ResourceBinding".into(),
        metadata: ObjectMeta {
            name: Some(binding_name(kind, name)),
            namespace: Some(parent_namespace.clone()),
            labels: Some(BTreeMap::from([(
                depended_by_label_key(&parent_namespace, &parent_name),
                parent_id.clone(),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                name: name.to_string(),
                uid: uid.to_string(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            finalizers: Some(vec![work::FINALIZER_BINDING_CONTROLLER.to_string()]),
            ..ObjectMeta::default()
        },
        spec: ResourceBindingSpec {
            resource: ObjectReference {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
                uid: uid.to_string(),
                resource_version: text(dependency, "/metadata/resourceVersion").to_string(),
            },
            required_by: vec![snapshot_of(parent)],
            conflict_resolution: parent.spec.conflict_resolution,
            preserve_resources_on_deletion: parent.spec.preserve_resources_on_deletion,
            ..ResourceBindingSpec::default()
        },
        status: None,
    })
}

/// `existing` (the binding already named like `desired`) moved to carry `desired`'s requirement: its
/// `depended-by` label, its `requiredBy` snapshot (replaced in place or appended) and the dependency's
/// current uid and resourceVersion. `None` when nothing changes.
pub fn merge_attached(
    existing: &ResourceBinding,
    desired: &ResourceBinding,
) -> Option<ResourceBinding> {
    let mut merged = existing.clone();
    let labels = merged.metadata.labels.get_or_insert_with(BTreeMap::new);
    for (key, value) in desired.metadata.labels.iter().flatten() {
        labels.insert(key.clone(), value.clone());
    }
    for snapshot in &desired.spec.required_by {
        match merged
            .spec
            .required_by
            .iter_mut()
            .find(|s| s.namespace == snapshot.namespace && s.name == snapshot.name)
        {
            Some(found) => *found = snapshot.clone(),
            None => merged.spec.required_by.push(snapshot.clone()),
        }
    }
    let resource = &desired.spec.resource;
    let current = &mut merged.spec.resource;
    if current.kind == resource.kind && current.name == resource.name {
        current.uid = resource.uid.clone();
        current.resource_version = resource.resource_version.clone();
    }
    (merged != *existing).then_some(merged)
}

/// What releasing an attached binding from one independent binding comes to.
#[derive(Clone, Debug, PartialEq)]
pub enum Detached {
    Unchanged,
    Update(Box<ResourceBinding>),
    /// Nobody requires it and no policy claims it.
    Delete,
}

/// `existing` without the requirement of the independent binding `parent_namespace/parent_name`.
pub fn detach(existing: &ResourceBinding, parent_namespace: &str, parent_name: &str) -> Detached {
    let mut updated = existing.clone();
    if let Some(labels) = updated.metadata.labels.as_mut() {
        labels.remove(&depended_by_label_key(parent_namespace, parent_name));
    }
    updated
        .spec
        .required_by
        .retain(|s| !(s.namespace == parent_namespace && s.name == parent_name));
    if updated.spec.required_by.is_empty() && updated.spec.placement.is_none() {
        return Detached::Delete;
    }
    if updated == *existing {
        Detached::Unchanged
    } else {
        Detached::Update(Box::new(updated))
    }
}

/// Whether `attached` is the binding of `dependency`.
pub fn binds(attached: &ResourceBinding, dependency: &DependentObjectReference) -> bool {
    let resource = &attached.spec.resource;
    resource.api_version == dependency.api_version
        && resource.kind == dependency.kind
        && resource.name == dependency.name
        && resource.namespace == dependency.namespace
}

/// The `resourcebinding.karmada.io/dependencies` annotation value: the dependencies as a JSON list.
pub fn dependencies_annotation(dependencies: &[DependentObjectReference]) -> String {
    serde_json::to_string(dependencies).unwrap_or_else(|_| "[]".to_string())
}

#[cfg(test)]
#[path = "attached_tests.rs"]
mod tests;
