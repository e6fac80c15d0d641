//! The namespace sync controller (Karmada's `namespace` controller; docs/karmada.md, "Namespace auto-propagation"):
//! every Namespace that [`should_propagate`] gets a Work in every member's execution namespace.
//!
//! Woken by Namespaces, by Clusters and ClusterOverridePolicies (both re-run every namespace: a new cluster gets
//! them all), and by Works owned by a Namespace (a Work deleted or edited by hand is restored). Works are
//! created, or updated with the read resourceVersion as precondition (Karmada's labels and annotations merged
//! into what is there, so labels others add, such as the Work's permanent id, survive). A terminating Namespace
//! has its Works deleted (owner references make the garbage collector do the same). Adding the skip label later
//! leaves existing Works alone, as Karmada does. A Work known to hold what a pass wants is not read again
//! ([`super::applied`]), so a cluster joining re-runs every namespace without reading every member's Work.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use karmada_api::{Cluster, ClusterOverridePolicy, Work, work};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use super::applied::{AppliedWorks, desired_hash};
use super::{NamespacePropagation, desired_namespace_works, should_propagate};
use crate::execution::queue::reflect_compact_events;
use crate::names::{execution_namespace, work_name};
use crate::reserved::SkippedNamespaces;
use crate::runtime::compact::Packer;
use crate::runtime::{
    Cache, CacheWriter, ControllerError, EventRecorder, EventType, resources, typed,
};

/// The label selector of the Works no binding made: every Work of a binding carries its binding's permanent id.
fn not_a_bindings_work() -> String {
    format!(
        "!{},!{}",
        work::LABEL_RESOURCE_BINDING_PERMANENT_ID,
        work::LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID
    )
}

/// Component name on the Events it records.
pub const COMPONENT: &str = "namespace-sync-controller";
/// Event reasons on the Namespace, as Karmada names them.
pub const REASON_SYNC_SUCCEED: &str = "SyncSucceed";
pub const REASON_SYNC_FAILED: &str = "SyncFailed";

/// Settings of the namespace sync controller.
#[derive(Clone, Debug)]
pub struct NamespaceSyncConfig {
    /// `--skipped-propagating-namespaces`.
    pub skipped: SkippedNamespaces,
    /// `--concurrent-namespace-syncs` (Karmada's default 1).
    pub concurrency: u16,
}

impl Default for NamespaceSyncConfig {
    fn default() -> Self {
        Self {
            skipped: SkippedNamespaces::default(),
            concurrency: 1,
        }
    }
}

struct Context {
    client: kube::Client,
    applied: Arc<AppliedWorks>,
    /// Every Cluster, watched: a pass reads them here instead of listing them (every cluster joining re-runs
    /// every namespace, and each run listed every Cluster with its status).
    clusters: Cache,
    skipped: SkippedNamespaces,
    recorder: EventRecorder,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, config: NamespaceSyncConfig, cancel: CancellationToken) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let controller = Controller::new(namespaces, watcher::Config::default())
        .with_config(ControllerConfig::default().concurrency(config.concurrency));
    let store = controller.store();
    let on_cluster = store.clone();
    let on_policy = store;
    let seen = ClusterFingerprints::default();
    let applied = Arc::new(AppliedWorks::default());
    let cluster_writer = CacheWriter::new();
    let clusters = cluster_writer.as_reader();
    let cluster_events = reflect_compact_events(
        resources::all(&client, &resources::cluster()),
        watcher::Config::default(),
        cluster_writer,
        Packer::default(),
    );
    let cluster_cache = tokio::spawn(
        cluster_events
            .take_until(cancel.clone().cancelled_owned())
            .for_each(|_| std::future::ready(())),
    );
    let watched = Arc::clone(&applied);
    let controller = controller
        .watches_with(
            resources::all(&client, &resources::cluster()),
            resources::cluster(),
            watcher::Config::default(),
            move |cluster| {
                if seen.changed(&cluster) {
                    every_namespace(&on_cluster)
                } else {
                    Vec::new()
                }
            },
        )
        .watches_with(
            resources::all(&client, &resources::cluster_override_policy()),
            resources::cluster_override_policy(),
            watcher::Config::default(),
            move |_| every_namespace(&on_policy),
        )
        // Only a Work's owner references are read: its metadata is all that is decoded. A binding's Works (the
        // bulk of them, each changed a few times as it is applied) are never a Namespace's: the API server leaves
        // them out, so it does not send them and this process does not parse them.
        .watches_with(
            resources::all_metadata(&client, &resources::work()),
            resources::work(),
            watcher::Config::default().labels(&not_a_bindings_work()),
            move |work| {
                let owner = owning_namespace(&work);
                if owner.is_some()
                    && let (Some(namespace), Some(name), Some(version)) = (
                        work.metadata.namespace.as_deref(),
                        work.metadata.name.as_deref(),
                        work.metadata.resource_version.as_deref(),
                    )
                {
                    watched.saw(namespace, name, version);
                }
                owner
            },
        )
        .graceful_shutdown_on(cancel.cancelled_owned());
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), COMPONENT),
        skipped: config.skipped,
        applied,
        clusters,
        client,
    });
    controller
        .run(
            crate::runtime::metrics::instrumented(
                COMPONENT,
                usize::from(config.concurrency),
                reconcile,
            ),
            error_policy,
            context,
        )
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(%err, "namespace sync reconcile");
            }
        })
        .await;
    cluster_cache.abort();
}

