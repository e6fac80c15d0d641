//! The resource detector's runtime (docs/karmada.md, "Resource detector"): watches (Cluster)PropagationPolicies,
//! (Cluster)OverridePolicies (for `dependentOverrides`) and every propagatable resource template
//! ([`super::templates`]), and reconciles one template key at a time from one bounded queue.
//!
//! Per template it asks the pure [`super::decide`] and acts: claim the template (labels and annotations, a
//! merge patch carrying the read resourceVersion), create or update its (Cluster)ResourceBinding
//! ([`super::desired_binding`] / [`super::update_binding`], an update with the read resourceVersion), or release
//! a claim (from the binding, then the template) when the policy is gone, or when a policy's creation or update
//! leaves it claimed but unselected (a template whose own change takes it out of the selection stays claimed, as
//! in Karmada). Bindings are
//! kept on release, so members keep their workloads; a binding goes only with its template (ownerReference).
//!
//! Policy events queue the templates the policy selects or claims: a new policy claims waiting templates, an
//! update is pushed to the templates it claims (not with `activationPreference: Lazy`), a deletion releases
//! them. Events `ApplyPolicySucceed` / `ApplyPolicyFailed` are recorded on the template.
//!
//! The detector keeps Karmada's finalizer on (Cluster)PropagationPolicies ([`super::finalizer`]): a deleted
//! policy goes only after its claims are released.
//!
//! Invariants: no template is decided before both policy caches hold their first list (a claim naming a policy
//! not yet cached would otherwise be released); every write is conditional on the resourceVersion read; a 409
//! requeues at once, other failures back off per key.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use karmada_api::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use karmada_interpreter::Interpreter;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::claim::{Claim, claim, current_claim, describe, unclaim};
use super::decide::{Decision, decide};
use super::finalizer::PolicyKey;
use super::matching::PolicyRef;
use super::policies::PolicyIndex;
use super::skip::DetectorFilter;
use super::templates::{TemplateKey, Templates, run_discovery};
use super::{desired_binding, keep_recorded_resource_version, update_binding};
use crate::names::binding_name;
use crate::runtime::metrics::{ReconcileMetrics, ReconcileResult};
use crate::runtime::own_writes::OwnWrites;
use crate::runtime::queue::{Backoff, WorkQueue};
use crate::runtime::{
    ControllerError, EventRecorder, EventType, Informers, reference_of, resources, typed,
};

mod policy_events;
use policy_events::{finalizer_worker, watch_policies};

/// Event reasons Karmada records on templates.
pub const EVENT_APPLY_POLICY_SUCCEED: &str = "ApplyPolicySucceed";
pub const EVENT_APPLY_POLICY_FAILED: &str = "ApplyPolicyFailed";
/// Component name on the detector's events.
pub const COMPONENT: &str = "resource-detector";

/// The detector's settings.
#[derive(Clone)]
pub struct DetectorConfig {
    /// `--skipped-propagating-namespaces` and `--skipped-propagating-apis`.
    pub filter: DetectorFilter,
    /// The PropagationPolicyPreemption feature gate (Karmada's default: off).
    pub preemption: bool,
    /// The PriorityBasedScheduling feature gate (Karmada's default: on): bindings carry
    /// `spec.schedulePriority` resolved from the policy's PriorityClass.
    pub priority_scheduling: bool,
    /// Concurrent template reconciles (`--concurrent-resource-template-syncs`, default 5).
    pub workers: usize,
    /// Most template keys waiting at once.
    pub queue_capacity: usize,
    /// How often API resources are discovered again (new CRDs).
    pub discovery_period: Duration,
    pub interpreter: Interpreter,
    /// Announcements of changed ResourceInterpreterCustomizations: their targets' templates are decided again
    /// (replicas and requirements may now read differently).
    pub customization_changes:
        Option<tokio::sync::broadcast::Sender<Vec<karmada_interpreter::Target>>>,
    /// The process's shared watches; the resource templates are read through them.
    pub informers: Informers,
}

