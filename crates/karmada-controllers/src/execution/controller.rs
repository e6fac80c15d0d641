//! The execution controller's loop: Works of the served clusters → member objects.
//!
//! Per Work (level-triggered, one key at a time):
//! - deleting: delete the member objects Karmada owns (or, with preserveResourcesOnDeletion, strip Karmada's
//!   labels and keep them), then drop the `karmada.io/execution-controller` finalizer. A Cluster that is gone
//!   or being deleted does not hold the Work back.
//! - otherwise: the finalizer; the Dispatching condition (suspended Works stop here); then every manifest is
//!   applied ([`super::apply`]) and the Applied condition written with the member's messages.
//!
//! Triggers: Work events, requests from other controllers ([`super::WorkRequeue`], e.g. drift seen by the
//! work status controller), and a Cluster turning Ready or changing spec (its Works are retried at once).
//! Failures retry with per-Work exponential backoff; a 409 retries at once.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use karmada_api::Cluster;
use karmada_api::Work;
use karmada_api::work::FINALIZER_EXECUTION_CONTROLLER;
use karmada_interpreter::Interpreter;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ServedClusters;
use super::apply::{ApplyError, Expect, MemberApplier, Settled};
use super::conditions;
use super::discovery::MemberResources;
use super::handoff::ConditionHandoff;
use super::metrics::{ApplyResult, ExecutionMetrics};
use super::queue::{
    Backoffs, WorkRequeueReceiver, next_event, object_ref, reflect_events, spec_changes,
};
use super::recheck::Rechecks;
use crate::names::{cluster_of_execution_namespace, execution_namespace};
use crate::runtime::Cache;
use crate::runtime::runner::{self, Action, Loop, ObjectKey};
use crate::runtime::typed::TypedMemo;
use crate::runtime::{
    CompactObject, ControllerError, EventRecorder, EventType, Informers, MemberClients, resources,
    typed,
};

/// Settings of the execution controller.
#[derive(Clone)]
pub struct ExecutionConfig {
    pub served: ServedClusters,
    pub members: MemberClients,
    pub interpreter: Interpreter,
    /// Works reconciled at once.
    pub concurrency: u16,
    /// How often a healthy Work is re-applied anyway (a safety net; drift is normally seen at once).
    pub resync: Duration,
    /// Where the Work watch comes from; [`super::run_with_status`] hands the same registry to the work status
    /// controller, so both read one watch and one cache.
    pub informers: Informers,
    /// Where a successful Applied condition goes to be written with the Work's manifest statuses (set by
    /// [`super::run_with_status`]); without it, execution writes every condition itself.
    pub handoff: Option<ConditionHandoff>,
}

impl ExecutionConfig {
    /// Whether the work status controller runs beside execution (the handoff is set up only then), watching
    /// every member object and reporting drift and absence: a Work applied at its generation then needs no
    /// member read unless one is asked for ([`super::recheck`]).
    fn member_watched(&self) -> bool {
        self.handoff.is_some()
    }
}

impl ExecutionConfig {
    pub fn new(served: ServedClusters, members: MemberClients) -> Self {
        Self {
            served,
            members,
            interpreter: Interpreter::native(),
            concurrency: 16,
            resync: Duration::from_secs(600),
            informers: Informers::default(),
            handoff: None,
        }
    }
}

/// Event reasons on Works (Karmada's).
pub const EVENT_SYNC_SUCCEED: &str = "SyncSucceed";
pub const EVENT_SYNC_FAILED: &str = "SyncFailed";
pub const EVENT_WORK_DISPATCHING: &str = "WorkDispatching";
/// A deleted Work whose cluster is not Ready: nothing is deleted from the member until it is.
pub const EVENT_DELETION_DEFERRED: &str = "DeletionDeferred";

