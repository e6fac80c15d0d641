//! The work status controller: member objects → `Work.status.manifestStatuses`
//! (docs/karmada.md, "Status collection and aggregation").
//!
//! For each served cluster it watches, in the member, the kinds the Works reference — one watcher per
//! (cluster, apiVersion, kind), started the first time a Work needs it, listing only objects labelled
//! `karmada.io/managed=true`. A member event brings back the owning Work (named by the object's
//! `work.karmada.io/namespace` and `work.karmada.io/name` annotations), whose manifest statuses are then
//! rebuilt: identifier, the status the interpreter reflects, and its health. Writes carry the Work's
//! resourceVersion. Run with a [`HandoffReceiver`] (as [`crate::execution::run_with_status`] does), the same
//! write also carries execution's successful Applied condition ([`crate::execution::handoff`]).
//!
//! Drift: when a member object no longer contains what its manifest says ([`crate::execution::drift`]) or is
//! deleted, the Work is handed to the execution controller ([`WorkRequeue`]), which applies it again.
//!
//! The served clusters are a parameter ([`ServedClusters`]), as for execution: every Push cluster in the
//! controller-manager, one cluster in an agent.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use karmada_api::work::{ManifestStatus, ResourceIdentifier};
use karmada_api::{Cluster, Work};
use karmada_interpreter::Interpreter;
use kube::api::DynamicObject;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::execution::ServedClusters;
use crate::execution::controller::{key, work_reference, works_watch_config};
use crate::execution::discovery::{DiscoveryError, MemberResource, MemberResources, type_of};
use crate::execution::drift::covers;
use crate::execution::handoff::{self, HandoffReceiver, PendingConditions};
use crate::execution::queue::{
    Backoffs, REQUEUE_CAPACITY, WorkRequeue, log_errors, next_event, object_ref, reflect_events,
    spec_changes,
};
use crate::keys::{ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE, LABEL_MANAGED, MANAGED_VALUE};
use crate::names::{cluster_of_execution_namespace, execution_namespace};
use crate::runtime::Cache;
use crate::runtime::runner::{self, Action, Loop, ObjectKey};
use crate::runtime::typed::TypedMemo;
use crate::runtime::{
    CompactObject, ControllerError, EventRecorder, EventType, Informers, MemberClients, resources,
};
use crate::status::member_observation::{MemberEvent, Observed, reflect_observations};

/// Settings of the work status controller.
#[derive(Clone)]
pub struct WorkStatusConfig {
    pub served: ServedClusters,
    pub members: MemberClients,
    pub interpreter: Interpreter,
    /// Works reconciled at once.
    pub concurrency: u16,
    /// Where the Work watch comes from (the execution controller's registry in
    /// [`crate::execution::run_with_status`], so the two share it). Member watches never go through it.
    pub informers: Informers,
}

impl WorkStatusConfig {
    pub fn new(served: ServedClusters, members: MemberClients) -> Self {
        Self {
            served,
            members,
            interpreter: Interpreter::native(),
            concurrency: 16,
            informers: Informers::default(),
        }
    }
}

/// One member watch: its cache, and whether its first list has arrived.
#[derive(Clone)]
struct MemberWatch {
    resource: MemberResource,
    store: Cache,
    ready: Arc<AtomicBool>,
    cancel: CancellationToken,
}

type WatchKey = (String, String, String);

struct Context {
    client: kube::Client,
    config: WorkStatusConfig,
    clusters: Store<DynamicObject>,
    /// The clusters as typed objects, converted once per resourceVersion.
    typed_clusters: TypedMemo<Cluster>,
    /// The shared Work cache, set once Clusters are listed (see [`run`]).
    works: OnceLock<Cache>,
    resources: MemberResources,
    watches: Mutex<HashMap<WatchKey, MemberWatch>>,
    /// Work keys to reconcile (from member events).
    wake: mpsc::Sender<ObjectKey>,
    requeue: WorkRequeue,
    recorder: EventRecorder,
    backoff: Backoffs<(String, String)>,
    cancel: CancellationToken,
    /// Execution's successful conditions, written with the manifest statuses
    /// ([`crate::execution::handoff`]).
    pending: Option<PendingConditions>,
}

/// How long member events of one Work are gathered before it is reconciled (the most its status lags). A
/// member object passes through several statuses in quick succession (created, observed, scaled, ready) and
/// the execution controller hands over the Applied condition right after creating it; gathering lets one write
/// carry the condition and what a burst of member events says. Status is not on the propagation path, so
/// nothing a user waits for is delayed.
const WINDOW: Duration = Duration::from_millis(500);

