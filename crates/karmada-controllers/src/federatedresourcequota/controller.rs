//! The FederatedResourceQuota controllers' runtime (Karmada's federatedResourceQuotaSync and
//! federatedResourceQuotaStatus): one loop that, on every change of a quota, a Cluster, a quota Work or a
//! ResourceBinding, and at least every period, brings the quota Works in line with the quotas ([`super::sync`];
//! the execution controller applies each Work's ResourceQuota in its member and removes it with the Work) and
//! writes each quota's status ([`super::usage`]) when it changed. Quotas are few, so a pass looks at all of
//! them: level-triggered, a pass repeats harmlessly, and a failed write waits for the next pass.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, stream};
use karmada_api::policy::{self, FederatedResourceQuota};
use karmada_api::work::Work;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{sync, usage};
use crate::namespace::controller::merged_work;
use crate::runtime::compact::CompactObject;
use crate::runtime::{ControllerError, Informers, resources, typed};

/// How often a pass runs without any change (members' reported usage arrives through Work status).
const PERIOD: Duration = Duration::from_secs(10);

/// The API resource of FederatedResourceQuotas.
pub fn federated_resource_quota_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(policy::GROUP, policy::VERSION, "FederatedResourceQuota"),
        "federatedresourcequotas",
    )
}

/// Binding wake-ups waiting for the loop: one is enough, a pass reads every quota namespace's bindings.
const BINDING_WAKES: usize = 1;

/// What the loop keeps from its watches: the quotas, the Clusters' names and the quota Works (few objects; the
/// bindings are read per quota namespace when a pass needs them, never cached whole).
struct Seen {
    quotas: kube::runtime::reflector::Store<DynamicObject>,
    clusters: kube::runtime::reflector::Store<DynamicObject>,
    works: kube::runtime::reflector::Store<DynamicObject>,
}

impl Seen {
    /// Whether a pass is worth running: a quota exists, or a quota Work is left to remove.
    fn has_quota_state(&self) -> bool {
        !self.quotas.state().is_empty() || !self.works.state().is_empty()
    }
}

/// Whether a quota lives in `namespace`.
fn has_quota(quotas: &Store<DynamicObject>, namespace: Option<&str>) -> bool {
    quotas
        .state()
        .iter()
        .any(|quota| quota.metadata.namespace.as_deref() == namespace)
}

/// Runs until `cancel` fires. A pass reads the quotas, Clusters and quota Works from this loop's watches (it
/// listed them from the API server on every pass before, once per binding event in a burst, with no quota
/// anywhere), and a binding's change starts a pass only in a namespace with a quota. Bindings come from the
/// process's shared watch (`informers`): a watch of its own made the API server send every binding event once
/// more and this process parse it once more, only to read its namespace.
pub async fn run(client: kube::Client, informers: Informers, cancel: CancellationToken) {
    use kube::runtime::reflector::{reflector, store::Writer};
    let quota_writer = Writer::new(federated_resource_quota_resource());
    let cluster_writer = Writer::new(resources::cluster());
    let work_writer = Writer::new(resources::work());
    let seen = Seen {
        quotas: quota_writer.as_reader(),
        clusters: cluster_writer.as_reader(),
        works: work_writer.as_reader(),
    };
    // Any change wakes the loop: bindings are filtered before they get here ([`feed_bindings`]), so only one in a
    // namespace with a quota, or a relist, arrives.
    let change = |stream: futures::stream::BoxStream<
        'static,
        Result<watcher::Event<DynamicObject>, watcher::Error>,
    >| stream.map(|event| event.map(drop)).boxed();
    let quota_events = reflector(
        quota_writer,
        watcher(
            resources::all(&client, &federated_resource_quota_resource()),
            watcher::Config::default(),
        ),
    )
    .boxed();
    let cluster_events = reflector(
        cluster_writer,
        watcher(
            resources::all(&client, &resources::cluster()),
            watcher::Config::default(),
        ),
    )
    .boxed();
    let work_events = reflector(
        work_writer,
        watcher(
            resources::all(&client, &resources::work()),
            watcher::Config::default().labels(sync::NAME_LABEL),
        ),
    )
    .boxed();
    let (binding_wakes, woken) = mpsc::channel(BINDING_WAKES);
    let bindings = informers.subscribe(
        resources::all_raw(&client, &resources::resource_binding()),
        watcher::Config::default(),
    );
    // The feeder stops with this loop, however it ends.
    let feeding = cancel.child_token();
    let _stop_feeding = feeding.clone().drop_guard();
    tokio::spawn(feed_bindings(
        bindings.events,
        seen.quotas.clone(),
        binding_wakes,
        feeding,
    ));
    let binding_events = stream::unfold(woken, |mut woken| async move {
        woken.recv().await.map(|()| (Ok(()), woken))
    })
    .boxed();
    let changes = stream::select_all([
        change(quota_events),
        change(cluster_events),
        change(work_events),
        binding_events,
    ])
    .default_backoff();
    let mut changes = std::pin::pin!(changes);
    let mut ticks = tokio::time::interval(PERIOD);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ready = async {
        let _ = seen.quotas.wait_until_ready().await;
        let _ = seen.clusters.wait_until_ready().await;
        let _ = seen.works.wait_until_ready().await;
    };
    // The stores fill from the same stream the loop reads, so it is driven while waiting for them.
    let mut ready = std::pin::pin!(ready);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            () = &mut ready => break,
            change = changes.next() => if change.is_none() { return },
        }
    }
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
        if !seen.has_quota_state() {
            continue;
        }
        if let Err(error) = pass(&client, &seen).await {
            tracing::debug!(%error, "federated resource quota pass");
        }
    }
}

/// Reads the shared watch's binding events as fast as they come (a subscriber that waits holds up every other
/// controller of the process) and wakes the loop for those that can change a quota's usage: a binding in a
/// namespace with a quota, or a relist (which may hide anything). Wake-ups coalesce while the loop is busy.
async fn feed_bindings(
    events: BoxStream<'static, watcher::Event<CompactObject>>,
    quotas: Store<DynamicObject>,
    wakes: mpsc::Sender<()>,
    cancel: CancellationToken,
) {
    let mut events = std::pin::pin!(events.take_until(cancel.cancelled_owned()));
    while let Some(event) = events.next().await {
        let namespace = match &event {
            watcher::Event::Apply(binding) | watcher::Event::Delete(binding) => {
                binding.metadata().namespace()
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => continue,
            watcher::Event::InitDone => None,
        };
        let wakes_loop = match namespace {
            Some(namespace) => has_quota(&quotas, Some(namespace)),
            None => true,
        };
        if wakes_loop && let Err(mpsc::error::TrySendError::Closed(())) = wakes.try_send(()) {
            return;
        }
    }
}

/// One pass over every quota.
async fn pass(client: &kube::Client, seen: &Seen) -> Result<(), ControllerError> {
    let quotas: Vec<FederatedResourceQuota> = seen
        .quotas
        .state()
        .iter()
        .map(|quota| typed::to_typed(quota))
        .collect::<Result<_, _>>()?;
    let clusters: BTreeSet<String> = seen
        .clusters
        .state()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    let existing: Vec<Work> = seen
        .works
        .state()
        .iter()
        .map(|work| typed::to_typed(work))
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
