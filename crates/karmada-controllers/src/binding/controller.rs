//! The binding controller: scheduled ResourceBindings and ClusterResourceBindings → one Work per target
//! cluster (docs/karmada.md, "Binding controller"), rendered by the pure [`super::desired_works`].
//!
//! Per binding (level-triggered, one key at a time):
//! - deleting: delete every Work labelled with the binding's permanent id, then drop the finalizer
//!   (`karmada.io/binding-controller`, or `karmada.io/cluster-resource-binding-controller` for a CRB); the
//!   Works' own finalizer lets the execution controller clean the members.
//! - otherwise: the finalizer; orphan Works (clusters no longer targeted) deleted; then the template is read
//!   (from the shared watch of its kind when it holds the version the binding records, else from the API
//!   server) and every desired Work created or updated (resourceVersion preconditions).
//!
//! A failure (template missing, an override with a bad JSON pointer, an unknown cluster) is recorded as a
//! `SyncWorkFailed` event and a `WorkSynced=False` condition on the binding (a karmada-rs addition: Karmada
//! only records the event), and retried with backoff; the other clusters' Works are still written. The
//! condition turns True again (`SyncWorkSucceed`) once a sync succeeds; a binding that never failed gets no
//! condition, so the healthy path costs no status write.
//!
//! Triggers: the bindings themselves; their Works (deleted or changed by someone else → rewritten);
//! OverridePolicies (the bindings of their namespace) and ClusterOverridePolicies (every binding); a
//! Cluster's labels changing (the bindings targeting it, for label-targeted overrides) — see [`triggers`].
//! Rendering and writing the Works is in [`render`].
//!
//! Works, ResourceBindings and ClusterResourceBindings come from the process's shared watches
//! ([`BindingConfig::informers`]) as compact objects: orphan detection and the triggers read labels and
//! annotations from the metadata and decode only the Works of the binding at hand.

mod render;
mod triggers;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::work::{
    FINALIZER_BINDING_CONTROLLER, FINALIZER_CLUSTER_RESOURCE_BINDING_CONTROLLER,
};
use karmada_api::{ResourceBinding, Work};
use karmada_interpreter::Interpreter;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::watcher;
use kube::runtime::watcher::Event;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::works::{BindingScope, orphan_works, waiting_for_direct_purge};
use crate::execution::queue::{Backoffs, REQUEUE_CAPACITY, reflect_compact_events, spec_changes};
use crate::keys::{
    ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_RESOURCE_BINDING_NAME,
    ANNOTATION_RESOURCE_BINDING_NAMESPACE, LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
    LABEL_RESOURCE_BINDING_PERMANENT_ID,
};
use crate::runtime::compact::Packer;
use crate::runtime::runner::{self, Action, Loop, ObjectKey};
use crate::runtime::{Cache, Meta};
use crate::runtime::{
    CompactObject, ControllerError, EventRecorder, EventType, Informers, LabelIndex,
    TemplateReader, resources, typed,
};

/// Event reasons on bindings (Karmada's).
pub const EVENT_SYNC_WORK_SUCCEED: &str = "SyncWorkSucceed";
pub const EVENT_SYNC_WORK_FAILED: &str = "SyncWorkFailed";
pub const EVENT_CLEANUP_WORK_FAILED: &str = "CleanupWorkFailed";
/// The binding condition reporting Work rendering failures (karmada-rs addition, see module docs).
pub const CONDITION_WORK_SYNCED: &str = "WorkSynced";

/// Settings of the binding controller.
#[derive(Clone)]
pub struct BindingConfig {
    pub interpreter: Interpreter,
    /// Bindings reconciled at once (per kind).
    pub concurrency: u16,
    /// How often a synced binding is rendered again anyway (a safety net).
    pub resync: Duration,
    /// The control plane's shared watches (Works, ResourceBindings, ClusterResourceBindings come from here).
    pub informers: Informers,
}

impl Default for BindingConfig {
    fn default() -> Self {
        Self {
            interpreter: Interpreter::native(),
            concurrency: 16,
            resync: Duration::from_secs(600),
            informers: Informers::default(),
        }
    }
}

