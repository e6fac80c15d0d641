//! The scheduler runner (karmada-scheduler): watches ResourceBindings, ClusterResourceBindings and Clusters,
//! and schedules a binding when reference/karmada.md §4.1's triggers say so
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
//! Failures (NoClusterFit, Unschedulable, SchedulerError) are written as Scheduled=False with the reason and
//! retried with per-binding exponential backoff; the applied-placement annotation is written only on success, so
//! a failed placement keeps triggering until it schedules. Cluster changes that can move bindings (labels,
//! spec, readiness, API enablements, deletion) requeue every binding.
//!
//! Invariants: nothing is scheduled before the three caches hold their first list; the core is pure and fast
//! (microseconds per binding for tens of clusters), so it runs on the worker itself.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use karmada_api::{Cluster, ResourceBinding};
use karmada_scheduler::framework::{DEFAULT_SCHEDULER_NAME, Framework};
use karmada_scheduler::patch::scheduling_result;
use karmada_scheduler::placement::prepare;
use karmada_scheduler::scheduler::{ScheduleRequest, schedule};
use karmada_scheduler::snapshot::ClusterSnapshot;
use karmada_scheduler::trigger::{ScheduleTrigger, schedule_trigger, served_by};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::decision::{
    binding_writes, cluster_changed, observed_generation_write, schedule_type, scheduler_error,
    spec_patch, status_patch,
};
use super::metrics::{
    EVENT_BINDING_ADD, EVENT_BINDING_UPDATE, EVENT_CLUSTER_CHANGED, EVENT_SCHEDULE_ATTEMPT_FAILURE,
    RESULT_ERROR, RESULT_SCHEDULED, SchedulerMetrics,
};
use crate::runtime::own_writes::OwnWrites;
use crate::runtime::queue::{Backoff, WorkQueue};
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
#[derive(Clone, Debug)]
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
    framework: Framework,
    queue: WorkQueue<BindingKey>,
    backoff: Backoff<BindingKey>,
    recorder: EventRecorder,
    /// Compact caches (typed metadata and JSON text, decoded per reconcile): every binding is cached.
    bindings: Cache,
    cluster_bindings: Cache,
    clusters: Store<DynamicObject>,
    /// Parsed clusters, rebuilt on every Cluster event.
    snapshots: RwLock<Arc<Vec<ClusterSnapshot>>>,
    /// The resourceVersion of each binding as the runner's own spec write left it, until its watch event is
    /// seen: that event reports the placement just made, not a change to schedule for.
    own_writes: OwnWrites<BindingKey, String>,
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
    let framework = Framework::with_defaults(&registry).map_err(|e| StartError(e.to_string()))?;
    let binding_writer = crate::runtime::CacheWriter::new();
    let cluster_binding_writer = crate::runtime::CacheWriter::new();
    let cluster_writer = Writer::new(resources::cluster());
    let runner = Arc::new(Runner {
        recorder: EventRecorder::new(client.clone(), COMPONENT),
        queue: WorkQueue::new(config.queue_capacity),
        backoff: Backoff::new(config.backoff_base, config.backoff_max),
        own_writes: OwnWrites::default(),
        bindings: binding_writer.as_reader(),
        cluster_bindings: cluster_binding_writer.as_reader(),
        clusters: cluster_writer.as_reader(),
        snapshots: RwLock::default(),
        client,
        config,
        metrics,
        framework,
    });
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(runner.queue.clone().run_delays(cancel.clone()));
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
    };
    tokio::select! {
        () = cancel.cancelled() => {}
        () = synced => {
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
                                .is_some_and(|written| {
                                    object.metadata().resource_version.as_deref()
                                        == Some(written.as_str())
                                }) =>
                    {
                        runner.metrics.incoming(EVENT_BINDING_UPDATE);
                        ready.push(key_of(object, cluster_scoped));
                    }
                    Some(_) => {}
                }
            }
            watcher::Event::Delete(object) => {
                runner.backoff.forget(&key_of(object, cluster_scoped))
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
        for key in ready {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = runner.queue.add(key) => {}
            }
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
        let requeue = match &event {
            watcher::Event::Apply(object) => {
                match reader.get(&ObjectRef::from_obj_with(object, resource.clone())) {
                    None => true,
                    Some(old) => match (typed::to_json(&old), typed::to_json(object)) {
                        (Ok(old), Ok(new)) => cluster_changed(&old, &new),
                        _ => true,
                    },
                }
            }
            watcher::Event::Delete(_) | watcher::Event::InitDone => true,
            watcher::Event::Init | watcher::Event::InitApply(_) => false,
        };
        writer.apply_watcher_event(&event);
        if matches!(event, watcher::Event::Init | watcher::Event::InitApply(_)) {
            continue;
        }
        runner.rebuild_snapshots();
        if requeue {
            let mut keys: Vec<BindingKey> = runner
                .bindings
                .state()
                .iter()
                .map(|b| key_of(b, false))
                .collect();
            keys.extend(
                runner
                    .cluster_bindings
                    .state()
                    .iter()
                    .map(|b| key_of(b, true)),
            );
            for key in keys {
                // A cluster change is news: retry failed bindings now rather than after their backoff.
                runner.backoff.forget(&key);
                runner.metrics.incoming(EVENT_CLUSTER_CHANGED);
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = runner.queue.add(key) => {}
                }
            }
        }
    }
}

