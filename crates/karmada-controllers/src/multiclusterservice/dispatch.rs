//! The endpointslice-dispatch controller's runtime (controller-manager): for each MultiClusterService, the
//! slices its Ready providers report are copied into every consumer as Works ([`super::plan::dispatched_work`]);
//! copies no longer wanted (a consumer or provider left the lists, a provider is not Ready, the slice or the
//! MultiClusterService went) are deleted. A reported slice Work that is deleted or no longer collected loses
//! its copies, then the `karmada.io/mcs-endpointslice-dispatch-controller` finalizer that waited for them.
//! Condition `EndpointSliceDispatched`.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use karmada_api::Work;
use karmada_api::networking::MultiClusterService;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::reflector::Store;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::controller::{cluster_names, set_condition};
use super::plan::{
    cross_cluster, dispatched_up_to_date, dispatched_work, is_collected_slice, resolve, sides,
};
use super::{
    EVENT_DISPATCH_FAILED, EVENT_DISPATCH_SUCCEED, REASON_DISPATCHED_FAILED,
    REASON_DISPATCHED_SUCCEED,
};
use crate::execution::ServedClusters;
use crate::execution::controller::works_watch_config;
use crate::execution::queue::touched;
use crate::mcs::endpointslice::cluster_ready;
use crate::mcs::{
    ANNOTATION_PROVISION_CLUSTER, FINALIZER_MCS_DISPATCH, LABEL_MCS_NAME, LABEL_MCS_NAMESPACE,
    writes,
};
use crate::names::cluster_of_execution_namespace;
use crate::runtime::runner::Action;
use crate::runtime::{
    Cache, CompactObject, ControllerError, EventRecorder, EventType, Informers, LabelIndex, keyed,
    resources, typed,
};

/// What to reconcile: a MultiClusterService's dispatch, or the release of one reported Work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Mcs(String, String),
    Release(String, String),
}

struct Context {
    client: kube::Client,
    mcses: Cache,
    works: Cache,
    by_mcs: LabelIndex,
    clusters: Store<DynamicObject>,
    recorder: EventRecorder,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, informers: Informers, cancel: CancellationToken) {
    let mcses = informers.subscribe(
        resources::all_raw(&client, &resources::multi_cluster_service()),
        watcher::Config::default(),
    );
    let works = informers.subscribe(
        ServedClusters::Push.works_api(&client),
        works_watch_config(),
    );
    let (clusters, cluster_events) = crate::mcs::shared::watch_clusters(&client);
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), "endpointslice-dispatch-controller"),
        client,
        mcses: mcses.store.clone(),
        works: works.store.clone(),
        by_mcs: works.label_index(LABEL_MCS_NAME),
        clusters,
    });
    let mcs_keys = mcses.events.filter_map(|e| {
        std::future::ready(touched(&e).cloned().map(|o| {
            Key::Mcs(
                o.metadata().namespace().unwrap_or_default().to_string(),
                o.metadata().name().to_string(),
            )
        }))
    });
    let work_keys = works
        .events
        .flat_map(|e| futures::stream::iter(keys_of_work(e)));
    // Readiness decides which providers' slices are served: every MultiClusterService looks again.
    let every = {
        let mcses = context.mcses.clone();
        cluster_events.flat_map(move |_| {
            let keys = crate::mcs::shared::all_keys(&mcses);
            futures::stream::iter(
                keys.into_iter()
                    .map(|(namespace, name)| Key::Mcs(namespace, name)),
            )
        })
    };
    let reconciler = context.clone();
    keyed::run(
        "endpointslice-dispatch",
        futures::stream::select_all([mcs_keys.boxed(), work_keys.boxed(), every.boxed()]),
        2,
        move |key| {
            let context = reconciler.clone();
            async move { reconcile(&context, key).await }
        },
        cancel,
    )
    .await;
}

fn keys_of_work(event: Event<CompactObject>) -> Vec<Key> {
    let Some(work) = touched(&event).cloned() else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    if let (Some(namespace), Some(name)) =
        (work.label(LABEL_MCS_NAMESPACE), work.label(LABEL_MCS_NAME))
    {
        keys.push(Key::Mcs(namespace.to_string(), name.to_string()));
    }
    let holds = work
        .metadata()
        .finalizers
        .iter()
        .any(|f| f.as_ref() == FINALIZER_MCS_DISPATCH);
    if holds {
        keys.push(Key::Release(
            work.metadata().namespace().unwrap_or_default().to_string(),
            work.metadata().name().to_string(),
        ));
    }
    keys
}

fn value_of(object: &CompactObject) -> Result<Value, ControllerError> {
    object.decode()
}

async fn reconcile(context: &Arc<Context>, key: Key) -> Result<Action, ControllerError> {
    match key {
        Key::Mcs(namespace, name) => dispatch(context, &namespace, &name).await,
        Key::Release(namespace, name) => release(context, &namespace, &name).await,
    }
}

