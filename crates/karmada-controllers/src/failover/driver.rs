//! What the failover controllers share at run time: a `kube::runtime` applier over ResourceBindings or
//! ClusterResourceBindings, woken by changes of what failover reads of a binding and by changes of the Clusters
//! they target or evict from (sent once the Cluster cache holds the change); the Cluster cache;
//! decoding (legacy purge modes accepted); the write of `spec.clusters` / `spec.gracefulEvictionTasks` /
//! annotations as a replace carrying the read resourceVersion (a 409 requeues); event references; and the
//! eviction pacing (rate limit + cluster budget) shared by every evicting controller.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{ObjectReference, Taint};
use karmada_api::cluster::CONDITION_READY;
use karmada_api::{Cluster, ResourceBinding, ResourceBindingSpec};
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::FailoverConfig;
use super::budget::{EvictionBudget, RateLimiter};
use super::metrics::FailoverMetrics;
use super::purge::normalize_legacy_purge_modes;
use super::tasks::MemberState;
use crate::runtime::runner::{self, Action, Loop, ObjectKey};
use crate::runtime::{CompactObject, ControllerError, EventRecorder, resources, typed};

/// Component name on the failover controllers' events.
pub const COMPONENT: &str = "failover-controller";

/// Eviction pacing shared by every evicting controller.
pub(crate) struct Pacing {
    limiter: RateLimiter,
    budget: EvictionBudget,
    /// Bindings waiting for pacing, per controller (for `eviction_queue_depth`).
    waiting: BTreeMap<&'static str, BTreeSet<String>>,
    /// The budget window of each cluster as recorded on the Cluster ([`ANNOTATION_EVICTION_WINDOW`]).
    recorded: BTreeMap<String, Timestamp>,
}

/// Annotation on a Cluster: when its current eviction-budget window opened. Written before the first eviction
/// of a window, so a restarted controller-manager counts the window instead of opening a fresh one.
pub const ANNOTATION_EVICTION_WINDOW: &str = "failover.karmada.io/eviction-window-start";

/// Why an eviction has to wait.
pub(crate) enum Held {
    RateLimited(Duration),
    OverBudget(Duration),
    /// The cluster's budget window could not be recorded yet.
    Unrecorded(Duration),
}

impl Held {
    /// The `eviction_deferred_total` reason and the wait.
    pub(crate) fn reason_and_delay(&self) -> (&'static str, Duration) {
        match self {
            Held::RateLimited(d) => ("RateLimited", *d),
            Held::OverBudget(d) => ("OverBudget", *d),
            Held::Unrecorded(d) => ("WindowUnrecorded", *d),
        }
    }
}

impl Pacing {
    pub(crate) fn new(config: &FailoverConfig) -> Self {
        Self {
            limiter: RateLimiter::new(config.eviction_rate, config.eviction_burst),
            recorded: BTreeMap::new(),
            budget: EvictionBudget::new(
                config.eviction_budget_clusters,
                SignedDuration::try_from(config.eviction_budget_interval)
                    .unwrap_or(SignedDuration::from_mins(5)),
            ),
            waiting: BTreeMap::new(),
        }
    }
}

/// State shared by the failover controllers.
pub(crate) struct Shared {
    pub client: kube::Client,
    pub config: FailoverConfig,
    pub metrics: FailoverMetrics,
    pub recorder: EventRecorder,
    pub clusters: Store<DynamicObject>,
    /// Names of Clusters whose failover-relevant state changed, sent by the reflector that fills `clusters`
    /// once the change is in it ([`failover_relevant`]).
    pub wake: broadcast::Sender<String>,
    pacing: Mutex<Pacing>,
    /// Clusters in typed form, converted once per resourceVersion: every binding reconcile reads its clusters'
    /// taints and readiness, and a Cluster's status is large.
    typed_clusters: typed::TypedMemo<Cluster>,
}

impl Shared {
    pub(crate) fn new(
        client: kube::Client,
        config: FailoverConfig,
        metrics: FailoverMetrics,
        clusters: Store<DynamicObject>,
        wake: broadcast::Sender<String>,
    ) -> Self {
        Self {
            wake,
            recorder: EventRecorder::new(client.clone(), COMPONENT),
            pacing: Mutex::new(Pacing::new(&config)),
            client,
            config,
            metrics,
            clusters,
            typed_clusters: typed::TypedMemo::default(),
        }
    }

