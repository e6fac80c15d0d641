//! What an estimator knows of its member cluster: Nodes, Pods and ResourceQuotas, kept by watches, with the
//! nodes digested into [`NodeInfo`]s (allocatable minus the requests of the pods bound to them) once per change
//! rather than per request.
//!
//! Invariants: a pod's requests are read once, when its event arrives (Kubernetes' effective request, through
//! the interpreter's `effective_requests`); a pod whose requests cannot be read counts with none, and is logged;
//! nothing is answered before every watch has listed once ([`MemberState::synced`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod, ResourceQuota};
use karmada_scheduler::accurate::{NodeInfo, QuotaInfo, pod_occupies_node};
use karmada_scheduler::estimator::Resources;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

type Key = (String, String);

struct PodEntry {
    pod: Arc<Pod>,
    /// Requests in milli-units; empty for a pod that does not occupy a node.
    requests: Resources,
    node: Option<String>,
}

#[derive(Default)]
struct Inner {
    nodes: BTreeMap<String, Node>,
    pods: HashMap<Key, PodEntry>,
    quotas: HashMap<Key, QuotaInfo>,
    /// The digested nodes; `None` after a change.
    digested: Option<Arc<Vec<NodeInfo>>>,
}

/// The member cache.
#[derive(Default)]
pub struct MemberState {
    inner: RwLock<Inner>,
    nodes_synced: AtomicBool,
    pods_synced: AtomicBool,
    quotas_synced: AtomicBool,
}

fn key_of(metadata: &kube::api::ObjectMeta) -> Key {
    (
        metadata.namespace.clone().unwrap_or_default(),
        metadata.name.clone().unwrap_or_default(),
    )
}

fn pod_entry(pod: Pod) -> PodEntry {
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let requests = if pod_occupies_node(&pod) {
        requests_of(&pod)
    } else {
        Resources::new()
    };
    PodEntry {
        pod: Arc::new(pod),
        requests,
        node,
    }
}

fn requests_of(pod: &Pod) -> Resources {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let object = serde_json::json!({"kind": "Pod", "metadata": {"name": name}});
    let spec = match serde_json::to_value(&pod.spec) {
        Ok(spec) => spec,
        Err(err) => {
            tracing::warn!(pod = name, %err, "pod spec not readable; counted without requests");
            return Resources::new();
        }
    };
    match karmada_interpreter::native::effective_requests(&object, &spec) {
        Ok(requests) => requests
            .into_iter()
            .map(|(resource, quantity)| (resource, quantity.milli_value()))
            .collect(),
        Err(err) => {
            tracing::warn!(pod = name, %err, "pod requests not readable; counted without requests");
            Resources::new()
        }
    }
}

impl MemberState {
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether every watch has listed once.
    pub fn synced(&self) -> bool {
        self.nodes_synced.load(Ordering::Acquire)
            && self.pods_synced.load(Ordering::Acquire)
            && self.quotas_synced.load(Ordering::Acquire)
    }

    /// Replaces every node (a relist).
    pub fn replace_nodes(&self, nodes: impl IntoIterator<Item = Node>) {
        let mut inner = self.write();
        inner.nodes = nodes
            .into_iter()
            .map(|node| (node.metadata.name.clone().unwrap_or_default(), node))
            .collect();
        inner.digested = None;
        self.nodes_synced.store(true, Ordering::Release);
    }

    pub fn apply_node(&self, node: Node) {
        let mut inner = self.write();
        inner
            .nodes
            .insert(node.metadata.name.clone().unwrap_or_default(), node);
        inner.digested = None;
    }

    pub fn delete_node(&self, name: &str) {
        let mut inner = self.write();
        inner.nodes.remove(name);
        inner.digested = None;
    }

    /// Replaces every pod (a relist).
    pub fn replace_pods(&self, pods: impl IntoIterator<Item = Pod>) {
        let pods = pods
            .into_iter()
            .map(|pod| (key_of(&pod.metadata), pod_entry(pod)))
            .collect();
        let mut inner = self.write();
        inner.pods = pods;
        inner.digested = None;
        self.pods_synced.store(true, Ordering::Release);
    }

    pub fn apply_pod(&self, pod: Pod) {
        let key = key_of(&pod.metadata);
        let entry = pod_entry(pod);
        let mut inner = self.write();
        let changed = inner
            .pods
            .get(&key)
            .is_none_or(|old| old.node != entry.node || old.requests != entry.requests);
        inner.pods.insert(key, entry);
        if changed {
            inner.digested = None;
        }
    }

    pub fn delete_pod(&self, namespace: &str, name: &str) {
        let mut inner = self.write();
        if inner
            .pods
            .remove(&(namespace.to_string(), name.to_string()))
            .is_some()
        {
            inner.digested = None;
        }
    }

    /// Replaces every quota (a relist); quotas whose status cannot be read are left out, and logged.
    pub fn replace_quotas(&self, quotas: impl IntoIterator<Item = ResourceQuota>) {
        let quotas = quotas
            .into_iter()
            .filter_map(|quota| digest_quota(&quota).map(|info| (key_of(&quota.metadata), info)))
            .collect();
        self.write().quotas = quotas;
        self.quotas_synced.store(true, Ordering::Release);
    }

