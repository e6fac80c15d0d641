//! The service-import controller's runtime (Karmada's `serviceImport`, in the controller-manager): each
//! ServiceImport gets its derived Service ([`super::import`]) and `status.clusters`, the clusters whose imported
//! slices back it. An import no cluster backs gets a Warning event `ServiceNotExported` saying so (once, until
//! some cluster backs it); a derived Service written gets `SyncDerivedServiceSucceed` (or `...Failed` with the
//! error), as in Karmada.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use karmada_api::mcs::{ServiceImport, derived_service_name};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::backing::backing_clusters;
use super::endpointslice::imported_slices_config;
use super::import::{
    derived_service, derived_service_status, derived_service_up_to_date, status_clusters,
};
use super::{LABEL_ENDPOINT_SLICE_SERVICE_NAME, writes};
use crate::execution::queue::touched;
use crate::runtime::runner::Action;
use crate::runtime::status_write::merge_status;
use crate::runtime::{
    Cache, CompactObject, ControllerError, EventRecorder, EventType, Informers, keyed, resources,
};

/// Event reasons (Karmada's, and ours for an import nothing backs).
pub const REASON_SYNC_DERIVED_SERVICE_SUCCEED: &str = "SyncDerivedServiceSucceed";
pub const REASON_SYNC_DERIVED_SERVICE_FAILED: &str = "SyncDerivedServiceFailed";
pub const REASON_SERVICE_NOT_EXPORTED: &str = "ServiceNotExported";

type ImportKey = (String, String);

