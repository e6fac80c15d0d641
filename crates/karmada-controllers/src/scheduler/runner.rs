//! The scheduler runner (karmada-scheduler): watches ResourceBindings, ClusterResourceBindings and Clusters,
//! and schedules a binding when docs/karmada.md, "Scheduling triggers", says so
//! ([`karmada_scheduler::trigger::schedule_trigger`]) with the pure core ([`karmada_scheduler::scheduler`]).
//!
//! A decision writes `spec.clusters` and the annotations (`policy.karmada.io/applied-placement` on success,
//! `scheduling.karmada.io/explanation` — the per-cluster explanation as JSON) as a JSON merge patch carrying the
//! read resourceVersion, then the status (`Scheduled` condition, `schedulerObservedGeneration` and
//! `lastScheduledTime` when scheduled) as a second merge patch carrying the resourceVersion the first returned:
//! Karmada's two patches, made conditional. The explanation's
//! summary is in the condition message and in the `ScheduleBindingSucceed` / `ScheduleBindingFailed` event
//! recorded on the binding and on its template.
//!
//! Failures (NoClusterFit, Unschedulable, SchedulerError) are written as Scheduled=False with the reason; the
//! applied-placement annotation is written only on success, so a failed placement keeps triggering until it
//! schedules. NoClusterFit parks the binding as unschedulable until a cluster or profile changes (at most
//! 5 minutes); other failures retry with per-binding exponential backoff ([`super::queue`]). Cluster changes that
//! can move bindings (labels, spec, readiness, API enablements, the measured API latency, deletion) and
//! SchedulerProfile changes requeue every binding.
//!
//! Plugin sets: bindings naming this scheduler use the plugins `--plugins` chose; bindings naming a
//! SchedulerProfile use that profile, watched live ([`super::profiles`]). With `--enable-scheduler-estimator`
//! the feasible clusters' estimators are asked before Select, and their answers bound the general estimate.
//! With the PriorityBasedScheduling gate the queue takes higher `spec.schedulePriority.priority` first.
//!
//! Invariants: nothing is scheduled before the caches (bindings, clusters, profiles) hold their first list and,
//! with estimators, before the waiting bindings' estimator rounds are answered or timed out
//! ([`super::ask_ahead`]); the core is pure and fast (microseconds per binding for tens of clusters), so it runs
//! on the worker itself.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use karmada_api::{Cluster, ClusterSyncMode, ResourceBinding};
use karmada_scheduler::custom::clusterlatency;
use karmada_scheduler::framework::DEFAULT_SCHEDULER_NAME;
use karmada_scheduler::patch::scheduling_result;
use karmada_scheduler::placement::prepare;
use karmada_scheduler::scheduler::{
    REASON_NO_CLUSTER_FIT, ScheduleRequest, estimator_candidates, schedule_recorded,
};
use karmada_scheduler::snapshot::ClusterSnapshot;
use karmada_scheduler::trigger::{ScheduleTrigger, schedule_trigger, served_by};
use karmada_scheduler_estimator::EstimatorClients;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ask_ahead::{AskedKinds, unobserved_kind};
use super::decision::{
    binding_writes, cluster_changed, cluster_content_changed, observed_generation_write,
    schedule_type, scheduler_error, spec_patch, status_patch,
};
use super::metrics::{
    EVENT_BINDING_ADD, EVENT_BINDING_UPDATE, EVENT_CLUSTER_CHANGED, EVENT_POLICY_CHANGED,
    EVENT_SCHEDULE_ATTEMPT_FAILURE, RESULT_ERROR, RESULT_SCHEDULED, SchedulerMetrics,
};
use super::profiles::{Choice, Profiles};
use super::queue::SchedulingQueue;
use crate::runtime::own_writes::OwnWrites;
use crate::runtime::queue::Backoff;
use crate::runtime::runner::ObjectKey;
use crate::runtime::watch::next_event;
use crate::runtime::{Cache, CacheWriter};
use crate::runtime::{
    CompactObject, ControllerError, EventRecorder, EventType, RawObject, resources, typed,
};

/// Event reasons Karmada's scheduler records on bindings and their templates.
pub const EVENT_SCHEDULE_BINDING_SUCCEED: &str = "ScheduleBindingSucceed";
pub const EVENT_SCHEDULE_BINDING_FAILED: &str = "ScheduleBindingFailed";

/// Component name on the scheduler's events.
pub const COMPONENT: &str = "karmada-scheduler";

/// The runner's settings.
#[derive(Clone)]
pub struct SchedulerConfig {
    /// `--scheduler-name`: bindings whose `spec.schedulerName` names another scheduler are left alone.
    pub scheduler_name: String,
    /// Concurrent scheduling workers.
    pub workers: usize,
    /// Most binding keys waiting at once.
    pub queue_capacity: usize,
    /// First retry delay of a binding that failed to schedule; doubles per failure up to `backoff_max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// `--enable-empty-workload-propagation`.
    pub enable_empty_workload_propagation: bool,
    /// `--plugins` (Karmada's syntax, split at commas): the default plugin set and what profiles may enable.
    pub plugins: Vec<String>,
    /// The clusters' scheduler estimators (`--enable-scheduler-estimator`), or none.
    pub estimators: Option<Arc<EstimatorClients>>,
    /// `--disable-scheduler-estimator-in-pull-mode`.
    pub skip_estimators_in_pull_mode: bool,
    /// Feature gate PriorityBasedScheduling: the queue takes higher `spec.schedulePriority.priority` first.
    pub priority_scheduling: bool,
}