impl std::fmt::Debug for BindingConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BindingConfig")
            .field("interpreter", &self.interpreter)
            .field("concurrency", &self.concurrency)
            .field("resync", &self.resync)
            .finish_non_exhaustive()
    }
}

struct Context {
    client: kube::Client,
    config: BindingConfig,
    recorder: EventRecorder,
    /// Every Work (shared).
    works: Cache,
    /// The Works by their binding's permanent id, per binding scope.
    works_by_binding: LabelIndex,
    works_by_cluster_binding: LabelIndex,
    override_policies: Cache,
    cluster_override_policies: Cache,
    clusters: Cache,
    /// The clusters in typed form, converted once per resourceVersion: every render reads all of them, and a
    /// Cluster's status makes it large.
    typed_clusters: typed::TypedMemo<karmada_api::Cluster>,
    templates: TemplateReader,
    backoff: Backoffs<(bool, String, String)>,
    cancel: CancellationToken,
}

impl Context {
    /// Waits until every cache has its first full list (a binding rendered against a partial Work cache would
    /// miss orphans and recreate existing Works); `false` once `cancel` fired.
    async fn caches_ready(&self) -> bool {
        for cache in [
            &self.works,
            &self.override_policies,
            &self.cluster_override_policies,
            &self.clusters,
        ] {
            if !crate::execution::queue::ready(cache, &self.cancel).await {
                return false;
            }
        }
        true
    }
}

type Reconciling = Pin<Box<dyn Future<Output = Result<Action, ControllerError>> + Send>>;
type Refs = mpsc::Sender<ObjectKey>;

pub use render::merge_work;
use render::{Rendering, render};
use triggers::{Bindings, Handler, Senders, feed};

/// Runs the ResourceBinding and ClusterResourceBinding loops until `cancel` fires.
pub async fn run(client: kube::Client, config: BindingConfig, cancel: CancellationToken) {
    let rb_resource = resources::resource_binding();
    let crb_resource = resources::cluster_resource_binding();
    // Every subscription's events are read from here on (by a feeder or a reconcile loop): a subscriber that stops
    // reading holds up the shared watch for every other controller.
    let subscribe = |resource: &ApiResource| {
        config.informers.subscribe(
            resources::all_raw(&client, resource),
            watcher::Config::default(),
        )
    };
    let rbs = subscribe(&rb_resource);
    let crbs = subscribe(&crb_resource);
    let works = subscribe(&resources::work());
    let bindings = Bindings {
        rbs: rbs.store.clone(),
        crbs: crbs.store.clone(),
    };
    let (rb_tx, rb_rx) = mpsc::channel(REQUEUE_CAPACITY);
    let (crb_tx, crb_rx) = mpsc::channel(REQUEUE_CAPACITY);
    let senders = Senders {
        rb: rb_tx,
        crb: crb_tx,
    };

    let spawn_feed = |events: futures::stream::BoxStream<'static, Event<CompactObject>>,
                      handler: Handler| {
        tokio::spawn(feed(
            events,
            handler,
            bindings.clone(),
            senders.clone(),
            cancel.clone(),
        ))
    };
    // Policies and clusters are few: caches of their own.
    let own_cache = |resource: ApiResource, handler: Handler| {
        let writer = crate::runtime::CacheWriter::new();
        let cache = writer.as_reader();
        let events = reflect_compact_events(
            resources::all(&client, &resource),
            watcher::Config::default(),
            writer,
            Packer::default(),
        );
        (cache, spawn_feed(events.boxed(), handler))
    };
    let works_by_binding = works.label_index(id_label(BindingScope::Namespaced));
    let works_by_cluster_binding = works.label_index(id_label(BindingScope::Cluster));
    let works_task = spawn_feed(works.events, Handler::works());
    let (override_policies, op_task) =
        own_cache(resources::override_policy(), Handler::OverridePolicies);
    let (cluster_override_policies, cop_task) = own_cache(
        resources::cluster_override_policy(),
        Handler::ClusterOverridePolicies,
    );
    let (clusters, clusters_task) =
        own_cache(resources::cluster(), Handler::Clusters(HashMap::new()));
    let feeders = [works_task, op_task, cop_task, clusters_task];
    drop(senders);
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), "binding-controller"),
        client: client.clone(),
        config: config.clone(),
        works_by_binding,
        works_by_cluster_binding,
        works: works.store,
        override_policies,
        cluster_override_policies,
        clusters,
        typed_clusters: typed::TypedMemo::default(),
        templates: TemplateReader::new(client.clone(), config.informers.clone()),
        backoff: Backoffs::new(Duration::from_secs(60)),
        cancel: cancel.clone(),
    });
    tokio::select! {
        () = cancel.cancelled() => {}
        ((), ()) = async {
            tokio::join!(
                run_scope(BindingScope::Namespaced, rbs, rb_rx, context.clone(), cancel.clone()),
                run_scope(BindingScope::Cluster, crbs, crb_rx, context.clone(), cancel.clone()),
            )
        } => {}
    }
    feeders.iter().for_each(|f| f.abort());
}

