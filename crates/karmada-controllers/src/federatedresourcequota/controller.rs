//! The FederatedResourceQuota controllers' runtime (Karmada's federatedResourceQuotaSync and
//! federatedResourceQuotaStatus): one loop that, on every change of a quota, a Cluster, a quota Work or a
//! ResourceBinding, and at least every period, brings the quota Works in line with the quotas ([`super::sync`];
//! the execution controller applies each Work's ResourceQuota in its member and removes it with the Work) and
//! writes each quota's status ([`super::usage`]) when it changed. Quotas are few, so a pass looks at all of
//! them: level-triggered, a pass repeats harmlessly, and a failed write waits for the next pass.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::{StreamExt, stream};
use karmada_api::policy::{self, FederatedResourceQuota};
use karmada_api::work::Work;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{sync, usage};
use crate::namespace::controller::merged_work;
use crate::runtime::{ControllerError, resources, typed};

/// How often a pass runs without any change (members' reported usage arrives through Work status).
const PERIOD: Duration = Duration::from_secs(10);

/// The API resource of FederatedResourceQuotas.
pub fn federated_resource_quota_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(policy::GROUP, policy::VERSION, "FederatedResourceQuota"),
        "federatedresourcequotas",
    )
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, cancel: CancellationToken) {
    let quota_api = resources::all(&client, &federated_resource_quota_resource());
    let works = resources::all(&client, &resources::work()).clone();
    let changes = stream::select_all([
        watcher(quota_api, watcher::Config::default()).boxed(),
        watcher(
            resources::all(&client, &resources::cluster()),
            watcher::Config::default(),
        )
        .boxed(),
        watcher(works, watcher::Config::default().labels(sync::NAME_LABEL)).boxed(),
        watcher(
            resources::all(&client, &resources::resource_binding()),
            watcher::Config::default(),
        )
        .boxed(),
    ])
    .default_backoff();
    let mut changes = std::pin::pin!(changes);
    let mut ticks = tokio::time::interval(PERIOD);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticks.tick() => {}
            change = changes.next() => {
                if change.is_none() {
                    return;
                }
                // A burst of events makes one pass.
                while let Some(Some(_)) = futures::FutureExt::now_or_never(changes.next()) {}
            }
        }
        if let Err(error) = pass(&client).await {
            tracing::debug!(%error, "federated resource quota pass");
        }
    }
}

/// One pass over every quota.
async fn pass(client: &kube::Client) -> Result<(), ControllerError> {
    let quotas: Vec<FederatedResourceQuota> =
        resources::all(client, &federated_resource_quota_resource())
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .map(typed::to_typed)
            .collect::<Result<_, _>>()?;
    let clusters: BTreeSet<String> = resources::all(client, &resources::cluster())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let existing: Vec<Work> = resources::all(client, &resources::work())
        .list(&ListParams::default().labels(sync::NAME_LABEL))
        .await?
        .items
        .iter()
        .map(typed::to_typed)
        .collect::<Result<_, _>>()?;
    let desired = sync::desired_works(&quotas, &clusters);
    sync_works(client, &existing, &desired).await;
    for quota in &quotas {
        if let Err(error) = write_status(client, quota, &existing).await {
            tracing::debug!(%error, quota = ?quota.metadata.name, "quota status");
        }
    }
    Ok(())
}

fn work_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    resources::namespaced(client, &resources::work(), namespace)
}

async fn sync_works(client: &kube::Client, existing: &[Work], desired: &[Work]) {
    let by_key: BTreeMap<(String, String), &Work> =
        existing.iter().map(|w| (sync::work_key(w), w)).collect();
    for work in desired {
        let (namespace, name) = sync::work_key(work);
        let api = work_api(client, &namespace);
        let to_write = match by_key.get(&(namespace.clone(), name.clone())) {
            None => Some((true, work.clone())),
            // Carries the resourceVersion read: a concurrent write makes this pass's replace fail.
            Some(current) => merged_work(current, work).map(|updated| (false, updated)),
        };
        let Some((create, object)) = to_write else {
            continue;
        };
        let result = match typed::to_dynamic(&object, &resources::work()) {
            Ok(dynamic) if create => api.create(&PostParams::default(), &dynamic).await.map(drop),
            Ok(dynamic) => api
                .replace(&name, &PostParams::default(), &dynamic)
                .await
                .map(drop),
            Err(error) => {
                tracing::debug!(%error, namespace, name, "quota work");
                continue;
            }
        };
        if let Err(error) = result {
            tracing::debug!(%error, namespace, name, "quota work");
        }
    }
    for orphan in sync::orphans(existing, desired) {
        let (namespace, name) = sync::work_key(orphan);
        match work_api(client, &namespace)
            .delete(&name, &DeleteParams::background())
            .await
        {
            Ok(_) | Err(kube::Error::Api(_)) => {}
            Err(error) => tracing::debug!(%error, namespace, name, "deleting quota work"),
        }
    }
}

/// The member's ResourceQuota status as its Work reports it, by cluster.
fn reported(quota: &FederatedResourceQuota, works: &[Work]) -> BTreeMap<String, Value> {
    let name = quota.metadata.name.as_deref().unwrap_or_default();
    let namespace = quota.metadata.namespace.as_deref().unwrap_or_default();
    works
        .iter()
        .filter(|w| {
            let labels = w.metadata.labels.clone().unwrap_or_default();
            labels.get(sync::NAME_LABEL).map(String::as_str) == Some(name)
                && labels.get(sync::NAMESPACE_LABEL).map(String::as_str) == Some(namespace)
        })
        .filter_map(|w| {
            let cluster =
                crate::names::cluster_of_execution_namespace(w.metadata.namespace.as_deref()?)?;
            let status = serde_json::to_value(w.status.as_ref()?).ok()?;
            let reported = status.pointer("/manifestStatuses/0/status")?.clone();
            Some((cluster.to_string(), reported))
        })
        .collect()
}

async fn write_status(
    client: &kube::Client,
    quota: &FederatedResourceQuota,
    works: &[Work],
) -> Result<(), ControllerError> {
    let namespace = quota.metadata.namespace.clone().unwrap_or_default();
    let bindings: Vec<Value> =
        resources::namespaced(client, &resources::resource_binding(), &namespace)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|b: DynamicObject| b.data)
            .collect();
    let status = usage::status(quota, &bindings, &reported(quota, works));
    if quota.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let patch = json!({
        "metadata": {"resourceVersion": quota.metadata.resource_version},
        "status": status,
    });
    resources::namespaced(client, &federated_resource_quota_resource(), &namespace)
        .patch_status(
            quota.metadata.name.as_deref().unwrap_or_default(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}