impl std::fmt::Debug for SchedulerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerConfig")
            .field("scheduler_name", &self.scheduler_name)
            .field("workers", &self.workers)
            .field("plugins", &self.plugins)
            .field("estimators", &self.estimators.as_ref().map(|e| e.config()))
            .field(
                "skip_estimators_in_pull_mode",
                &self.skip_estimators_in_pull_mode,
            )
            .field("priority_scheduling", &self.priority_scheduling)
            .finish_non_exhaustive()
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            scheduler_name: DEFAULT_SCHEDULER_NAME.to_string(),
            workers: 32,
            queue_capacity: 65_536,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            enable_empty_workload_propagation: false,
            plugins: vec!["*".to_string()],
            estimators: None,
            skip_estimators_in_pull_mode: false,
            priority_scheduling: true,
        }
    }
}

/// A binding in the queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BindingKey {
    /// A ClusterResourceBinding (else a ResourceBinding).
    pub cluster_scoped: bool,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for BindingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.cluster_scoped {
            write!(f, "ClusterResourceBinding {}", self.name)
        } else {
            write!(f, "ResourceBinding {}/{}", self.namespace, self.name)
        }
    }
}

struct Runner {
    client: kube::Client,
    config: SchedulerConfig,
    metrics: SchedulerMetrics,
    profiles: Profiles,
    queue: SchedulingQueue<BindingKey>,
    /// `spec.schedulePriority.priority` of each binding, from its watch events (PriorityBasedScheduling only).
    priorities: Mutex<HashMap<BindingKey, i32>>,
    backoff: Backoff<BindingKey>,
    recorder: EventRecorder,
    /// Compact caches (typed metadata and JSON text, decoded per reconcile): every binding is cached.
    bindings: Cache,
    cluster_bindings: Cache,
    clusters: Store<DynamicObject>,
    /// Parsed clusters, rebuilt on every Cluster event.
    snapshots: RwLock<Arc<Vec<ClusterSnapshot>>>,
    /// Each binding's own spec write until its watch event is seen: that event reports the placement just made,
    /// not a change to schedule for.
    own_writes: OwnWrites<BindingKey, OwnSpecWrite>,
    /// Kinds of binding whose estimators were asked ahead lately ([`super::ask_ahead`]).
    asked_kinds: AskedKinds,
    /// The rounds asked ahead, owned here.
    asking: Mutex<tokio::task::JoinSet<()>>,
    /// The workers run (before, the start asks ahead for every waiting binding itself).
    working: AtomicBool,
}

/// Why the runner could not start.
#[derive(Debug, thiserror::Error)]
#[error("building the scheduling framework: {0}")]
pub struct StartError(String);

/// Runs the scheduler until `cancel` fires.
pub async fn run(
    client: kube::Client,
    config: SchedulerConfig,
    metrics: SchedulerMetrics,
    cancel: CancellationToken,
) -> Result<(), StartError> {
    let registry =
        karmada_scheduler::plan::default_registry().map_err(|e| StartError(e.to_string()))?;
    let profiles = Profiles::new(registry, &config.plugins, &config.scheduler_name)
        .map_err(|e| StartError(e.to_string()))?;
    let binding_writer = crate::runtime::CacheWriter::new();
    let cluster_binding_writer = crate::runtime::CacheWriter::new();
    let cluster_writer = Writer::new(resources::cluster());
    let gauge = metrics.clone();
    let (profiles_listed, profiles_ready) = tokio::sync::watch::channel(false);
    let runner = Arc::new(Runner {
        recorder: EventRecorder::new(client.clone(), COMPONENT),
        queue: SchedulingQueue::new(config.queue_capacity, move |pending| gauge.pending(pending)),
        priorities: Mutex::default(),
        backoff: Backoff::new(config.backoff_base, config.backoff_max),
        own_writes: OwnWrites::default(),
        bindings: binding_writer.as_reader(),
        cluster_bindings: cluster_binding_writer.as_reader(),
        clusters: cluster_writer.as_reader(),
        snapshots: RwLock::default(),
        client,
        config,
        metrics,
        profiles,
        asked_kinds: AskedKinds::default(),
        asking: Mutex::default(),
        working: AtomicBool::new(false),
    });
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(runner.queue.clone().run_timers(cancel.clone()));
    tasks.spawn(watch_profiles(
        Arc::clone(&runner),
        profiles_listed,
        cancel.clone(),
    ));
    tasks.spawn(watch_bindings(
        Arc::clone(&runner),
        binding_writer,
        false,
        cancel.clone(),
    ));
    tasks.spawn(watch_bindings(
        Arc::clone(&runner),
        cluster_binding_writer,
        true,
        cancel.clone(),
    ));
    tasks.spawn(watch_clusters(
        Arc::clone(&runner),
        cluster_writer,
        cancel.clone(),
    ));
    let synced = async {
        let _ = runner.clusters.wait_until_ready().await;
        let _ = runner.bindings.wait_until_ready().await;
        let _ = runner.cluster_bindings.wait_until_ready().await;
        let mut profiles_ready = profiles_ready;
        let _ = profiles_ready.wait_for(|listed| *listed).await;
    };
    tokio::select! {
        () = cancel.cancelled() => {}
        () = synced => {
            runner.ask_before_start(&cancel).await;
            runner.working.store(true, Ordering::Release);
            for _ in 0..runner.config.workers.max(1) {
                tasks.spawn(worker(Arc::clone(&runner), cancel.clone()));
            }
            tracing::info!(scheduler = %runner.config.scheduler_name, "scheduler started");
        }
    }
    cancel.cancelled().await;
    while tasks.join_next().await.is_some() {}
    Ok(())
}

