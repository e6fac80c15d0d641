//! The dependencies distributor's runtime: a `kube::runtime` applier over ResourceBindings, read through a
//! subscription to the process's shared watches ([`Informers`]), also woken by attached bindings (through their
//! `requiredBy` snapshots, from the same subscription) and by ConfigMaps, Secrets, ServiceAccounts,
//! PersistentVolumeClaims, Services and EndpointSlices that some binding depends on (through the
//! [`DependencyIndex`]; a ServiceImport depends on its derived Service and on the EndpointSlices its label
//! selector picks, each of which gets its own attached binding).
//!
//! Per binding with `propagateDeps: true`: keep the distributor's finalizer on it, read the workload, ask the
//! interpreter for its dependencies, create or update one attached binding per existing dependency, release
//! the attached bindings it no longer needs, and record the dependencies annotation. When `propagateDeps` is
//! turned off or the binding is deleted, every attached binding is released and the finalizer removed. Writes
//! are replaces with the read resourceVersion (or deletes with uid and resourceVersion preconditions); a 409
//! requeues.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{
    ConfigMap, ObjectReference, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::ResourceBinding;
use karmada_interpreter::{DependentObjectReference, Interpreter};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::attached::{
    ANNOTATION_DEPENDENCIES, Detached, FINALIZER, attached_binding, binds, dependencies_annotation,
    detach, merge_attached,
};
use super::index::{BindingKey, DependencyIndex};
use crate::execution::queue::spec_and_metadata;
use crate::names::depended_by_label_key;
use crate::runtime::changes::changed_events;
use crate::runtime::runner::{self, Action, Loop, ObjectKey};
use crate::runtime::{
    CompactObject, ControllerError, EventRecorder, EventType, Informers, TemplateReader, resources,
    typed,
};

/// Component name on the Events it records.
pub const COMPONENT: &str = "dependencies-distributor";
/// Warning reason when a workload's dependencies cannot be distributed.
pub const REASON_DISTRIBUTE_DEPENDENCIES_FAILED: &str = "DistributeDependenciesFailed";

/// Settings of the dependencies distributor.
#[derive(Clone)]
pub struct DistributorConfig {
    pub interpreter: Interpreter,
    /// `--concurrent-dependent-resource-syncs` (Karmada's default 2).
    pub concurrency: u16,
    /// The process's shared watches; the ResourceBindings are read through them.
    pub informers: Informers,
}

impl std::fmt::Debug for DistributorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributorConfig")
            .field("interpreter", &self.interpreter)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

impl Default for DistributorConfig {
    fn default() -> Self {
        Self {
            interpreter: Interpreter::native(),
            concurrency: 2,
            informers: Informers::default(),
        }
    }
}

struct Context {
    client: kube::Client,
    interpreter: Interpreter,
    templates: TemplateReader,
    recorder: EventRecorder,
    index: Arc<Mutex<DependencyIndex>>,
}

/// What wakes a binding: a request for the reconcile queue.
type Trigger = BoxStream<'static, ObjectKey>;

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, config: DistributorConfig, cancel: CancellationToken) {
    let binding = resources::resource_binding();
    let index: Arc<Mutex<DependencyIndex>> = Arc::default();
    let subscription = config.informers.subscribe(
        resources::all_raw(&client, &binding),
        watcher::Config::default(),
    );
    // One watch wakes a binding on its own change and, for an attached binding, the bindings that require it
    // (kube's `Controller` would watch the bindings a second time for the latter). Status changes wake nothing:
    // a binding's status is rewritten as each member reports, and decoding the binding for each of those
    // (a hundred for a binding over a hundred members) only to find nothing to do made the distributor's cost
    // grow with the square of the members.
    let bindings: Trigger = changed_events(subscription.events, spec_and_metadata)
        .flat_map(|event| futures::stream::iter(woken_by_binding(event)))
        .boxed();
    let triggers = futures::stream::select_all([
        bindings,
        watch_dependency::<ConfigMap>(&client, &index),
        watch_dependency::<Secret>(&client, &index),
        watch_dependency::<ServiceAccount>(&client, &index),
        watch_dependency::<PersistentVolumeClaim>(&client, &index),
        watch_dependency::<Service>(&client, &index),
        watch_dependency::<EndpointSlice>(&client, &index),
    ]);
    let context = Arc::new(Context {
        templates: TemplateReader::new(client.clone(), config.informers.clone()),
        recorder: EventRecorder::new(client.clone(), COMPONENT),
        interpreter: config.interpreter,
        index,
        client,
    });
    runner::run(
        Loop {
            name: "dependencies-distributor",
            store: subscription.store,
            context,
            concurrency: usize::from(config.concurrency),
            resync: None,
        },
        triggers,
        |object,
         context|
         -> Pin<Box<dyn Future<Output = Result<Action, ControllerError>> + Send>> {
            Box::pin(reconcile(object, context))
        },
        error_policy,
        cancel,
    )
    .await;
}

