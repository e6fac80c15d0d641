//! The endpointslice controller's runtime (Karmada's `endpointSlice`, in the controller-manager): reported slice
//! Works → `imported-<cluster>-<slice>` EndpointSlices in the control plane, per [`super::derive`].
//!
//! Woken by the Works (the shared Work watch), by the imported slices (a slice changed or deleted by hand is put
//! back; one whose Work is gone is deleted), and by Clusters whose readiness changed (their slices are
//! withdrawn or restored). Writes carry the resourceVersion read; the finalizer comes off a Work only after its
//! imported slice is gone.

use std::collections::HashMap;
use std::sync::Arc;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use karmada_api::Work;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::derive::{holds_finalizer, plan, up_to_date};
use super::{
    ENDPOINT_SLICE_CONTROLLER_VALUE, FINALIZER_ENDPOINT_SLICE_CONTROLLER,
    LABEL_ENDPOINT_SLICE_MANAGED_BY, LABEL_WORK_MANAGED_BY, writes,
};
use crate::execution::ServedClusters;
use crate::execution::controller::works_watch_config;
use crate::keys::{ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE};
use crate::names::{cluster_of_execution_namespace, execution_namespace};
use crate::runtime::runner::Action;
use crate::runtime::{Cache, CompactObject, ControllerError, Informers, keyed, resources, typed};

/// The watch of imported slices (shared with the service-import controller).
pub fn imported_slices_config() -> watcher::Config {
    watcher::Config::default().labels(&format!(
        "{LABEL_ENDPOINT_SLICE_MANAGED_BY}={ENDPOINT_SLICE_CONTROLLER_VALUE}"
    ))
}

/// (namespace, name) of a Work.
type WorkKey = (String, String);

struct Context {
    client: kube::Client,
    works: Cache,
    slices: Cache,
    clusters: Store<DynamicObject>,
}

/// Whether the Cluster named `name` is Ready.
pub fn cluster_ready(clusters: &Store<DynamicObject>, name: &str) -> bool {
    clusters
        .get(&reflector::ObjectRef::new_with(name, resources::cluster()))
        .and_then(|object| typed::to_typed::<karmada_api::Cluster>(&object).ok())
        .and_then(|cluster| {
            cluster
                .ready_condition()
                .map(|condition| condition.status == "True")
        })
        .unwrap_or(false)
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, informers: Informers, cancel: CancellationToken) {
    let works = informers.subscribe(
        ServedClusters::Push.works_api(&client),
        works_watch_config(),
    );
    let slices = informers.subscribe(
        resources::all_raw(&client, &resources::endpoint_slice()),
        imported_slices_config(),
    );
    let (clusters, cluster_events) = super::shared::watch_clusters(&client);
    let context = Arc::new(Context {
        client,
        works: works.store.clone(),
        slices: slices.store.clone(),
        clusters,
    });
    let (mut wake, woken) = mpsc::channel::<WorkKey>(256);
    let by_cluster = {
        let context = context.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let mut events = std::pin::pin!(cluster_events);
            let mut ready: HashMap<String, bool> = HashMap::new();
            loop {
                let event = tokio::select! {
                    () = cancel.cancelled() => return,
                    event = events.next() => event,
                };
                let Some(event) = event else { return };
                let names: Vec<String> = match &event {
                    Event::Apply(o) | Event::InitApply(o) | Event::Delete(o) => {
                        o.metadata.name.clone().into_iter().collect()
                    }
                    Event::Init | Event::InitDone => continue,
                };
                for name in names {
                    let now = cluster_ready(&context.clusters, &name);
                    if ready.insert(name.clone(), now) == Some(now) {
                        continue;
                    }
                    let namespace = execution_namespace(&name);
                    for work in context.works.state() {
                        if work.metadata().namespace() == Some(namespace.as_str())
                            && work.label(LABEL_WORK_MANAGED_BY).is_some()
                            && wake.send(key_of(&work)).await.is_err()
                        {
                            return;
                        }
                    }
                }
            }
        })
    };
    let work_keys = works.events.filter_map(|event| {
        std::future::ready(match event {
            Event::Apply(w) | Event::InitApply(w) | Event::Delete(w) if concerns(&w) => {
                Some(key_of(&w))
            }
            _ => None,
        })
    });
    let slice_keys = slices.events.filter_map(|event| {
        std::future::ready(match event {
            Event::Apply(s) | Event::InitApply(s) | Event::Delete(s) => {
                match (
                    s.annotation(ANNOTATION_WORK_NAMESPACE),
                    s.annotation(ANNOTATION_WORK_NAME),
                ) {
                    (Some(namespace), Some(name)) => {
                        Some((namespace.to_string(), name.to_string()))
                    }
                    _ => None,
                }
            }
            _ => None,
        })
    });
    let reconciler = context.clone();
    keyed::run(
        "endpointslice",
        futures::stream::select_all([work_keys.boxed(), slice_keys.boxed(), woken.boxed()]),
        4,
        move |key| {
            let context = reconciler.clone();
            async move { reconcile(&context, key).await }
        },
        cancel,
    )
    .await;
    by_cluster.abort();
}