/// Event reason on Works whose member status could not be reflected (Karmada's).
pub const EVENT_REFLECT_STATUS_FAILED: &str = "ReflectStatusFailed";

type Reconciling = Pin<Box<dyn Future<Output = Result<Action, ControllerError>> + Send>>;

/// Runs until `cancel` fires; drifted or deleted member objects are sent to `requeue` (the execution
/// controller's).
pub async fn run(
    client: kube::Client,
    config: WorkStatusConfig,
    requeue: WorkRequeue,
    cancel: CancellationToken,
) {
    run_with_handoff(client, config, requeue, None, cancel).await;
}

/// [`run`], also writing the conditions execution hands over (`handoff`, its receiving end) with each Work's
/// manifest statuses.
pub async fn run_with_handoff(
    client: kube::Client,
    config: WorkStatusConfig,
    requeue: WorkRequeue,
    handoff: Option<HandoffReceiver>,
    cancel: CancellationToken,
) {
    let (pending, handed) = match handoff {
        Some(receiver) => (Some(receiver.pending), Some(receiver.woken)),
        None => (None, None),
    };
    let cluster_writer = Writer::new(resources::cluster());
    let clusters = cluster_writer.as_reader();
    let (wake, woken) = mpsc::channel(REQUEUE_CAPACITY);
    let context = Arc::new(Context {
        client: client.clone(),
        config: config.clone(),
        clusters: clusters.clone(),
        typed_clusters: TypedMemo::default(),
        works: OnceLock::new(),
        resources: MemberResources::default(),
        watches: Mutex::new(HashMap::new()),
        wake,
        requeue,
        recorder: EventRecorder::new(client.clone(), "work-status-controller"),
        backoff: Backoffs::new(Duration::from_secs(60)),
        cancel: cancel.clone(),
        pending,
    });
    let feeder = tokio::spawn(feed_clusters(
        reflect_events(
            resources::all(&client, &resources::cluster()),
            config.served.clusters_config(),
            cluster_writer,
        ),
        context.clone(),
    ));
    if !crate::execution::queue::ready(&clusters, &cancel).await {
        feeder.abort();
        return;
    }
    // Subscribed only now: a subscriber whose events nobody polls yet would hold the shared watch back. The
    // Api and configuration are execution's, so the two controllers share one watch.
    let subscription = config
        .informers
        .subscribe(config.served.works_api(&client), works_watch_config());
    let works = subscription.store;
    let _ = context.works.set(works.clone());
    let own = spec_changes(subscription.events)
        .filter_map(|work| std::future::ready(work.ok().map(|w| ObjectKey::of(&w))));
    // Handed-over conditions wait in the same window as member events, so both land in one write.
    let handed = futures::stream::iter(handed).flatten();
    let woken = crate::status::coalesce::coalesced(futures::stream::select(woken, handed), WINDOW);
    runner::run(
        Loop {
            name: "work-status-controller",
            store: works,
            context: context.clone(),
            concurrency: usize::from(config.concurrency),
            resync: None,
        },
        futures::stream::select(own, woken),
        |work: Arc<CompactObject>, ctx: Arc<Context>| -> Reconciling {
            Box::pin(async move { reconcile(work, ctx).await })
        },
        |work: &CompactObject, err: &ControllerError, ctx: &Context| {
            if err.is_conflict() {
                return Action::requeue(err.retry_after());
            }
            tracing::debug!(work = ?work.metadata().name, %err, "work status: reconcile failed");
            Action::requeue(ctx.backoff.failed(&key(work)))
        },
        cancel.clone(),
    )
    .await;
    feeder.abort();
    for watch in context.watches.lock().await.values() {
        watch.cancel.cancel();
    }
}