/// The bindings a watch event of a binding wakes: the binding itself when applied, and the independent
/// bindings an attached one names (applied or deleted).
fn woken_by_binding(event: Event<CompactObject>) -> Vec<ObjectKey> {
    match event {
        Event::Apply(object) | Event::InitApply(object) => {
            let mut woken = vec![ObjectKey::of(&object)];
            woken.extend(requiring_bindings(&object));
            woken
        }
        Event::Delete(object) => requiring_bindings(&object),
        Event::Init | Event::InitDone => Vec::new(),
    }
}

/// Wakes the bindings that depend on objects of kind `K`.
fn watch_dependency<K>(client: &kube::Client, index: &Arc<Mutex<DependencyIndex>>) -> Trigger
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let index = index.clone();
    let objects = watcher::watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .filter_map(|object| std::future::ready(object.ok()));
    objects
        .flat_map(move |object: K| {
            let key = (
                K::kind(&()).to_string(),
                object.namespace().unwrap_or_default(),
                object.name_any(),
            );
            let labels = object.labels();
            let parents = index
                .lock()
                .map(|index| {
                    index.bindings_of_object(&key, |label| labels.get(label).map(String::as_str))
                })
                .unwrap_or_default();
            futures::stream::iter(
                parents
                    .into_iter()
                    .map(|(namespace, name)| ObjectKey::new(Some(&namespace), &name))
                    .collect::<Vec<_>>(),
            )
        })
        .boxed()
}

/// The independent bindings an attached binding names in `spec.requiredBy` (only those fields are decoded).
fn requiring_bindings(attached: &CompactObject) -> Vec<ObjectKey> {
    #[derive(Deserialize)]
    struct Attached {
        spec: Option<Spec>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        required_by: Option<Vec<Snapshot>>,
    }
    #[derive(Deserialize)]
    struct Snapshot {
        name: Option<String>,
        namespace: Option<String>,
    }
    let json = attached.json().unwrap_or_default();
    let Ok(Attached { spec: Some(spec) }) = serde_json::from_str::<Attached>(&json) else {
        return Vec::new();
    };
    spec.required_by
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let namespace = s.namespace.unwrap_or_default();
            Some(ObjectKey::new(Some(&namespace), &s.name?))
        })
        .collect()
}

fn error_policy(_: &CompactObject, err: &ControllerError, _: &Context) -> Action {
    Action::requeue(err.retry_after())
}

fn has_finalizer(binding: &ResourceBinding) -> bool {
    binding
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER)
}

async fn reconcile(
    object: Arc<CompactObject>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    let mut binding: ResourceBinding = object.decode()?;
    let namespace = binding.metadata.namespace.clone().unwrap_or_default();
    let name = binding.metadata.name.clone().unwrap_or_default();
    let key: BindingKey = (namespace.clone(), name.clone());
    let deleting = binding.metadata.deletion_timestamp.is_some();
    if deleting || !binding.spec.propagate_deps {
        if has_finalizer(&binding) {
            release(&context.client, &namespace, &name, &[]).await?;
            set_finalizer(&context.client, &binding, false).await?;
        }
        if let Ok(mut index) = context.index.lock() {
            index.remove(&key);
        }
        return Ok(Action::await_change());
    }
    if !has_finalizer(&binding) {
        binding = set_finalizer(&context.client, &binding, true).await?;
    }
    let resource = &binding.spec.resource;
    let Some(workload) = context
        .templates
        .referenced(resource, Some(&resource.resource_version))
        .await?
    else {
        // The workload is gone; garbage collection removes its binding, whose deletion releases the rest.
        return Ok(Action::await_change());
    };
    let dependencies = match context
        .interpreter
        .get_dependencies(&typed::to_json(&workload)?)
    {
        Ok(dependencies) => dependencies,
        Err(err) => {
            warn(
                &context,
                &binding,
                &format!("interpreting dependencies: {err}"),
            )
            .await;
            return Ok(Action::await_change());
        }
    };
    if let Ok(mut index) = context.index.lock() {
        index.set_all(key, &dependencies);
    }
    let mut present = Vec::new();
    for found in resolve(&context, &dependencies).await? {
        let desired = match attached_binding(&binding, &typed::to_json(&found)?) {
            Ok(desired) => desired,
            Err(err) => {
                warn(&context, &binding, &err.to_string()).await;
                return Ok(Action::await_change());
            }
        };
        apply_attached(&context.client, &desired).await?;
        present.push(DependentObjectReference {
            api_version: desired.spec.resource.api_version.clone(),
            kind: desired.spec.resource.kind.clone(),
            namespace: desired.spec.resource.namespace.clone(),
            name: desired.spec.resource.name.clone(),
            label_selector: None,
        });
    }
    release(&context.client, &namespace, &name, &present).await?;
    record_dependencies(&context.client, &binding, &dependencies).await?;
    Ok(Action::await_change())
}