struct Context {
    client: kube::Client,
    config: ExecutionConfig,
    clusters: Store<DynamicObject>,
    /// The clusters as typed objects, converted once per resourceVersion.
    typed_clusters: TypedMemo<Cluster>,
    resources: MemberResources,
    settled: Settled,
    recorder: EventRecorder,
    metrics: ExecutionMetrics,
    backoff: Backoffs<(String, String)>,
    rechecks: Rechecks,
}

impl Context {
    /// Applies manifests to `member`, the client of the cluster `cluster_name`.
    fn applier<'a>(&'a self, cluster_name: &'a str, member: &'a kube::Client) -> MemberApplier<'a> {
        MemberApplier {
            cluster: cluster_name,
            member,
            resources: &self.resources,
            interpreter: &self.config.interpreter,
            settled: &self.settled,
        }
    }
}

type Reconciling = Pin<Box<dyn Future<Output = Result<Action, ControllerError>> + Send>>;

/// Runs until `cancel` fires.
pub async fn run(
    client: kube::Client,
    config: ExecutionConfig,
    metrics: ExecutionMetrics,
    requeue: WorkRequeueReceiver,
    cancel: CancellationToken,
) {
    let cluster_resource = resources::cluster();
    let cluster_writer = Writer::new(cluster_resource.clone());
    let clusters = cluster_writer.as_reader();
    let (internal_tx, internal_rx) = mpsc::channel(super::queue::REQUEUE_CAPACITY);
    // Subscribed once Clusters are listed: until the reconcile loop polls them, this subscriber's events would hold
    // the shared watch back (it waits for every subscriber).
    let (works_tx, works_rx) = tokio::sync::oneshot::channel::<Cache>();

    let feeder = tokio::spawn(feed_clusters(
        resources::all(&client, &cluster_resource),
        config.served.clusters_config(),
        cluster_writer,
        works_rx,
        internal_tx,
        cancel.clone(),
    ));
    if !super::queue::ready(&clusters, &cancel).await {
        feeder.abort();
        return;
    }
    let subscription = config
        .informers
        .subscribe(config.served.works_api(&client), works_watch_config());
    let works = subscription.store;
    let _ = works_tx.send(works.clone());

    let concurrency = config.concurrency;
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), "execution-controller"),
        client: client.clone(),
        config: config.clone(),
        clusters,
        typed_clusters: TypedMemo::default(),
        resources: MemberResources::default(),
        settled: Settled::default(),
        metrics,
        backoff: Backoffs::new(Duration::from_secs(60)),
        rechecks: Rechecks::default(),
    });

    let own = spec_changes(subscription.events)
        .filter_map(|work| std::future::ready(work.ok().map(|w| ObjectKey::of(&w))));
    // Everything but a Work's own change asks for its member objects to be read.
    let rechecks = context.rechecks.clone();
    let requested = futures::stream::select(
        requeue
            .rx
            .map(|(ns, name)| ObjectKey::new(Some(&ns), &name)),
        internal_rx,
    )
    .inspect(move |key| rechecks.mark(key));
    let sweeps = context
        .rechecks
        .clone()
        .sweeps(works.clone(), config.resync);
    let triggers = futures::stream::select(own, futures::stream::select(requested, sweeps));

    runner::run(
        Loop {
            name: "execution-controller",
            store: works,
            context,
            concurrency: usize::from(concurrency),
            // The periodic sweep is `sweeps` above: it marks what it brings back for a member read.
            resync: None,
        },
        triggers,
        |work: Arc<CompactObject>, ctx: Arc<Context>| -> Reconciling {
            Box::pin(async move { reconcile(work, ctx).await })
        },
        |work: &CompactObject, err: &ControllerError, ctx: &Context| {
            if err.is_conflict() {
                return Action::requeue(err.retry_after());
            }
            tracing::warn!(work = ?work.metadata().name, %err, "execution: reconcile failed");
            Action::requeue(ctx.backoff.failed(&key(work)))
        },
        cancel.clone(),
    )
    .await;
    feeder.abort();
}

