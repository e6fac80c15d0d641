//! The multiclusterservice controller's runtime (controller-manager): per MultiClusterService, the finalizer,
//! the claimed Service, its binding over providers and consumers, the provider marker Works and the
//! `ServiceApplied` condition ([`super::plan`]). A MultiClusterService that is deleted or no longer asks for
//! `CrossCluster` releases the Service, deletes its binding and marker Works, then its finalizer.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use karmada_api::Work;
use karmada_api::networking::MultiClusterService;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::plan::{
    binding_up_to_date, claimed_service, cross_cluster, is_marker, marker_work, released_service,
    resolve, service_binding, sides,
};
use super::{
    ANNOTATION_NAME, EVENT_CLUSTER_NOT_FOUND, EVENT_SYNC_SERVICE_FAILED,
    EVENT_SYNC_SERVICE_SUCCEED, FINALIZER, KIND, LABEL_BINDING_MANAGED_BY,
    REASON_SERVICE_APPLIED_FAILED, REASON_SERVICE_APPLIED_SUCCEED,
};
use crate::execution::ServedClusters;
use crate::execution::controller::works_watch_config;
use crate::execution::queue::touched;
use crate::mcs::{LABEL_MCS_NAME, LABEL_MCS_NAMESPACE, writes};
use crate::names::{binding_name, cluster_of_execution_namespace};
use crate::runtime::runner::Action;
use crate::runtime::status_write::merge_status;
use crate::runtime::{
    Cache, CompactObject, ControllerError, EventRecorder, EventType, Informers, LabelIndex, keyed,
    resources, typed,
};

type McsKey = (String, String);

struct Context {
    client: kube::Client,
    services: Cache,
    bindings: Cache,
    mcses: Cache,
    works: LabelIndex,
    clusters: Store<DynamicObject>,
    recorder: EventRecorder,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, informers: Informers, cancel: CancellationToken) {
    let mcses = informers.subscribe(
        resources::all_raw(&client, &resources::multi_cluster_service()),
        watcher::Config::default(),
    );
    let services = informers.subscribe(
        resources::all_raw(&client, &resources::service()),
        watcher::Config::default(),
    );
    let bindings = informers.subscribe(
        resources::all_raw(&client, &resources::resource_binding()),
        watcher::Config::default(),
    );
    let works = informers.subscribe(
        ServedClusters::Push.works_api(&client),
        works_watch_config(),
    );
    let (clusters, cluster_events) = crate::mcs::shared::watch_clusters(&client);
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), "multiclusterservice-controller"),
        client,
        services: services.store.clone(),
        bindings: bindings.store.clone(),
        mcses: mcses.store.clone(),
        works: works.label_index(LABEL_MCS_NAME),
        clusters,
    });
    let key_of = |o: &CompactObject| {
        (
            o.metadata().namespace().unwrap_or_default().to_string(),
            o.metadata().name().to_string(),
        )
    };
    let mcs_keys = mcses
        .events
        .filter_map(move |e| std::future::ready(touched(&e).cloned().map(|o| key_of(&o))));
    // A Service or binding of the same name wakes its MultiClusterService (if any).
    let service_keys = services
        .events
        .filter_map(move |e| std::future::ready(touched(&e).cloned().map(|o| key_of(&o))));
    let binding_keys = bindings.events.filter_map(|e| {
        std::future::ready(touched(&e).cloned().and_then(|b| {
            (b.label(LABEL_BINDING_MANAGED_BY) == Some(KIND)).then(|| {
                (
                    b.metadata().namespace().unwrap_or_default().to_string(),
                    b.annotation(ANNOTATION_NAME)
                        .unwrap_or_default()
                        .to_string(),
                )
            })
        }))
    });
    // A cluster coming or going changes who "every cluster" is.
    let every = {
        let mcses = context.mcses.clone();
        cluster_events
            .flat_map(move |_| futures::stream::iter(crate::mcs::shared::all_keys(&mcses)))
    };
    let reconciler = context.clone();
    keyed::run(
        "multiclusterservice",
        futures::stream::select_all([
            mcs_keys.boxed(),
            service_keys.boxed(),
            binding_keys.boxed(),
            every.boxed(),
            // Read through the label index only; the events are drained so the shared watch never waits on us.
            works
                .events
                .filter_map(|_| std::future::ready(None))
                .boxed(),
        ]),
        2,
        move |key| {
            let context = reconciler.clone();
            async move { reconcile(&context, key).await }
        },
        cancel,
    )
    .await;
}

fn value_of(object: &CompactObject) -> Result<Value, ControllerError> {
    object.decode()
}