async fn worker(runner: Arc<Runner>, cancel: CancellationToken) {
    while let Some(key) = runner.queue.next(&cancel).await {
        let result = tokio::select! {
            () = cancel.cancelled() => return,
            result = runner.reconcile(&key) => result,
        };
        runner.queue.done(key.clone()).await;
        match result {
            Ok(None) => runner.backoff.forget(&key),
            Ok(Some(delay)) => {
                runner.metrics.incoming(EVENT_SCHEDULE_ATTEMPT_FAILURE);
                runner.queue.add_after(key, delay);
            }
            Err(err) if err.is_conflict() => runner.queue.add_after(key, err.retry_after()),
            Err(err) => {
                let delay = runner.backoff.fail(key.clone());
                tracing::warn!(binding = %key, %err, ?delay, "scheduler: retrying");
                runner.queue.add_after(key, delay);
            }
        }
    }
}

fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

impl Runner {
    fn rebuild_snapshots(&self) {
        let mut snapshots = Vec::new();
        for object in self.clusters.state() {
            let cluster = typed::to_typed::<Cluster>(&object)
                .map_err(|e| e.to_string())
                .and_then(|c| ClusterSnapshot::new(c).map_err(|e| e.to_string()));
            match cluster {
                Ok(snapshot) => snapshots.push(snapshot),
                Err(err) => tracing::warn!(
                    cluster = object.metadata.name.as_deref().unwrap_or_default(),
                    %err,
                    "cluster left out of scheduling"
                ),
            }
        }
        *self
            .snapshots
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(snapshots);
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

    /// One binding; `Ok(Some(delay))` asks to try again after `delay` (a failed schedule).
    async fn reconcile(&self, key: &BindingKey) -> Result<Option<Duration>, ControllerError> {
        let started = Instant::now();
        let resource = binding_resource(key.cluster_scoped);
        let store = if key.cluster_scoped {
            &self.cluster_bindings
        } else {
            &self.bindings
        };
        let namespace = (!key.cluster_scoped).then_some(key.namespace.as_str());
        let Some(object) = store.get_named(namespace, &key.name) else {
            return Ok(None);
        };
        if object.metadata().deletion_timestamp.is_some() {
            return Ok(None);
        }
        // Without its aggregated status (see `view`): most reconciles (a fresh scheduler's whole list, every
        // Duplicated binding on a cluster change) end in no write, and the status is most of the text.
        let binding = super::view::read(&object, &resource)?;
        if !served_by(
            &binding.metadata,
            &binding.spec,
            &self.config.scheduler_name,
        ) {
            return Ok(None);
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
            return Ok(None);
        };
        let current = super::view::to_json(&binding)?;
        self.schedule(
            key, &resource, &current, &binding, &snapshots, trigger, started,
        )
        .await
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
        started: Instant,
    ) -> Result<Option<Duration>, ControllerError> {
        let schedule_type = schedule_type(trigger);
        let now = now_rfc3339();
        let placement = binding.spec.placement.clone().unwrap_or_default();
        let observed_affinity = binding
            .status
            .as_ref()
            .map(|s| s.scheduler_observed_affinity_name.as_str())
            .filter(|name| !name.is_empty());
        let algorithm = Instant::now();
        let outcome = prepare(&placement, "spec.placement").and_then(|prepared| {
            let request = ScheduleRequest {
                spec: &binding.spec,
                placement: &placement,
                prepared: &prepared,
                workload: None,
                observed_affinity,
                fresh: trigger == ScheduleTrigger::FreshSchedule,
                keep_empty: self.config.enable_empty_workload_propagation,
                scheduler_name: &self.config.scheduler_name,
            };
            schedule(&self.framework, &request, snapshots)
        });
        self.metrics.algorithm(algorithm.elapsed().as_secs_f64());
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
            Err(err) => (scheduler_error(&err.to_string(), &now), false),
        };
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
            let patch = spec_patch(&result, &version);
            let updated = api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            version = updated.metadata.resource_version.unwrap_or_default();
            generation = updated.metadata.generation;
            self.own_writes.wrote(key.clone(), version.clone());
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
        if scheduled {
            Ok(None)
        } else {
            Ok(Some(self.backoff.fail(key.clone())))
        }
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