/// The watch of Works, as the execution and work status controllers both subscribe to it: sharing one watch
/// needs the same Api ([`ServedClusters::works_api`]) and this same configuration.
pub(crate) fn works_watch_config() -> watcher::Config {
    watcher::Config::default()
}

pub(crate) fn key(work: &CompactObject) -> (String, String) {
    let metadata = work.metadata();
    (
        metadata.namespace().unwrap_or_default().to_string(),
        metadata.name().to_string(),
    )
}

/// The reference Events about `work` point at.
pub(crate) fn work_reference(work: &Work) -> ObjectReference {
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    ObjectReference {
        api_version: non_empty(&work.api_version),
        kind: non_empty(&work.kind),
        name: work.metadata.name.clone(),
        namespace: work.metadata.namespace.clone(),
        uid: work.metadata.uid.clone(),
        resource_version: work.metadata.resource_version.clone(),
        field_path: None,
    }
}

fn is_ready(cluster: &Cluster) -> bool {
    cluster
        .ready_condition()
        .is_some_and(|c| c.status == "True")
}

/// Keeps the Cluster cache and, when a cluster turns Ready or its spec changes, asks for its Works again.
async fn feed_clusters(
    api: kube::Api<DynamicObject>,
    config: watcher::Config,
    writer: Writer<DynamicObject>,
    mut works: tokio::sync::oneshot::Receiver<Cache>,
    mut requeue: mpsc::Sender<ObjectKey>,
    cancel: CancellationToken,
) {
    let mut events = Box::pin(reflect_events(api, config, writer));
    // Until the Works are subscribed there are none to retry (nothing is reconciled yet either).
    let mut work_store: Option<Cache> = None;
    // Cluster name → (Ready, spec) last seen.
    let mut seen: HashMap<String, (bool, String)> = HashMap::new();
    while let Some(event) = next_event(&mut events, &cancel).await {
        let (Event::Apply(object) | Event::InitApply(object)) = event else {
            continue;
        };
        let Ok(cluster) = typed::to_typed::<Cluster>(&object) else {
            continue;
        };
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let now_ready = is_ready(&cluster);
        let spec = serde_json::to_string(&cluster.spec).unwrap_or_default();
        let previous = seen.insert(name.clone(), (now_ready, spec.clone()));
        // Turned Ready, or re-pointed (new endpoint or credentials): retry its Works now rather than after
        // their backoff.
        let retry = previous
            .is_some_and(|(was_ready, old_spec)| now_ready && (!was_ready || old_spec != spec));
        if work_store.is_none() {
            work_store = works.try_recv().ok();
        }
        if retry && let Some(store) = &work_store {
            let namespace = execution_namespace(&name);
            let refs: Vec<_> = store
                .state()
                .iter()
                .filter(|w| w.metadata().namespace() == Some(namespace.as_str()))
                .map(|w| ObjectKey::of(w))
                .collect();
            for r in refs {
                if requeue.send(r).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn has_finalizer(work: &Work) -> bool {
    work.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == FINALIZER_EXECUTION_CONTROLLER))
}

async fn replace_work(client: &kube::Client, work: &Work) -> Result<(), ControllerError> {
    let namespace = work.metadata.namespace.clone().unwrap_or_default();
    let name = work.metadata.name.clone().unwrap_or_default();
    let body = typed::to_dynamic(work, &resources::work())?;
    resources::namespaced(client, &resources::work(), &namespace)
        .replace(&name, &PostParams::default(), &body)
        .await?;
    Ok(())
}

/// Writes the Work's conditions (execution's part of its status; the work status controller owns
/// `manifestStatuses`), conditional on the version read.
async fn write_conditions(client: &kube::Client, work: &Work) -> Result<(), ControllerError> {
    let conditions = work
        .status
        .as_ref()
        .map(|status| serde_json::to_value(&status.conditions))
        .transpose()?
        .unwrap_or_else(|| Value::Array(Vec::new()));
    crate::runtime::status_write::merge_status(
        client,
        &resources::work(),
        work.metadata.namespace.as_deref(),
        work.metadata.name.as_deref().unwrap_or_default(),
        work.metadata.resource_version.as_deref(),
        serde_json::json!({"conditions": conditions}),
    )
    .await?;
    Ok(())
}

async fn reconcile(
    object: Arc<CompactObject>,
    ctx: Arc<Context>,
) -> Result<Action, ControllerError> {
    let namespace = object.metadata().namespace.clone().unwrap_or_default();
    let Some(cluster_name) = cluster_of_execution_namespace(&namespace) else {
        return Ok(Action::await_change());
    };
    if !ctx.config.served.may_serve(cluster_name) {
        return Ok(Action::await_change());
    }
    let cluster = ctx
        .clusters
        .get(&object_ref(&resources::cluster(), None, cluster_name))
        .map(|c| ctx.typed_clusters.typed(&c))
        .transpose()?;
    if let Some(cluster) = &cluster
        && !ctx.config.served.serves(cluster)
    {
        return Ok(Action::await_change());
    }
    let work: Work = object.decode()?;
    if work.metadata.deletion_timestamp.is_some() {
        let work_name = work.metadata.name.as_deref().unwrap_or_default();
        ctx.metrics.forget(&namespace, work_name);
        if let Some(handoff) = &ctx.config.handoff {
            handoff.withdraw(&ObjectKey::of(&object));
        }
        let reference = work_reference(&work);
        return delete(&ctx, work, &reference, cluster.as_deref(), cluster_name).await;
    }
    let Some(cluster) = cluster else {
        // No such cluster (yet): its Cluster event will bring us back.
        return Ok(Action::await_change());
    };
    if !has_finalizer(&work) {
        let mut updated = work.clone();
        updated
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(FINALIZER_EXECUTION_CONTROLLER.to_string());
        replace_work(&ctx.client, &updated).await?;
        return Ok(Action::await_change());
    }
    dispatch(&ctx, &object, &work, &cluster, cluster_name).await
}

/// A live Work of a served, known cluster: the Dispatching condition, then (unless suspended, or applied and
/// trusted) every manifest applied and the Applied condition written.
async fn dispatch(
    ctx: &Context,
    object: &CompactObject,
    work: &Work,
    cluster: &Cluster,
    cluster_name: &str,
) -> Result<Action, ControllerError> {
    let (namespace, work_name) = key(object);
    let key = (namespace.clone(), work_name.clone());
    let now = Timestamp::now();
    let generation = work.metadata.generation.unwrap_or(0);
    let never_applied = !work.status.as_ref().is_some_and(|status| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == karmada_api::work::WORK_CONDITION_APPLIED)
    });
    let mut status = work.status.clone().unwrap_or_default();
    let suspended = work.spec.suspend_dispatching == Some(true);
    if conditions::upsert(
        &mut status.conditions,
        conditions::dispatching(suspended, generation, now),
    ) {
        record_dispatching(ctx, work, suspended).await;
    }
    if suspended {
        ctx.metrics.forget(&namespace, &work_name);
        write_status(ctx, work, status, false).await?;
        return Ok(Action::await_change());
    }
    let recheck = ctx.rechecks.take(&ObjectKey::of(object));
    if ctx.config.member_watched()
        && !recheck
        && is_ready(cluster)
        && conditions::applied_at(&status.conditions, generation)
    {
        // Applied at this generation and nothing reported since: the member holds it (see `recheck`).
        write_status(ctx, work, status, true).await?;
        ctx.backoff.succeeded(&key);
        return Ok(Action::await_change());
    }
    ctx.metrics
        .dispatch_wanted(&namespace, &work_name, generation);

    let syncing = Instant::now();
    let expect = if never_applied {
        Expect::Absent
    } else {
        Expect::Unknown
    };
    let (applied, retry) = match apply_manifests(ctx, work, cluster, cluster_name, expect).await {
        Applying::Done(outcomes) => {
            let failed = outcomes.iter().any(Result::is_err);
            (
                conditions::applied(&outcomes, generation, now),
                failed.then(|| ctx.backoff.failed(&key)),
            )
        }
        Applying::Refused(message) => (
            conditions::failed(&message, generation, now),
            Some(ctx.backoff.failed(&key)),
        ),
        Applying::Conflict => return Ok(Action::requeue(Duration::from_millis(20))),
    };
    let ok = applied.status == "True";
    crate::metrics::global().observe_sync_workload(ok, syncing.elapsed());
    let message = applied.message.clone();
    let applied_changed = conditions::upsert(&mut status.conditions, applied);
    write_status(ctx, work, status, ok).await?;
    if applied_changed {
        record_applied(ctx, work, ok, cluster_name, message).await;
    }
    match retry {
        Some(after) => Ok(Action::requeue(after)),
        None => {
            ctx.backoff.succeeded(&key);
            // The periodic sweep brings it back after `resync` (drift nobody reported).
            Ok(Action::await_change())
        }
    }
}