/// The objects `dependencies` name that exist: each named one, and every object a selector picks. One that does
/// not exist yet is distributed when it appears (the index wakes the binding).
async fn resolve(
    context: &Context,
    dependencies: &[DependentObjectReference],
) -> Result<Vec<DynamicObject>, ControllerError> {
    let mut found = Vec::new();
    for dependency in dependencies {
        match &dependency.label_selector {
            None => found.extend(
                context
                    .templates
                    .get(
                        &dependency.api_version,
                        &dependency.kind,
                        &dependency.namespace,
                        &dependency.name,
                        None,
                    )
                    .await?,
            ),
            Some(selector) => {
                let api = context
                    .templates
                    .api(
                        &dependency.api_version,
                        &dependency.kind,
                        &dependency.namespace,
                    )
                    .await?;
                let listed = api
                    .list(&ListParams::default().labels(&selector.to_query()))
                    .await?;
                found.extend(listed.items.into_iter().map(|mut object| {
                    object.types = Some(kube::api::TypeMeta {
                        api_version: dependency.api_version.clone(),
                        kind: dependency.kind.clone(),
                    });
                    object
                }));
            }
        }
    }
    Ok(found)
}

async fn warn(context: &Context, binding: &ResourceBinding, message: &str) {
    let resource = resources::resource_binding();
    let reference = ObjectReference {
        api_version: Some(resource.api_version),
        kind: Some(resource.kind),
        name: binding.metadata.name.clone(),
        namespace: binding.metadata.namespace.clone(),
        uid: binding.metadata.uid.clone(),
        resource_version: binding.metadata.resource_version.clone(),
        field_path: None,
    };
    context
        .recorder
        .record(
            &reference,
            EventType::Warning,
            REASON_DISTRIBUTE_DEPENDENCIES_FAILED,
            message,
        )
        .await;
}

fn bindings_in(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    resources::namespaced(client, &resources::resource_binding(), namespace)
}

/// Adds or removes the distributor's finalizer; the updated binding.
async fn set_finalizer(
    client: &kube::Client,
    binding: &ResourceBinding,
    present: bool,
) -> Result<ResourceBinding, ControllerError> {
    let mut updated = binding.clone();
    let mut finalizers = updated.metadata.finalizers.take().unwrap_or_default();
    finalizers.retain(|f| f != FINALIZER);
    if present {
        finalizers.push(FINALIZER.to_string());
    }
    updated.metadata.finalizers = (!finalizers.is_empty()).then_some(finalizers);
    let namespace = binding.metadata.namespace.clone().unwrap_or_default();
    let name = binding.metadata.name.clone().unwrap_or_default();
    let written = bindings_in(client, &namespace)
        .replace(
            &name,
            &PostParams::default(),
            &typed::to_dynamic(&updated, &resources::resource_binding())?,
        )
        .await?;
    typed::to_typed(&written)
}

