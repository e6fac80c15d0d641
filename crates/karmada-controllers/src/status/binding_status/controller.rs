//! The binding status controller's runtime: one reconcile loop over ResourceBindings and one over
//! ClusterResourceBindings, fed by a shared Work cache. A Work names its binding in annotations
//! (`resourcebinding.karmada.io/namespace` + `/name`, or `clusterresourcebinding.karmada.io/name`).
//! Works and bindings come from the process's shared watches ([`BindingStatusConfig::informers`]) as compact
//! objects: a binding's Works are picked by label from the metadata and only they are decoded.
//!
//! Per binding: take its Works from the cache by the binding's permanent-id label, write
//! `status.aggregatedStatus` and the FullyApplied condition through the status subresource (read
//! resourceVersion as precondition; a 409 requeues), then aggregate onto the template's own `.status` with the
//! interpreter and write it through the template's status subresource, recording AggregateStatusSucceed /
//! AggregateStatusFailed on the template.
//!
//! Write economy (each status write is load on the API server and wakes every watcher):
//! - a binding is woken by changes of its spec and metadata, not of its status, so its own status write does
//!   not bring it back;
//! - Work wake-ups are coalesced ([`WINDOW`], [`crate::status::coalesce`]): the Works of one binding changing
//!   together (every member reporting the same rollout) collapse into one reconcile, which reads the latest
//!   Works from the cache;
//! - nothing is written when the computed status equals the current one (an absent template status equals an
//!   empty one); a binding without any Work yet leaves an unset template status alone, and a scheduled
//!   binding whose Works are not created yet gets no FullyApplied=False that they would overwrite at once;
//! - AggregateStatusSucceed is recorded once per template generation (the first aggregation of a generation),
//!   not on every counter change of a rollout: each record is one more write.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use karmada_api::ResourceBinding;
use karmada_api::work::{
    AggregatedStatusItem, CONDITION_FULLY_APPLIED, ResourceBindingStatus, Work, WorkStatus,
};
use karmada_interpreter::{Interpreter, Operation, Target};
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::aggregate::{desired_binding_status, ready_replicas, stamp_transition_times};
use super::metrics::BindingMetrics;
use super::reuse::{BasisMemo, collect_items};
use crate::binding::BindingScope;
use crate::execution::queue::{REQUEUE_CAPACITY, ready, spec_changes};
use crate::keys::{
    ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_RESOURCE_BINDING_NAME,
    ANNOTATION_RESOURCE_BINDING_NAMESPACE, LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
    LABEL_RESOURCE_BINDING_PERMANENT_ID,
};
use crate::runtime::Cache;
use crate::runtime::runner::{self, Action, Loop, ObjectKey};
use crate::runtime::{
    CompactObject, ControllerError, EventRecorder, EventType, Informers, LabelIndex, RawObject,
    Subscription, TemplateReader, resources, status_write, typed,
};
use crate::status::coalesce::coalesced;

/// Component name on the Events it records.
pub const COMPONENT: &str = "binding-status-controller";
/// Event reasons on the template, as Karmada names them.
pub const REASON_AGGREGATE_STATUS_SUCCEED: &str = "AggregateStatusSucceed";
pub const REASON_AGGREGATE_STATUS_FAILED: &str = "AggregateStatusFailed";
const MESSAGE_AGGREGATE_STATUS_SUCCEED: &str =
    "Update Resource with AggregatedStatus successfully.";

/// How often series of deleted bindings are dropped from the gauge.
const METRICS_SWEEP: Duration = Duration::from_secs(30);

/// How long Work changes of one binding are gathered before it is reconciled (the most its status lags).
/// Status is not on the propagation path, so the delay costs nothing a user waits for, and it turns the Work
/// status updates of one rollout into few binding and template writes.
pub const WINDOW: Duration = Duration::from_secs(1);

/// Settings of the binding status controller.
#[derive(Clone)]
pub struct BindingStatusConfig {
    pub interpreter: Interpreter,
    /// `--concurrent-resourcebinding-syncs` (and the cluster-scoped one): bindings reconciled at once.
    pub concurrency: u16,
    /// See [`WINDOW`].
    pub window: Duration,
    /// The control plane's shared watches (Works, ResourceBindings, ClusterResourceBindings come from here).
    pub informers: Informers,
}

impl Default for BindingStatusConfig {
    fn default() -> Self {
        Self {
            interpreter: Interpreter::native(),
            concurrency: 5,
            window: WINDOW,
            informers: Informers::default(),
        }
    }
}