/// What applying a Work's manifests came to.
enum Applying {
    /// Each manifest's outcome (`Err` carries the member's message).
    Done(Vec<Result<(), String>>),
    /// Nothing was tried: the cluster is not ready or cannot be reached.
    Refused(String),
    /// A member object was written meanwhile: retry at once.
    Conflict,
}

async fn apply_manifests(
    ctx: &Context,
    work: &Work,
    cluster: &Cluster,
    cluster_name: &str,
    expect: Expect,
) -> Applying {
    if !is_ready(cluster) {
        return Applying::Refused(format!("cluster {cluster_name} is not ready"));
    }
    let member = match ctx.config.members.client(cluster).await {
        Ok(member) => member,
        Err(err) => return Applying::Refused(err.to_string()),
    };
    let applier = ctx.applier(cluster_name, &member);
    let mut outcomes = Vec::new();
    let attempt = Instant::now();
    for manifest in &work.spec.workload.manifests {
        match applier.apply(manifest, expect).await {
            Ok(_) => outcomes.push(Ok(())),
            Err(ApplyError::Conflict) => return Applying::Conflict,
            Err(ApplyError::Failed(message)) => outcomes.push(Err(message)),
        }
    }
    let (namespace, name) = (
        work.metadata.namespace.as_deref().unwrap_or_default(),
        work.metadata.name.as_deref().unwrap_or_default(),
    );
    let result = if outcomes.iter().any(Result::is_err) {
        ApplyResult::Error
    } else {
        ApplyResult::Success
    };
    ctx.metrics
        .dispatched(cluster_name, namespace, name, result, attempt.elapsed());
    Applying::Done(outcomes)
}

