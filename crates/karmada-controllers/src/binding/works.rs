//! The desired Works of a scheduled binding (docs/karmada.md, "Binding controller", "Generated names",
//! "Labels and annotations"), and which existing Works are orphans.
//!
//! Per target cluster (`spec.clusters`, plus the clusters of `requiredBy` snapshots): the template is pruned;
//! its replicas are revised to the cluster's `replicas` (the full count under Duplicated); with Divided
//! placement a Job's `completions` are split over the clusters by Webster, weighted by each cluster's share;
//! override policies are applied; then Karmada's labels and annotations are written on the manifest and on the
//! Work.
//!
//! Invariants: one Work per cluster, named [`crate::names::work_name`] in `karmada-es-<cluster>`; the existing
//! Work's permanent id is kept; a failure in one cluster (e.g. an invalid override) is reported for that cluster
//! without blocking the others.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::policy::PurgeMode;
use karmada_api::work::{self, WorkSpec, WorkloadTemplate};
use karmada_api::{
    Cluster, ClusterOverridePolicy, ConflictResolution, OverridePolicy, ReplicaSchedulingType,
    ResourceBindingSpec, Work,
};
use karmada_interpreter::{InterpretError, Interpreter, Operation, Target};
use karmada_scheduler::division::webster::{Party, TieBreak, webster};
use serde_json::{Map, Value, json};

use super::overrides::{OverrideError, apply_overrides};
use super::prune::prune_manifest;
use crate::keys::{
    ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_CONFLICT_RESOLUTION,
    ANNOTATION_MANAGED_ANNOTATIONS, ANNOTATION_MANAGED_LABELS, ANNOTATION_RESOURCE_BINDING_NAME,
    ANNOTATION_RESOURCE_BINDING_NAMESPACE, ANNOTATION_RESOURCE_TEMPLATE_GENERATION,
    ANNOTATION_RESOURCE_TEMPLATE_UID, ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE,
    CONFLICT_RESOLUTION_ABORT, CONFLICT_RESOLUTION_OVERWRITE,
    LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID, LABEL_MANAGED,
    LABEL_RESOURCE_BINDING_PERMANENT_ID, LABEL_WORK_PERMANENT_ID, MANAGED_VALUE,
};
use crate::names::{cluster_of_execution_namespace, execution_namespace, work_name};

/// Whether the binding is a ResourceBinding or a ClusterResourceBinding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingScope {
    Namespaced,
    Cluster,
}

/// Everything the Works of one binding are computed from.
#[derive(Clone, Copy, Debug)]
pub struct WorkInput<'a> {
    pub scope: BindingScope,
    pub binding_metadata: &'a ObjectMeta,
    pub binding_spec: &'a ResourceBindingSpec,
    /// The resource template the binding refers to.
    pub template: &'a Value,
    /// Member clusters by name (target clusters must be among them, for override targeting).
    pub clusters: &'a [std::sync::Arc<Cluster>],
    pub cluster_override_policies: &'a [ClusterOverridePolicy],
    pub override_policies: &'a [OverridePolicy],
    pub interpreter: &'a Interpreter,
    /// The binding's current Works, whose permanent ids are kept.
    pub existing_works: &'a [Work],
}

/// Why a Work (or all of them) could not be computed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WorkError {
    #[error(
        "binding has no {0} label; it must be created through the API server so admission assigns one"
    )]
    MissingBindingId(&'static str),
    #[error("resource template: {0}")]
    InvalidTemplate(String),
    #[error("cluster {0} is not a known member cluster")]
    UnknownCluster(String),
    #[error("cluster {cluster}: revising replicas: {source}")]
    Revise {
        cluster: String,
        source: InterpretError,
    },
    #[error("cluster {cluster}: {source}")]
    Override {
        cluster: String,
        source: OverrideError,
    },
}

/// The Work wanted in one cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredWork {
    pub cluster: String,
    pub work: Work,
}

/// The Works wanted for a binding, and the clusters whose Work could not be computed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesiredWorks {
    pub works: Vec<DesiredWork>,
    pub failures: Vec<WorkError>,
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Target clusters with their replicas: `spec.clusters` first, then `requiredBy` clusters not yet listed.
fn target_clusters(spec: &ResourceBindingSpec) -> Vec<(String, i32)> {
    let mut targets: Vec<(String, i32)> = Vec::new();
    let all = spec.clusters.iter().chain(
        spec.required_by
            .iter()
            .flat_map(|snapshot| snapshot.clusters.iter()),
    );
    for cluster in all {
        if !targets.iter().any(|(name, _)| name == &cluster.name) {
            targets.push((cluster.name.clone(), cluster.replicas));
        }
    }
    targets
}