fn binding_resource(cluster_scoped: bool) -> ApiResource {
    if cluster_scoped {
        resources::cluster_resource_binding()
    } else {
        resources::resource_binding()
    }
}

fn key_of(object: &CompactObject, cluster_scoped: bool) -> BindingKey {
    let metadata = object.metadata();
    BindingKey {
        cluster_scoped,
        namespace: metadata.namespace().unwrap_or_default().to_string(),
        name: metadata.name().to_string(),
    }
}

/// How the runner recognises the watch event of its own spec write of a binding. The write is remembered
/// before it is sent, since the event can arrive before the answer: until the answer, by the generation it
/// gives the binding (the write is conditional on the version read, so it is the only change on top of it);
/// after it, by the resourceVersion it answered.
#[derive(Clone, Debug, PartialEq)]
enum OwnSpecWrite {
    Sent { generation: i64 },
    Answered { version: String },
}

impl OwnSpecWrite {
    fn is(&self, event: &CompactObject) -> bool {
        let metadata = event.metadata();
        match self {
            Self::Sent { generation } => metadata.generation == Some(*generation),
            Self::Answered { version } => {
                metadata.resource_version.as_deref() == Some(version.as_str())
            }
        }
    }
}

/// Whether a binding update can call for scheduling: anything but a status-only change.
fn binding_changed(old: &CompactObject, new: &CompactObject) -> bool {
    old.labels() != new.labels()
        || old.annotations() != new.annotations()
        || old.large_annotations() != new.large_annotations()
        || {
            let (old, new) = (old.metadata(), new.metadata());
            old.generation != new.generation || old.deletion_timestamp != new.deletion_timestamp
        }
}

/// Keeps `writer`'s compact cache of one binding kind and queues the bindings that may need scheduling. The
/// event is compared with the cached version before the cache takes it, so this is its own reflector rather
/// than `queue::reflect_compact_events` (which updates the cache first).
async fn watch_bindings(
    runner: Arc<Runner>,
    mut writer: CacheWriter,
    cluster_scoped: bool,
    cancel: CancellationToken,
) {
    let resource = binding_resource(cluster_scoped);
    let api = resources::all_raw(&runner.client, &resource);
    let reader = writer.as_reader();
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut listed = Vec::new();
    let mut packer = crate::runtime::compact::Packer::default();
    loop {
        let Some(event) = next_event(&mut stream, &cancel, "binding", &resource.kind).await else {
            return;
        };
        if runner.config.priority_scheduling {
            runner.note_priority(&event, cluster_scoped);
        }
        // Compacting drops managedFields too.
        let event = match packer.event(event) {
            Ok(event) => event,
            Err(err) => {
                tracing::warn!(%err, kind = %resource.kind, "binding event not cached");
                continue;
            }
        };
        let mut ready = Vec::new();
        match &event {
            watcher::Event::Apply(object) => {
                let old = reader.get_key(&ObjectKey::of(object));
                match old {
                    None => {
                        runner.metrics.incoming(EVENT_BINDING_ADD);
                        ready.push(key_of(object, cluster_scoped));
                    }
                    Some(old)
                        if binding_changed(&old, object)
                            // Its own write is seen (and forgotten) here; any later version also ends the memo.
                            && !runner
                                .own_writes
                                .seen(&key_of(object, cluster_scoped))
                                .is_some_and(|written| written.is(object)) =>
                    {
                        runner.metrics.incoming(EVENT_BINDING_UPDATE);
                        ready.push(key_of(object, cluster_scoped));
                    }
                    Some(_) => {}
                }
            }
            watcher::Event::Delete(object) => {
                let key = key_of(object, cluster_scoped);
                runner.backoff.forget(&key);
                runner
                    .priorities
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&key);
            }
            watcher::Event::Init => listed.clear(),
            watcher::Event::InitApply(object) => listed.push(key_of(object, cluster_scoped)),
            watcher::Event::InitDone => {
                ready = std::mem::take(&mut listed);
                for _ in &ready {
                    runner.metrics.incoming(EVENT_BINDING_ADD);
                }
            }
        }
        writer.apply_watcher_event(&event);
        if runner.working.load(Ordering::Acquire) {
            runner.spawn_asks(&ready, &cancel);
        }
        for key in ready {
            let priority = runner.priority_of(&key);
            tokio::select! {
                () = cancel.cancelled() => return,
                () = runner.queue.add(key, priority) => {}
            }
        }
    }
}