    fn cluster(&self, name: &str) -> Option<Arc<Cluster>> {
        let object = self
            .clusters
            .get(&ObjectRef::new_with(name, resources::cluster()))?;
        self.typed_clusters.typed(&object).ok()
    }

    /// Reachable (Ready=True), unreachable (anything else), or gone (absent or being deleted).
    pub(crate) fn member_state(&self, name: &str) -> MemberState {
        match self.cluster(name) {
            None => MemberState::Gone,
            Some(c) if c.metadata.deletion_timestamp.is_some() => MemberState::Gone,
            Some(c) => {
                let ready = c.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == CONDITION_READY && c.status == "True")
                });
                if ready {
                    MemberState::Reachable
                } else {
                    MemberState::Unreachable
                }
            }
        }
    }

    /// The taints of the named clusters that exist.
    pub(crate) fn taints<'a>(
        &self,
        names: impl Iterator<Item = &'a str>,
    ) -> BTreeMap<String, Vec<Taint>> {
        names
            .filter_map(|n| Some((n.to_string(), self.cluster(n)?.spec.taints.clone())))
            .collect()
    }

    /// Counts the evictions the bindings' graceful eviction tasks record (cluster, start) into the cluster
    /// budget, so a restarted controller-manager does not start a fresh window. Idempotent.
    pub(crate) fn seed_budget(&self, bindings: &[Arc<CompactObject>], now: Timestamp) {
        let windows: Vec<(String, Timestamp)> = self
            .clusters
            .state()
            .iter()
            .filter_map(|c| {
                let at = c
                    .metadata
                    .annotations
                    .as_ref()?
                    .get(ANNOTATION_EVICTION_WINDOW)?;
                Some((c.metadata.name.clone()?, at.parse().ok()?))
            })
            .collect();
        let mut pacing = self.pacing.lock().unwrap_or_else(PoisonError::into_inner);
        for (cluster, opened) in windows {
            pacing.budget.seed_window(&cluster, opened, now);
            pacing.recorded.insert(cluster, opened);
        }
        for (cluster, started) in bindings.iter().flat_map(|b| eviction_starts(b)) {
            pacing.budget.seed(&cluster, started, now);
        }
    }

    /// [`Shared::admit`], then, when this opened a budget window for `cluster` (or its opening is not on
    /// record yet), records the window on the Cluster before the caller evicts: write-ahead, so the budget
    /// survives a restart. A failed write holds the eviction back briefly.
    pub(crate) async fn admit_recorded(
        &self,
        controller: &'static str,
        binding: &str,
        cluster: &str,
        now: Timestamp,
    ) -> Result<(), Held> {
        let Some(opened) = self.admit(controller, binding, cluster, now)? else {
            return Ok(());
        };
        let patch = serde_json::json!({"metadata": {"annotations": {
            ANNOTATION_EVICTION_WINDOW: opened.to_string()
        }}});
        let written = resources::all(&self.client, &resources::cluster())
            .patch(cluster, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        match written {
            Ok(_) => {
                let mut pacing = self.pacing.lock().unwrap_or_else(PoisonError::into_inner);
                pacing.recorded.insert(cluster.to_string(), opened);
                Ok(())
            }
            Err(err) => {
                tracing::warn!(cluster, %err, "recording the eviction budget window");
                Err(Held::Unrecorded(Duration::from_secs(1)))
            }
        }
    }

    /// Asks to evict `binding` (by key) from `cluster` now; `Err` says how long to wait. `Ok(Some(t))`: admitted
    /// in the window opened at `t`, which is not on record yet.
    fn admit(
        &self,
        controller: &'static str,
        binding: &str,
        cluster: &str,
        now: Timestamp,
    ) -> Result<Option<Timestamp>, Held> {
        let mut pacing = self.pacing.lock().unwrap_or_else(PoisonError::into_inner);
        let held = match pacing.budget.try_admit(cluster, now) {
            Err(retry_at) => Some(Held::OverBudget(until(now, retry_at))),
            Ok(()) => pacing
                .limiter
                .try_take(now)
                .err()
                .map(|wait| Held::RateLimited(wait.unsigned_abs())),
        };
        let waiting = pacing.waiting.entry(controller).or_default();
        if held.is_some() {
            waiting.insert(binding.to_string());
        } else {
            waiting.remove(binding);
        }
        let depth = waiting.len();
        let unrecorded = pacing
            .budget
            .window_of(cluster, now)
            .filter(|opened| pacing.recorded.get(cluster) != Some(opened));
        drop(pacing);
        self.metrics.set_queue_depth(controller, depth);
        held.map_or(Ok(unrecorded), Err)
    }

    /// The binding no longer waits for pacing.
    pub(crate) fn not_waiting(&self, controller: &'static str, binding: &str) {
        let mut pacing = self.pacing.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = pacing.waiting.entry(controller).or_default();
        if waiting.remove(binding) {
            let depth = waiting.len();
            drop(pacing);
            self.metrics.set_queue_depth(controller, depth);
        }
    }
}