async fn run_scope(
    scope: BindingScope,
    bindings: crate::runtime::Subscription,
    requests: mpsc::Receiver<ObjectKey>,
    context: Arc<Context>,
    cancel: CancellationToken,
) {
    // Status writes (scheduler, binding status) need no re-rendering.
    let own = spec_changes(bindings.events)
        .filter_map(|binding| std::future::ready(binding.ok().map(|b| ObjectKey::of(&b))));
    let concurrency = context.config.concurrency;
    let resync = context.config.resync;
    runner::run(
        Loop {
            name: match scope {
                BindingScope::Namespaced => "binding-controller",
                BindingScope::Cluster => "cluster-resource-binding-controller",
            },
            store: bindings.store,
            context,
            concurrency: usize::from(concurrency),
            resync: Some(resync),
        },
        futures::stream::select(own, requests),
        move |binding: Arc<CompactObject>, ctx: Arc<Context>| -> Reconciling {
            Box::pin(async move {
                // The runner drains the shared bindings' events from the start, while the other caches
                // list; reconciles wait for them here instead.
                if !ctx.caches_ready().await {
                    return Ok(Action::await_change());
                }
                let started = std::time::Instant::now();
                let synced = reconcile(scope, binding, ctx).await;
                crate::metrics::global().observe_sync_work(synced.is_ok(), started.elapsed());
                synced
            })
        },
        move |binding: &CompactObject, err: &ControllerError, ctx: &Context| {
            if err.is_conflict() {
                return Action::requeue(err.retry_after());
            }
            tracing::warn!(binding = ?binding.metadata().name, %err, "binding controller: reconcile failed");
            Action::requeue(ctx.backoff.failed(&key(scope, binding.metadata())))
        },
        cancel,
    )
    .await;
}

/// Backoff key: (cluster-scoped?, namespace, name).
fn key(scope: BindingScope, binding: &Meta) -> (bool, String, String) {
    (
        scope == BindingScope::Cluster,
        binding.namespace().unwrap_or_default().to_string(),
        binding.name().to_string(),
    )
}

/// The binding as the object of an Event.
fn reference(scope: BindingScope, binding: &Meta) -> ObjectReference {
    let resource = binding_resource(scope);
    ObjectReference {
        api_version: Some(resource.api_version),
        kind: Some(resource.kind),
        name: binding.name.as_deref().map(str::to_string),
        namespace: binding.namespace().map(str::to_string),
        uid: binding.uid.as_deref().map(str::to_string),
        resource_version: binding.resource_version.as_deref().map(str::to_string),
        field_path: None,
    }
}

fn finalizer(scope: BindingScope) -> &'static str {
    match scope {
        BindingScope::Namespaced => FINALIZER_BINDING_CONTROLLER,
        BindingScope::Cluster => FINALIZER_CLUSTER_RESOURCE_BINDING_CONTROLLER,
    }
}

fn id_label(scope: BindingScope) -> &'static str {
    match scope {
        BindingScope::Namespaced => LABEL_RESOURCE_BINDING_PERMANENT_ID,
        BindingScope::Cluster => LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
    }
}