async fn record_dispatching(ctx: &Context, work: &Work, suspended: bool) {
    let message = if suspended {
        "Work dispatching is in a suspended state."
    } else {
        "Work is being dispatched to member clusters."
    };
    ctx.recorder
        .record(
            &work_reference(work),
            EventType::Normal,
            EVENT_WORK_DISPATCHING,
            message,
        )
        .await;
}

/// SyncSucceed or SyncFailed, when the Applied condition changed.
async fn record_applied(ctx: &Context, work: &Work, ok: bool, cluster_name: &str, message: String) {
    let (event_type, reason, text) = if ok {
        (
            EventType::Normal,
            EVENT_SYNC_SUCCEED,
            format!("Successfully applied resource to cluster {cluster_name}"),
        )
    } else {
        (EventType::Warning, EVENT_SYNC_FAILED, message)
    };
    ctx.recorder
        .record(&work_reference(work), event_type, reason, &text)
        .await;
}

/// Writes the conditions in `status` when they changed: a success (`applied`) through the handoff when there is
/// one (the work status controller writes it with the manifest statuses), anything else at once.
async fn write_status(
    ctx: &Context,
    work: &Work,
    status: karmada_api::work::WorkStatus,
    applied: bool,
) -> Result<(), ControllerError> {
    let mut status = status;
    conditions::sort(&mut status.conditions);
    let key = ObjectKey::new(
        work.metadata.namespace.as_deref(),
        work.metadata.name.as_deref().unwrap_or_default(),
    );
    if work.status.as_ref() == Some(&status) {
        // Already stored; anything still pending would only repeat or undo it.
        if let Some(handoff) = &ctx.config.handoff {
            handoff.withdraw(&key);
        }
        return Ok(());
    }
    match &ctx.config.handoff {
        Some(handoff) if applied => {
            handoff.leave(key, status.conditions).await;
            Ok(())
        }
        handoff => {
            // Written now: an older success still pending must not land after it.
            if let Some(handoff) = handoff {
                handoff.withdraw(&key);
            }
            let mut updated = work.clone();
            updated.status = Some(status);
            write_conditions(&ctx.client, &updated).await
        }
    }
}

