//! The service-export controller's runtime (Karmada's `serviceExport`, and the member side of the
//! MultiClusterService `endpointsliceCollect`): for each served member cluster — every Push cluster in the
//! controller-manager ([`ServedClusters::Push`]), its own cluster in an agent ([`ServedClusters::Only`]) — it
//! watches the member's ServiceExports, Services and EndpointSlices, and the reported and MultiClusterService
//! Works of the cluster's execution namespace, and keeps the reported Works of each (cluster, namespace,
//! Service) what [`super::report`] says they should be.
//!
//! Member watches start when a served Cluster appears, restart when its spec changes (new endpoint or
//! credentials) and stop when it goes. A key of a member whose watches have not listed yet waits: reporting from
//! a partial view would delete Works of slices not yet seen. While a member is unreachable its caches keep the
//! last state, so nothing is reported away; the endpointslice controller withdraws the imported slices of a
//! cluster that is not Ready instead.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::{Cluster, Work};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::report::{ReportInput, WorkWrite, report};
use super::{
    LABEL_ENDPOINT_SLICE_MANAGED_BY, LABEL_ENDPOINT_SLICE_SERVICE_NAME, LABEL_MCS_NAME,
    LABEL_MCS_NAMESPACE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, LABEL_WORK_MANAGED_BY,
    managed_by_karmada,
};
use crate::execution::ServedClusters;
use crate::execution::controller::works_watch_config;
use crate::execution::queue::reflect_events;
use crate::names::{cluster_of_execution_namespace, execution_namespace};
use crate::runtime::runner::Action;
use crate::runtime::{
    CompactObject, ControllerError, Informers, LabelIndex, MemberClients, keyed, resources, typed,
};

/// (cluster, namespace, Service).
pub type ServiceKey = (String, String, String);

/// Settings of the service-export controller.
#[derive(Clone)]
pub struct ServiceExportConfig {
    pub served: ServedClusters,
    pub members: MemberClients,
    /// The process's shared watches (the Work watch is execution's).
    pub informers: Informers,
    /// Keys reconciled at once.
    pub concurrency: usize,
}

impl ServiceExportConfig {
    pub fn new(served: ServedClusters, members: MemberClients) -> Self {
        Self {
            served,
            members,
            informers: Informers::default(),
            concurrency: 4,
        }
    }
}

/// The watched state of one member.
struct MemberState {
    cancel: CancellationToken,
    exports: Store<DynamicObject>,
    services: Store<Service>,
    slices: Store<EndpointSlice>,
    /// Watches whose first list arrived (three when the member's view is complete).
    listed: Arc<AtomicUsize>,
}

struct Context {
    client: kube::Client,
    config: ServiceExportConfig,
    members: Mutex<HashMap<String, (Value, MemberState)>>,
    by_export: LabelIndex,
    by_mcs: LabelIndex,
    keys: mpsc::Sender<ServiceKey>,
    cancel: CancellationToken,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, config: ServiceExportConfig, cancel: CancellationToken) {
    let works = config
        .informers
        .subscribe(config.served.works_api(&client), works_watch_config());
    let by_export = works.label_index(LABEL_SERVICE_NAME);
    let by_mcs = works.label_index(LABEL_MCS_NAME);
    let (keys, triggers) = mpsc::channel(1024);
    let context = Arc::new(Context {
        client: client.clone(),
        config: config.clone(),
        members: Mutex::new(HashMap::new()),
        by_export,
        by_mcs,
        keys: keys.clone(),
        cancel: cancel.clone(),
    });
    let work_keys = works
        .events
        .flat_map(|event| futures::stream::iter(keys_of_work_event(event)));
    let clusters = reflect_events(
        resources::all(&client, &resources::cluster()),
        config.served.clusters_config(),
        reflector::store::Writer::new(resources::cluster()),
    );
    let feeder = tokio::spawn(follow_clusters(clusters, context.clone()));
    let reconciler = context.clone();
    keyed::run(
        "service-export",
        futures::stream::select(work_keys, triggers),
        config.concurrency,
        move |key| {
            let context = reconciler.clone();
            async move { reconcile(&context, key).await }
        },
        cancel.clone(),
    )
    .await;
    feeder.abort();
    for (_, member) in context.members.lock().await.values() {
        member.cancel.cancel();
    }
}