    pub fn apply_quota(&self, quota: &ResourceQuota) {
        let key = key_of(&quota.metadata);
        let mut inner = self.write();
        match digest_quota(quota) {
            Some(info) => inner.quotas.insert(key, info),
            None => inner.quotas.remove(&key),
        };
    }

    pub fn delete_quota(&self, namespace: &str, name: &str) {
        self.write()
            .quotas
            .remove(&(namespace.to_string(), name.to_string()));
    }

    /// The nodes, digested with the pods bound to them.
    pub fn nodes(&self) -> Arc<Vec<NodeInfo>> {
        if let Some(digested) = &self.read().digested {
            return Arc::clone(digested);
        }
        let mut inner = self.write();
        if let Some(digested) = &inner.digested {
            return Arc::clone(digested);
        }
        let mut by_node: HashMap<&str, Vec<&Resources>> = HashMap::new();
        for entry in inner.pods.values() {
            if let Some(node) = &entry.node
                && pod_occupies_node(&entry.pod)
            {
                by_node
                    .entry(node.as_str())
                    .or_default()
                    .push(&entry.requests);
            }
        }
        let digested: Vec<NodeInfo> = inner
            .nodes
            .values()
            .filter_map(|node| {
                let name = node.metadata.name.as_deref().unwrap_or_default();
                let pods = by_node.get(name).map(Vec::as_slice).unwrap_or_default();
                match NodeInfo::new(node, pods.iter().copied()) {
                    Ok(info) => Some(info),
                    Err(err) => {
                        tracing::warn!(node = name, %err, "node left out of estimates");
                        None
                    }
                }
            })
            .collect();
        let digested = Arc::new(digested);
        inner.digested = Some(Arc::clone(&digested));
        digested
    }

    /// The quotas of `namespace`.
    pub fn quotas_in(&self, namespace: &str) -> Vec<QuotaInfo> {
        self.read()
            .quotas
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|(_, info)| info.clone())
            .collect()
    }

    /// The pods of `namespace`.
    pub fn pods_in(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.read()
            .pods
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|(_, entry)| Arc::clone(&entry.pod))
            .collect()
    }
}

fn digest_quota(quota: &ResourceQuota) -> Option<QuotaInfo> {
    match QuotaInfo::new(quota) {
        Ok(info) => Some(info),
        Err(err) => {
            tracing::warn!(%err, "ResourceQuota left out of estimates");
            None
        }
    }
}

/// Keeps `state` in step with the member behind `client` until `cancel` fires.
pub async fn run_watches(client: kube::Client, state: Arc<MemberState>, cancel: CancellationToken) {
    let nodes = {
        let state = Arc::clone(&state);
        watch(
            Api::<Node>::all(client.clone()),
            cancel.clone(),
            move |event| match event {
                Change::Relisted(nodes) => state.replace_nodes(nodes),
                Change::Applied(node) => state.apply_node(node),
                Change::Deleted(node) => {
                    state.delete_node(node.metadata.name.as_deref().unwrap_or_default())
                }
            },
        )
    };
    let pods = {
        let state = Arc::clone(&state);
        watch(
            Api::<Pod>::all(client.clone()),
            cancel.clone(),
            move |event| match event {
                Change::Relisted(pods) => state.replace_pods(pods),
                Change::Applied(pod) => state.apply_pod(pod),
                Change::Deleted(pod) => {
                    let (namespace, name) = key_of(&pod.metadata);
                    state.delete_pod(&namespace, &name);
                }
            },
        )
    };
    let quotas = {
        let state = Arc::clone(&state);
        watch(
            Api::<ResourceQuota>::all(client),
            cancel,
            move |event| match event {
                Change::Relisted(quotas) => state.replace_quotas(quotas),
                Change::Applied(quota) => state.apply_quota(&quota),
                Change::Deleted(quota) => {
                    let (namespace, name) = key_of(&quota.metadata);
                    state.delete_quota(&namespace, &name);
                }
            },
        )
    };
    tokio::join!(nodes, pods, quotas);
}

enum Change<K> {
    Relisted(Vec<K>),
    Applied(K),
    Deleted(K),
}

async fn watch<K>(api: Api<K>, cancel: CancellationToken, mut apply: impl FnMut(Change<K>))
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut listing: Vec<K> = Vec::new();
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return,
            event = stream.next() => event,
        };
        match event {
            None => return,
            Some(Err(err)) => tracing::debug!(%err, "member watch"),
            Some(Ok(watcher::Event::Init)) => listing.clear(),
            Some(Ok(watcher::Event::InitApply(object))) => listing.push(object),
            Some(Ok(watcher::Event::InitDone)) => {
                apply(Change::Relisted(std::mem::take(&mut listing)))
            }
            Some(Ok(watcher::Event::Apply(object))) => apply(Change::Applied(object)),
            Some(Ok(watcher::Event::Delete(object))) => apply(Change::Deleted(object)),
        }
    }
}