/// Keeps the live profiles and requeues every binding when one changes (its bindings' next decision uses it).
async fn watch_profiles(
    runner: Arc<Runner>,
    listed: tokio::sync::watch::Sender<bool>,
    cancel: CancellationToken,
) {
    let resource = resources::scheduler_profile();
    let api: Api<DynamicObject> = resources::all(&runner.client, &resource);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut listing = Vec::new();
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return,
            event = stream.next() => event,
        };
        let event = match event {
            None => return,
            Some(Ok(event)) => event,
            Some(Err(watcher::Error::InitialListFailed(kube::Error::Api(status))))
                if status.code == 404 =>
            {
                // A control plane without the kind (Karmada's own): the default plugin set only, and the watch
                // keeps retrying in case the kind appears.
                if !*listed.borrow() {
                    tracing::warn!(
                        "SchedulerProfiles are not served by this control plane; scheduling with the default plugins"
                    );
                    listed.send_replace(true);
                }
                continue;
            }
            Some(Err(err)) => {
                tracing::debug!(%err, "profile watch error; retrying");
                continue;
            }
        };
        let profile = |object: &DynamicObject| {
            typed::to_typed::<karmada_api::scheduling::SchedulerProfile>(object)
                .map_err(|err| tracing::warn!(%err, "SchedulerProfile not readable"))
                .ok()
        };
        match &event {
            watcher::Event::Init => listing.clear(),
            watcher::Event::InitApply(object) => listing.extend(profile(object)),
            watcher::Event::InitDone => {
                runner.profiles.replace(&std::mem::take(&mut listing));
                listed.send_replace(true);
            }
            watcher::Event::Apply(object) => match profile(object) {
                Some(profile) => runner.profiles.apply(&profile),
                None => continue,
            },
            watcher::Event::Delete(object) => {
                runner
                    .profiles
                    .remove(object.metadata.name.as_deref().unwrap_or_default());
            }
        }
        if matches!(event, watcher::Event::Apply(_) | watcher::Event::Delete(_))
            && !runner.requeue_all(EVENT_POLICY_CHANGED, &cancel).await
        {
            return;
        }
    }
}

async fn watch_clusters(
    runner: Arc<Runner>,
    mut writer: Writer<DynamicObject>,
    cancel: CancellationToken,
) {
    let resource = resources::cluster();
    let api: Api<DynamicObject> = resources::all(&runner.client, &resource);
    let reader = writer.as_reader();
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    loop {
        let Some(event) = next_event(&mut stream, &cancel, "cluster", &resource.kind).await else {
            return;
        };
        // Compared with the cached version in place: with many members a status write arrives every few
        // milliseconds, and most change nothing placement depends on (or nothing at all the scheduler reads).
        let (requeue, changed) = match &event {
            watcher::Event::Apply(object) => {
                match reader.get(&ObjectRef::from_obj_with(object, resource.clone())) {
                    None => (true, true),
                    Some(old) => (
                        cluster_changed(
                            &old,
                            object,
                            runner.profiles.any_runs(clusterlatency::NAME),
                        ),
                        cluster_content_changed(&old, object),
                    ),
                }
            }
            watcher::Event::Delete(_) | watcher::Event::InitDone => (true, true),
            watcher::Event::Init | watcher::Event::InitApply(_) => (false, false),
        };
        writer.apply_watcher_event(&event);
        if !changed {
            continue;
        }
        match &event {
            watcher::Event::Init | watcher::Event::InitApply(_) => continue,
            watcher::Event::InitDone => {
                let mut parsed: Vec<ClusterSnapshot> = reader
                    .state()
                    .iter()
                    .filter_map(|object| snapshot_of(object))
                    .collect();
                parsed.sort_by(|a, b| a.name.cmp(&b.name));
                runner.publish_snapshots(|snapshots| *snapshots = parsed);
            }
            // An event re-parses only the cluster it names, and the published list is updated in place when no
            // decision holds it (a status period of N clusters costs N parses, not N² parses or N² copies).
            watcher::Event::Apply(object) => {
                let name = object.metadata.name.clone().unwrap_or_default();
                let snapshot = snapshot_of(object);
                runner.publish_snapshots(|snapshots| {
                    let at = snapshots.binary_search_by(|s| (*s.name).cmp(name.as_str()));
                    match (at, snapshot) {
                        (Ok(i), Some(snapshot)) => snapshots[i] = snapshot,
                        (Err(i), Some(snapshot)) => snapshots.insert(i, snapshot),
                        (Ok(i), None) => {
                            snapshots.remove(i);
                        }
                        (Err(_), None) => {}
                    }
                });
            }
            watcher::Event::Delete(object) => {
                let name = object.metadata.name.as_deref().unwrap_or_default();
                runner.publish_snapshots(|snapshots| {
                    snapshots.retain(|s| &*s.name != name);
                });
            }
        }
        if let Some(estimators) = &runner.config.estimators {
            let skip_pull = runner.config.skip_estimators_in_pull_mode;
            let snapshots = runner.snapshots();
            estimators.connect_ahead(
                snapshots
                    .iter()
                    .filter(|s| !(skip_pull && s.cluster.spec.sync_mode == ClusterSyncMode::Pull))
                    .map(|s| &*s.name),
            );
        }
        if requeue && !runner.requeue_all(EVENT_CLUSTER_CHANGED, &cancel).await {
            return;
        }
    }
}

/// The scheduler's view of one Cluster; a cluster that does not parse is left out of scheduling, with a warning.
fn snapshot_of(object: &DynamicObject) -> Option<ClusterSnapshot> {
    let snapshot = typed::to_typed::<Cluster>(object)
        .map_err(|e| e.to_string())
        .and_then(|c| ClusterSnapshot::new(c).map_err(|e| e.to_string()));
    match snapshot {
        Ok(snapshot) => Some(snapshot),
        Err(err) => {
            tracing::warn!(
                cluster = object.metadata.name.as_deref().unwrap_or_default(),
                %err,
                "cluster left out of scheduling"
            );
            None
        }
    }
}

/// What becomes of a binding after a reconcile.
enum Next {
    Done,
    /// A failure worth retrying after its backoff.
    Retry,
    /// No cluster fits: wait for a change.
    Unschedulable,
}