impl std::fmt::Debug for DetectorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DetectorConfig")
            .field("filter", &self.filter)
            .field("preemption", &self.preemption)
            .field("priority_scheduling", &self.priority_scheduling)
            .field("workers", &self.workers)
            .field("queue_capacity", &self.queue_capacity)
            .field("discovery_period", &self.discovery_period)
            .field("interpreter", &self.interpreter)
            .finish_non_exhaustive()
    }
}

impl Default for DetectorConfig {
    fn default() -> Self {
        Self {
            filter: DetectorFilter::default(),
            preemption: false,
            priority_scheduling: true,
            workers: 64,
            queue_capacity: 65_536,
            discovery_period: Duration::from_secs(30),
            interpreter: Interpreter::native(),
            customization_changes: None,
            informers: Informers::default(),
        }
    }
}

/// What reconcile asks of the queue afterwards.
enum Next {
    Done,
    /// Decide again at once (a claim was released: another policy may take the template).
    Again,
    After(Duration),
}

/// How long a template waits for its policy's dependentOverrides before it is checked again (an
/// OverridePolicy arriving queues it sooner).
const DEPENDENT_OVERRIDES_RETRY: Duration = Duration::from_secs(30);

struct Detector {
    client: kube::Client,
    config: DetectorConfig,
    policies: RwLock<PolicyIndex>,
    templates: Templates,
    queue: WorkQueue<TemplateKey>,
    backoff: Backoff<TemplateKey>,
    recorder: EventRecorder,
    /// Bindings created by this detector that the shared cache does not show yet.
    created_unseen: OwnWrites<(String, String), std::time::Instant>,
    /// Templates waiting for a dependent override to exist.
    waiting_overrides: Mutex<HashSet<TemplateKey>>,
    /// Templates whose policy no longer selects them after the policy changed: release their claims.
    release_pending: Mutex<HashSet<TemplateKey>>,
    /// Policies whose finalizer needs adding or finalizing.
    finalizing: WorkQueue<PolicyKey>,
    finalizing_backoff: Backoff<PolicyKey>,
    reconciles: ReconcileMetrics,
}

/// Karmada's name for the detector's template queue and worker: the metrics' `controller` label.
const QUEUE_NAME: &str = "resource detector";

/// Runs the resource detector until `cancel` fires.
pub async fn run(client: kube::Client, config: DetectorConfig, cancel: CancellationToken) {
    let queue = WorkQueue::named(config.queue_capacity, QUEUE_NAME);
    let detector = Arc::new(Detector {
        recorder: EventRecorder::new(client.clone(), COMPONENT),
        client: client.clone(),
        policies: RwLock::default(),
        templates: Templates::default(),
        queue: queue.clone(),
        backoff: Backoff::new(Duration::from_millis(500), Duration::from_secs(60)),
        created_unseen: OwnWrites::default(),
        waiting_overrides: Mutex::default(),
        release_pending: Mutex::default(),
        finalizing: WorkQueue::new(config.queue_capacity),
        finalizing_backoff: Backoff::new(Duration::from_millis(500), Duration::from_secs(60)),
        reconciles: ReconcileMetrics::new(QUEUE_NAME, config.workers.max(1)),
        config,
    });
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(queue.clone().run_delays(cancel.clone()));
    tasks.spawn(detector.finalizing.clone().run_delays(cancel.clone()));

    let (pp_synced, mut pp_ready) = watch::channel(false);
    let (cpp_synced, mut cpp_ready) = watch::channel(false);
    tasks.spawn(watch_policies::<PropagationPolicy>(
        Arc::clone(&detector),
        resources::propagation_policy(),
        pp_synced,
        cancel.clone(),
    ));
    tasks.spawn(watch_policies::<ClusterPropagationPolicy>(
        Arc::clone(&detector),
        resources::cluster_propagation_policy(),
        cpp_synced,
        cancel.clone(),
    ));
    let (op_synced, _) = watch::channel(false);
    let (cop_synced, _) = watch::channel(false);
    tasks.spawn(watch_policies::<OverridePolicy>(
        Arc::clone(&detector),
        resources::override_policy(),
        op_synced,
        cancel.clone(),
    ));
    tasks.spawn(watch_policies::<ClusterOverridePolicy>(
        Arc::clone(&detector),
        resources::cluster_override_policy(),
        cop_synced,
        cancel.clone(),
    ));

    // Templates are decided only against complete policy caches.
    let synced = async {
        let _ = pp_ready.wait_for(|ready| *ready).await;
        let _ = cpp_ready.wait_for(|ready| *ready).await;
    };
    tokio::select! {
        () = cancel.cancelled() => {}
        () = synced => {
            tasks.spawn(run_discovery(
                client,
                detector.config.informers.clone(),
                detector.templates.clone(),
                detector.config.filter.clone(),
                queue.clone(),
                detector.config.discovery_period,
                cancel.clone(),
            ));
            for _ in 0..detector.config.workers.max(1) {
                tasks.spawn(worker(Arc::clone(&detector), cancel.clone()));
            }
            tasks.spawn(finalizer_worker(Arc::clone(&detector), cancel.clone()));
            if let Some(changes) = &detector.config.customization_changes {
                tasks.spawn(requeue_customized(Arc::clone(&detector), changes.subscribe(), cancel.clone()));
            }
            tracing::info!("resource detector started");
        }
    }
    cancel.cancelled().await;
    while tasks.join_next().await.is_some() {}
}