/// Keeps the Cluster cache; a cluster removed or re-pointed (spec changed) loses its member watches, which
/// the next reconcile of its Works starts again with the new client.
async fn feed_clusters(
    events: impl futures::Stream<Item = Event<DynamicObject>> + Send,
    ctx: Arc<Context>,
) {
    let mut events = Box::pin(events);
    let mut specs: HashMap<String, Value> = HashMap::new();
    while let Some(event) = next_event(&mut events, &ctx.cancel).await {
        let (object, deleted) = match &event {
            Event::Apply(o) | Event::InitApply(o) => (o, false),
            Event::Delete(o) => (o, true),
            Event::Init | Event::InitDone => continue,
        };
        let name = object.metadata.name.clone().unwrap_or_default();
        let spec = object.data.get("spec").cloned().unwrap_or(Value::Null);
        let stale = if deleted {
            specs.remove(&name);
            true
        } else {
            specs
                .insert(name.clone(), spec.clone())
                .is_some_and(|old| old != spec)
        };
        if !stale {
            continue;
        }
        ctx.watches.lock().await.retain(|(cluster, _, _), watch| {
            let keep = cluster != &name;
            if !keep {
                watch.cancel.cancel();
            }
            keep
        });
        ctx.resources.forget(&name).await;
        // Before the Works are subscribed none has been reconciled, so none has a member watch to restart.
        if !deleted && let Some(works) = ctx.works.get() {
            let namespace = execution_namespace(&name);
            let refs: Vec<_> = works
                .state()
                .iter()
                .filter(|w| w.metadata().namespace() == Some(namespace.as_str()))
                .map(|w| ObjectKey::of(w))
                .collect();
            let mut wake = ctx.wake.clone();
            for r in refs {
                if wake.send(r).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The manifest of `work` that describes `object` (same apiVersion, kind, namespace and name).
fn manifest_of<'a>(spec: &'a karmada_api::work::WorkSpec, object: &Value) -> Option<&'a Value> {
    spec.workload.manifests.iter().find(|m| {
        ["/apiVersion", "/kind", "/metadata/name"]
            .iter()
            .all(|p| text(m, p) == text(object, p))
            && (text(m, "/metadata/namespace") == text(object, "/metadata/namespace")
                || text(m, "/metadata/namespace").is_empty())
    })
}

/// Whether the member object has drifted from its manifest (pure): what the execution controller would write
/// is not contained in what the member holds.
pub fn drifted(interpreter: &Interpreter, manifest: &Value, observed: &Value) -> bool {
    match interpreter.retain(manifest, observed) {
        Ok(desired) => !covers(observed, &desired),
        Err(_) => false,
    }
}

/// Reacts to one member event: the owning Work's status is rebuilt, and a drifted or deleted object sends the
/// Work back to execution.
async fn on_member_event(ctx: &Context, member_event: MemberEvent, ready: &AtomicBool) {
    let MemberEvent {
        event,
        may_have_drifted,
    } = member_event;
    let (object, deleted) = match &event {
        Event::Apply(o) | Event::InitApply(o) => (o, false),
        Event::Delete(o) => (o, true),
        Event::InitDone => {
            ready.store(true, Ordering::Release);
            return;
        }
        Event::Init => return,
    };
    let annotation = |key: &str| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    };
    let (Some(namespace), Some(name)) = (
        annotation(ANNOTATION_WORK_NAMESPACE),
        annotation(ANNOTATION_WORK_NAME),
    ) else {
        return;
    };
    let reference = ObjectKey::new(Some(namespace), name);
    let Some(work) = ctx
        .works
        .get()
        .and_then(|works| works.get_named(Some(namespace), name))
    else {
        return;
    };
    let mut wake = ctx.wake.clone();
    let _ = wake.send(reference).await;
    if work.metadata().deletion_timestamp.is_some() {
        return;
    }
    // A status update (most member events) leaves drift as the previous event found it.
    if !deleted && !may_have_drifted {
        return;
    }
    // The spec alone: every member event comes here (a restart's lists bring one per object), and the
    // Work's status, which holds the member objects' own statuses, is most of its text.
    #[derive(serde::Deserialize)]
    struct SpecOnly {
        #[serde(default)]
        spec: karmada_api::work::WorkSpec,
    }
    let Ok(SpecOnly { spec }) = work.decode::<SpecOnly>() else {
        return;
    };
    if spec.suspend_dispatching == Some(true) {
        return;
    }
    let Some(manifest) = manifest_of(&spec, object) else {
        return;
    };
    if deleted || drifted(&ctx.config.interpreter, manifest, object) {
        tracing::debug!(work = %name, deleted, "member object drifted; re-applying");
        ctx.requeue.requeue(namespace, name).await;
    }
}

async fn member_watch(
    ctx: &Arc<Context>,
    cluster: &str,
    member: &kube::Client,
    manifest: &Value,
) -> Result<MemberWatch, DiscoveryError> {
    let (api_version, kind) = type_of(manifest).ok_or(DiscoveryError::Malformed)?;
    let key = (
        cluster.to_string(),
        api_version.to_string(),
        kind.to_string(),
    );
    if let Some(watch) = ctx.watches.lock().await.get(&key) {
        return Ok(watch.clone());
    }
    let resource = ctx.resources.resolve(cluster, member, manifest).await?;
    let mut watches = ctx.watches.lock().await;
    if let Some(watch) = watches.get(&key) {
        return Ok(watch.clone());
    }
    let writer = crate::runtime::CacheWriter::new();
    let watch = MemberWatch {
        resource: resource.clone(),
        store: writer.as_reader(),
        ready: Arc::new(AtomicBool::new(false)),
        cancel: ctx.cancel.child_token(),
    };
    let objects = watcher::watcher(
        kube::Api::all_with(member.clone(), &resource.resource),
        watcher::Config::default().labels(&format!("{LABEL_MANAGED}={MANAGED_VALUE}")),
    )
    .default_backoff();
    let events = reflect_observations(log_errors(objects), writer, ctx.config.interpreter.clone());
    let task_ctx = ctx.clone();
    let task_watch = watch.clone();
    tokio::spawn(async move {
        let mut events = Box::pin(events);
        loop {
            let event = tokio::select! {
                () = task_watch.cancel.cancelled() => return,
                event = events.next() => event,
            };
            let Some(event) = event else { return };
            on_member_event(&task_ctx, event, &task_watch.ready).await;
        }
    });
    watches.insert(key, watch.clone());
    Ok(watch)
}

fn identifier(ordinal: usize, manifest: &Value, resource: &MemberResource) -> ResourceIdentifier {
    ResourceIdentifier {
        ordinal: i32::try_from(ordinal).unwrap_or(i32::MAX),
        group: resource.resource.group.clone(),
        version: resource.resource.version.clone(),
        kind: resource.resource.kind.clone(),
        resource: resource.resource.plural.clone(),
        namespace: if resource.namespaced {
            let ns = text(manifest, "/metadata/namespace");
            if ns.is_empty() { "default" } else { ns }.to_string()
        } else {
            String::new()
        },
        name: text(manifest, "/metadata/name").to_string(),
    }
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
    if object.metadata().deletion_timestamp.is_some() {
        if let Some(pending) = &ctx.pending {
            pending.forget(&ObjectKey::of(&object));
        }
        return Ok(Action::await_change());
    }
    let Some(cluster) = ctx
        .clusters
        .get(&object_ref(&resources::cluster(), None, cluster_name))
        .map(|c| ctx.typed_clusters.typed(&c))
        .transpose()?
    else {
        return Ok(Action::await_change());
    };
    if !ctx.config.served.serves(&cluster) {
        return Ok(Action::await_change());
    }
    let work: Work = object.decode()?;
    let handed = ctx
        .pending
        .as_ref()
        .and_then(|pending| pending.peek(&ObjectKey::of(&object)));
    let statuses = match collect_statuses(&ctx, &work, cluster_name, &cluster).await {
        Ok(Collected::Statuses(statuses)) => statuses,
        Ok(Collected::NotYet(after)) => return Ok(Action::requeue(after)),
        Err(err) => {
            // The member cannot be read now: execution's conditions do not wait for it.
            if let Some(handed) = &handed {
                write(&ctx, &object, &work, Some(handed.as_slice()), None).await?;
            }
            return Err(err);
        }
    };
    write(&ctx, &object, &work, handed.as_deref(), Some(statuses)).await?;
    ctx.backoff.succeeded(&key(&object));
    Ok(Action::await_change())
}

/// What a Work's member objects say now.
enum Collected {
    Statuses(Vec<ManifestStatus>),
    /// A member watch has not listed yet: look again after this long.
    NotYet(Duration),
}

async fn collect_statuses(
    ctx: &Arc<Context>,
    work: &Work,
    cluster_name: &str,
    cluster: &Cluster,
) -> Result<Collected, ControllerError> {
    let member = ctx.config.members.client(cluster).await?;
    let mut statuses = Vec::new();
    let mut missing = false;
    for (ordinal, manifest) in work.spec.workload.manifests.iter().enumerate() {
        let watch = match member_watch(ctx, cluster_name, &member, manifest).await {
            Ok(watch) => watch,
            // Execution reports the missing kind on the Applied condition; there is no status to collect.
            Err(DiscoveryError::MissingKind { .. } | DiscoveryError::Malformed) => continue,
            Err(err) => {
                return Err(ControllerError::Member {
                    cluster: cluster_name.to_string(),
                    message: err.to_string(),
                });
            }
        };
        if !watch.ready.load(Ordering::Acquire) {
            return Ok(Collected::NotYet(Duration::from_millis(100)));
        }
        let id = identifier(ordinal, manifest, &watch.resource);
        let namespace = (!id.namespace.is_empty()).then_some(id.namespace.as_str());
        let Some(found) = watch.store.get_named(namespace, &id.name) else {
            missing = true;
            continue;
        };
        // Only the object this Work owns (another Work, or none, may own a same-named object).
        if found.annotation(ANNOTATION_WORK_NAME) != work.metadata.name.as_deref()
            || found.annotation(ANNOTATION_WORK_NAMESPACE) != Some(namespace_of(work))
        {
            missing = true;
            continue;
        }
        let observed = Observed::cached(&found)?;
        let status = match observed.reflect_error {
            None => observed.status,
            Some(err) => {
                let message = format!("reflecting the status of {}/{}: {err}", id.kind, id.name);
                ctx.recorder
                    .record(
                        &work_reference(work),
                        EventType::Warning,
                        EVENT_REFLECT_STATUS_FAILED,
                        &message,
                    )
                    .await;
                None
            }
        };
        statuses.push(ManifestStatus {
            identifier: id,
            status,
            health: Some(observed.health),
        });
    }
    if missing && applied_at_generation(work) && work.spec.suspend_dispatching != Some(true) {
        // Applied, yet not in the member (deleted while nobody watched, e.g. across a restart): execution
        // trusts this controller to say so, as it does for drift.
        ctx.requeue
            .requeue(
                namespace_of(work),
                work.metadata.name.as_deref().unwrap_or_default(),
            )
            .await;
    }
    Ok(Collected::Statuses(statuses))
}

fn applied_at_generation(work: &Work) -> bool {
    work.status.as_ref().is_some_and(|status| {
        crate::execution::conditions::applied_at(
            &status.conditions,
            work.metadata.generation.unwrap_or(0),
        )
    })
}

/// Writes what changed of this controller's part of the status (`statuses`) and of execution's handed-over
/// conditions (`handed`, merged by type into the Work's), in one merge patch conditional on the version read.
async fn write(
    ctx: &Context,
    object: &CompactObject,
    work: &Work,
    handed: Option<&[Condition]>,
    statuses: Option<Vec<ManifestStatus>>,
) -> Result<(), ControllerError> {
    let status = work.status.clone().unwrap_or_default();
    let mut fields = serde_json::Map::new();
    if let Some(statuses) = statuses
        && status.manifest_statuses != statuses
    {
        fields.insert("manifestStatuses".into(), serde_json::to_value(&statuses)?);
    }
    if let Some(conditions) = handed.and_then(|h| handoff::merged(&status.conditions, h)) {
        fields.insert("conditions".into(), serde_json::to_value(&conditions)?);
    }
    if !fields.is_empty() {
        crate::runtime::status_write::merge_status(
            &ctx.client,
            &resources::work(),
            work.metadata.namespace.as_deref(),
            work.metadata.name.as_deref().unwrap_or_default(),
            work.metadata.resource_version.as_deref(),
            Value::Object(fields),
        )
        .await?;
    }
    if let (Some(pending), Some(handed)) = (&ctx.pending, handed) {
        pending.written(&ObjectKey::of(object), handed);
    }
    Ok(())
}

fn namespace_of(work: &Work) -> &str {
    work.metadata.namespace.as_deref().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn manifest(replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default",
                            "labels": {"karmada.io/managed": "true"}},
               "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    }

    #[test]
    fn drift_is_a_change_the_manifest_does_not_allow() {
        let interpreter = Interpreter::native();
        let mut observed = manifest(2);
        observed["metadata"]["resourceVersion"] = json!("5");
        observed["status"] = json!({"readyReplicas": 2});
        observed["spec"]["strategy"] = json!({"type": "RollingUpdate"});
        assert!(
            !drifted(&interpreter, &manifest(2), &observed),
            "defaults and status are not drift"
        );
        observed["spec"]["replicas"] = json!(5);
        assert!(
            drifted(&interpreter, &manifest(2), &observed),
            "edited replicas are drift"
        );
    }

    #[test]
    fn the_manifest_of_an_object_is_found_by_type_and_name() {
        let mut work = Work::default();
        work.spec.workload.manifests = vec![
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"}}),
            manifest(2),
        ];
        let object = manifest(3);
        assert_eq!(
            manifest_of(&work.spec, &object),
            Some(&work.spec.workload.manifests[1])
        );
        let other = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": "default"}});
        assert_eq!(manifest_of(&work.spec, &other), None);
    }
}
