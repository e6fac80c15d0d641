//! The binding status controller's runtime: one `kube::runtime::Controller` over ResourceBindings and one over
//! ClusterResourceBindings, each also woken by the Works that name their binding in annotations
//! (`resourcebinding.karmada.io/namespace` + `/name`, or `clusterresourcebinding.karmada.io/name`).
//!
//! Per binding: list its Works by the binding's permanent-id label, write `status.aggregatedStatus` and the
//! FullyApplied condition through the status subresource (read resourceVersion as precondition; a 409
//! requeues), then aggregate onto the template's own `.status` with the interpreter and write it through the
//! template's status subresource, recording AggregateStatusSucceed / AggregateStatusFailed on the template.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::ResourceBinding;
use karmada_api::work::{AggregatedStatusItem, ResourceBindingStatus, Work};
use karmada_interpreter::{Interpreter, Operation, Target};
use kube::api::{ApiResource, DynamicObject, ListParams, PostParams};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use super::aggregate::{desired_binding_status, ready_replicas};
use super::metrics::BindingMetrics;
use super::template::TemplateResolver;
use crate::binding::BindingScope;
use crate::keys::{
    ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_RESOURCE_BINDING_NAME,
    ANNOTATION_RESOURCE_BINDING_NAMESPACE, LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
    LABEL_RESOURCE_BINDING_PERMANENT_ID,
};
use crate::runtime::{ControllerError, EventRecorder, EventType, resources, typed};

/// Component name on the Events it records.
pub const COMPONENT: &str = "binding-status-controller";
/// Event reasons on the template, as Karmada names them.
pub const REASON_AGGREGATE_STATUS_SUCCEED: &str = "AggregateStatusSucceed";
pub const REASON_AGGREGATE_STATUS_FAILED: &str = "AggregateStatusFailed";
const MESSAGE_AGGREGATE_STATUS_SUCCEED: &str =
    "Update Resource with AggregatedStatus successfully.";

/// How often series of deleted bindings are dropped from the gauge.
const METRICS_SWEEP: Duration = Duration::from_secs(30);

/// Settings of the binding status controller.
#[derive(Clone, Debug)]
pub struct BindingStatusConfig {
    pub interpreter: Interpreter,
    /// `--concurrent-resourcebinding-syncs` (and the cluster-scoped one): bindings reconciled at once.
    pub concurrency: u16,
}

impl Default for BindingStatusConfig {
    fn default() -> Self {
        Self {
            interpreter: Interpreter::native(),
            concurrency: 5,
        }
    }
}

struct Shared {
    client: kube::Client,
    interpreter: Interpreter,
    resolver: TemplateResolver,
    recorder: EventRecorder,
    metrics: BindingMetrics,
}

struct Context {
    shared: Arc<Shared>,
    scope: BindingScope,
    resource: ApiResource,
}

/// Runs both controllers until `cancel` fires.
pub async fn run(
    client: kube::Client,
    config: BindingStatusConfig,
    metrics: BindingMetrics,
    cancel: CancellationToken,
) {
    let shared = Arc::new(Shared {
        resolver: TemplateResolver::new(client.clone()),
        recorder: EventRecorder::new(client.clone(), COMPONENT),
        interpreter: config.interpreter,
        metrics: metrics.clone(),
        client,
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
    let rb = controller(&namespaced, config.concurrency, &cancel);
    let crb = controller(&cluster, config.concurrency, &cancel);
    let stores = [rb.store(), crb.store()];
    tokio::join!(
        drive(rb, namespaced),
        drive(crb, cluster),
        sweep_metrics(metrics, stores, cancel),
    );
}

fn controller(
    context: &Context,
    concurrency: u16,
    cancel: &CancellationToken,
) -> Controller<DynamicObject> {
    let client = &context.shared.client;
    let bindings = resources::all(client, &context.resource);
    let works = resources::all(client, &resources::work());
    let scope = context.scope;
    let resource = context.resource.clone();
    Controller::new_with(
        bindings,
        watcher::Config::default(),
        context.resource.clone(),
    )
    .with_config(ControllerConfig::default().concurrency(concurrency))
    .watches_with(
        works,
        resources::work(),
        watcher::Config::default(),
        move |work| binding_of_work(&work, scope, &resource),
    )
    .graceful_shutdown_on(cancel.clone().cancelled_owned())
}

async fn drive(controller: Controller<DynamicObject>, context: Arc<Context>) {
    controller
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(%err, "binding status reconcile");
            }
        })
        .await;
}