fn every_namespace(store: &Store<Namespace>) -> Vec<ObjectRef<Namespace>> {
    store
        .state()
        .iter()
        .map(|ns| ObjectRef::from_obj(ns.as_ref()))
        .collect()
}

/// What of a Cluster matters to namespace Works (its existence, labels and spec, which ClusterOverridePolicies
/// target), remembered per cluster so that status updates every few seconds do not re-sync every namespace.
#[derive(Default)]
struct ClusterFingerprints(Mutex<HashMap<String, u64>>);

impl ClusterFingerprints {
    fn changed(&self, cluster: &DynamicObject) -> bool {
        let mut hasher = DefaultHasher::new();
        cluster.metadata.uid.hash(&mut hasher);
        cluster.metadata.labels.hash(&mut hasher);
        cluster
            .metadata
            .deletion_timestamp
            .is_some()
            .hash(&mut hasher);
        cluster
            .data
            .get("spec")
            .map(ToString::to_string)
            .hash(&mut hasher);
        let fingerprint = hasher.finish();
        let name = cluster.metadata.name.clone().unwrap_or_default();
        match self.0.lock() {
            Ok(mut seen) => seen.insert(name, fingerprint) != Some(fingerprint),
            Err(_) => true,
        }
    }
}

/// The Namespace a Work was created for (its controlling owner reference).
fn owning_namespace(
    work: &kube::core::PartialObjectMeta<DynamicObject>,
) -> Option<ObjectRef<Namespace>> {
    work.metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.kind == "Namespace" && o.api_version == "v1")
        .map(|o| ObjectRef::new(&o.name))
}

fn error_policy(_: Arc<Namespace>, err: &ControllerError, _: Arc<Context>) -> Action {
    Action::requeue(err.retry_after())
}

async fn reconcile(
    namespace: Arc<Namespace>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    let name = namespace.metadata.name.clone().unwrap_or_default();
    // A pass over a partial list would miss clusters (and delete no Work of them): wait for the whole one.
    if context.clusters.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    let clusters = live_clusters(&context.clusters)?;
    if namespace.metadata.deletion_timestamp.is_some() {
        delete_works(&context.client, &context.applied, &name, &clusters).await?;
        return Ok(Action::await_change());
    }
    let object = serde_json::to_value(namespace.as_ref())?;
    let mut object = object;
    if let Some(root) = object.as_object_mut() {
        // Watch events of typed objects carry no type; the pure core checks the kind.
        root.insert("apiVersion".into(), "v1".into());
        root.insert("kind".into(), "Namespace".into());
    }
    if should_propagate(&object, &context.skipped) != NamespacePropagation::Propagate {
        return Ok(Action::await_change());
    }
    let policies: Vec<ClusterOverridePolicy> =
        list_typed(&context.client, &resources::cluster_override_policy()).await?;
    let desired = desired_namespace_works(&object, &clusters, &policies)
        .map_err(|e| ControllerError::Invalid(e.to_string()))?;
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Namespace".into()),
        name: Some(name.clone()),
        uid: namespace.metadata.uid.clone(),
        ..Default::default()
    };
    for failure in &desired.failures {
        context
            .recorder
            .record(
                &reference,
                EventType::Warning,
                REASON_SYNC_FAILED,
                &failure.to_string(),
            )
            .await;
    }
    let mut written = Vec::new();
    let mut first_error = None;
    for work in &desired.works {
        let hash = desired_hash(&work.work);
        let (work_namespace, work_name) = (
            work.work.metadata.namespace.as_deref().unwrap_or_default(),
            work.work.metadata.name.as_deref().unwrap_or_default(),
        );
        if context.applied.holds(work_namespace, work_name, hash) {
            continue;
        }
        let applied = apply_work(&context.client, &work.work).await;
        if let Ok((_, Some(version))) = &applied {
            context
                .applied
                .record(work_namespace, work_name, hash, version);
        }
        match applied.map(|(written, _)| written) {
            Ok(true) => written.push(work.cluster.clone()),
            Ok(false) => {}
            Err(err) => {
                if !err.is_conflict() {
                    let message = format!("cluster {}: {err}", work.cluster);
                    context
                        .recorder
                        .record(&reference, EventType::Warning, REASON_SYNC_FAILED, &message)
                        .await;
                }
                first_error.get_or_insert(err);
            }
        }
    }
    if !written.is_empty() {
        let message = format!(
            "Sync work of namespace to clusters {} successful.",
            written.join(", ")
        );
        context
            .recorder
            .record(&reference, EventType::Normal, REASON_SYNC_SUCCEED, &message)
            .await;
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(Action::await_change()),
    }
}