/// The Works of a MultiClusterService: (reported slices with their provider, dispatched copies).
fn works_of(context: &Context, namespace: &str, name: &str) -> (Vec<(String, Work)>, Vec<Value>) {
    let mut reported = Vec::new();
    let mut dispatched = Vec::new();
    for object in context.by_mcs.get(name) {
        if object.label(LABEL_MCS_NAMESPACE) != Some(namespace) {
            continue;
        }
        if object.annotation(ANNOTATION_PROVISION_CLUSTER).is_some() {
            if let Ok(value) = value_of(&object) {
                dispatched.push(value);
            }
            continue;
        }
        let Ok(work) = object.decode::<Work>() else {
            continue;
        };
        let provider = work
            .metadata
            .namespace
            .as_deref()
            .and_then(cluster_of_execution_namespace)
            .map(str::to_string);
        if let Some(provider) = provider
            && is_collected_slice(&work)
            && work.metadata.deletion_timestamp.is_none()
        {
            reported.push((provider, work));
        }
    }
    (reported, dispatched)
}

/// (namespace, name) of a Work given as JSON.
fn work_key(work: &Value) -> (String, String) {
    let text = |field: &str| {
        work["metadata"][field]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    (text("namespace"), text("name"))
}

async fn dispatch(
    context: &Arc<Context>,
    namespace: &str,
    name: &str,
) -> Result<Action, ControllerError> {
    let mcs: Option<MultiClusterService> = match context.mcses.get_named(Some(namespace), name) {
        Some(object) => Some(object.decode()?),
        None => None,
    };
    let live = mcs
        .as_ref()
        .filter(|m| m.metadata.deletion_timestamp.is_none() && cross_cluster(m));
    let (reported, dispatched) = works_of(context, namespace, name);
    let mut desired: BTreeMap<(String, String), Value> = BTreeMap::new();
    if let Some(mcs) = live {
        let existing = cluster_names(&context.clusters);
        let (provider_names, consumer_names) = sides(mcs);
        let (providers, _) = resolve(&provider_names, &existing);
        let (consumers, _) = resolve(&consumer_names, &existing);
        for (provider, work) in &reported {
            if !providers.contains(provider) || !cluster_ready(&context.clusters, provider) {
                continue;
            }
            for consumer in consumers.iter().filter(|c| *c != provider) {
                if let Some(copy) = dispatched_work(namespace, name, work, provider, consumer) {
                    let key = work_key(&copy);
                    desired.insert(key, copy);
                }
            }
        }
    }
    let result = async {
        for copy in &dispatched {
            let key = work_key(copy);
            if !desired.contains_key(&key) && copy.pointer("/metadata/deletionTimestamp").is_none()
            {
                writes::delete(&context.client, &resources::work(), copy).await?;
            }
        }
        for (key, copy) in &desired {
            let existing = context
                .works
                .get_named(Some(&key.0), &key.1)
                .map(|w| value_of(&w))
                .transpose()?;
            writes::upsert(
                &context.client,
                &resources::work(),
                copy,
                existing.as_ref(),
                dispatched_up_to_date,
            )
            .await?;
        }
        Ok::<_, ControllerError>(())
    }
    .await;
    if let Some(mcs) = live {
        let (status, reason, message, event_type, event_reason) = match &result {
            Ok(()) => (
                "True",
                REASON_DISPATCHED_SUCCEED,
                "EndpointSlice are dispatched successfully".to_string(),
                EventType::Normal,
                EVENT_DISPATCH_SUCCEED,
            ),
            Err(err) => (
                "False",
                REASON_DISPATCHED_FAILED,
                err.to_string(),
                EventType::Warning,
                EVENT_DISPATCH_FAILED,
            ),
        };
        let changed = set_condition(
            &context.client,
            mcs,
            karmada_api::networking::CONDITION_ENDPOINT_SLICE_DISPATCHED,
            status,
            reason,
            &message,
        )
        .await?;
        if changed {
            let reference = super::controller::reference(mcs);
            context
                .recorder
                .record(&reference, event_type, event_reason, &message)
                .await;
        }
    }
    result.map(|()| Action::await_change())
}

/// A reported Work deleted or no longer collected: its copies go, then the finalizer that waited for them.
async fn release(
    context: &Arc<Context>,
    namespace: &str,
    name: &str,
) -> Result<Action, ControllerError> {
    let Some(object) = context.works.get_named(Some(namespace), name) else {
        return Ok(Action::await_change());
    };
    let work: Work = object.decode()?;
    let collected = is_collected_slice(&work)
        && object.label(LABEL_MCS_NAME).is_some()
        && work.metadata.deletion_timestamp.is_none();
    if collected {
        return Ok(Action::await_change());
    }
    let Some(provider) = cluster_of_execution_namespace(namespace) else {
        return Ok(Action::await_change());
    };
    for copy in context.works.state() {
        if copy.metadata().name() == name
            && copy.annotation(ANNOTATION_PROVISION_CLUSTER) == Some(provider)
        {
            writes::delete(&context.client, &resources::work(), &value_of(&copy)?).await?;
        }
    }
    let mut released = work.clone();
    if let Some(finalizers) = released.metadata.finalizers.as_mut() {
        finalizers.retain(|f| f != FINALIZER_MCS_DISPATCH);
    }
    resources::namespaced(&context.client, &resources::work(), namespace)
        .replace(
            name,
            &PostParams::default(),
            &typed::to_dynamic(&released, &resources::work())?,
        )
        .await?;
    Ok(Action::await_change())
}