/// The names of the clusters that exist.
pub fn cluster_names(clusters: &Store<DynamicObject>) -> BTreeSet<String> {
    clusters
        .state()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

/// The reference Events of a MultiClusterService are recorded on.
pub fn reference(mcs: &MultiClusterService) -> k8s_openapi::api::core::v1::ObjectReference {
    crate::mcs::shared::reference(
        format!(
            "{}/{}",
            karmada_api::networking::GROUP,
            karmada_api::networking::VERSION
        ),
        KIND,
        &mcs.metadata,
    )
}

/// The MultiClusterService's marker Works, in every provider's execution namespace.
fn markers(context: &Context, namespace: &str, name: &str) -> Vec<Work> {
    context
        .works
        .get(name)
        .iter()
        .filter(|w| w.label(LABEL_MCS_NAMESPACE) == Some(namespace))
        .filter_map(|w| w.decode::<Work>().ok())
        .filter(is_marker)
        .collect()
}

async fn set_finalizer(
    context: &Context,
    mcs: &MultiClusterService,
    present: bool,
) -> Result<(), ControllerError> {
    let has = mcs
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER);
    if has == present {
        return Ok(());
    }
    let mut updated = mcs.clone();
    let finalizers = updated.metadata.finalizers.get_or_insert_with(Vec::new);
    finalizers.retain(|f| f != FINALIZER);
    if present {
        finalizers.push(FINALIZER.into());
    }
    let namespace = mcs.metadata.namespace.clone().unwrap_or_default();
    let name = mcs.metadata.name.clone().unwrap_or_default();
    resources::namespaced(
        &context.client,
        &resources::multi_cluster_service(),
        &namespace,
    )
    .replace(
        &name,
        &PostParams::default(),
        &typed::to_dynamic(&updated, &resources::multi_cluster_service())?,
    )
    .await?;
    Ok(())
}

async fn release(context: &Context, mcs: &MultiClusterService) -> Result<(), ControllerError> {
    let namespace = mcs.metadata.namespace.clone().unwrap_or_default();
    let name = mcs.metadata.name.clone().unwrap_or_default();
    if let Some(service) = context.services.get_named(Some(&namespace), &name) {
        let service = value_of(&service)?;
        let ours = service
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION_NAME))
            == Some(&json!(name));
        if ours && let Some(released) = released_service(&service) {
            writes::upsert(
                &context.client,
                &resources::service(),
                &released,
                Some(&service),
                |_, _| false,
            )
            .await?;
        }
    }
    if let Some(binding) = context
        .bindings
        .get_named(Some(&namespace), &binding_name("Service", &name))
        && binding.label(LABEL_BINDING_MANAGED_BY) == Some(KIND)
    {
        writes::delete(
            &context.client,
            &resources::resource_binding(),
            &value_of(&binding)?,
        )
        .await?;
    }
    for marker in markers(context, &namespace, &name) {
        writes::delete(
            &context.client,
            &resources::work(),
            &serde_json::to_value(&marker)?,
        )
        .await?;
    }
    set_finalizer(context, mcs, false).await
}

async fn reconcile(context: &Arc<Context>, key: McsKey) -> Result<Action, ControllerError> {
    let (namespace, name) = &key;
    let Some(object) = context.mcses.get_named(Some(namespace), name) else {
        return Ok(Action::await_change());
    };
    let mcs: MultiClusterService = object.decode()?;
    if mcs.metadata.deletion_timestamp.is_some() || !cross_cluster(&mcs) {
        release(context, &mcs).await?;
        return Ok(Action::await_change());
    }
    set_finalizer(context, &mcs, true).await?;
    let existing = cluster_names(&context.clusters);
    let (provider_names, consumer_names) = sides(&mcs);
    let (providers, missing_providers) = resolve(&provider_names, &existing);
    let (consumers, missing_consumers) = resolve(&consumer_names, &existing);
    let reference = reference(&mcs);
    let missing =
        report_missing_clusters(context, &reference, &missing_providers, &missing_consumers).await;
    sync_markers(context, &mcs, &key, &providers).await?;
    let clusters: BTreeSet<String> = providers.union(&consumers).cloned().collect();
    let applied = sync_service_binding(context, &mcs, &key, &clusters).await?;
    let (status, reason, message) = applied_condition(&applied, &missing);
    let changed = set_condition(
        &context.client,
        &mcs,
        karmada_api::networking::CONDITION_SERVICE_APPLIED,
        status,
        reason,
        &message,
    )
    .await?;
    if changed {
        let (event_type, event_reason) = if applied.is_ok() {
            (EventType::Normal, EVENT_SYNC_SERVICE_SUCCEED)
        } else {
            (EventType::Warning, EVENT_SYNC_SERVICE_FAILED)
        };
        context
            .recorder
            .record(&reference, event_type, event_reason, &message)
            .await;
    }
    Ok(Action::await_change())
}