impl std::fmt::Debug for BindingStatusConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BindingStatusConfig")
            .field("interpreter", &self.interpreter)
            .field("concurrency", &self.concurrency)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

struct Shared {
    client: kube::Client,
    interpreter: Interpreter,
    templates: TemplateReader,
    written: WrittenVersions,
    /// What each binding's stored items were computed from ([`super::reuse`]).
    bases: BasisMemo,
    recorder: EventRecorder,
    metrics: BindingMetrics,
    /// Every Work (shared), read instead of listing them per reconcile.
    works: Cache,
    /// The Works by their binding's permanent id, per binding scope.
    works_by_binding: LabelIndex,
    works_by_cluster_binding: LabelIndex,
    cancel: CancellationToken,
}

/// The resourceVersion of each template's last status write by this controller, by the template's identity.
/// Bounded: when full it is forgotten, and templates written before that are then read from the API server.
#[derive(Default)]
struct WrittenVersions(std::sync::Mutex<Written>);

#[derive(Default)]
struct Written {
    versions: HashMap<String, String>,
    /// Whether `versions` was ever cleared (an absent template may then have been written).
    forgot: bool,
}

/// Templates remembered in [`WrittenVersions`] at most.
const WRITTEN_REMEMBERED: usize = 16_384;

/// What [`WrittenVersions`] knows of a template.
enum LastWrite {
    /// Never written by this process: any cached copy will do.
    Never,
    /// Written; a cached copy must be at least this new.
    At(String),
    /// Perhaps written, but forgotten: ask the API server.
    Unknown,
}

impl LastWrite {
    fn version(&self) -> Option<&str> {
        match self {
            LastWrite::At(version) => Some(version),
            LastWrite::Never | LastWrite::Unknown => None,
        }
    }
}

impl WrittenVersions {
    fn key(binding: &ResourceBinding) -> String {
        let r = &binding.spec.resource;
        format!("{}/{}/{}/{}", r.api_version, r.kind, r.namespace, r.name)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Written> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, binding: &ResourceBinding) -> LastWrite {
        let written = self.lock();
        match written.versions.get(&Self::key(binding)) {
            Some(version) => LastWrite::At(version.clone()),
            None if written.forgot => LastWrite::Unknown,
            None => LastWrite::Never,
        }
    }

    fn set(&self, binding: &ResourceBinding, version: Option<&str>) {
        let mut written = self.lock();
        if written.versions.len() >= WRITTEN_REMEMBERED {
            written.versions.clear();
            written.forgot = true;
        }
        match version {
            Some(version) => written
                .versions
                .insert(Self::key(binding), version.to_string()),
            None => written.versions.remove(&Self::key(binding)),
        };
    }
}

struct Context {
    shared: Arc<Shared>,
    scope: BindingScope,
    resource: ApiResource,
}

type Reconciling = Pin<Box<dyn Future<Output = Result<Action, ControllerError>> + Send>>;
type Wake = mpsc::Receiver<ObjectKey>;

/// Runs both controllers until `cancel` fires.
pub async fn run(
    client: kube::Client,
    config: BindingStatusConfig,
    metrics: BindingMetrics,
    cancel: CancellationToken,
) {
    // Every subscription's events are read from here on (by `feed_works` or a reconcile loop): a subscriber that
    // stops reading holds up the shared watch for every other controller.
    let subscribe = |resource: &ApiResource| {
        config.informers.subscribe(
            resources::all_raw(&client, resource),
            watcher::Config::default(),
        )
    };
    let works = subscribe(&resources::work());
    let rbs = subscribe(&resources::resource_binding());
    let crbs = subscribe(&resources::cluster_resource_binding());
    let shared = Arc::new(Shared {
        templates: TemplateReader::new(client.clone(), config.informers.clone()),
        written: WrittenVersions::default(),
        bases: BasisMemo::default(),
        recorder: EventRecorder::new(client.clone(), COMPONENT),
        interpreter: config.interpreter.clone(),
        metrics: metrics.clone(),
        client: client.clone(),
        works_by_binding: works.label_index(LABEL_RESOURCE_BINDING_PERMANENT_ID),
        works_by_cluster_binding: works.label_index(LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID),
        works: works.store,
        cancel: cancel.clone(),
    });
    let namespaced = Arc::new(Context {
        shared: shared.clone(),
        scope: BindingScope::Namespaced,
        resource: resources::resource_binding(),
    });
    let cluster = Arc::new(Context {
        shared,
        scope: BindingScope::Cluster,
        resource: resources::cluster_resource_binding(),
    });
    let (rb_wake, rb_woken) = mpsc::channel(REQUEUE_CAPACITY);
    let (crb_wake, crb_woken) = mpsc::channel(REQUEUE_CAPACITY);
    let stores = [rbs.store.clone(), crbs.store.clone()];
    tokio::join!(
        feed_works(works.events, rb_wake, crb_wake, cancel.clone()),
        drive(namespaced, rbs, rb_woken, &config, &cancel),
        drive(cluster, crbs, crb_woken, &config, &cancel),
        sweep_metrics(metrics, stores, cancel.clone()),
    );
}