fn until(now: Timestamp, at: Timestamp) -> Duration {
    at.duration_since(now)
        .max(SignedDuration::from_millis(100))
        .unsigned_abs()
}

/// How long from `now` until `at` (at least 100 ms, so a deadline just passed still requeues).
pub(crate) fn requeue_at(now: Timestamp, at: Timestamp) -> Duration {
    until(now, at)
}

/// One binding kind a controller runs over, with the shared state.
pub(crate) struct BindingCtx {
    pub shared: Arc<Shared>,
    pub resource: ApiResource,
    pub cluster_scoped: bool,
}

/// A binding read from the cache: its typed form, and the cached object its JSON is rebuilt from when a
/// controller writes (most reconciles only read, and decoding the JSON tree for them cost more than the
/// typed decode itself).
pub(crate) struct Read {
    object: CompactObject,
    pub binding: ResourceBinding,
    pub key: String,
}

/// A cached binding in typed form: straight from its text, or, when the typed decoder rejects it (a legacy
/// purge-mode spelling), through [`binding_json`], which rewrites those spellings.
fn typed_binding(
    object: &CompactObject,
    resource: &ApiResource,
) -> Result<ResourceBinding, ControllerError> {
    match object.decode::<ResourceBinding>() {
        Ok(binding) => Ok(binding),
        Err(_) => Ok(ResourceBinding::deserialize(&binding_json(
            object, resource,
        )?)?),
    }
}

/// A cached binding's JSON as a write starts from it: apiVersion and kind filled in, legacy purge modes
/// normalized.
fn binding_json(object: &CompactObject, resource: &ApiResource) -> Result<Value, ControllerError> {
    let mut json: Value = object.decode()?;
    if json.get("apiVersion").is_none() {
        json["apiVersion"] = Value::String(resource.api_version.clone());
        json["kind"] = Value::String(resource.kind.clone());
    }
    normalize_legacy_purge_modes(&mut json);
    Ok(json)
}

impl BindingCtx {
    pub(crate) fn decode(&self, object: &CompactObject) -> Result<Read, ControllerError> {
        let binding = typed_binding(object, &self.resource)?;
        let key = match &binding.metadata.namespace {
            Some(ns) if !self.cluster_scoped => {
                format!(
                    "{ns}/{}",
                    binding.metadata.name.as_deref().unwrap_or_default()
                )
            }
            _ => binding.metadata.name.clone().unwrap_or_default(),
        };
        Ok(Read {
            object: object.clone(),
            binding,
            key,
        })
    }