/// Queues the templates of every kind whose interpreter customization changed.
async fn requeue_customized(
    detector: Arc<Detector>,
    mut changes: tokio::sync::broadcast::Receiver<Vec<karmada_interpreter::Target>>,
    cancel: CancellationToken,
) {
    loop {
        let targets = tokio::select! {
            () = cancel.cancelled() => return,
            targets = changes.recv() => targets,
        };
        let targets = match targets {
            Ok(targets) => Some(targets),
            // Announcements were missed: every kind may have changed.
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        // A target of kind `*` (a webhook rule with wildcards) stands for every kind.
        let targets = targets.filter(|targets| !targets.iter().any(|t| t.kind == "*"));
        let keys = match &targets {
            Some(targets) => targets
                .iter()
                .flat_map(|t| {
                    detector
                        .templates
                        .keys_where(Some((&t.api_version, &t.kind)), |_| true)
                })
                .collect(),
            None => detector.templates.keys_where(None, |_| true),
        };
        for key in keys {
            detector.queue.add(key).await;
        }
    }
}

async fn worker(detector: Arc<Detector>, cancel: CancellationToken) {
    while let Some(key) = detector.queue.next(&cancel).await {
        let reconciling = detector.reconciles.start();
        let result = tokio::select! {
            () = cancel.cancelled() => return,
            result = detector.reconcile(&key) => result,
        };
        reconciling.finish(match &result {
            Ok(Next::Done) => ReconcileResult::Success,
            Ok(Next::Again) => ReconcileResult::Requeue,
            Ok(Next::After(_)) => ReconcileResult::RequeueAfter,
            Err(_) => ReconcileResult::Error,
        });
        let queue = &detector.queue;
        queue.done(key.clone()).await;
        match result {
            Ok(Next::Done) => detector.backoff.forget(&key),
            Ok(Next::Again) => {
                detector.backoff.forget(&key);
                queue.add(key).await;
            }
            Ok(Next::After(delay)) => queue.add_after(key, delay),
            Err(err) if err.is_conflict() => queue.add_after(key, err.retry_after()),
            Err(err) => {
                let delay = detector.backoff.fail(key.clone());
                tracing::warn!(template = %key, %err, ?delay, "resource detector: retrying");
                queue.add_after(key, delay);
            }
        }
    }
}

fn api_version_of(object: &Value) -> &str {
    object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Detector {
    async fn reconcile(&self, key: &TemplateKey) -> Result<Next, ControllerError> {
        // Read before the template, so an edit landing after this read is reconciled again with its mark.
        let edit = self.templates.edited.mark_of(key);
        let Some(object) = self.templates.get(key)? else {
            return Ok(Next::Done);
        };
        if object.metadata.deletion_timestamp.is_some() {
            return Ok(Next::Done);
        }
        let template = typed::to_json(&object)?;
        let matching = std::time::Instant::now();
        let (propagation, cluster) = self
            .policies
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .candidates(&template);
        let decision = decide(
            &template,
            &self.config.filter,
            &propagation,
            &cluster,
            self.config.preemption,
        );
        let metrics = crate::metrics::global();
        metrics.observe_match_policy(matching.elapsed());
        let claiming = matches!(decision, Decision::Claim(_));
        match decision {
            Decision::Skip(_) | Decision::Waiting => Ok(Next::Done),
            Decision::Retry(message) => {
                // The claiming policy is being deleted; its finalizer releases this template.
                tracing::debug!(template = %key, %message, "waiting");
                Ok(Next::After(Duration::from_secs(1)))
            }
            Decision::Release { policy_id } => {
                self.release(key, &object, &template, &policy_id).await?;
                Ok(Next::Again)
            }
            Decision::Unchanged => {
                let released_by_policy = self
                    .release_pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(key);
                // A template whose own change took it out of its policy's selection stays claimed (Karmada's
                // rule); only the policy's creation or update releases it.
                if !released_by_policy {
                    return Ok(Next::Done);
                }
                let id = match current_claim(&template) {
                    Some(Claim::Propagation { id, .. } | Claim::Cluster { id, .. }) => id,
                    None => return Ok(Next::Done),
                };
                self.release(key, &object, &template, &id).await?;
                Ok(Next::Again)
            }
            Decision::Claim(policy) | Decision::Apply(policy) => {
                // A claim of a template another policy holds is a preemption.
                let preempting = claiming && current_claim(&template).is_some();
                let applying = std::time::Instant::now();
                let applied = self.apply(key, &object, template, policy, edit).await;
                metrics.observe_apply_policy(applied.is_ok(), applying.elapsed());
                if preempting {
                    metrics.count_preemption(applied.is_ok());
                }
                match applied {
                    Ok(next) => Ok(next),
                    Err(err) => {
                        if !err.is_conflict() {
                            self.recorder
                                .record(
                                    &reference_of(&object),
                                    EventType::Warning,
                                    EVENT_APPLY_POLICY_FAILED,
                                    &format!("Apply policy({}) failed: {err}", policy_name(policy)),
                                )
                                .await;
                        }
                        Err(err)
                    }
                }
            }
        }
    }

    fn template_api(&self, key: &TemplateKey) -> Result<Api<DynamicObject>, ControllerError> {
        let kind = self
            .templates
            .kind(&key.gvk)
            .ok_or_else(|| ControllerError::Invalid(format!("{key}: kind is no longer watched")))?;
        Ok(if kind.namespaced {
            resources::namespaced(&self.client, &kind.resource, &key.namespace)
        } else {
            resources::all(&self.client, &kind.resource)
        })
    }

    fn binding_api(&self, key: &TemplateKey) -> Api<DynamicObject> {
        if key.namespace.is_empty() {
            resources::all(&self.client, &resources::cluster_resource_binding())
        } else {
            resources::namespaced(&self.client, &resources::resource_binding(), &key.namespace)
        }
    }

    /// Merge-patches `object` with `patch`, conditional on `resource_version`.
    async fn patch_with_version(
        api: &Api<DynamicObject>,
        name: &str,
        mut patch: Value,
        resource_version: Option<&str>,
    ) -> Result<DynamicObject, ControllerError> {
        if let Some(rv) = resource_version {
            patch["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        }
        Ok(api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    /// Removes the claim of `policy_id` from the binding, then from the template; the binding stays.
    async fn release(
        &self,
        key: &TemplateKey,
        object: &DynamicObject,
        template: &Value,
        policy_id: &str,
    ) -> Result<(), ControllerError> {
        let bindings = self.binding_api(key);
        let name = binding_name(&key.gvk.kind, &key.name);
        if let Some(binding) = bindings.get_opt(&name).await? {
            let json = typed::to_json(&binding)?;
            if let Some(patch) = unclaim(&json, policy_id) {
                Self::patch_with_version(
                    &bindings,
                    &name,
                    patch,
                    binding.metadata.resource_version.as_deref(),
                )
                .await?;
            }
        }
        if let Some(patch) = unclaim(template, policy_id) {
            Self::patch_with_version(
                &self.template_api(key)?,
                &key.name,
                patch,
                object.metadata.resource_version.as_deref(),
            )
            .await?;
            tracing::info!(template = %key, policy_id, "released claim");
        }
        Ok(())
    }

    /// Claims the template for `policy` if needed and makes its binding match.
    async fn apply(
        &self,
        key: &TemplateKey,
        object: &DynamicObject,
        mut template: Value,
        policy: PolicyRef<'_>,
        edit: Option<u64>,
    ) -> Result<Next, ControllerError> {
        let missing = self
            .policies
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .missing_overrides(policy);
        if !missing.is_empty() {
            self.waiting_overrides
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.clone());
            self.recorder
                .record(
                    &reference_of(object),
                    EventType::Warning,
                    EVENT_APPLY_POLICY_FAILED,
                    &format!(
                        "Apply policy({}) failed: waiting for dependent overrides {} to exist",
                        policy_name(policy),
                        missing.join(", ")
                    ),
                )
                .await;
            return Ok(Next::After(DEPENDENT_OVERRIDES_RETRY));
        }
        let invalid = |e: super::DetectorError| ControllerError::Invalid(e.to_string());
        let mut claimed_object = None;
        if let Some(patch) = claim(&template, policy).map_err(invalid)? {
            let patched = Self::patch_with_version(
                &self.template_api(key)?,
                &key.name,
                patch,
                object.metadata.resource_version.as_deref(),
            )
            .await?;
            template = typed::to_json(&patched)?;
            if api_version_of(&template).is_empty() {
                template["apiVersion"] = json!(api_version_of(&typed::to_json(object)?));
                template["kind"] = json!(key.gvk.kind);
            }
            claimed_object = Some(patched);
            tracing::info!(template = %key, policy = %describe(policy), "claimed template");
        }
        let priority = if self.config.priority_scheduling {
            self.schedule_priority(policy).await
        } else {
            None
        };
        let mut desired = desired_binding(&template, policy, &self.config.interpreter, priority)
            .map_err(invalid)?;
        if !self.config.priority_scheduling
            && let Some(spec) = desired.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.remove("schedulePriority");
        }
        let changed = match self.write_binding(key, &template, desired, edit).await? {
            Written::Yes => true,
            Written::No => false,
            Written::NotYetSeen => return Ok(Next::After(UNSEEN_RETRY)),
        };
        if let Some(mark) = edit {
            self.templates.edited.written(key, mark);
        }
        if changed {
            let reference = claimed_object
                .as_ref()
                .map(reference_of)
                .unwrap_or_else(|| reference_of(object));
            self.recorder
                .record(
                    &with_types(reference, object),
                    EventType::Normal,
                    EVENT_APPLY_POLICY_SUCCEED,
                    &format!("Apply policy({}) succeed", policy_name(policy)),
                )
                .await;
        }
        Ok(Next::Done)
    }

    /// The value of the PriorityClass the policy's `schedulePriority` names (`None`: no such class).
    async fn schedule_priority(&self, policy: PolicyRef<'_>) -> Option<i32> {
        let name = &policy
            .spec()
            .schedule_priority
            .as_ref()?
            .priority_class_name;
        let api: Api<k8s_openapi::api::scheduling::v1::PriorityClass> =
            Api::all(self.client.clone());
        match api.get_opt(name).await {
            Ok(class) => class.map(|c| c.value),
            Err(err) => {
                tracing::debug!(%err, name, "reading PriorityClass");
                None
            }
        }
    }

    /// Creates or updates the binding; whether anything was written. `edit` is the template's edit mark
    /// (see [`super::templates::Edited`]): without one, the binding keeps the template resourceVersion it
    /// records.
    async fn write_binding(
        &self,
        key: &TemplateKey,
        template: &Value,
        desired: Value,
        edit: Option<u64>,
    ) -> Result<Written, ControllerError> {
        let api = self.binding_api(key);
        let resource = if key.namespace.is_empty() {
            resources::cluster_resource_binding()
        } else {
            resources::resource_binding()
        };
        let name = binding_name(&key.gvk.kind, &key.name);
        let existing = match self.cached_binding(key, &resource, &name)? {
            Cached::Found(existing) => Some(existing),
            Cached::NotYetSeen => return Ok(Written::NotYetSeen),
            // The shared cache has listed and lacks it: create straight away; a binding created meanwhile
            // by someone else answers AlreadyExists and is read below.
            Cached::Absent => None,
            Cached::Unknown => api
                .get_opt(&name)
                .await?
                .map(|b| typed::to_json(&b))
                .transpose()?,
        };
        let existing_json = match existing {
            Some(existing) => existing,
            None => {
                let body = typed::to_dynamic(&desired, &resource)?;
                match api
                    .create(&PostParams::default(), &body)
                    .await
                    .map_err(ControllerError::from)
                {
                    Ok(_) => {
                        tracing::info!(template = %key, binding = %name, "created binding");
                        self.created_unseen
                            .wrote(binding_key(key, &name), std::time::Instant::now());
                        return Ok(Written::Yes);
                    }
                    // Gone again by the time it is read: the 409 requeues the template at once.
                    Err(err) if err.is_already_exists() => {
                        typed::to_json(&api.get_opt(&name).await?.ok_or(err)?)?
                    }
                    Err(err) => return Err(err),
                }
            }
        };
        let uid = template
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(owner) = other_controller(&existing_json, uid) {
            return Err(ControllerError::Invalid(format!(
                "binding {name} is controlled by {} {} (uid {}), not this template; waiting for it to be garbage collected",
                owner.kind, owner.name, owner.uid
            )));
        }
        // A claim by another policy (preemption, or a claim released earlier) gives way to the new one.
        let unclaimed = match current_claim(&existing_json) {
            Some(Claim::Propagation { id, .. } | Claim::Cluster { id, .. })
                if current_claim(&desired).is_some_and(|wanted| !same_claim_id(&wanted, &id)) =>
            {
                unclaim(&existing_json, &id)
                    .map(|patch| apimachinery::merge_patch(&existing_json, &patch))
            }
            _ => None,
        };
        let current = unclaimed.as_ref().unwrap_or(&existing_json);
        let mut updated = update_binding(current, &desired);
        if edit.is_none() {
            keep_recorded_resource_version(&mut updated, &existing_json);
        }
        let written = if updated == existing_json {
            Written::No
        } else {
            let body = typed::to_dynamic(&updated, &resource)?;
            api.replace(&name, &PostParams::default(), &body).await?;
            tracing::debug!(template = %key, binding = %name, "updated binding");
            Written::Yes
        };
        Ok(written)
    }
}

/// What [`Detector::write_binding`] did.
enum Written {
    Yes,
    No,
    /// The detector created the binding and the shared cache does not show it yet: look again shortly
    /// (creating again would only answer AlreadyExists, and a GET cost a request per template).
    NotYetSeen,
}

/// How soon a template whose new binding the cache does not show yet is looked at again.
const UNSEEN_RETRY: Duration = Duration::from_millis(50);

/// What the process's shared binding cache knows of one binding.
enum Cached {
    /// As JSON, with apiVersion and kind.
    Found(Value),
    /// Created by this detector, not in the cache yet.
    NotYetSeen,
    Absent,
    /// No listed cache of the kind in this process (the detector run on its own): ask the API server.
    Unknown,
}

impl Detector {
    /// The binding as the shared cache (kept by the binding controller) has it. Writes from a cached copy
    /// carry its resourceVersion, so a stale copy costs a conflict and a requeue, never a lost update; reading
    /// the cache saves the GET that every template reconcile would otherwise make.
    fn cached_binding(
        &self,
        key: &TemplateKey,
        resource: &kube::api::ApiResource,
        name: &str,
    ) -> Result<Cached, ControllerError> {
        let Some(store) = self
            .config
            .informers
            .cached(&resources::all_raw(&self.client, resource))
        else {
            return Ok(Cached::Unknown);
        };
        let namespace = (!key.namespace.is_empty()).then_some(key.namespace.as_str());
        let created = binding_key(key, name);
        match store.get_named(namespace, name) {
            None if self
                .created_unseen
                .holds(&created, |at| at.elapsed() < UNSEEN_PATIENCE) =>
            {
                Ok(Cached::NotYetSeen)
            }
            Some(cached) => {
                self.created_unseen.seen(&created);
                // Decoded to JSON in one step: the comparison reads JSON, and a binding's aggregated status
                // makes it large.
                let mut object: Value = cached.decode()?;
                if let Some(map) = object.as_object_mut() {
                    map.insert("apiVersion".into(), json!(resource.api_version));
                    map.insert("kind".into(), json!(resource.kind));
                }
                Ok(Cached::Found(object))
            }
            None => Ok(Cached::Absent),
        }
    }
}

/// The controller owner of `binding` when it is not the template with `uid`.
fn other_controller(
    binding: &Value,
    uid: &str,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    let owners = binding.pointer("/metadata/ownerReferences")?;
    serde_json::from_value::<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>(
        owners.clone(),
    )
    .ok()?
    .into_iter()
    .find(|o| o.controller == Some(true) && o.uid != uid)
}

fn binding_key(key: &TemplateKey, binding_name: &str) -> (String, String) {
    (key.namespace.clone(), binding_name.to_string())
}

/// How long a created binding may stay unseen by the cache before it is no longer waited for (it may have been
/// deleted before the cache saw it); then it costs one create answered AlreadyExists and a read.
const UNSEEN_PATIENCE: Duration = Duration::from_secs(5);

fn same_claim_id(claim: &Claim, id: &str) -> bool {
    match claim {
        Claim::Propagation { id: own, .. } | Claim::Cluster { id: own, .. } => own == id,
    }
}

fn with_types(mut reference: ObjectReference, object: &DynamicObject) -> ObjectReference {
    if reference.kind.is_none() {
        reference.api_version = object.types.as_ref().map(|t| t.api_version.clone());
        reference.kind = object.types.as_ref().map(|t| t.kind.clone());
    }
    reference
}

/// `namespace/name` of a PropagationPolicy, `name` of a ClusterPropagationPolicy (as Karmada's messages).
fn policy_name(policy: PolicyRef<'_>) -> String {
    if policy.is_cluster() {
        policy.name().to_string()
    } else {
        format!("{}/{}", policy.namespace(), policy.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_as_karmada_writes_them() {
        let pp: PropagationPolicy = serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"resourceSelectors": []}}),
        )
        .expect("pp");
        let cpp: ClusterPropagationPolicy = serde_json::from_value(
            json!({"metadata": {"name": "c"}, "spec": {"resourceSelectors": []}}),
        )
        .expect("cpp");
        assert_eq!(policy_name(PolicyRef::Namespaced(&pp)), "ns/p");
        assert_eq!(policy_name(PolicyRef::Cluster(&cpp)), "c");
    }

    #[test]
    fn a_binding_controlled_by_another_template_is_named() {
        let binding = |owners: Value| json!({"metadata": {"name": "b", "ownerReferences": owners}});
        let owner = |uid: &str, controller: bool| json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": uid, "controller": controller});
        assert!(other_controller(&binding(json!([owner("t1", true)])), "t1").is_none());
        assert!(
            other_controller(&binding(json!([owner("t0", false)])), "t1").is_none(),
            "an owner that is not the controller"
        );
        let other = other_controller(&binding(json!([owner("t0", true)])), "t1").expect("other");
        assert_eq!(
            (other.kind.as_str(), other.uid.as_str()),
            ("Deployment", "t0")
        );
        assert!(other_controller(&json!({"metadata": {}}), "t1").is_none());
    }
}