fn conflict_resolution(template: &Value, spec: &ResourceBindingSpec) -> &'static str {
    let from_template = template
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_CONFLICT_RESOLUTION))
        .and_then(Value::as_str);
    match from_template {
        Some(CONFLICT_RESOLUTION_OVERWRITE) => CONFLICT_RESOLUTION_OVERWRITE,
        Some(CONFLICT_RESOLUTION_ABORT) => CONFLICT_RESOLUTION_ABORT,
        _ if spec.conflict_resolution == Some(ConflictResolution::Overwrite) => {
            CONFLICT_RESOLUTION_OVERWRITE
        }
        _ => CONFLICT_RESOLUTION_ABORT,
    }
}

fn dispatching_suspended(spec: &ResourceBindingSpec, cluster: &str) -> bool {
    spec.suspension.as_ref().is_some_and(|s| {
        s.dispatching == Some(true)
            || s.dispatching_on_clusters
                .as_ref()
                .is_some_and(|c| c.cluster_names.iter().any(|name| name == cluster))
    })
}

/// Job completions per cluster, split by Webster weighted by each cluster's replicas (parallelism share).
fn job_completions(template: &Value, targets: &[(String, i32)]) -> Option<BTreeMap<String, i64>> {
    let completions = template
        .pointer("/spec/completions")
        .and_then(Value::as_i64)?;
    let parties: Vec<Party> = targets
        .iter()
        .map(|(name, replicas)| Party {
            name: name.clone(),
            votes: i64::from(*replicas),
            seats: 0,
        })
        .collect();
    let tie_break = TieBreak::from_uid(text(template, "/metadata/uid"));
    Some(webster(&parties, completions, tie_break))
}

fn insert_all(map: &mut Map<String, Value>, key: &str, entries: &BTreeMap<String, String>) {
    let mut merged = map
        .get(key)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, v) in entries {
        merged.insert(k.clone(), json!(v));
    }
    map.insert(key.into(), Value::Object(merged));
}

fn sorted_keys(map: Option<&Value>) -> Vec<String> {
    let mut keys: Vec<String> = map
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

/// Writes Karmada's labels and annotations on a manifest, then records the managed keys.
pub(crate) fn label_manifest(
    manifest: &mut Value,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) {
    let Some(root) = manifest.as_object_mut() else {
        return;
    };
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    insert_all(metadata, "labels", labels);
    insert_all(metadata, "annotations", annotations);
    let label_keys = sorted_keys(metadata.get("labels")).join(",");
    let mut managed = BTreeMap::from([(ANNOTATION_MANAGED_LABELS.to_string(), label_keys)]);
    insert_all(metadata, "annotations", &managed);
    let mut annotation_keys = sorted_keys(metadata.get("annotations"));
    if !annotation_keys
        .iter()
        .any(|k| k == ANNOTATION_MANAGED_ANNOTATIONS)
    {
        annotation_keys.push(ANNOTATION_MANAGED_ANNOTATIONS.to_string());
        annotation_keys.sort();
    }
    managed = BTreeMap::from([(
        ANNOTATION_MANAGED_ANNOTATIONS.to_string(),
        annotation_keys.join(","),
    )]);
    insert_all(metadata, "annotations", &managed);
}

/// The permanent id of a Work not created yet: a name-based UUID of the binding's permanent id and the cluster,
/// so every render before the Work exists agrees, and the first Work written already carries the label its
/// manifest must have (otherwise the next render adds it: one more Work write and member update per cluster).
/// The API server keeps an id the creator set, as it keeps the one it set itself.
fn new_work_id(binding_id: &str, cluster: &str) -> String {
    uuid::Uuid::new_v5(
        &WORK_ID_NAMESPACE,
        format!("{binding_id}/{cluster}").as_bytes(),
    )
    .to_string()
}

/// The UUID namespace of [`new_work_id`] (a random UUID, fixed forever).
const WORK_ID_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x3f0c_9d4e_52a1_4c8b_9e27_6b1d_a5f0_c713);