    /// Writes `spec.clusters`, `spec.gracefulEvictionTasks` (from `spec`, when given) and the annotation
    /// `annotation` (set or removed, when given) over the read object, as a replace with its resourceVersion.
    pub(crate) async fn write(
        &self,
        read: &Read,
        spec: Option<&ResourceBindingSpec>,
        annotation: Option<(&str, Option<String>)>,
    ) -> Result<(), ControllerError> {
        let mut next = binding_json(&read.object, &self.resource)?;
        if let Some(spec) = spec {
            let fields = serde_json::to_value(spec)?;
            for field in ["clusters", "gracefulEvictionTasks"] {
                match fields.get(field) {
                    Some(value) => next["spec"][field] = value.clone(),
                    None => {
                        if let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) {
                            spec.remove(field);
                        }
                    }
                }
            }
        }
        if let Some((key, value)) = annotation {
            match value {
                Some(value) => next["metadata"]["annotations"][key] = Value::String(value),
                None => {
                    if let Some(annotations) = next
                        .pointer_mut("/metadata/annotations")
                        .and_then(Value::as_object_mut)
                    {
                        annotations.remove(key);
                    }
                }
            }
        }
        if let Some(metadata) = next.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        let body: DynamicObject = serde_json::from_value(next)?;
        let name = read.binding.metadata.name.clone().unwrap_or_default();
        let api = match (&read.binding.metadata.namespace, self.cluster_scoped) {
            (Some(ns), false) => resources::namespaced(&self.shared.client, &self.resource, ns),
            _ => resources::all(&self.shared.client, &self.resource),
        };
        api.replace(&name, &PostParams::default(), &body).await?;
        Ok(())
    }

    /// The binding and its template, for events.
    pub(crate) fn references(&self, read: &Read) -> [ObjectReference; 2] {
        let meta = &read.binding.metadata;
        let resource = &read.binding.spec.resource;
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        [
            ObjectReference {
                api_version: Some(self.resource.api_version.clone()),
                kind: Some(self.resource.kind.clone()),
                name: meta.name.clone(),
                namespace: meta.namespace.clone(),
                uid: meta.uid.clone(),
                ..ObjectReference::default()
            },
            ObjectReference {
                api_version: some(&resource.api_version),
                kind: some(&resource.kind),
                name: some(&resource.name),
                namespace: some(&resource.namespace),
                uid: some(&resource.uid),
                ..ObjectReference::default()
            },
        ]
    }
}

/// What the pacing and wake-up paths read of a binding object: its targets and eviction tasks, decoded alone.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetsAndTasks {
    #[serde(default)]
    clusters: Option<Vec<Named>>,
    #[serde(default)]
    graceful_eviction_tasks: Option<Vec<Evicted>>,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Evicted {
    from_cluster: Option<String>,
    /// Text, parsed by [`eviction_starts`] alone: an odd timestamp must not hide the clusters.
    #[serde(default)]
    creation_timestamp: Option<String>,
}

fn targets_and_tasks(object: &CompactObject) -> Option<TargetsAndTasks> {
    #[derive(Deserialize)]
    struct Binding {
        #[serde(default)]
        spec: Option<TargetsAndTasks>,
    }
    let json = object.json().ok()?;
    serde_json::from_str::<Binding>(&json).ok()?.spec
}

/// The (cluster, creation time) of each graceful eviction task of a binding object.
fn eviction_starts(object: &CompactObject) -> Vec<(String, Timestamp)> {
    targets_and_tasks(object)
        .and_then(|spec| spec.graceful_eviction_tasks)
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.from_cluster?, t.creation_timestamp?.parse().ok()?)))
        .collect()
}

/// The clusters a binding object names (targets and eviction tasks).
fn named_clusters(object: &CompactObject) -> BTreeSet<String> {
    let Some(spec) = targets_and_tasks(object) else {
        return BTreeSet::new();
    };
    let targets = spec.clusters.into_iter().flatten().filter_map(|c| c.name);
    let evicted = spec
        .graceful_eviction_tasks
        .into_iter()
        .flatten()
        .filter_map(|t| t.from_cluster);
    targets.chain(evicted).collect()
}