async fn list_typed<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    resource: &kube::api::ApiResource,
) -> Result<Vec<T>, ControllerError> {
    let list = resources::all(client, resource)
        .list(&ListParams::default())
        .await?;
    list.items.iter().map(typed::to_typed).collect()
}

/// Clusters not being removed, without their status (a namespace's Works depend on a cluster's name, labels
/// and spec; the status, most of a Cluster's text, is skipped unparsed).
fn live_clusters(cache: &Cache) -> Result<Vec<Cluster>, ControllerError> {
    #[derive(serde::Deserialize)]
    struct WithoutStatus {
        #[serde(default)]
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        #[serde(default)]
        spec: karmada_api::cluster::ClusterSpec,
    }
    cache
        .state()
        .iter()
        .filter(|c| c.metadata().deletion_timestamp.is_none())
        .map(|c| {
            let WithoutStatus { metadata, spec } = c.decode()?;
            Ok(Cluster {
                metadata,
                spec,
                ..Cluster::default()
            })
        })
        .collect()
}

async fn delete_works(
    client: &kube::Client,
    applied: &AppliedWorks,
    namespace: &str,
    clusters: &[Cluster],
) -> Result<(), ControllerError> {
    let name = work_name("Namespace", namespace, "");
    for cluster in clusters {
        let cluster_name = cluster.metadata.name.clone().unwrap_or_default();
        let execution = execution_namespace(&cluster_name);
        applied.forget(&execution, &name);
        let api = resources::namespaced(client, &resources::work(), &execution);
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// Creates `desired`, or updates the existing Work towards it: whether anything was written, and the
/// resourceVersion at which the Work holds it.
async fn apply_work(
    client: &kube::Client,
    desired: &Work,
) -> Result<(bool, Option<String>), ControllerError> {
    let namespace = desired.metadata.namespace.clone().unwrap_or_default();
    let name = desired.metadata.name.clone().unwrap_or_default();
    let api = resources::namespaced(client, &resources::work(), &namespace);
    let Some(existing) = api.get_opt(&name).await? else {
        let created = api
            .create(
                &PostParams::default(),
                &typed::to_dynamic(desired, &resources::work())?,
            )
            .await?;
        return Ok((true, created.metadata.resource_version));
    };
    let current: Work = typed::to_typed(&existing)?;
    let Some(updated) = merged_work(&current, desired) else {
        return Ok((false, existing.metadata.resource_version));
    };
    let replaced = api
        .replace(
            &name,
            &PostParams::default(),
            &typed::to_dynamic(&updated, &resources::work())?,
        )
        .await?;
    Ok((true, replaced.metadata.resource_version))
}

fn merge_maps(
    current: &Option<BTreeMap<String, String>>,
    desired: &Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    let mut merged = current.clone().unwrap_or_default();
    merged.extend(desired.clone().unwrap_or_default());
    (!merged.is_empty()).then_some(merged)
}

/// `current` moved towards `desired` (spec, owner references, Karmada's labels, annotations and finalizer),
/// keeping its resourceVersion and what others added; `None` when nothing changes.
pub fn merged_work(current: &Work, desired: &Work) -> Option<Work> {
    let mut updated = current.clone();
    updated.spec = desired.spec.clone();
    updated.metadata.labels = merge_maps(&current.metadata.labels, &desired.metadata.labels);
    updated.metadata.annotations =
        merge_maps(&current.metadata.annotations, &desired.metadata.annotations);
    updated.metadata.owner_references = desired.metadata.owner_references.clone();
    let mut finalizers = current.metadata.finalizers.clone().unwrap_or_default();
    for finalizer in desired.metadata.finalizers.iter().flatten() {
        if !finalizers.contains(finalizer) {
            finalizers.push(finalizer.clone());
        }
    }
    updated.metadata.finalizers = (!finalizers.is_empty()).then_some(finalizers);
    (updated != *current).then_some(updated)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn work(value: serde_json::Value) -> Work {
        serde_json::from_value(value).expect("work")
    }

    #[test]
    fn the_work_watch_leaves_out_the_works_of_bindings() {
        let selector = apimachinery::labels::LabelSelector::parse(&not_a_bindings_work())
            .expect("a valid label selector");
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let table = [
            (labels(&[]), true),
            (labels(&[(work::LABEL_WORK_PERMANENT_ID, "w1")]), true),
            (
                labels(&[
                    (work::LABEL_WORK_PERMANENT_ID, "w1"),
                    (work::LABEL_RESOURCE_BINDING_PERMANENT_ID, "rb1"),
                ]),
                false,
            ),
            (
                labels(&[(work::LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID, "crb1")]),
                false,
            ),
        ];
        for (labels, selected) in table {
            assert_eq!(selector.matches(&labels), selected, "{labels:?}");
        }
    }

    #[test]
    fn merged_work_table() {
        let desired = work(json!({
            "metadata": {"name": "ns-x", "namespace": "karmada-es-a",
                         "annotations": {"policy.karmada.io/applied-cluster-overrides": "[]"},
                         "finalizers": ["karmada.io/execution-controller"],
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "u2",
                                              "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}]}},
        }));
        // Already as desired, plus the webhook's permanent id and a resourceVersion: nothing to write.
        let mut same = desired.clone();
        same.metadata.resource_version = Some("7".into());
        same.metadata.labels = Some(BTreeMap::from([(
            "work.karmada.io/permanent-id".to_string(),
            "id-1".to_string(),
        )]));
        assert_eq!(merged_work(&same, &desired), None);

        // Drifted spec and a missing finalizer: fixed, with the id label and resourceVersion kept.
        let mut drifted = same.clone();
        drifted.spec.workload.manifests = vec![json!({"kind": "Namespace"})];
        drifted.metadata.finalizers = Some(vec!["other".into()]);
        let updated = merged_work(&drifted, &desired).expect("changes");
        assert_eq!(updated.spec, desired.spec);
        assert_eq!(updated.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(
            updated
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("work.karmada.io/permanent-id")),
            Some(&"id-1".to_string())
        );
        assert_eq!(
            updated.metadata.finalizers,
            Some(vec![
                "other".to_string(),
                "karmada.io/execution-controller".to_string()
            ])
        );

        // A recreated namespace (new uid) moves the owner reference.
        let mut old_owner = same.clone();
        if let Some(owners) = old_owner.metadata.owner_references.as_mut() {
            owners[0].uid = "u1".into();
        }
        let updated = merged_work(&old_owner, &desired).expect("changes");
        assert_eq!(
            updated.metadata.owner_references,
            desired.metadata.owner_references
        );
    }

    #[test]
    fn only_cluster_changes_that_matter_resync() {
        let cluster = |labels: serde_json::Value, status: serde_json::Value| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": "member1", "uid": "u1", "labels": labels},
                "spec": {"syncMode": "Push", "region": "eu"}, "status": status,
            }))
            .expect("cluster")
        };
        let seen = ClusterFingerprints::default();
        assert!(
            seen.changed(&cluster(json!({}), json!({}))),
            "a new cluster"
        );
        assert!(
            !seen.changed(&cluster(json!({}), json!({"kubernetesVersion": "v1.31.0"}))),
            "a status update"
        );
        assert!(
            seen.changed(&cluster(json!({"env": "prod"}), json!({}))),
            "new labels"
        );
    }

    #[test]
    fn works_map_to_their_namespace() {
        // Read as the watch reads it: metadata only, the body skipped.
        let owned: kube::core::PartialObjectMeta<DynamicObject> = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "x-1", "namespace": "karmada-es-a",
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "u"}]},
            "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "Namespace"}]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}]},
        }))
        .expect("work");
        assert_eq!(owning_namespace(&owned), Some(ObjectRef::new("x")));
        let other: kube::core::PartialObjectMeta<DynamicObject> = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "nginx-1", "namespace": "karmada-es-a"},
        }))
        .expect("work");
        assert_eq!(owning_namespace(&other), None);
    }
}