/// Drops the gauge series of bindings no longer in either controller's cache.
async fn sweep_metrics(
    metrics: BindingMetrics,
    stores: [Store<DynamicObject>; 2],
    cancel: CancellationToken,
) {
    // Starts one period in: series only exist for bindings reconciled after the caches synced.
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + METRICS_SWEEP, METRICS_SWEEP);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let live: BTreeSet<(String, String)> = stores
            .iter()
            .flat_map(|s| s.state())
            .map(|b| {
                (
                    b.metadata.namespace.clone().unwrap_or_default(),
                    b.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        metrics.retain(&live);
    }
}

/// The binding a Work belongs to, from the annotations the binding controller writes on it.
fn binding_of_work(
    work: &DynamicObject,
    scope: BindingScope,
    resource: &ApiResource,
) -> Option<ObjectRef<DynamicObject>> {
    let annotations = work.metadata.annotations.as_ref()?;
    match scope {
        BindingScope::Namespaced => {
            let namespace = annotations.get(ANNOTATION_RESOURCE_BINDING_NAMESPACE)?;
            let name = annotations.get(ANNOTATION_RESOURCE_BINDING_NAME)?;
            Some(ObjectRef::new_with(name, resource.clone()).within(namespace))
        }
        BindingScope::Cluster => {
            let name = annotations.get(ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME)?;
            Some(ObjectRef::new_with(name, resource.clone()))
        }
    }
}

fn error_policy(_: Arc<DynamicObject>, err: &ControllerError, _: Arc<Context>) -> Action {
    Action::requeue(err.retry_after())
}

fn now() -> Time {
    // Whole seconds: what the API round-trips, so an unchanged condition compares equal after a re-read.
    Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH))
}

async fn reconcile(
    object: Arc<DynamicObject>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    if object.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let shared = &context.shared;
    let binding: ResourceBinding = typed::to_typed(&object)?;
    let id_label = match context.scope {
        BindingScope::Namespaced => LABEL_RESOURCE_BINDING_PERMANENT_ID,
        BindingScope::Cluster => LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
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
    let works = binding_works(&shared.client, id_label, id).await?;
    let status = desired_binding_status(binding.status.as_ref(), &binding.spec, &works, &now());
    if binding.status.as_ref() != Some(&status) {
        write_binding_status(&context, &object, &status).await?;
    }
    let namespace = binding.metadata.namespace.clone().unwrap_or_default();
    let name = binding.metadata.name.clone().unwrap_or_default();
    shared.metrics.record(
        &namespace,
        &name,
        i64::from(binding.spec.replicas),
        ready_replicas(&status.aggregated_status),
    );
    aggregate_template(shared, &binding, &status.aggregated_status).await?;
    Ok(Action::await_change())
}

async fn binding_works(
    client: &kube::Client,
    id_label: &str,
    id: &str,
) -> Result<Vec<Work>, ControllerError> {
    let api = resources::all(client, &resources::work());
    let list = api
        .list(&ListParams::default().labels(&format!("{id_label}={id}")))
        .await?;
    Ok(list
        .items
        .iter()
        .filter_map(|work| match typed::to_typed::<Work>(work) {
            Ok(work) => Some(work),
            Err(err) => {
                tracing::warn!(%err, work = ?work.metadata.name, "skipping a malformed Work");
                None
            }
        })
        .collect())
}

async fn write_binding_status(
    context: &Context,
    object: &DynamicObject,
    status: &ResourceBindingStatus,
) -> Result<(), ControllerError> {
    let mut value = typed::to_json(object)?;
    if let Some(root) = value.as_object_mut() {
        root.insert("status".into(), serde_json::to_value(status)?);
    }
    let updated: DynamicObject = serde_json::from_value(value)?;
    let name = object.metadata.name.clone().unwrap_or_default();
    let api = match &object.metadata.namespace {
        Some(namespace) => {
            resources::namespaced(&context.shared.client, &context.resource, namespace)
        }
        None => resources::all(&context.shared.client, &context.resource),
    };
    api.replace_status(&name, &PostParams::default(), &updated)
        .await?;
    Ok(())
}

/// Aggregates the per-cluster statuses onto the template's `.status`, for kinds with an AggregateStatus hook.
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
    let Some(template) = shared
        .resolver
        .get(
            &resource.api_version,
            &resource.kind,
            &resource.namespace,
            &resource.name,
        )
        .await?
    else {
        return Ok(());
    };
    if !resource.uid.is_empty() && template.metadata.uid.as_deref() != Some(resource.uid.as_str()) {
        // A newer object of the same name; its own binding will be reconciled for it.
        return Ok(());
    }
    let reference = crate::runtime::reference_of(&template);
    let current = typed::to_json(&template)?;
    let aggregated = match shared.interpreter.aggregate_status(&current, items) {
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
    if aggregated.get("status") == current.get("status") {
        return Ok(());
    }
    let updated: DynamicObject = serde_json::from_value(aggregated)?;
    let api = shared
        .resolver
        .api(&resource.api_version, &resource.kind, &resource.namespace)
        .await?;
    match api
        .replace_status(&resource.name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => {
            shared
                .recorder
                .record(
                    &reference,
                    EventType::Normal,
                    REASON_AGGREGATE_STATUS_SUCCEED,
                    MESSAGE_AGGREGATE_STATUS_SUCCEED,
                )
                .await;
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