struct Context {
    client: kube::Client,
    imports: Cache,
    slices: Cache,
    services: Cache,
    recorder: EventRecorder,
    /// Imports already warned about having no backing cluster.
    warned: Mutex<HashSet<ImportKey>>,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, informers: Informers, cancel: CancellationToken) {
    let imports = informers.subscribe(
        resources::all_raw(&client, &resources::service_import()),
        watcher::Config::default(),
    );
    let slices = informers.subscribe(
        resources::all_raw(&client, &resources::endpoint_slice()),
        imported_slices_config(),
    );
    let services = informers.subscribe(
        resources::all_raw(&client, &resources::service()),
        watcher::Config::default(),
    );
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), "service-import-controller"),
        client,
        imports: imports.store.clone(),
        slices: slices.store.clone(),
        services: services.store.clone(),
        warned: Mutex::default(),
    });
    let import_keys = imports.events.filter_map(|event| {
        std::future::ready(
            touched(&event)
                .cloned()
                .map(|o| key_of(&o, o.metadata().name())),
        )
    });
    let slice_keys = slices.events.filter_map(|event| {
        std::future::ready(touched(&event).cloned().and_then(|s| {
            let service = s.label(LABEL_ENDPOINT_SLICE_SERVICE_NAME)?;
            Some(key_of(&s, service.strip_prefix("derived-")?))
        }))
    });
    let service_keys = services.events.filter_map(|event| {
        std::future::ready(
            touched(&event)
                .cloned()
                .and_then(|s| Some(key_of(&s, s.metadata().name().strip_prefix("derived-")?))),
        )
    });
    let reconciler = context.clone();
    keyed::run(
        "service-import",
        futures::stream::select_all([
            import_keys.boxed(),
            slice_keys.boxed(),
            service_keys.boxed(),
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

fn key_of(object: &CompactObject, name: &str) -> ImportKey {
    (
        object
            .metadata()
            .namespace()
            .unwrap_or_default()
            .to_string(),
        name.to_string(),
    )
}

fn value_of(object: &CompactObject) -> Result<Value, ControllerError> {
    object.decode()
}

fn owned_by_import(service: &Value, import: &str) -> bool {
    service
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| r["kind"] == "ServiceImport" && r["name"] == import)
}

async fn reconcile(context: &Arc<Context>, key: ImportKey) -> Result<Action, ControllerError> {
    let (namespace, name) = &key;
    let derived_name = derived_service_name(name);
    let existing = match context.services.get_named(Some(namespace), &derived_name) {
        Some(object) => Some(value_of(&object)?),
        None => None,
    };
    let import: Option<ServiceImport> = match context.imports.get_named(Some(namespace), name) {
        Some(object) => Some(object.decode()?),
        None => None,
    };
    let Some(import) = import.filter(|i| i.metadata.deletion_timestamp.is_none()) else {
        if let Some(existing) = existing.filter(|s| owned_by_import(s, name)) {
            writes::delete(&context.client, &resources::service(), &existing).await?;
        }
        context
            .warned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        return Ok(Action::await_change());
    };
    let reference = reference(&import);
    sync_derived_service(context, &import, &key, existing, &reference).await?;
    let backed = sync_status_clusters(context, &import, &key).await?;
    warn_unless_backed(context, &key, backed, &reference).await;
    Ok(Action::await_change())
}

/// Writes the import's derived Service (with an Event saying how it went) and its load balancer status, or
/// deletes the one this import owns when the import derives none.
async fn sync_derived_service(
    context: &Context,
    import: &ServiceImport,
    (namespace, name): &ImportKey,
    existing: Option<Value>,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
) -> Result<(), ControllerError> {
    let Some(desired) = derived_service(import) else {
        if let Some(existing) = existing.filter(|s| owned_by_import(s, name)) {
            writes::delete(&context.client, &resources::service(), &existing).await?;
        }
        return Ok(());
    };
    let written = existing
        .as_ref()
        .is_none_or(|e| !derived_service_up_to_date(e, &desired));
    let merged = keep_allocated(desired, existing.as_ref());
    let result = writes::upsert(
        &context.client,
        &resources::service(),
        &merged,
        existing.as_ref(),
        derived_service_up_to_date,
    )
    .await;
    match result {
        Ok(()) if written => {
            context
                .recorder
                .record(
                    reference,
                    EventType::Normal,
                    REASON_SYNC_DERIVED_SERVICE_SUCCEED,
                    &format!("Sync derived service for serviceImport({name}) succeed."),
                )
                .await;
        }
        Ok(()) => {}
        Err(err) => {
            context
                .recorder
                .record(
                    reference,
                    EventType::Warning,
                    REASON_SYNC_DERIVED_SERVICE_FAILED,
                    &err.to_string(),
                )
                .await;
            return Err(err);
        }
    }
    let Some(existing) = existing else {
        return Ok(());
    };
    let status = derived_service_status(import);
    let current_status = existing.get("status").cloned().unwrap_or(json!({}));
    if current_status.get("loadBalancer") != status.get("loadBalancer") {
        merge_status(
            &context.client,
            &resources::service(),
            Some(namespace),
            &derived_service_name(name),
            None,
            status,
        )
        .await?;
    }
    Ok(())
}

/// The desired derived Service with what the server allocated and what others added kept from the
/// existing one.
fn keep_allocated(mut desired: Value, existing: Option<&Value>) -> Value {
    if let Some(existing) = existing {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if let Some(value) = existing.pointer(&format!("/spec/{field}")) {
                desired["spec"][field] = value.clone();
            }
        }
    }
    desired
}

/// Records in `status.clusters` the clusters whose imported slices back the import; true when some do.
async fn sync_status_clusters(
    context: &Context,
    import: &ServiceImport,
    (namespace, name): &ImportKey,
) -> Result<bool, ControllerError> {
    let derived_name = derived_service_name(name);
    let slices: Vec<Value> = context
        .slices
        .state()
        .iter()
        .filter(|s| {
            s.metadata().namespace() == Some(namespace.as_str())
                && s.label(LABEL_ENDPOINT_SLICE_SERVICE_NAME) == Some(derived_name.as_str())
        })
        .map(|s| value_of(s))
        .collect::<Result<_, _>>()?;
    let backing = backing_clusters(&slices);
    let clusters = status_clusters(&backing);
    let recorded = import
        .status
        .as_ref()
        .map(|s| s.clusters.clone())
        .unwrap_or_default();
    if recorded != clusters {
        merge_status(
            &context.client,
            &resources::service_import(),
            Some(namespace),
            name,
            import.metadata.resource_version.as_deref(),
            json!({"clusters": clusters}),
        )
        .await?;
    }
    Ok(!backing.is_empty())
}

/// Warns once that no cluster backs the import; forgets the warning when one does.
async fn warn_unless_backed(
    context: &Context,
    key: &ImportKey,
    backed: bool,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
) {
    let first_warning = {
        let mut warned = context
            .warned
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if backed {
            warned.remove(key);
            false
        } else {
            warned.insert(key.clone())
        }
    };
    if first_warning {
        let (namespace, name) = key;
        context
            .recorder
            .record(
                reference,
                EventType::Warning,
                REASON_SERVICE_NOT_EXPORTED,
                &format!(
                    "no cluster exports {namespace}/{name}: create a ServiceExport named {name} in {namespace} and \
                     propagate it to the clusters that run the Service (a cluster that is not Ready is left out)"
                ),
            )
            .await;
    }
}

fn reference(import: &ServiceImport) -> k8s_openapi::api::core::v1::ObjectReference {
    super::shared::reference(
        format!("{}/{}", karmada_api::mcs::GROUP, karmada_api::mcs::VERSION),
        "ServiceImport",
        &import.metadata,
    )
}