fn binding_resource(scope: BindingScope) -> ApiResource {
    match scope {
        BindingScope::Namespaced => resources::resource_binding(),
        BindingScope::Cluster => resources::cluster_resource_binding(),
    }
}

fn binding_api(
    client: &kube::Client,
    scope: BindingScope,
    namespace: Option<&str>,
) -> kube::Api<DynamicObject> {
    let resource = binding_resource(scope);
    match (scope, namespace) {
        (BindingScope::Namespaced, Some(ns)) => resources::namespaced(client, &resource, ns),
        _ => resources::all(client, &resource),
    }
}

/// The cached Works made for this binding: by its permanent id from the index, else (a binding without one)
/// by scanning for its annotations.
fn existing_works(ctx: &Context, scope: BindingScope, binding: &ResourceBinding) -> Vec<Work> {
    let id = binding
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(id_label(scope)))
        .filter(|id| !id.is_empty());
    let candidates = match (id, scope) {
        (Some(id), BindingScope::Namespaced) => ctx.works_by_binding.get(id),
        (Some(id), BindingScope::Cluster) => ctx.works_by_cluster_binding.get(id),
        (None, _) => ctx.works.state(),
    };
    candidates
        .iter()
        .filter(|w| belongs(w, scope, binding))
        .filter_map(|w| w.decode().ok())
        .collect()
}

/// Whether the cached Work `work` was made for this binding: by permanent id when the binding has one, else
/// by annotations.
fn belongs(work: &CompactObject, scope: BindingScope, binding: &ResourceBinding) -> bool {
    let id = binding
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(id_label(scope)));
    if let Some(id) = id.filter(|id| !id.is_empty()) {
        return work.label(id_label(scope)) == Some(id.as_str());
    }
    let name = binding.metadata.name.as_deref();
    match scope {
        BindingScope::Namespaced => {
            work.annotation(ANNOTATION_RESOURCE_BINDING_NAME) == name
                && work.annotation(ANNOTATION_RESOURCE_BINDING_NAMESPACE)
                    == binding.metadata.namespace.as_deref()
        }
        BindingScope::Cluster => work.annotation(ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME) == name,
    }
}

fn typed_all<T: serde::de::DeserializeOwned>(store: &Cache) -> Vec<T> {
    store
        .state()
        .iter()
        .filter_map(|o| o.decode().ok())
        .collect()
}

