//! The ServiceExport status controller (controller-manager): writes each control-plane ServiceExport's `Valid`
//! and `Conflict` conditions ([`super::export_conditions`]) from the clusters its binding places it in and the
//! exported-Service Works those clusters report. A condition turning bad (Valid not True, Conflict True) is also
//! a Warning event on the ServiceExport with the same reason and message, naming the clusters and what is wrong.
//! Karmada leaves these conditions unset; the MCS KEP describes them.

use std::sync::Arc;

use futures::StreamExt;
use karmada_api::ResourceBinding;
use karmada_api::Work;
use karmada_api::mcs::ServiceExport;
use kube::runtime::watcher;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::export_conditions::{ClusterReport, ExportInput, verdict};
use super::report::is_service_report;
use super::{LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE};
use crate::execution::ServedClusters;
use crate::execution::controller::works_watch_config;
use crate::execution::queue::touched;
use crate::names::{binding_name, cluster_of_execution_namespace};
use crate::runtime::runner::Action;
use crate::runtime::status_write::merge_status;
use crate::runtime::{
    Cache, ControllerError, EventRecorder, EventType, Informers, LabelIndex, keyed, resources,
};

type ExportKey = (String, String);

struct Context {
    client: kube::Client,
    exports: Cache,
    bindings: Cache,
    reports: LabelIndex,
    recorder: EventRecorder,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, informers: Informers, cancel: CancellationToken) {
    let exports = informers.subscribe(
        resources::all_raw(&client, &resources::service_export()),
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
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), "service-export-controller"),
        client,
        exports: exports.store.clone(),
        bindings: bindings.store.clone(),
        reports: works.label_index(LABEL_SERVICE_NAME),
    });
    let export_keys = exports.events.filter_map(|event| {
        std::future::ready(touched(&event).cloned().map(|o| {
            (
                o.metadata().namespace().unwrap_or_default().to_string(),
                o.metadata().name().to_string(),
            )
        }))
    });
    let binding_keys = bindings.events.filter_map(|event| {
        std::future::ready(touched(&event).cloned().and_then(|b| {
            let name = b.metadata().name().strip_suffix("-serviceexport")?;
            Some((
                b.metadata().namespace().unwrap_or_default().to_string(),
                name.to_string(),
            ))
        }))
    });
    let work_keys = works.events.filter_map(|event| {
        std::future::ready(touched(&event).cloned().and_then(|w| {
            Some((
                w.label(LABEL_SERVICE_NAMESPACE)?.to_string(),
                w.label(LABEL_SERVICE_NAME)?.to_string(),
            ))
        }))
    });
    let reconciler = context.clone();
    keyed::run(
        "service-export-status",
        futures::stream::select_all([export_keys.boxed(), binding_keys.boxed(), work_keys.boxed()]),
        2,
        move |key| {
            let context = reconciler.clone();
            async move { reconcile(&context, key).await }
        },
        cancel,
    )
    .await;
}

async fn reconcile(context: &Arc<Context>, key: ExportKey) -> Result<Action, ControllerError> {
    let (namespace, name) = &key;
    let Some(object) = context.exports.get_named(Some(namespace), name) else {
        return Ok(Action::await_change());
    };
    let export: ServiceExport = object.decode()?;
    if export.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let clusters: Vec<String> = match context
        .bindings
        .get_named(Some(namespace), &binding_name("ServiceExport", name))
    {
        Some(binding) => binding
            .decode::<ResourceBinding>()?
            .spec
            .clusters
            .into_iter()
            .map(|c| c.name)
            .collect(),
        None => Vec::new(),
    };
    let works: Vec<Work> = context
        .reports
        .get(name)
        .iter()
        .filter(|w| w.label(LABEL_SERVICE_NAMESPACE) == Some(namespace.as_str()))
        .filter_map(|w| w.decode::<Work>().ok())
        .filter(|w| is_service_report(w) && w.metadata.deletion_timestamp.is_none())
        .collect();
    let reports: Vec<ClusterReport<'_>> = works
        .iter()
        .filter_map(|w| {
            Some(ClusterReport {
                cluster: cluster_of_execution_namespace(w.metadata.namespace.as_deref()?)?,
                since: w.metadata.creation_timestamp.as_ref().map(|t| t.0),
                service: w.spec.workload.manifests.first(),
            })
        })
        .collect();
    let input = ExportInput {
        namespace,
        name,
        clusters,
        reports,
    };
    let previous = export
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let verdict = verdict(&input, &previous, jiff::Timestamp::now());
    let conditions = vec![verdict.valid.clone(), verdict.conflict.clone()];
    let unchanged = conditions.len() == previous.len()
        && conditions.iter().all(|c| previous.iter().any(|p| p == c));
    if unchanged {
        return Ok(Action::await_change());
    }
    merge_status(
        &context.client,
        &resources::service_export(),
        Some(namespace),
        name,
        export.metadata.resource_version.as_deref(),
        json!({"conditions": conditions}),
    )
    .await?;
    let was = |type_: &str, status: &str| {
        previous.iter().any(|p| {
            p.type_ == type_
                && p.status == status
                && p.message == conditions_message(&conditions, type_)
        })
    };
    let reference = super::shared::reference(
        format!("{}/{}", karmada_api::mcs::GROUP, karmada_api::mcs::VERSION),
        "ServiceExport",
        &export.metadata,
    );
    for (condition, bad) in [
        (&verdict.valid, verdict.valid.status == "False"),
        (&verdict.conflict, verdict.conflict.status == "True"),
    ] {
        if bad && !was(&condition.type_, &condition.status) {
            context
                .recorder
                .record(
                    &reference,
                    EventType::Warning,
                    condition.reason.as_deref().unwrap_or_default(),
                    condition.message.as_deref().unwrap_or_default(),
                )
                .await;
        }
    }
    Ok(Action::await_change())
}

fn conditions_message(
    conditions: &[karmada_api::mcs::ServiceExportCondition],
    type_: &str,
) -> Option<String> {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .and_then(|c| c.message.clone())
}