async fn worker(runner: Arc<Runner>, cancel: CancellationToken) {
    while let Some(key) = runner.queue.next(&cancel).await {
        let result = tokio::select! {
            () = cancel.cancelled() => return,
            result = runner.reconcile(&key) => result,
        };
        runner.queue.done(key.clone()).await;
        let priority = runner.priority_of(&key);
        match result {
            Ok(Next::Done) => runner.backoff.forget(&key),
            Ok(Next::Retry) => {
                runner.metrics.incoming(EVENT_SCHEDULE_ATTEMPT_FAILURE);
                let delay = runner.backoff.fail(key.clone());
                runner.queue.backoff(key, priority, delay);
            }
            Ok(Next::Unschedulable) => {
                runner.metrics.incoming(EVENT_SCHEDULE_ATTEMPT_FAILURE);
                runner.queue.unschedulable(key, priority);
            }
            Err(err) if err.is_conflict() => runner.queue.backoff(key, priority, err.retry_after()),
            Err(err) => {
                let delay = runner.backoff.fail(key.clone());
                tracing::warn!(binding = %key, %err, ?delay, "scheduler: retrying");
                runner.queue.backoff(key, priority, delay);
            }
        }
    }
}

/// `spec.schedulePriority.priority` read from a binding's JSON text (0 when absent).
fn priority_in(body: &str) -> i32 {
    #[derive(serde::Deserialize, Default)]
    struct Priority {
        #[serde(default)]
        priority: i32,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        #[serde(default)]
        schedule_priority: Option<Priority>,
    }
    #[derive(serde::Deserialize, Default)]
    struct Body {
        #[serde(default)]
        spec: Spec,
    }
    serde_json::from_str::<Body>(body)
        .ok()
        .and_then(|b| b.spec.schedule_priority)
        .map_or(0, |p| p.priority)
}

fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

impl Runner {
    fn priority_of(&self, key: &BindingKey) -> i32 {
        if !self.config.priority_scheduling {
            return 0;
        }
        self.priorities
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .copied()
            .unwrap_or(0)
    }

    /// Remembers the priority a binding's event carries.
    fn note_priority(&self, event: &watcher::Event<RawObject>, cluster_scoped: bool) {
        let object = match event {
            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => object,
            _ => return,
        };
        let key = BindingKey {
            cluster_scoped,
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default(),
        };
        let priority = priority_in(object.body());
        let mut priorities = self
            .priorities
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if priority == 0 {
            priorities.remove(&key);
        } else {
            priorities.insert(key, priority);
        }
    }

    /// Every ResourceBinding and ClusterResourceBinding the caches hold.
    fn all_keys(&self) -> Vec<BindingKey> {
        let mut keys: Vec<BindingKey> = self
            .bindings
            .state()
            .iter()
            .map(|b| key_of(b, false))
            .collect();
        keys.extend(
            self.cluster_bindings
                .state()
                .iter()
                .map(|b| key_of(b, true)),
        );
        keys
    }