async fn delete_work(client: &kube::Client, work: &Work) -> Result<(), ControllerError> {
    if work.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let api = resources::namespaced(
        client,
        &resources::work(),
        work.metadata.namespace.as_deref().unwrap_or_default(),
    );
    match api
        .delete(
            work.metadata.name.as_deref().unwrap_or_default(),
            &DeleteParams::background(),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn reconcile(
    scope: BindingScope,
    object: Arc<CompactObject>,
    ctx: Arc<Context>,
) -> Result<Action, ControllerError> {
    let binding: ResourceBinding = object.decode()?;
    let finalizer = finalizer(scope);
    let has_finalizer = binding
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer));
    let namespace = binding.metadata.namespace.clone();
    let name = binding.metadata.name.clone().unwrap_or_default();
    let api = binding_api(&ctx.client, scope, namespace.as_deref());
    let existing = existing_works(&ctx, scope, &binding);

    if binding.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        let mut works = existing;
        // The cache may lag a Work created a moment ago: ask the API server too.
        if let Some(id) = binding
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(id_label(scope)))
        {
            let listed = resources::all(&ctx.client, &resources::work())
                .list(&ListParams::default().labels(&format!("{}={id}", id_label(scope))))
                .await?;
            works.extend(
                listed
                    .items
                    .iter()
                    .filter_map(|w| typed::to_typed::<Work>(w).ok()),
            );
        }
        for work in &works {
            if let Err(err) = delete_work(&ctx.client, work).await {
                let message = format!(
                    "deleting Work {}/{}: {err}",
                    work.metadata.namespace.as_deref().unwrap_or_default(),
                    work.metadata.name.as_deref().unwrap_or_default()
                );
                ctx.recorder
                    .record(
                        &reference(scope, object.metadata()),
                        EventType::Warning,
                        EVENT_CLEANUP_WORK_FAILED,
                        &message,
                    )
                    .await;
                return Err(err);
            }
        }
        let mut updated = object.to_dynamic()?;
        updated.metadata.finalizers = updated
            .metadata
            .finalizers
            .map(|f| f.into_iter().filter(|x| x != finalizer).collect());
        return match api.replace(&name, &PostParams::default(), &updated).await {
            Ok(_) => Ok(Action::await_change()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::await_change()),
            Err(e) => Err(e.into()),
        };
    }
    if !has_finalizer {
        let mut updated = object.to_dynamic()?;
        updated
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(finalizer.to_string());
        api.replace(&name, &PostParams::default(), &updated).await?;
        return Ok(Action::await_change());
    }

    let mut changed = false;
    for orphan in orphan_works(&existing, &binding.spec) {
        if orphan.metadata.deletion_timestamp.is_none() {
            delete_work(&ctx.client, orphan).await?;
            changed = true;
        }
    }
    if waiting_for_direct_purge(&existing, &binding.spec) {
        return Ok(Action::requeue(Duration::from_secs(5)));
    }
    if binding.spec.clusters.is_empty() && binding.spec.required_by.is_empty() {
        return Ok(Action::await_change());
    }

    let failures = match render(scope, &binding, &existing, &ctx).await {
        Ok((failures, wrote)) => {
            changed |= wrote;
            failures
        }
        Err(Rendering::Retry(after)) => return Ok(Action::requeue(after)),
        Err(Rendering::Failed(message)) => vec![message],
        Err(Rendering::Api(err)) => return Err(err),
    };
    let key = key(scope, object.metadata());
    let reference = reference(scope, object.metadata());
    if failures.is_empty() {
        ctx.backoff.succeeded(&key);
        set_condition(&ctx, scope, &object, None).await?;
        if changed {
            ctx.recorder
                .record(
                    &reference,
                    EventType::Normal,
                    EVENT_SYNC_WORK_SUCCEED,
                    "Sync work of resourceBinding successful.",
                )
                .await;
        }
        // The runner's periodic sweep brings it back after `resync`.
        Ok(Action::await_change())
    } else {
        let message = failures.join("; ");
        ctx.recorder
            .record(
                &reference,
                EventType::Warning,
                EVENT_SYNC_WORK_FAILED,
                &message,
            )
            .await;
        set_condition(&ctx, scope, &object, Some(&message)).await?;
        Ok(Action::requeue(ctx.backoff.failed(&key)))
    }
}