/// Keeps the Work cache (through `events`) and wakes the binding each changed or deleted Work names (after
/// the first list: see the comment inside).
async fn feed_works(
    events: impl futures::Stream<Item = Event<CompactObject>> + Send,
    mut rb_wake: mpsc::Sender<ObjectKey>,
    mut crb_wake: mpsc::Sender<ObjectKey>,
    cancel: CancellationToken,
) {
    let mut events = Box::pin(events);
    // The loops start once the first list is complete and then reconcile every binding anyway; waking
    // them for that list would only fill the channel nobody drains yet.
    let mut synced = false;
    while let Some(event) = crate::execution::queue::next_event(&mut events, &cancel).await {
        let work = match &event {
            Event::Apply(w) | Event::Delete(w) => w,
            Event::InitApply(w) if synced => w,
            Event::InitDone => {
                synced = true;
                continue;
            }
            Event::InitApply(_) | Event::Init => continue,
        };
        let sent = if let Some(binding) = binding_of_work(work, BindingScope::Namespaced) {
            rb_wake.send(binding).await
        } else if let Some(binding) = binding_of_work(work, BindingScope::Cluster) {
            crb_wake.send(binding).await
        } else {
            Ok(())
        };
        if sent.is_err() {
            // The controllers stopped.
            return;
        }
    }
}

/// Runs one scope's reconcile loop; reconciles wait until the Work cache is complete (a binding reconciled against a
/// partial cache would briefly lose its aggregated items).
async fn drive(
    context: Arc<Context>,
    bindings: Subscription,
    woken: Wake,
    config: &BindingStatusConfig,
    cancel: &CancellationToken,
) {
    // Spec and metadata only: the binding's status is this controller's (and the scheduler's) output.
    let own = spec_changes(bindings.events)
        .filter_map(|binding| std::future::ready(binding.ok().map(|b| ObjectKey::of(&b))));
    let woken = coalesced(woken, config.window);
    // Polled from the start, so the shared bindings' events are drained while the Work cache lists; the
    // reconciles wait for the Work cache instead.
    runner::run(
        Loop {
            name: match context.scope {
                BindingScope::Namespaced => "resource-binding-status-controller",
                BindingScope::Cluster => "cluster-resource-binding-status-controller",
            },
            store: bindings.store,
            context,
            concurrency: usize::from(config.concurrency),
            resync: None,
        },
        futures::stream::select(own, woken),
        |binding: Arc<CompactObject>, ctx: Arc<Context>| -> Reconciling {
            Box::pin(async move {
                if !ready(&ctx.shared.works, &ctx.shared.cancel).await {
                    return Ok(Action::await_change());
                }
                reconcile(binding, ctx).await
            })
        },
        error_policy,
        cancel.clone(),
    )
    .await;
}

/// Drops the gauge series of bindings no longer in either controller's cache.
async fn sweep_metrics(metrics: BindingMetrics, stores: [Cache; 2], cancel: CancellationToken) {
    // Starts one period in: series only exist for bindings reconciled after the caches synced.
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + METRICS_SWEEP, METRICS_SWEEP);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        metrics.retain(|namespace, name| {
            let namespace = (!namespace.is_empty()).then_some(namespace);
            stores
                .iter()
                .any(|store| store.get_named(namespace, name).is_some())
        });
    }
}