    /// Queues every binding (a cluster or profile changed); `false` once `cancel` fires.
    async fn requeue_all(&self, event: &str, cancel: &CancellationToken) -> bool {
        for key in self.all_keys() {
            // A change is news: retry failed bindings now rather than after their backoff.
            self.backoff.forget(&key);
            self.metrics.incoming(event);
            let priority = self.priority_of(&key);
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = self.queue.add(key, priority) => {}
            }
        }
        true
    }

    /// Publishes the clusters for the next decisions (kept in name order, as the store lists them), changed by
    /// `change`: in place, unless a decision still holds the list (then on a copy).
    fn publish_snapshots(&self, change: impl FnOnce(&mut Vec<ClusterSnapshot>)) {
        let mut snapshots = self
            .snapshots
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        change(Arc::make_mut(&mut snapshots));
    }

    fn snapshots(&self) -> Arc<Vec<ClusterSnapshot>> {
        Arc::clone(
            &self
                .snapshots
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The binding's API, whose answers are read as raw objects (only their metadata is parsed).
    fn api(&self, key: &BindingKey) -> Api<RawObject> {
        let resource = binding_resource(key.cluster_scoped);
        if key.cluster_scoped {
            resources::all_raw(&self.client, &resource)
        } else {
            resources::namespaced_raw(&self.client, &resource, &key.namespace)
        }
    }

    /// The binding `key` names, as its cache holds it.
    fn cached(&self, key: &BindingKey) -> Option<Arc<CompactObject>> {
        let store = if key.cluster_scoped {
            &self.cluster_bindings
        } else {
            &self.bindings
        };
        let namespace = (!key.cluster_scoped).then_some(key.namespace.as_str());
        store.get_named(namespace, &key.name)
    }

    /// One binding.
    async fn reconcile(&self, key: &BindingKey) -> Result<Next, ControllerError> {
        let started = Instant::now();
        let resource = binding_resource(key.cluster_scoped);
        let Some(object) = self.cached(key) else {
            return Ok(Next::Done);
        };
        if object.metadata().deletion_timestamp.is_some() {
            return Ok(Next::Done);
        }
        // Without its aggregated status (see `view`): most reconciles (a fresh scheduler's whole list, every
        // Duplicated binding on a cluster change) end in no write, and the status is most of the text.
        let binding = super::view::read(&object, &resource)?;
        let wanted = if binding.spec.scheduler_name.is_empty() {
            DEFAULT_SCHEDULER_NAME
        } else {
            binding.spec.scheduler_name.as_str()
        };
        // Ours when it names this scheduler or one of its profiles (and is labelled and not suspended).
        let Some(choice) = self.profiles.choose(wanted) else {
            return Ok(Next::Done);
        };
        if !served_by(&binding.metadata, &binding.spec, wanted) {
            return Ok(Next::Done);
        }
        let snapshots = self.snapshots();
        let terminating = |name: &str| snapshots.iter().any(|s| &*s.name == name && s.deleting());
        let Some(trigger) = schedule_trigger(
            &binding.metadata,
            &binding.spec,
            binding.status.as_ref(),
            terminating,
        ) else {
            let observed = binding
                .status
                .as_ref()
                .map(|status| status.scheduler_observed_generation);
            let version = binding
                .metadata
                .resource_version
                .as_deref()
                .unwrap_or_default();
            if let Some(patch) =
                observed_generation_write(binding.metadata.generation, observed, version)
            {
                self.api(key)
                    .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            return Ok(Next::Done);
        };
        let current = super::view::to_json(&binding)?;
        self.schedule(
            key, &resource, &current, &binding, &snapshots, trigger, choice, started,
        )
        .await
    }

    /// Tells the estimators' answer cache what this decision moves (before its write, so a binding decided
    /// meanwhile does not count the same room; a failed write only makes an answer smaller than it is).
    fn assume_placement(
        &self,
        binding: &ResourceBinding,
        result: &karmada_scheduler::patch::SchedulingResult,
    ) {
        let Some(estimators) = &self.config.estimators else {
            return;
        };
        let Some(requirements) = binding.spec.replica_requirements.as_ref() else {
            return;
        };
        let Some(new) = &result.clusters else {
            return;
        };
        let replicas_of = |target: &Value| {
            (
                target["name"].as_str().unwrap_or_default().to_string(),
                target["replicas"].as_i64().unwrap_or(0),
            )
        };
        let mut deltas: HashMap<String, i64> = new.iter().map(replicas_of).collect();
        for old in &binding.spec.clusters {
            *deltas.entry(old.name.clone()).or_insert(0) -= i64::from(old.replicas);
        }
        for (cluster, delta) in deltas {
            estimators.assume(&cluster, Some(requirements), delta);
        }
    }

    /// The clusters whose estimators a decision of `request` asks: the feasible ones (less Pull-mode clusters
    /// with `--disable-scheduler-estimator-in-pull-mode`); `None` when there are none.
    fn estimator_targets(
        &self,
        request: &ScheduleRequest<'_>,
        framework: &karmada_scheduler::framework::Framework,
        snapshots: &[ClusterSnapshot],
    ) -> Option<Vec<Arc<str>>> {
        let mut candidates = estimator_candidates(framework, request, snapshots).ok()?;
        if self.config.skip_estimators_in_pull_mode {
            candidates.retain(|name| {
                snapshots
                    .iter()
                    .any(|s| s.name == *name && s.cluster.spec.sync_mode != ClusterSyncMode::Pull)
            });
        }
        (!candidates.is_empty()).then_some(candidates)
    }

    /// The feasible clusters' estimators' answers (none without `--enable-scheduler-estimator`), and how long
    /// asking took.
    async fn accurate_estimates(
        &self,
        request: &ScheduleRequest<'_>,
        framework: &karmada_scheduler::framework::Framework,
        snapshots: &[ClusterSnapshot],
    ) -> (
        Option<karmada_scheduler::scheduler::AccurateEstimates>,
        Duration,
    ) {
        let Some(estimators) = &self.config.estimators else {
            return (None, Duration::ZERO);
        };
        let started = Instant::now();
        let Some(candidates) = self.estimator_targets(request, framework, snapshots) else {
            return (None, Duration::ZERO);
        };
        let answers = estimators
            .estimates(&candidates, request.spec.replica_requirements.as_ref())
            .await;
        (Some(answers), started.elapsed())
    }

    /// The rounds to ask ahead for the queued `keys` ([`super::ask_ahead`]): one per kind of binding not asked
    /// about within the answers' ttl, for bindings whose spec the scheduler has not observed.
    fn ask_ahead(&self, keys: &[BindingKey]) -> Vec<futures::future::BoxFuture<'static, ()>> {
        let Some(estimators) = &self.config.estimators else {
            return Vec::new();
        };
        let ttl = estimators.config().cache_ttl;
        let snapshots = self.snapshots();
        if ttl.is_zero() || snapshots.is_empty() {
            return Vec::new();
        }
        let now = Instant::now();
        let mut rounds = Vec::new();
        for key in keys {
            let Some(object) = self.cached(key) else {
                continue;
            };
            let Some(kind) = unobserved_kind(&object) else {
                continue;
            };
            if !self.asked_kinds.claim(kind, now, ttl) {
                continue;
            }
            match self.ask_targets(key, &object, &snapshots) {
                Some((clusters, requirements)) => {
                    let estimators = Arc::clone(estimators);
                    rounds.push(Box::pin(async move {
                        estimators.ask_ahead(&clusters, requirements.as_ref()).await;
                    })
                        as futures::future::BoxFuture<'static, ()>);
                }
                None => self.asked_kinds.unclaim(kind),
            }
        }
        rounds
    }

    /// The clusters a decision of the binding would ask, and its replica requirements; `None` when it would
    /// ask none (not this scheduler's, nothing to schedule, no feasible cluster).
    fn ask_targets(
        &self,
        key: &BindingKey,
        object: &CompactObject,
        snapshots: &[ClusterSnapshot],
    ) -> Option<(Vec<Arc<str>>, Option<karmada_api::ReplicaRequirements>)> {
        let binding = super::view::read(object, &binding_resource(key.cluster_scoped)).ok()?;
        let wanted = if binding.spec.scheduler_name.is_empty() {
            DEFAULT_SCHEDULER_NAME
        } else {
            binding.spec.scheduler_name.as_str()
        };
        let Some(Choice::Run(framework)) = self.profiles.choose(wanted) else {
            return None;
        };
        if !served_by(&binding.metadata, &binding.spec, wanted) {
            return None;
        }
        let terminating = |name: &str| snapshots.iter().any(|s| &*s.name == name && s.deleting());
        let trigger = schedule_trigger(
            &binding.metadata,
            &binding.spec,
            binding.status.as_ref(),
            terminating,
        )?;
        let placement = binding.spec.placement.clone().unwrap_or_default();
        let prepared = prepare(&placement, "spec.placement").ok()?;
        let request = ScheduleRequest {
            spec: &binding.spec,
            placement: &placement,
            prepared: &prepared,
            workload: None,
            observed_affinity: binding
                .status
                .as_ref()
                .map(|s| s.scheduler_observed_affinity_name.as_str())
                .filter(|name| !name.is_empty()),
            fresh: trigger == ScheduleTrigger::FreshSchedule,
            keep_empty: self.config.enable_empty_workload_propagation,
            scheduler_name: wanted,
            accurate: None,
        };
        let clusters = self.estimator_targets(&request, &framework, snapshots)?;
        Some((clusters, binding.spec.replica_requirements.clone()))
    }

    /// Asks ahead for `keys` in the background (the runner owns the rounds).
    fn spawn_asks(&self, keys: &[BindingKey], cancel: &CancellationToken) {
        let rounds = self.ask_ahead(keys);
        if rounds.is_empty() {
            return;
        }
        let mut asking = self.asking.lock().unwrap_or_else(PoisonError::into_inner);
        while asking.try_join_next().is_some() {}
        for round in rounds {
            let cancel = cancel.clone();
            asking.spawn(async move {
                tokio::select! {
                    () = cancel.cancelled() => {}
                    () = round => {}
                }
            });
        }
    }

    /// Before the workers start: asks ahead for every binding waiting, and waits for the answers (each call is
    /// bounded by `--scheduler-estimator-timeout`, and so is the whole), so that the first decisions, taken all
    /// at once by the workers, find them kept instead of each waiting for a round.
    async fn ask_before_start(&self, cancel: &CancellationToken) {
        let Some(estimators) = &self.config.estimators else {
            return;
        };
        let keys = self.all_keys();
        let rounds = self.ask_ahead(&keys);
        if rounds.is_empty() {
            return;
        }
        let started = Instant::now();
        let count = rounds.len();
        let bound = estimators.config().timeout;
        tokio::select! {
            () = cancel.cancelled() => {}
            _ = tokio::time::timeout(bound, futures::future::join_all(rounds)) => {}
        }
        tracing::info!(
            rounds = count,
            elapsed = ?started.elapsed(),
            "asked the estimators about the waiting bindings before the first decisions"
        );
    }

    #[allow(clippy::too_many_arguments)]
    async fn schedule(
        &self,
        key: &BindingKey,
        resource: &ApiResource,
        current: &Value,
        binding: &ResourceBinding,
        snapshots: &[ClusterSnapshot],
        trigger: ScheduleTrigger,
        choice: Choice,
        started: Instant,
    ) -> Result<Next, ControllerError> {
        let schedule_type = schedule_type(trigger);
        let now = now_rfc3339();
        let placement = binding.spec.placement.clone().unwrap_or_default();
        let observed_affinity = binding
            .status
            .as_ref()
            .map(|s| s.scheduler_observed_affinity_name.as_str())
            .filter(|name| !name.is_empty());
        let wanted = if binding.spec.scheduler_name.is_empty() {
            DEFAULT_SCHEDULER_NAME
        } else {
            binding.spec.scheduler_name.as_str()
        };
        let framework = match choice {
            Choice::Run(framework) => Ok(framework),
            Choice::Invalid { profile, reason } => Err(format!(
                "SchedulerProfile {profile} cannot be used by this scheduler, so the binding is left where it is: {reason}"
            )),
        };
        let outcome = match (&framework, prepare(&placement, "spec.placement")) {
            (Err(invalid), _) => Err(invalid.clone()),
            (Ok(_), Err(err)) => Err(err.to_string()),
            (Ok(framework), Ok(prepared)) => {
                let mut request = ScheduleRequest {
                    spec: &binding.spec,
                    placement: &placement,
                    prepared: &prepared,
                    workload: None,
                    observed_affinity,
                    fresh: trigger == ScheduleTrigger::FreshSchedule,
                    keep_empty: self.config.enable_empty_workload_propagation,
                    scheduler_name: wanted,
                    accurate: None,
                };
                let (answers, waited) = self
                    .accurate_estimates(&request, framework, snapshots)
                    .await;
                request.accurate = answers.as_ref();
                if answers.is_some() {
                    self.metrics.estimator_wait(waited);
                }
                let mut recorder = self.metrics.decision(waited);
                schedule_recorded(framework, &request, snapshots, &mut recorder)
                    .map_err(|e| e.to_string())
            }
        };
        let generation = binding.metadata.generation;
        let (result, scheduled) = match &outcome {
            Ok(outcome) => {
                let scheduled = outcome.result.is_ok();
                let applied = scheduled.then_some(&placement);
                match scheduling_result(outcome, applied, generation, Some(&now)) {
                    Ok(result) => (result, scheduled),
                    Err(err) => (scheduler_error(&err.to_string(), &now), false),
                }
            }
            Err(err) => (scheduler_error(err, &now), false),
        };
        let no_cluster_fits = matches!(&outcome, Ok(o) if o.result.as_ref().is_err_and(|f| f.reason == REASON_NO_CLUSTER_FIT));
        let writes = binding_writes(current, &result, trigger == ScheduleTrigger::FreshSchedule);
        let written = writes.object.is_some() || writes.status.is_some();
        // Merge patches, as Karmada writes them: only what the decision sets travels, and the answers are read
        // without building their bodies. Each is conditional on the version it follows.
        let api = self.api(key);
        let mut version = binding
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        let mut generation = binding.metadata.generation;
        if writes.object.is_some() {
            self.assume_placement(binding, &result);
            let patch = spec_patch(&result, &version);
            let sent_first = generation.map(|before| {
                let sent = OwnSpecWrite::Sent {
                    generation: before + 1,
                };
                self.own_writes.wrote(key.clone(), sent);
            });
            let updated = match api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(updated) => updated,
                Err(err) => {
                    // Not written (or not known to be): the next event of the binding is not ours.
                    self.own_writes.seen(key);
                    return Err(err.into());
                }
            };
            version = updated.metadata.resource_version.unwrap_or_default();
            generation = updated.metadata.generation;
            let answered = OwnSpecWrite::Answered {
                version: version.clone(),
            };
            // Unless its event came first and was taken for this write already.
            if sent_first.is_none() || self.own_writes.holds(key, |_| true) {
                self.own_writes.wrote(key.clone(), answered);
            }
        }
        if let Some(desired) = &writes.status {
            let patch = status_patch(desired, generation, &version);
            api.patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        let result_label = if scheduled {
            RESULT_SCHEDULED
        } else {
            RESULT_ERROR
        };
        self.metrics.attempt(result_label, schedule_type);
        self.metrics
            .e2e(result_label, schedule_type, started.elapsed().as_secs_f64());
        let message = result
            .condition
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if written {
            let (event_type, reason) = if scheduled {
                (EventType::Normal, EVENT_SCHEDULE_BINDING_SUCCEED)
            } else {
                (EventType::Warning, EVENT_SCHEDULE_BINDING_FAILED)
            };
            for reference in [
                binding_reference(current, resource),
                template_reference(binding),
            ] {
                self.recorder
                    .record(&reference, event_type, reason, &message)
                    .await;
            }
            tracing::info!(binding = %key, scheduled, %message, "scheduled binding");
        }
        Ok(if scheduled {
            Next::Done
        } else if no_cluster_fits {
            Next::Unschedulable
        } else {
            Next::Retry
        })
    }
}

fn binding_reference(binding: &Value, resource: &ApiResource) -> ObjectReference {
    let text = |pointer: &str| {
        binding
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    ObjectReference {
        api_version: Some(resource.api_version.clone()),
        kind: Some(resource.kind.clone()),
        name: text("/metadata/name"),
        namespace: text("/metadata/namespace"),
        uid: text("/metadata/uid"),
        ..ObjectReference::default()
    }
}

fn template_reference(binding: &ResourceBinding) -> ObjectReference {
    let resource = &binding.spec.resource;
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    ObjectReference {
        api_version: some(&resource.api_version),
        kind: some(&resource.kind),
        name: some(&resource.name),
        namespace: some(&resource.namespace),
        uid: some(&resource.uid),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn binding(generation: i64, annotations: Value, status: Value) -> CompactObject {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "b", "namespace": "ns", "generation": generation, "annotations": annotations},
            "spec": {"replicas": 1},
            "status": status,
        }))
        .expect("binding");
        CompactObject::from_dynamic(&object).expect("compact")
    }

    #[test]
    fn status_only_binding_updates_do_not_requeue() {
        let base = binding(1, json!({}), json!({}));
        let cases = [
            (
                "status",
                binding(1, json!({}), json!({"aggregatedStatus": []})),
                false,
            ),
            ("generation", binding(2, json!({}), json!({})), true),
            (
                "annotations",
                binding(1, json!({"a": "b"}), json!({})),
                true,
            ),
        ];
        for (name, new, expected) in cases {
            assert_eq!(binding_changed(&base, &new), expected, "{name}");
        }
    }

    #[test]
    fn the_priority_is_read_from_the_binding_text() {
        let cases = [
            (
                r#"{"spec":{"schedulePriority":{"priority":1000},"replicas":2}}"#,
                1000,
            ),
            (r#"{"spec":{"schedulePriority":{"priority":-5}}}"#, -5),
            (r#"{"spec":{"replicas":2},"status":{"big":[1,2,3]}}"#, 0),
            (r#"{"kind":"ResourceBinding"}"#, 0),
            ("not json", 0),
        ];
        for (body, expected) in cases {
            assert_eq!(priority_in(body), expected, "{body}");
        }
    }

    #[test]
    fn template_reference_from_spec_resource() {
        let binding: ResourceBinding = serde_json::from_value(json!({
            "metadata": {"name": "nginx-deployment", "namespace": "default"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                                  "name": "nginx", "uid": "u1"}}
        }))
        .expect("binding");
        let reference = template_reference(&binding);
        assert_eq!(reference.kind.as_deref(), Some("Deployment"));
        assert_eq!(reference.name.as_deref(), Some("nginx"));
        assert_eq!(reference.uid.as_deref(), Some("u1"));
    }
}