/// Keys a control-plane Work event touches: the Service its export or MultiClusterService labels name.
fn keys_of_work_event(event: Event<CompactObject>) -> Vec<ServiceKey> {
    let work = match &event {
        Event::Apply(w) | Event::InitApply(w) | Event::Delete(w) => w,
        Event::Init | Event::InitDone => return Vec::new(),
    };
    let Some(cluster) = work
        .metadata()
        .namespace()
        .and_then(cluster_of_execution_namespace)
    else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    for (namespace_label, name_label) in [
        (LABEL_SERVICE_NAMESPACE, LABEL_SERVICE_NAME),
        (LABEL_MCS_NAMESPACE, LABEL_MCS_NAME),
    ] {
        if let (Some(namespace), Some(name)) = (work.label(namespace_label), work.label(name_label))
        {
            keys.push((cluster.to_string(), namespace.to_string(), name.to_string()));
        }
    }
    keys
}

/// Starts, restarts and stops member watches as served Clusters come, change and go.
async fn follow_clusters(
    events: impl Stream<Item = Event<DynamicObject>> + Send,
    context: Arc<Context>,
) {
    let mut events = std::pin::pin!(events);
    loop {
        let event = tokio::select! {
            () = context.cancel.cancelled() => return,
            event = events.next() => event,
        };
        let Some(event) = event else { return };
        let (object, deleted) = match &event {
            Event::Apply(o) | Event::InitApply(o) => (o, false),
            Event::Delete(o) => (o, true),
            Event::Init | Event::InitDone => continue,
        };
        let name = object.name_any();
        let Ok(cluster) = typed::to_typed::<Cluster>(object) else {
            continue;
        };
        let spec = object.data.get("spec").cloned().unwrap_or(Value::Null);
        let mut members = context.members.lock().await;
        let served = !deleted && context.config.served.serves(&cluster);
        match members.get(&name) {
            Some((known, _)) if served && *known == spec => continue,
            Some((_, state)) => {
                state.cancel.cancel();
                members.remove(&name);
            }
            None if !served => continue,
            None => {}
        }
        if !served {
            continue;
        }
        match context.config.members.client(&cluster).await {
            Ok(member) => {
                let state = watch_member(&context, &name, member);
                members.insert(name, (spec, state));
            }
            Err(err) => {
                tracing::warn!(cluster = %name, %err, "service export: no client for the member");
            }
        }
    }
}

fn watch_member(context: &Arc<Context>, cluster: &str, member: kube::Client) -> MemberState {
    let cancel = context.cancel.child_token();
    let listed = Arc::new(AtomicUsize::new(0));
    let exports = spawn_watch(
        context,
        cluster,
        Api::<DynamicObject>::all_with(member.clone(), &resources::service_export()),
        reflector::store::Writer::new(resources::service_export()),
        &cancel,
        &listed,
        |object: &DynamicObject| object.name_any(),
    );
    let services = spawn_watch(
        context,
        cluster,
        Api::<Service>::all(member.clone()),
        reflector::store::Writer::default(),
        &cancel,
        &listed,
        |service: &Service| service.name_any(),
    );
    let slices = spawn_watch(
        context,
        cluster,
        Api::<EndpointSlice>::all(member),
        reflector::store::Writer::default(),
        &cancel,
        &listed,
        |slice: &EndpointSlice| {
            slice
                .labels()
                .get(LABEL_ENDPOINT_SLICE_SERVICE_NAME)
                .cloned()
                .unwrap_or_default()
        },
    );
    MemberState {
        cancel,
        exports,
        services,
        slices,
        listed,
    }
}

/// Watches one kind in a member into a store; each event wakes the key `service_of` names.
fn spawn_watch<K>(
    context: &Arc<Context>,
    cluster: &str,
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    cancel: &CancellationToken,
    listed: &Arc<AtomicUsize>,
    service_of: impl Fn(&K) -> String + Send + 'static,
) -> Store<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
{
    let store = writer.as_reader();
    let events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .filter_map(|event| std::future::ready(event.ok()));
    let (cancel, listed, cluster) = (cancel.clone(), listed.clone(), cluster.to_string());
    let mut keys = context.keys.clone();
    tokio::spawn(async move {
        let mut events = std::pin::pin!(events);
        let mut counted = false;
        loop {
            let event = tokio::select! {
                () = cancel.cancelled() => return,
                event = events.next() => event,
            };
            let Some(event) = event else { return };
            let object = match &event {
                Event::Apply(o) | Event::InitApply(o) | Event::Delete(o) => o,
                Event::InitDone => {
                    if !counted {
                        counted = true;
                        listed.fetch_add(1, Ordering::SeqCst);
                    }
                    continue;
                }
                Event::Init => continue,
            };
            let service = service_of(object);
            if service.is_empty() {
                continue;
            }
            let key = (
                cluster.clone(),
                object.meta().namespace.clone().unwrap_or_default(),
                service,
            );
            if keys.send(key).await.is_err() {
                return;
            }
        }
    });
    store
}