/// The binding a Work belongs to, from the annotations the binding controller writes on it.
fn binding_of_work(work: &CompactObject, scope: BindingScope) -> Option<ObjectKey> {
    let annotations = work.annotations();
    match scope {
        BindingScope::Namespaced => {
            let namespace = annotations.get(ANNOTATION_RESOURCE_BINDING_NAMESPACE)?;
            let name = annotations.get(ANNOTATION_RESOURCE_BINDING_NAME)?;
            Some(ObjectKey::new(Some(namespace), name))
        }
        BindingScope::Cluster => {
            let name = annotations.get(ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME)?;
            Some(ObjectKey::new(None, name))
        }
    }
}

fn error_policy(_: &CompactObject, err: &ControllerError, _: &Context) -> Action {
    Action::requeue(err.retry_after())
}

fn now() -> Time {
    // Whole seconds: what the API round-trips, so an unchanged condition compares equal after a re-read.
    Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH))
}

async fn reconcile(
    object: Arc<CompactObject>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    if object.metadata().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let shared = &context.shared;
    let binding: ResourceBinding = object.decode()?;
    let (id_label, index) = match context.scope {
        BindingScope::Namespaced => (
            LABEL_RESOURCE_BINDING_PERMANENT_ID,
            &shared.works_by_binding,
        ),
        BindingScope::Cluster => (
            LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
            &shared.works_by_cluster_binding,
        ),
    };
    let Some(id) = binding
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(id_label))
    else {
        // Without the id no Work can name this binding; admission always sets it.
        return Ok(Action::await_change());
    };
    let works = index.get(id);
    let binding_version = object
        .metadata()
        .resource_version
        .as_deref()
        .unwrap_or_default();
    let stored = binding
        .status
        .as_ref()
        .map_or(&[][..], |s| s.aggregated_status.as_slice());
    let known = shared.bases.get(id);
    let collected = collect_items(
        &binding.spec.resource,
        &works,
        binding_version,
        stored,
        known.as_deref(),
        reported_work,
    );
    let status = desired_binding_status(
        binding.status.as_ref(),
        &binding.spec,
        collected.items,
        &now(),
    );
    if binding.status.as_ref() == Some(&status) {
        shared.bases.set(id, collected.basis.at(binding_version));
    } else if awaiting_works(&binding, works.is_empty()) {
        shared.bases.forget(id);
    } else {
        // Forgotten first: should the write fail, the stored items are not what was computed.
        shared.bases.forget(id);
        let written = write_binding_status(&context, &object, &status).await?;
        if let Some(version) = written.metadata.resource_version.as_deref() {
            shared.bases.set(id, collected.basis.at(version));
        }
    }
    let namespace = binding.metadata.namespace.clone().unwrap_or_default();
    let name = binding.metadata.name.clone().unwrap_or_default();
    shared.metrics.record(
        &namespace,
        &name,
        i64::from(binding.spec.replicas),
        ready_replicas(&status.aggregated_status),
        binding
            .spec
            .clusters
            .iter()
            .map(|target| (target.name.as_str(), i64::from(target.replicas))),
    );
    aggregate_template(shared, &binding, &status.aggregated_status).await?;
    Ok(Action::await_change())
}

/// Whether the binding has no Work yet, no FullyApplied condition, and Works are on their way: it is
/// scheduled (the binding controller is creating them, each one wakes the binding) or the scheduler has not
/// looked at its current generation yet. A FullyApplied=False written now would be overwritten within
/// moments (or lose a race with the scheduler's own status write): one write saved per binding.
fn awaiting_works(binding: &ResourceBinding, no_works: bool) -> bool {
    let status = binding.status.as_ref();
    let unscheduled = status.map_or(0, |s| s.scheduler_observed_generation)
        < binding.metadata.generation.unwrap_or_default();
    no_works
        && (unscheduled || !binding.spec.clusters.is_empty())
        && !status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == CONDITION_FULLY_APPLIED)
        })
}

/// A cached Work's namespace and status, all the aggregation reads of it ([`super::aggregate`]); its
/// metadata comes from the cache's compact form and its manifests are skipped unread.
fn reported_work(object: &CompactObject) -> Result<Work, ControllerError> {
    #[derive(serde::Deserialize)]
    struct Reported {
        #[serde(default)]
        status: Option<WorkStatus>,
    }
    let Reported { status } = object.decode::<Reported>()?;
    let metadata = object.metadata();
    Ok(Work {
        metadata: ObjectMeta {
            namespace: metadata.namespace().map(str::to_string),
            name: Some(metadata.name().to_string()),
            ..ObjectMeta::default()
        },
        status,
        ..Work::default()
    })
}