/// Runs one failover controller over one binding kind until `cancel` fires. `reconcile` decides and writes;
/// its latency and result are counted under `name`.
///
/// The bindings come from a subscription to `shared.config.informers`: the three failover controllers (and
/// any other controller of the process) share one watch and one compact cache per binding kind.
///
/// Woken by a binding change that touches what the failover controllers read ([`failover_inputs`]: not the
/// replica counts and conditions the status controller keeps rewriting, which at scale would wake every
/// controller for every binding many times a second), and by a failover-relevant change of a Cluster the binding
/// targets or evicts from.
/// The name Karmada gives the controller (and its queue) that runs failover controller `name` over one kind of
/// binding: the metrics' `controller` label.
fn karmada_controller_name(name: &'static str, cluster_scoped: bool) -> &'static str {
    match (name, cluster_scoped) {
        (super::taint_manager::NAME, false) => "binding-eviction",
        (super::taint_manager::NAME, true) => "cluster-binding-eviction",
        (super::application::NAME, false) => "resource-binding-application-failover-controller",
        (super::application::NAME, true) => {
            "cluster-resource-binding-application-failover-controller"
        }
        (super::graceful_eviction::NAME, false) => "resource-binding-graceful-eviction-controller",
        (super::graceful_eviction::NAME, true) => {
            "cluster-resource-binding-graceful-eviction-controller"
        }
        _ => name,
    }
}

pub(crate) async fn run_binding_controller<F, Fut>(
    shared: Arc<Shared>,
    name: &'static str,
    cluster_scoped: bool,
    reconcile: F,
    cancel: CancellationToken,
) where
    F: Fn(Arc<CompactObject>, Arc<BindingCtx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, ControllerError>> + Send + 'static,
{
    let resource = if cluster_scoped {
        resources::cluster_resource_binding()
    } else {
        resources::resource_binding()
    };
    let subscription = shared.config.informers.subscribe(
        resources::all_raw(&shared.client, &resource),
        watcher::Config::default(),
    );
    let store = subscription.store;
    let own = crate::runtime::changes::changed_objects(subscription.events, failover_inputs)
        .filter_map(|binding| std::future::ready(binding.ok().map(|b| ObjectKey::of(&b))));
    // Woken by the reflector that fills the Cluster cache reconciles read (see `Shared::wake`), so a binding
    // woken by a Cluster change never reads that Cluster from before the change. A lagging receiver wakes all.
    let bindings = store.clone();
    let wake = futures::stream::unfold(shared.wake.subscribe(), |mut rx| async move {
        let next = match rx.recv().await {
            Ok(name) => Some(name),
            Err(broadcast::error::RecvError::Lagged(_)) => None,
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((next, rx))
    });
    let woken = wake.flat_map(move |cluster: Option<String>| {
        let keys: Vec<ObjectKey> = bindings
            .state()
            .into_iter()
            .filter(|b| {
                cluster
                    .as_ref()
                    .is_none_or(|name| named_clusters(b).contains(name))
            })
            .map(|b| ObjectKey::of(&b))
            .collect();
        futures::stream::iter(keys)
    });
    let metrics = shared.metrics.clone();
    let concurrency = shared.config.concurrency;
    // The cluster budget counts the evictions the bindings' tasks record before this controller admits any
    // (a restart must not open a fresh window); the first reconcile waits for the cache's first list.
    let seeded: Arc<tokio::sync::OnceCell<()>> = Arc::default();
    let (for_seeding, bindings) = (shared.clone(), store.clone());
    let context = Arc::new(BindingCtx {
        shared,
        resource,
        cluster_scoped,
    });
    runner::run(
        Loop {
            name: karmada_controller_name(name, cluster_scoped),
            store,
            context,
            concurrency: usize::from(concurrency),
            resync: None,
        },
        futures::stream::select(own, woken),
        move |object,
              ctx|
              -> Pin<Box<dyn Future<Output = Result<Action, ControllerError>> + Send>> {
            let started = Instant::now();
            let metrics = metrics.clone();
            let work = reconcile(object, ctx);
            let (seeded, shared, bindings) =
                (seeded.clone(), for_seeding.clone(), bindings.clone());
            Box::pin(async move {
                seeded
                    .get_or_init(|| async move {
                        if bindings.wait_until_ready().await.is_ok() {
                            shared.seed_budget(&bindings.state(), Timestamp::now());
                        }
                    })
                    .await;
                let result = work.await;
                let ok = result.is_ok() || result.as_ref().is_err_and(ControllerError::is_conflict);
                metrics.processed(name, ok, started.elapsed().as_secs_f64());
                result
            })
        },
        |_: &CompactObject, err: &ControllerError, _: &BindingCtx| {
            Action::requeue(err.retry_after())
        },
        cancel,
    )
    .await;
}

/// What of a binding the failover controllers read: spec (targets, tasks, placement, failover behaviour),
/// annotations (applied placement, unhealthy-since), deletion, and of the status the scheduler's observed
/// generation and, when something acts on it ([`acts_on_health`]), each copy's health. A predicate for
/// `WatchStreamExt::predicate_filter`; the spec is hashed as text and only those status fields are decoded.
pub(crate) fn failover_inputs(object: &CompactObject) -> Option<u64> {
    #[derive(Deserialize)]
    struct Binding<'a> {
        #[serde(borrow, default)]
        spec: Option<&'a RawValue>,
        #[serde(borrow, default)]
        status: Option<Status<'a>>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Status<'a> {
        #[serde(default)]
        scheduler_observed_generation: Option<Value>,
        #[serde(borrow, default)]
        aggregated_status: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CopyHealth {
        #[serde(default)]
        cluster_name: Option<Value>,
        #[serde(default)]
        health: Option<Value>,
    }
    let text = |value: &Option<Value>| value.as_ref().map(ToString::to_string);
    // An undecodable binding still gets a fingerprint (of its whole text), so its changes wake the controllers,
    // whose decode reports the error.
    let json = object.json().unwrap_or_default();
    let Ok(binding) = serde_json::from_str::<Binding<'_>>(&json) else {
        let mut hasher = std::hash::DefaultHasher::new();
        json.hash(&mut hasher);
        return Some(std::hash::Hasher::finish(&hasher));
    };
    let mut hasher = std::hash::DefaultHasher::new();
    let metadata = object.metadata();
    let copies = binding
        .status
        .as_ref()
        .and_then(|s| s.aggregated_status)
        .filter(|_| binding.spec.is_some_and(acts_on_health));
    let health: Vec<(Option<String>, Option<String>)> = match copies {
        Some(copies) => match serde_json::from_str::<Vec<CopyHealth>>(copies.get()) {
            Ok(copies) => copies
                .iter()
                .map(|copy| (text(&copy.cluster_name), text(&copy.health)))
                .collect(),
            Err(_) => vec![(Some(copies.get().to_string()), None)],
        },
        None => Vec::new(),
    };
    (
        binding.spec.map(RawValue::get),
        &metadata.generation,
        metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        object.annotations(),
        object.large_annotations(),
        binding
            .status
            .as_ref()
            .map(|s| text(&s.scheduler_observed_generation)),
        health,
    )
        .hash(&mut hasher);
    Some(std::hash::Hasher::finish(&hasher))
}

/// Whether a failover controller acts on the copies' health of a binding with this spec: application failover
/// (`failover.application`) and graceful eviction (pending `gracefulEvictionTasks`) do; the taint manager reads
/// health only while evicting, which a Cluster's taint starts. Without them a binding's health changes (one per
/// member as its copies come up: a hundred for a Duplicated binding over a hundred members) wake none of the
/// three controllers, each of which would decode the whole binding to do nothing. A spec that does not parse
/// counts as acting on health.
fn acts_on_health(spec: &RawValue) -> bool {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Gates {
        #[serde(default)]
        failover: Option<Failover>,
        #[serde(default)]
        graceful_eviction_tasks: Option<Vec<IgnoredAny>>,
    }
    #[derive(Deserialize)]
    struct Failover {
        #[serde(default)]
        application: Option<IgnoredAny>,
    }
    match serde_json::from_str::<Gates>(spec.get()) {
        Ok(gates) => {
            gates.failover.is_some_and(|f| f.application.is_some())
                || gates.graceful_eviction_tasks.is_some_and(|t| !t.is_empty())
        }
        Err(_) => true,
    }
}

/// What of a Cluster the failover controllers act on: its spec (taints), its Ready condition and its deletion.
pub(crate) fn failover_relevant(cluster: &DynamicObject) -> String {
    let ready = cluster.data["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"))
        .map(|c| (c["status"].clone(), c["reason"].clone()));
    format!(
        "{}|{:?}|{:?}",
        cluster.data["spec"], ready, cluster.metadata.deletion_timestamp
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use karmada_api::policy::PurgeMode;

    fn cached(spec: Value) -> CompactObject {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "default", "resourceVersion": "7"},
            "spec": spec,
        }))
        .expect("a DynamicObject");
        CompactObject::from_dynamic(&object).expect("a compact object")
    }

    fn resource_of(spec: &Value) -> Value {
        let mut spec = spec.clone();
        spec["resource"] = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
        spec
    }

    #[test]
    fn current_spellings_decode_straight_from_the_text() {
        let spec = resource_of(&json!({
            "failover": {"application": {"purgeMode": "Directly"}},
            "gracefulEvictionTasks": [{"fromCluster": "m1", "purgeMode": "Never", "reason": "r", "producer": "p"}],
        }));
        let object = cached(spec);
        let binding = typed_binding(&object, &resources::resource_binding()).expect("decodes");
        let application = binding.spec.failover.and_then(|f| f.application);
        assert_eq!(
            application.and_then(|a| a.purge_mode),
            Some(PurgeMode::Directly)
        );
        assert_eq!(
            binding.spec.graceful_eviction_tasks[0].purge_mode,
            Some(PurgeMode::Never)
        );
    }

    #[test]
    fn legacy_spellings_are_read_as_the_current_ones_and_written_back_so() {
        let spec = resource_of(&json!({
            "failover": {
                "application": {"purgeMode": "Immediately"},
                "cluster": {"purgeMode": "Graciously"},
            },
            "gracefulEvictionTasks": [{"fromCluster": "m1", "purgeMode": "Immediately", "reason": "r", "producer": "p"}],
        }));
        let object = cached(spec);
        let resource = resources::resource_binding();
        let binding = typed_binding(&object, &resource).expect("decodes");
        let failover = binding.spec.failover.expect("failover kept");
        assert_eq!(
            failover.application.and_then(|a| a.purge_mode),
            Some(PurgeMode::Directly)
        );
        assert_eq!(
            failover.cluster.and_then(|c| c.purge_mode),
            Some(PurgeMode::Gracefully)
        );
        assert_eq!(
            binding.spec.graceful_eviction_tasks[0].purge_mode,
            Some(PurgeMode::Directly)
        );

        let json = binding_json(&object, &resource).expect("JSON");
        for (pointer, written) in [
            ("/spec/failover/application/purgeMode", "Directly"),
            ("/spec/failover/cluster/purgeMode", "Gracefully"),
            ("/spec/gracefulEvictionTasks/0/purgeMode", "Directly"),
        ] {
            assert_eq!(json.pointer(pointer), Some(&json!(written)), "{pointer}");
        }
        assert_eq!(json["kind"], "ResourceBinding");
        assert_eq!(json["metadata"]["resourceVersion"], "7");
    }

    fn with_health(spec: &Value, health: &str) -> CompactObject {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "default", "resourceVersion": "7"},
            "spec": spec,
            "status": {
                "schedulerObservedGeneration": 1,
                "aggregatedStatus": [{"clusterName": "m1", "applied": true, "health": health}],
            },
        }))
        .expect("a DynamicObject");
        CompactObject::from_dynamic(&object).expect("a compact object")
    }

    #[test]
    fn health_wakes_the_failover_controllers_only_where_one_acts_on_it() {
        let task = json!([{"fromCluster": "m2", "purgeMode": "Gracefully", "reason": "r", "producer": "p"}]);
        let table = [
            (json!({}), false),
            (
                json!({"failover": {"cluster": {"purgeMode": "Gracefully"}}}),
                false,
            ),
            (json!({"gracefulEvictionTasks": []}), false),
            (
                json!({"failover": {"application": {"purgeMode": "Directly"}}}),
                true,
            ),
            (json!({"gracefulEvictionTasks": task}), true),
        ];
        for (extra, acts) in table {
            let mut spec = resource_of(&json!({"clusters": [{"name": "m1"}]}));
            for (key, value) in extra.as_object().expect("an object") {
                spec[key] = value.clone();
            }
            let unknown = failover_inputs(&with_health(&spec, "Unknown"));
            let healthy = failover_inputs(&with_health(&spec, "Healthy"));
            assert_eq!(unknown != healthy, acts, "{extra}");
            // The spec itself always counts.
            let mut moved = spec.clone();
            moved["clusters"] = json!([{"name": "m3"}]);
            assert_ne!(
                failover_inputs(&with_health(&moved, "Healthy")),
                healthy,
                "{extra}"
            );
        }
    }

    #[test]
    fn an_unknown_purge_mode_is_an_error_on_either_path() {
        let object = cached(resource_of(&json!({
            "failover": {"application": {"purgeMode": "Sometimes"}},
        })));
        let err = typed_binding(&object, &resources::resource_binding())
            .expect_err("rejected")
            .to_string();
        assert!(err.contains("Sometimes"), "{err}");
    }
}