/// Computes the desired Work of every target cluster. `Err` only when no Work can be computed at all.
pub fn desired_works(input: WorkInput<'_>) -> Result<DesiredWorks, WorkError> {
    let (id_label, binding_annotations) = match input.scope {
        BindingScope::Namespaced => (
            LABEL_RESOURCE_BINDING_PERMANENT_ID,
            BTreeMap::from([
                (
                    ANNOTATION_RESOURCE_BINDING_NAMESPACE.to_string(),
                    input.binding_metadata.namespace.clone().unwrap_or_default(),
                ),
                (
                    ANNOTATION_RESOURCE_BINDING_NAME.to_string(),
                    input.binding_metadata.name.clone().unwrap_or_default(),
                ),
            ]),
        ),
        BindingScope::Cluster => (
            LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
            BTreeMap::from([(
                ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME.to_string(),
                input.binding_metadata.name.clone().unwrap_or_default(),
            )]),
        ),
    };
    let binding_id = input
        .binding_metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(id_label))
        .filter(|id| !id.is_empty())
        .ok_or(WorkError::MissingBindingId(id_label))?;
    let target =
        Target::of(input.template).map_err(|e| WorkError::InvalidTemplate(e.to_string()))?;
    let name = text(input.template, "/metadata/name");
    if name.is_empty() {
        return Err(WorkError::InvalidTemplate(
            "metadata.name is required".into(),
        ));
    }
    let namespace = text(input.template, "/metadata/namespace");
    let name_of_work = work_name(&target.kind, name, namespace);
    let template_uid = text(input.template, "/metadata/uid").to_string();
    let generation = input
        .template
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let conflict = conflict_resolution(input.template, input.binding_spec);
    let spec = input.binding_spec;
    // Replicas are revised whenever the template has some (for Duplicated every cluster's share is the full
    // count); Job completions are only split for Divided placement.
    let revise = spec.replicas > 0
        && input
            .interpreter
            .hook_enabled(&target, Operation::ReviseReplica);
    let divided = spec.replicas > 0
        && spec
            .placement
            .as_ref()
            .is_some_and(|p| p.replica_scheduling_type() == ReplicaSchedulingType::Divided);
    let targets = target_clusters(spec);
    let completions = if divided && target.is("batch", "Job") {
        job_completions(input.template, &targets)
    } else {
        None
    };
    let pruned = prune_manifest(input.template);
    let mut result = DesiredWorks::default();
    for (cluster_name, replicas) in &targets {
        let built = build_one(
            &input,
            BuildOne {
                cluster_name,
                replicas: revise.then_some(*replicas),
                completions: completions
                    .as_ref()
                    .and_then(|c| c.get(cluster_name).copied()),
                pruned: &pruned,
                name_of_work: &name_of_work,
                id_label,
                binding_id,
                binding_annotations: &binding_annotations,
                template_uid: &template_uid,
                generation,
                conflict,
            },
        );
        match built {
            Ok(work) => result.works.push(DesiredWork {
                cluster: cluster_name.clone(),
                work,
            }),
            Err(error) => result.failures.push(error),
        }
    }
    Ok(result)
}

struct BuildOne<'a> {
    cluster_name: &'a str,
    replicas: Option<i32>,
    completions: Option<i64>,
    pruned: &'a Value,
    name_of_work: &'a str,
    id_label: &'static str,
    binding_id: &'a str,
    binding_annotations: &'a BTreeMap<String, String>,
    template_uid: &'a str,
    generation: i64,
    conflict: &'static str,
}