/// The fields of a binding's status ([`ResourceBindingStatus`]).
const BINDING_STATUS_FIELDS: [&str; 5] = [
    "schedulerObservedGeneration",
    "schedulerObservingAffinityName",
    "lastScheduledTime",
    "conditions",
    "aggregatedStatus",
];

/// Returns the binding as written.
async fn write_binding_status(
    context: &Context,
    object: &CompactObject,
    status: &ResourceBindingStatus,
) -> Result<RawObject, ControllerError> {
    // The whole status, as a merge patch conditional on the version read: every field is written, and one the
    // status leaves out (empty) is removed.
    let fields = status_write::replacing(serde_json::to_value(status)?, &BINDING_STATUS_FIELDS);
    let metadata = object.metadata();
    status_write::merge_status(
        &context.shared.client,
        &context.resource,
        metadata.namespace(),
        metadata.name(),
        metadata.resource_version.as_deref(),
        fields,
    )
    .await
}

/// Aggregates the per-cluster statuses onto the template's `.status`, for kinds with an AggregateStatus hook.
///
/// The template is read from the shared watch of its kind once that holds this controller's last write of it
/// (else an older copy could look already aggregated and hide the need for a write); a write that conflicts
/// because the copy was stale is redone once against the API server's copy.
async fn aggregate_template(
    shared: &Shared,
    binding: &ResourceBinding,
    items: &[AggregatedStatusItem],
) -> Result<(), ControllerError> {
    let resource = &binding.spec.resource;
    let target = Target::new(resource.api_version.clone(), resource.kind.clone());
    if !shared
        .interpreter
        .hook_enabled(&target, Operation::AggregateStatus)
    {
        return Ok(());
    }
    let last_write = shared.written.get(binding);
    let template = match &last_write {
        LastWrite::Unknown => shared.templates.referenced_live(resource).await?,
        LastWrite::Never | LastWrite::At(_) => {
            shared
                .templates
                .referenced(resource, last_write.version())
                .await?
        }
    };
    match write_template_status(shared, binding, template, items).await {
        Err(err) if err.is_conflict() => {
            let live = shared.templates.referenced_live(resource).await?;
            write_template_status(shared, binding, live, items).await
        }
        done => done,
    }
}

/// Writes the status aggregated from `items` onto `template` (as read, with its resourceVersion) if it differs.
async fn write_template_status(
    shared: &Shared,
    binding: &ResourceBinding,
    template: Option<DynamicObject>,
    items: &[AggregatedStatusItem],
) -> Result<(), ControllerError> {
    let resource = &binding.spec.resource;
    let Some(template) = template else {
        return Ok(());
    };
    if !resource.uid.is_empty() && template.metadata.uid.as_deref() != Some(resource.uid.as_str()) {
        // A newer object of the same name; its own binding will be reconciled for it.
        return Ok(());
    }
    let reference = crate::runtime::reference_of(&template);
    let current = typed::to_json(&template)?;
    let mut aggregated = match shared.interpreter.aggregate_status(&current, items) {
        Ok(aggregated) => aggregated,
        Err(err) => {
            // Bad member status: retrying cannot fix it; the next Work change will.
            shared
                .recorder
                .record(
                    &reference,
                    EventType::Warning,
                    REASON_AGGREGATE_STATUS_FAILED,
                    &err.to_string(),
                )
                .await;
            return Ok(());
        }
    };
    stamp_transition_times(current.get("status"), aggregated.get_mut("status"), &now());
    if same_status(aggregated.get("status"), current.get("status"))
        || (items.is_empty() && same_status(current.get("status"), None))
    {
        // Unchanged, or no Work yet: aggregating nothing would claim an observedGeneration no member
        // observed.
        return Ok(());
    }
    let new_generation = same_status(current.get("status"), None)
        || aggregated.pointer("/status/observedGeneration")
            != current.pointer("/status/observedGeneration");
    // Only what changed, conditional on the version read: a replace sent the whole template (its pod template
    // and all) and read it back, to change a few counters.
    let patch = json!({
        "metadata": {"resourceVersion": template.metadata.resource_version},
        "status": apimachinery::merge_diff(
            current.get("status").unwrap_or(&Value::Null),
            aggregated.get("status").unwrap_or(&Value::Null),
        ),
    });
    let api = shared
        .templates
        .raw_api(&resource.api_version, &resource.kind, &resource.namespace)
        .await?;
    match api
        .patch_status(
            &resource.name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(stored) => {
            shared
                .written
                .set(binding, stored.metadata.resource_version.as_deref());
            if new_generation {
                shared
                    .recorder
                    .record(
                        &reference,
                        EventType::Normal,
                        REASON_AGGREGATE_STATUS_SUCCEED,
                        MESSAGE_AGGREGATE_STATUS_SUCCEED,
                    )
                    .await;
            }
            Ok(())
        }
        Err(err) => {
            let err = ControllerError::from(err);
            if !err.is_conflict() {
                shared
                    .recorder
                    .record(
                        &reference,
                        EventType::Warning,
                        REASON_AGGREGATE_STATUS_FAILED,
                        &err.to_string(),
                    )
                    .await;
            }
            Err(err)
        }
    }
}