/// Creates the attached binding, or merges the requirement into the one there.
async fn apply_attached(
    client: &kube::Client,
    desired: &ResourceBinding,
) -> Result<(), ControllerError> {
    let namespace = desired.metadata.namespace.clone().unwrap_or_default();
    let name = desired.metadata.name.clone().unwrap_or_default();
    let api = bindings_in(client, &namespace);
    match api.get_opt(&name).await? {
        None => {
            api.create(
                &PostParams::default(),
                &typed::to_dynamic(desired, &resources::resource_binding())?,
            )
            .await?;
        }
        Some(existing) => {
            let existing: ResourceBinding = typed::to_typed(&existing)?;
            if let Some(merged) = merge_attached(&existing, desired) {
                api.replace(
                    &name,
                    &PostParams::default(),
                    &typed::to_dynamic(&merged, &resources::resource_binding())?,
                )
                .await?;
            }
        }
    }
    Ok(())
}

/// Releases the attached bindings of `parent_namespace/parent_name` that bind none of `keep`.
async fn release(
    client: &kube::Client,
    parent_namespace: &str,
    parent_name: &str,
    keep: &[DependentObjectReference],
) -> Result<(), ControllerError> {
    let api = bindings_in(client, parent_namespace);
    let label = depended_by_label_key(parent_namespace, parent_name);
    let attached = api.list(&ListParams::default().labels(&label)).await?;
    for object in &attached.items {
        let existing: ResourceBinding = typed::to_typed(object)?;
        if keep.iter().any(|d| binds(&existing, d)) {
            continue;
        }
        let name = existing.metadata.name.clone().unwrap_or_default();
        match detach(&existing, parent_namespace, parent_name) {
            Detached::Unchanged => {}
            Detached::Update(updated) => {
                api.replace(
                    &name,
                    &PostParams::default(),
                    &typed::to_dynamic(&updated, &resources::resource_binding())?,
                )
                .await?;
            }
            Detached::Delete => {
                let params = DeleteParams::background().preconditions(Preconditions {
                    uid: existing.metadata.uid.clone(),
                    resource_version: existing.metadata.resource_version.clone(),
                });
                match api.delete(&name, &params).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(err) => return Err(err.into()),
                }
            }
        }
    }
    Ok(())
}

/// Writes the dependencies annotation when it changed. A merge patch of one annotation cannot lose anyone
/// else's write.
async fn record_dependencies(
    client: &kube::Client,
    binding: &ResourceBinding,
    dependencies: &[DependentObjectReference],
) -> Result<(), ControllerError> {
    let value = dependencies_annotation(dependencies);
    let current = binding
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_DEPENDENCIES));
    if current == Some(&value) {
        return Ok(());
    }
    let namespace = binding.metadata.namespace.clone().unwrap_or_default();
    let name = binding.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({"metadata": {"annotations": {ANNOTATION_DEPENDENCIES: value}}});
    bindings_in(client, &namespace)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn a_bindings_status_does_not_wake_the_distributor() {
        let binding = |rv: &str, finalizers: Value, propagate: bool, status: Value| {
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": "web-deployment", "namespace": "default", "resourceVersion": rv,
                             "finalizers": finalizers},
                "spec": {"propagateDeps": propagate,
                         "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
                "status": status,
            }))
            .expect("binding");
            spec_and_metadata(&CompactObject::from_dynamic(&object).expect("compact"))
        };
        let first = binding("1", json!([]), true, json!({}));
        let reported = binding(
            "2",
            json!([]),
            true,
            json!({"aggregatedStatus": [{"clusterName": "m1"}]}),
        );
        assert_eq!(
            first, reported,
            "a status write and a new resourceVersion change nothing read"
        );
        assert_ne!(
            first,
            binding("3", json!([]), false, json!({})),
            "the spec is read"
        );
        assert_ne!(
            first,
            binding("4", json!([FINALIZER]), true, json!({})),
            "the finalizers are read"
        );
    }

    #[test]
    fn attached_bindings_wake_their_parents() {
        let attached: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "cfg-configmap", "namespace": "default"},
            "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg"},
                     "requiredBy": [{"namespace": "default", "name": "web-deployment"},
                                    {"namespace": "default", "name": "api-deployment"}]},
        }))
        .expect("binding");
        let attached = CompactObject::from_dynamic(&attached).expect("compact");
        let woken: Vec<String> = requiring_bindings(&attached)
            .iter()
            .map(|r| format!("{}/{}", r.namespace.clone().unwrap_or_default(), r.name))
            .collect();
        assert_eq!(woken, ["default/web-deployment", "default/api-deployment"]);
        let plain: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "default"}, "spec": {},
        }))
        .expect("binding");
        let plain = CompactObject::from_dynamic(&plain).expect("compact");
        assert!(requiring_bindings(&plain).is_empty());
    }
}