/// The reported Works of one Service in `cluster`'s execution namespace, and whether a MultiClusterService
/// collects it there.
fn control_plane_view(context: &Context, key: &ServiceKey) -> (Vec<Work>, bool) {
    let (cluster, namespace, service) = key;
    let execution = execution_namespace(cluster);
    let mut reported: HashMap<String, Work> = HashMap::new();
    let mut collected = false;
    for (index, namespace_label) in [
        (&context.by_export, LABEL_SERVICE_NAMESPACE),
        (&context.by_mcs, LABEL_MCS_NAMESPACE),
    ] {
        for object in index.get(service) {
            if object.metadata().namespace() != Some(execution.as_str())
                || object.label(namespace_label) != Some(namespace.as_str())
            {
                continue;
            }
            let Ok(work) = object.decode::<Work>() else {
                continue;
            };
            let is_mcs_marker = work
                .spec
                .workload
                .manifests
                .iter()
                .any(|m| m.get("kind").and_then(Value::as_str) == Some("MultiClusterService"));
            if is_mcs_marker {
                collected |= work.metadata.deletion_timestamp.is_none();
                continue;
            }
            if object.label(LABEL_WORK_MANAGED_BY).is_some() {
                reported.insert(object.metadata().name().to_string(), work);
            }
        }
    }
    (reported.into_values().collect(), collected)
}

async fn reconcile(context: &Arc<Context>, key: ServiceKey) -> Result<Action, ControllerError> {
    let (cluster, namespace, service) = &key;
    let (reported, collected) = control_plane_view(context, &key);
    let members = context.members.lock().await;
    let Some((_, member)) = members.get(cluster) else {
        // Not (or no longer) a served cluster: its Works are another instance's, or go with the cluster.
        return Ok(Action::await_change());
    };
    if member.listed.load(Ordering::SeqCst) < 3 {
        return Ok(Action::requeue(Duration::from_millis(500)));
    }
    let reference = |name: &str| reflector::ObjectRef::<Service>::new(name).within(namespace);
    let exported = member
        .exports
        .get(
            &reflector::ObjectRef::new_with(service, resources::service_export()).within(namespace),
        )
        .is_some_and(|e| e.metadata.deletion_timestamp.is_none());
    let member_service = member
        .services
        .get(&reference(service))
        .map(|s| serde_json::to_value(s.as_ref()))
        .transpose()?;
    let slices: Vec<Value> = member
        .slices
        .state()
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(namespace.as_str()))
        .filter(|s| s.labels().get(LABEL_ENDPOINT_SLICE_SERVICE_NAME) == Some(service))
        .filter(|s| {
            !managed_by_karmada(
                s.labels()
                    .get(LABEL_ENDPOINT_SLICE_MANAGED_BY)
                    .map(String::as_str),
            )
        })
        .map(|s| serde_json::to_value(s.as_ref()))
        .collect::<Result<_, _>>()?;
    drop(members);
    let input = ReportInput {
        cluster,
        namespace,
        service,
        exported,
        collected,
        member_service: member_service.as_ref(),
        member_slices: slices.iter().collect(),
        reported: reported.iter().collect(),
    };
    let execution = execution_namespace(cluster);
    for write in report(&input) {
        send_work(&context.client, &execution, write).await?;
    }
    Ok(Action::await_change())
}

/// Sends one Work write: creates, replaces with the read resourceVersion, or deletes with uid and
/// resourceVersion preconditions (a Work already gone is fine).
pub async fn send_work(
    client: &kube::Client,
    namespace: &str,
    write: WorkWrite,
) -> Result<(), ControllerError> {
    let api = resources::namespaced(client, &resources::work(), namespace);
    match write {
        WorkWrite::Create(work) => {
            // A 409 (made meanwhile) is retried at once: the next pass sees it and updates it.
            let object = typed::to_dynamic(work.as_ref(), &resources::work())?;
            api.create(&PostParams::default(), &object).await?;
        }
        WorkWrite::Update(work) => {
            let name = work.metadata.name.clone().unwrap_or_default();
            let object = typed::to_dynamic(work.as_ref(), &resources::work())?;
            api.replace(&name, &PostParams::default(), &object).await?;
        }
        WorkWrite::Delete {
            name,
            uid,
            resource_version,
        } => {
            let params = DeleteParams::background().preconditions(Preconditions {
                uid,
                resource_version,
            });
            match api.delete(&name, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => return Err(err.into()),
            }
        }
    }
    Ok(())
}