fn build_one(input: &WorkInput<'_>, one: BuildOne<'_>) -> Result<Work, WorkError> {
    let cluster_name = one.cluster_name.to_string();
    let cluster = input
        .clusters
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(one.cluster_name))
        .ok_or_else(|| WorkError::UnknownCluster(cluster_name.clone()))?;
    let mut manifest = one.pruned.clone();
    if let Some(replicas) = one.replicas {
        manifest = input
            .interpreter
            .revise_replica(&manifest, i64::from(replicas))
            .map_err(|source| WorkError::Revise {
                cluster: cluster_name.clone(),
                source,
            })?;
    }
    if let Some(completions) = one.completions
        && let Some(spec) = manifest.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.insert("completions".into(), json!(completions));
    }
    let overridden = apply_overrides(
        &manifest,
        cluster,
        input.cluster_override_policies,
        input.override_policies,
    )
    .map_err(|source| WorkError::Override {
        cluster: cluster_name.clone(),
        source,
    })?;
    let mut manifest = overridden.manifest.clone();
    let execution_ns = execution_namespace(one.cluster_name);
    let existing_id = input
        .existing_works
        .iter()
        .find(|w| {
            w.metadata.namespace.as_deref() == Some(execution_ns.as_str())
                && w.metadata.name.as_deref() == Some(one.name_of_work)
        })
        .and_then(|w| w.metadata.labels.as_ref())
        .and_then(|l| l.get(LABEL_WORK_PERMANENT_ID))
        .cloned();

    let work_id = existing_id.unwrap_or_else(|| new_work_id(one.binding_id, one.cluster_name));
    let manifest_labels = BTreeMap::from([
        (LABEL_MANAGED.to_string(), MANAGED_VALUE.to_string()),
        (one.id_label.to_string(), one.binding_id.to_string()),
        (LABEL_WORK_PERMANENT_ID.to_string(), work_id.clone()),
    ]);
    let work_labels = BTreeMap::from([
        (one.id_label.to_string(), one.binding_id.to_string()),
        (LABEL_WORK_PERMANENT_ID.to_string(), work_id),
    ]);
    let mut manifest_annotations = one.binding_annotations.clone();
    manifest_annotations.insert(
        ANNOTATION_RESOURCE_TEMPLATE_UID.into(),
        one.template_uid.to_string(),
    );
    if one.generation > 0 {
        manifest_annotations.insert(
            ANNOTATION_RESOURCE_TEMPLATE_GENERATION.into(),
            one.generation.to_string(),
        );
    }
    manifest_annotations.insert(ANNOTATION_WORK_NAMESPACE.into(), execution_ns.clone());
    manifest_annotations.insert(ANNOTATION_WORK_NAME.into(), one.name_of_work.to_string());
    manifest_annotations.insert(
        ANNOTATION_CONFLICT_RESOLUTION.into(),
        one.conflict.to_string(),
    );
    label_manifest(&mut manifest, &manifest_labels, &manifest_annotations);

    let mut work_annotations = one.binding_annotations.clone();
    work_annotations.insert(
        ANNOTATION_CONFLICT_RESOLUTION.into(),
        one.conflict.to_string(),
    );
    work_annotations.extend(overridden.annotations());
    Ok(Work {
        api_version: format!("{}/{}", work::GROUP, work::WORK_VERSION),
        kind: "Work".into(),
        metadata: ObjectMeta {
            name: Some(one.name_of_work.to_string()),
            namespace: Some(execution_ns),
            labels: Some(work_labels),
            annotations: Some(work_annotations),
            finalizers: Some(vec![work::FINALIZER_EXECUTION_CONTROLLER.to_string()]),
            ..ObjectMeta::default()
        },
        spec: WorkSpec {
            workload: WorkloadTemplate {
                manifests: vec![manifest],
            },
            suspend_dispatching: Some(dispatching_suspended(input.binding_spec, one.cluster_name)),
            preserve_resources_on_deletion: Some(
                input
                    .binding_spec
                    .preserve_resources_on_deletion
                    .unwrap_or(false),
            ),
        },
        status: None,
    })
}

/// Clusters whose Works must stay: scheduled clusters, `requiredBy` clusters, and clusters of graceful
/// eviction tasks that do not purge directly.
fn kept_clusters(spec: &ResourceBindingSpec) -> BTreeSet<String> {
    let mut kept: BTreeSet<String> = target_clusters(spec)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    for task in &spec.graceful_eviction_tasks {
        if task.purge_mode != Some(PurgeMode::Directly) {
            kept.insert(task.from_cluster.clone());
        }
    }
    kept
}

fn work_cluster(work: &Work) -> Option<&str> {
    work.metadata
        .namespace
        .as_deref()
        .and_then(cluster_of_execution_namespace)
}

/// The binding's existing Works to delete: those in clusters the binding no longer targets.
pub fn orphan_works<'a>(existing: &'a [Work], spec: &ResourceBindingSpec) -> Vec<&'a Work> {
    let kept = kept_clusters(spec);
    existing
        .iter()
        .filter(|work| work_cluster(work).is_none_or(|cluster| !kept.contains(cluster)))
        .collect()
}

/// Whether Works still exist in clusters being evicted with purge mode Directly; the controller waits for
/// their removal before syncing the binding.
pub fn waiting_for_direct_purge(existing: &[Work], spec: &ResourceBindingSpec) -> bool {
    let scheduled: BTreeSet<String> = target_clusters(spec)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let purging: BTreeSet<&str> = spec
        .graceful_eviction_tasks
        .iter()
        .filter(|t| {
            t.purge_mode == Some(PurgeMode::Directly) && !scheduled.contains(&t.from_cluster)
        })
        .map(|t| t.from_cluster.as_str())
        .collect();
    existing
        .iter()
        .any(|work| work_cluster(work).is_some_and(|cluster| purging.contains(cluster)))
}

#[cfg(test)]
#[path = "works_tests.rs"]
mod tests;