/// Writes `WorkSynced` (False with `failure`, else True) — but a binding that never failed is left alone.
async fn set_condition(
    ctx: &Context,
    scope: BindingScope,
    object: &CompactObject,
    failure: Option<&str>,
) -> Result<(), ControllerError> {
    let mut value: Value = object.decode()?;
    let conditions: Vec<Condition> = value
        .pointer("/status/conditions")
        .cloned()
        .map(serde_json::from_value)
        .transpose()?
        .unwrap_or_default();
    let existing = conditions.iter().find(|c| c.type_ == CONDITION_WORK_SYNCED);
    if failure.is_none() && existing.is_none_or(|c| c.status == "True") {
        return Ok(());
    }
    let (status, reason, message) = match failure {
        Some(message) => ("False", EVENT_SYNC_WORK_FAILED, message.to_string()),
        None => (
            "True",
            EVENT_SYNC_WORK_SUCCEED,
            "Works are in sync with the binding".to_string(),
        ),
    };
    if existing.is_some_and(|c| c.status == status && c.reason == reason && c.message == message) {
        return Ok(());
    }
    let condition = Condition {
        type_: CONDITION_WORK_SYNCED.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message,
        observed_generation: object.metadata().generation,
        last_transition_time: match existing {
            Some(c) if c.status == status => c.last_transition_time.clone(),
            _ => Time(Timestamp::now()),
        },
    };
    let mut conditions: Vec<Condition> = conditions
        .into_iter()
        .filter(|c| c.type_ != CONDITION_WORK_SYNCED)
        .collect();
    conditions.push(condition);
    let Some(root) = value.as_object_mut() else {
        return Ok(());
    };
    let status_value = root
        .entry("status")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(status_map) = status_value.as_object_mut() {
        status_map.insert("conditions".into(), serde_json::to_value(conditions)?);
    }
    let body: DynamicObject = serde_json::from_value(value)?;
    binding_api(&ctx.client, scope, object.metadata().namespace.as_deref())
        .replace_status(
            object.metadata().name.as_deref().unwrap_or_default(),
            &PostParams::default(),
            &body,
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use karmada_api::policy::ANNOTATION_APPLIED_OVERRIDES;

    use super::*;

    fn work(
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
        finalizers: &[&str],
        replicas: i64,
    ) -> Work {
        let map = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        Work {
            metadata: ObjectMeta {
                name: Some("w".into()),
                namespace: Some("karmada-es-a".into()),
                labels: map(labels),
                annotations: map(annotations),
                finalizers: Some(finalizers.iter().map(|f| f.to_string()).collect()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            spec: karmada_api::work::WorkSpec {
                workload: karmada_api::work::WorkloadTemplate {
                    manifests: vec![serde_json::json!({"spec": {"replicas": replicas}})],
                },
                ..Default::default()
            },
            ..Work::default()
        }
    }

    #[test]
    fn merge_keeps_others_keys_and_replaces_override_records() {
        let live = work(
            &[("work.karmada.io/permanent-id", "p"), ("team", "x")],
            &[(ANNOTATION_APPLIED_OVERRIDES, "[old]"), ("note", "keep")],
            &["other"],
            2,
        );
        let desired = work(
            &[("resourcebinding.karmada.io/permanent-id", "b")],
            &[],
            &["karmada.io/execution-controller"],
            4,
        );
        let merged = merge_work(&live, &desired);
        let labels = merged.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.len(), 3);
        let annotations = merged.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get("note").map(String::as_str), Some("keep"));
        assert!(!annotations.contains_key(ANNOTATION_APPLIED_OVERRIDES));
        assert_eq!(
            merged.metadata.finalizers,
            Some(vec![
                "other".into(),
                "karmada.io/execution-controller".into()
            ])
        );
        assert_eq!(merged.spec, desired.spec);
        assert_eq!(merged.metadata.resource_version.as_deref(), Some("7"));
        // Merging what is already there changes nothing.
        assert_eq!(merge_work(&merged, &desired), merged);
    }

    #[test]
    fn works_belong_by_permanent_id_or_annotations() {
        let mut binding = ResourceBinding::default();
        binding.metadata.name = Some("web-deployment".into());
        binding.metadata.namespace = Some("default".into());
        let by_annotations = serde_json::from_value::<DynamicObject>(serde_json::json!({
            "metadata": {"name": "w", "annotations": {
                "resourcebinding.karmada.io/name": "web-deployment",
                "resourcebinding.karmada.io/namespace": "default"}}
        }))
        .expect("object");
        let by_annotations = &CompactObject::from_dynamic(&by_annotations).expect("compact");
        assert!(belongs(by_annotations, BindingScope::Namespaced, &binding));
        assert!(!belongs(by_annotations, BindingScope::Cluster, &binding));
        binding.metadata.labels = Some(BTreeMap::from([(
            LABEL_RESOURCE_BINDING_PERMANENT_ID.to_string(),
            "id-1".to_string(),
        )]));
        assert!(!belongs(by_annotations, BindingScope::Namespaced, &binding));
        let by_id = serde_json::from_value::<DynamicObject>(serde_json::json!({
            "metadata": {"name": "w", "labels": {LABEL_RESOURCE_BINDING_PERMANENT_ID: "id-1"}}
        }))
        .expect("object");
        let by_id = CompactObject::from_dynamic(&by_id).expect("compact");
        assert!(belongs(&by_id, BindingScope::Namespaced, &binding));
    }
}