/// Whether two template statuses say the same: absent, null and `{}` are one (the API server may store an
/// empty status or none, and aggregation of members without status yields `{}`).
fn same_status(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn meaningful(status: Option<&Value>) -> Option<&Value> {
        status.filter(|s| !s.is_null() && s.as_object().is_none_or(|o| !o.is_empty()))
    }
    meaningful(a) == meaningful(b)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn binding_of(name: &str) -> ResourceBinding {
        let mut binding = ResourceBinding::default();
        binding.spec.resource.api_version = "apps/v1".into();
        binding.spec.resource.kind = "Deployment".into();
        binding.spec.resource.namespace = "default".into();
        binding.spec.resource.name = name.into();
        binding
    }

    fn version(last: &LastWrite) -> &'static str {
        match last {
            LastWrite::Never => "never",
            LastWrite::At(v) if v == "7" => "7",
            LastWrite::At(_) => "other",
            LastWrite::Unknown => "unknown",
        }
    }

    #[test]
    fn written_versions_say_when_a_cached_template_can_be_trusted() {
        let written = WrittenVersions::default();
        let web = binding_of("web");
        assert_eq!(version(&written.get(&web)), "never");
        written.set(&web, Some("7"));
        assert_eq!(version(&written.get(&web)), "7");
        assert_eq!(written.get(&web).version(), Some("7"));
        // Full: everything is forgotten, and a template absent afterwards may have been written.
        for i in 0..WRITTEN_REMEMBERED {
            written.set(&binding_of(&format!("t{i}")), Some("1"));
        }
        assert_eq!(version(&written.get(&web)), "unknown");
        assert_eq!(written.get(&web).version(), None);
        written.set(&web, Some("7"));
        assert_eq!(version(&written.get(&web)), "7");
    }

    #[test]
    fn a_reported_work_aggregates_as_the_whole_work_does() {
        let json = json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "web-deployment", "namespace": "karmada-es-m1", "resourceVersion": "9"},
            "spec": {"workload": {"manifests": [{
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": 2}
            }]}},
            "status": {
                "conditions": [{"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
                                "message": "", "lastTransitionTime": "2026-12-06T00:00:00Z"}],
                "manifestStatuses": [{
                    "identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                                   "resource": "deployments", "namespace": "default", "name": "web"},
                    "status": {"readyReplicas": 2}, "health": "Healthy"
                }]
            }
        });
        let whole: Work = serde_json::from_value(json.clone()).expect("work");
        let object: DynamicObject = serde_json::from_value(json).expect("object");
        let reported = reported_work(&CompactObject::from_dynamic(&object).expect("compact"))
            .expect("reported");
        assert!(
            reported.spec.workload.manifests.is_empty(),
            "manifests unread"
        );
        assert_eq!(reported.status, whole.status);
        assert_eq!(reported.metadata.namespace, whole.metadata.namespace);
        let resource = binding_of("web").spec.resource;
        let items = super::super::aggregate::aggregated_status_items(&resource, &[reported]);
        assert_eq!(
            items,
            super::super::aggregate::aggregated_status_items(&resource, &[whole])
        );
        assert_eq!(items[0].status, Some(json!({"readyReplicas": 2})));
        assert!(items[0].applied);
    }

    #[test]
    fn an_empty_status_is_no_status() {
        assert!(same_status(None, Some(&json!({}))));
        assert!(same_status(Some(&Value::Null), None));
        assert!(same_status(
            Some(&json!({"replicas": 2})),
            Some(&json!({"replicas": 2}))
        ));
        assert!(!same_status(Some(&json!({"replicas": 2})), None));
        assert!(!same_status(
            Some(&json!({"replicas": 2})),
            Some(&json!({"replicas": 1}))
        ));
    }
}