async fn delete(
    ctx: &Context,
    work: Work,
    reference: &ObjectReference,
    cluster: Option<&Cluster>,
    cluster_name: &str,
) -> Result<Action, ControllerError> {
    if !has_finalizer(&work) {
        return Ok(Action::await_change());
    }
    if let Some(cluster) = cluster {
        let cluster_going = cluster.metadata.deletion_timestamp.is_some();
        // Nothing is deleted from a member that cannot be reached: the Work keeps its finalizer and is retried
        // with backoff (and at once when the cluster turns Ready), without tying up a worker on a dead member.
        if !cluster_going && !is_ready(cluster) {
            // Says why the Work stays; repeats only bump the Event's count.
            ctx.recorder
                .record(
                    reference,
                    EventType::Warning,
                    EVENT_DELETION_DEFERRED,
                    &format!(
                        "cluster {cluster_name} is not ready: its objects are deleted once it is"
                    ),
                )
                .await;
            let key = (
                work.metadata.namespace.clone().unwrap_or_default(),
                work.metadata.name.clone().unwrap_or_default(),
            );
            return Ok(Action::requeue(ctx.backoff.failed(&key)));
        }
        let cleaned = clean_member(ctx, &work, cluster, cluster_name).await;
        match cleaned {
            Ok(()) => {}
            Err(ApplyError::Conflict) => return Ok(Action::requeue(Duration::from_millis(20))),
            // A cluster being removed does not hold its Works back.
            Err(ApplyError::Failed(_)) if cluster_going => {}
            Err(ApplyError::Failed(message)) => {
                return Err(ControllerError::Member {
                    cluster: cluster_name.to_string(),
                    message,
                });
            }
        }
    }
    let mut updated = work;
    updated.metadata.finalizers = updated.metadata.finalizers.map(|f| {
        f.into_iter()
            .filter(|x| x != FINALIZER_EXECUTION_CONTROLLER)
            .collect()
    });
    match replace_work(&ctx.client, &updated).await {
        Err(err) if err.is_not_found() => Ok(Action::await_change()),
        other => other.map(|()| Action::await_change()),
    }
}

async fn clean_member(
    ctx: &Context,
    work: &Work,
    cluster: &Cluster,
    cluster_name: &str,
) -> Result<(), ApplyError> {
    let member = ctx
        .config
        .members
        .client(cluster)
        .await
        .map_err(|e| ApplyError::Failed(e.to_string()))?;
    let applier = ctx.applier(cluster_name, &member);
    let preserve = work.spec.preserve_resources_on_deletion == Some(true);
    for manifest in &work.spec.workload.manifests {
        if preserve {
            applier.release(manifest).await?;
        } else {
            applier.remove(manifest).await?;
        }
    }
    Ok(())
}