fn key_of(work: &CompactObject) -> WorkKey {
    let metadata = work.metadata();
    (
        metadata.namespace().unwrap_or_default().to_string(),
        metadata.name().to_string(),
    )
}

/// Whether a Work event may concern this controller (a reported Work, or one holding its finalizer).
fn concerns(work: &CompactObject) -> bool {
    work.label(LABEL_WORK_MANAGED_BY).is_some()
        || work
            .metadata()
            .finalizers
            .iter()
            .any(|f| f.as_ref() == FINALIZER_ENDPOINT_SLICE_CONTROLLER)
}

fn value_of(object: &CompactObject) -> Result<Value, ControllerError> {
    object.decode()
}

/// The imported slices written for the Work `key`.
fn imported_of(context: &Context, key: &WorkKey) -> Vec<Arc<CompactObject>> {
    context
        .slices
        .state()
        .into_iter()
        .filter(|s| {
            s.annotation(ANNOTATION_WORK_NAMESPACE) == Some(key.0.as_str())
                && s.annotation(ANNOTATION_WORK_NAME) == Some(key.1.as_str())
        })
        .collect()
}

async fn reconcile(context: &Arc<Context>, key: WorkKey) -> Result<Action, ControllerError> {
    let existing = imported_of(context, &key);
    let work = match context.works.get_named(Some(&key.0), &key.1) {
        Some(object) => Some(object.decode::<Work>()?),
        None => None,
    };
    let Some(work) = work else {
        // The Work is gone: so is whatever was imported for it.
        for slice in &existing {
            writes::delete(
                &context.client,
                &resources::endpoint_slice(),
                &value_of(slice)?,
            )
            .await?;
        }
        return Ok(Action::await_change());
    };
    let Some(cluster) = cluster_of_execution_namespace(&key.0) else {
        return Ok(Action::await_change());
    };
    let ready = cluster_ready(&context.clusters, cluster);
    let Some(plan) = plan(&work, ready) else {
        return Ok(Action::await_change());
    };
    let desired_name = plan
        .desired
        .as_ref()
        .and_then(|d| d.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    for slice in &existing {
        if Some(slice.metadata().name()) != desired_name.as_deref() {
            writes::delete(
                &context.client,
                &resources::endpoint_slice(),
                &value_of(slice)?,
            )
            .await?;
        }
    }
    if let Some(desired) = &plan.desired {
        let namespace = desired
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let current = match desired_name
            .as_deref()
            .and_then(|name| context.slices.get_named(Some(namespace), name))
        {
            Some(object) => Some(value_of(&object)?),
            None => None,
        };
        writes::upsert(
            &context.client,
            &resources::endpoint_slice(),
            desired,
            current.as_ref(),
            up_to_date,
        )
        .await?;
    }
    if plan.release && holds_finalizer(&work) {
        let mut released = work.clone();
        if let Some(finalizers) = released.metadata.finalizers.as_mut() {
            finalizers.retain(|f| f != FINALIZER_ENDPOINT_SLICE_CONTROLLER);
        }
        let api = resources::namespaced(&context.client, &resources::work(), &key.0);
        api.replace(
            &key.1,
            &PostParams::default(),
            &typed::to_dynamic(&released, &resources::work())?,
        )
        .await?;
    }
    Ok(Action::await_change())
}