/// A Warning event per named cluster that does not exist; their messages, for the condition.
async fn report_missing_clusters(
    context: &Context,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
    missing_providers: &[String],
    missing_consumers: &[String],
) -> Vec<String> {
    let mut missing = Vec::new();
    for (side, names) in [
        ("Provider", missing_providers),
        ("Consumer", missing_consumers),
    ] {
        for cluster in names {
            let message = format!("{side} cluster {cluster} is not found");
            context
                .recorder
                .record(
                    reference,
                    EventType::Warning,
                    EVENT_CLUSTER_NOT_FOUND,
                    &message,
                )
                .await;
            missing.push(message);
        }
    }
    missing
}

/// Marker Works: the providers' member sides collect the Service's slices while one is there. One per
/// provider; the others' deleted.
async fn sync_markers(
    context: &Context,
    mcs: &MultiClusterService,
    (namespace, name): &McsKey,
    providers: &BTreeSet<String>,
) -> Result<(), ControllerError> {
    let current = markers(context, namespace, name);
    for cluster in providers {
        let desired = marker_work(mcs, cluster);
        let have = current
            .iter()
            .find(|w| {
                w.metadata
                    .namespace
                    .as_deref()
                    .and_then(cluster_of_execution_namespace)
                    == Some(cluster.as_str())
            })
            .map(serde_json::to_value)
            .transpose()?;
        writes::upsert(
            &context.client,
            &resources::work(),
            &desired,
            have.as_ref(),
            marker_up_to_date,
        )
        .await?;
    }
    for marker in &current {
        let cluster = marker
            .metadata
            .namespace
            .as_deref()
            .and_then(cluster_of_execution_namespace);
        if cluster.is_none_or(|c| !providers.contains(c)) {
            writes::delete(
                &context.client,
                &resources::work(),
                &serde_json::to_value(marker)?,
            )
            .await?;
        }
    }
    Ok(())
}

/// A marker Work needs no write when its workload is the desired one and it carries the desired labels.
fn marker_up_to_date(existing: &Value, desired: &Value) -> bool {
    existing.pointer("/spec/workload") == desired.pointer("/spec/workload")
        && existing.pointer("/metadata/labels").is_some_and(|l| {
            desired
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .all(|(k, v)| l.get(k) == Some(v))
        })
}

/// Claims the Service and writes its binding over `clusters`. The inner error: why the Service could not be
/// applied (it does not exist), for the condition.
async fn sync_service_binding(
    context: &Context,
    mcs: &MultiClusterService,
    (namespace, name): &McsKey,
    clusters: &BTreeSet<String>,
) -> Result<Result<(), String>, ControllerError> {
    let Some(service) = context.services.get_named(Some(namespace), name) else {
        return Ok(Err(format!("Service {namespace}/{name} does not exist")));
    };
    let mut service = value_of(&service)?;
    if let Some(claimed) = claimed_service(&service, mcs) {
        writes::upsert(
            &context.client,
            &resources::service(),
            &claimed,
            Some(&service),
            |_, _| false,
        )
        .await?;
        service = claimed;
    }
    let existing_binding = match context
        .bindings
        .get_named(Some(namespace), &binding_name("Service", name))
    {
        Some(b) => Some(value_of(&b)?),
        None => None,
    };
    let desired = service_binding(&service, mcs, clusters, existing_binding.as_ref());
    writes::upsert(
        &context.client,
        &resources::resource_binding(),
        &desired,
        existing_binding.as_ref(),
        binding_up_to_date,
    )
    .await?;
    Ok(Ok(()))
}

/// The `ServiceApplied` condition's status, reason and message.
fn applied_condition(
    applied: &Result<(), String>,
    missing: &[String],
) -> (&'static str, &'static str, String) {
    match applied {
        Ok(()) => {
            let mut message = "Service is propagated to target clusters.".to_string();
            if !missing.is_empty() {
                message.push_str(&format!(" {}.", missing.join("; ")));
            }
            ("True", REASON_SERVICE_APPLIED_SUCCEED, message)
        }
        Err(error) => ("False", REASON_SERVICE_APPLIED_FAILED, error.clone()),
    }
}

/// Sets one condition of a MultiClusterService's status (the others kept); whether anything changed.
pub async fn set_condition(
    client: &kube::Client,
    mcs: &MultiClusterService,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> Result<bool, ControllerError> {
    let conditions = mcs
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let previous = conditions.iter().find(|c| c.type_ == type_);
    if previous.is_some_and(|p| p.status == status && p.reason == reason && p.message == message) {
        return Ok(false);
    }
    let transition = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()),
    };
    let mut updated: Vec<Value> = conditions
        .iter()
        .filter(|c| c.type_ != type_)
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    updated.push(json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": transition, "observedGeneration": mcs.metadata.generation,
    }));
    merge_status(
        client,
        &resources::multi_cluster_service(),
        mcs.metadata.namespace.as_deref(),
        mcs.metadata.name.as_deref().unwrap_or_default(),
        mcs.metadata.resource_version.as_deref(),
        json!({"conditions": updated}),
    )
    .await?;
    Ok(true)
}
