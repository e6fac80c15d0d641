//! Resource templates: which API resources of the control plane the detector watches (discovered at start and
//! again periodically, so CRDs created later are picked up), one subscription per kind to the process's shared
//! watches ([`Informers`]: the user's Deployments etc. are cached once, compactly, whoever else reads them)
//! feeding the detector's one queue with `(gvk, namespace, name)` keys.
//!
//! Invariants: a kind is watched only when it can be listed and watched and is not excluded by
//! [`crate::reserved`] or `--skipped-propagating-apis`; objects in reserved or skipped namespaces are neither
//! seen (the shared cache may hold them, the detector's reads skip them) nor queued; an update that changes
//! only `status` (or resourceVersion/managedFields) queues nothing, as Karmada ignores such updates; keys
//! listed during a (re)list are queued only once the cache holds the list.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::stream::BoxStream;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
use kube::discovery::{ApiCapabilities, Discovery, Scope, verbs};
use kube::runtime::watcher;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::skip::DetectorFilter;
use crate::reserved::{is_never_propagated_api, is_reserved_namespace};
use crate::runtime::Cache;
use crate::runtime::queue::WorkQueue;
use crate::runtime::{CompactObject, ControllerError, Informers, Meta, Pairs, resources};

/// A resource template's identity in the detector's queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateKey {
    pub gvk: GroupVersionKind,
    /// Empty for cluster-scoped templates.
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for TemplateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.gvk.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.gvk.kind, self.namespace, self.name)
        }
    }
}

/// One kind the detector watches.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchedKind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// The kinds of `discovered` the detector watches: listable and watchable, not a never-propagated or skipped
/// API, not a subresource.
pub fn watchable(
    discovered: &[(ApiResource, ApiCapabilities)],
    filter: &DetectorFilter,
) -> Vec<WatchedKind> {
    discovered
        .iter()
        .filter(|(resource, caps)| {
            !resource.plural.contains('/')
                && caps.supports_operation(verbs::LIST)
                && caps.supports_operation(verbs::WATCH)
                && !is_never_propagated_api(&resource.api_version, &resource.kind)
                && !filter
                    .skipped_apis
                    .matches(&resource.api_version, &resource.kind)
        })
        .map(|(resource, caps)| WatchedKind {
            resource: resource.clone(),
            namespaced: caps.scope == Scope::Namespaced,
        })
        .collect()
}

/// What of a template the detector acts on: everything but status, resourceVersion and managedFields (the
/// cache has none). Two versions with equal fingerprints differ only in what Karmada ignores on update.
pub fn fingerprint(object: &CompactObject) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    let mut metadata = object.metadata().clone();
    metadata.resource_version = None;
    // The metadata has no Hash; its JSON (fields in a fixed order, maps sorted) stands in for it.
    serde_json::to_string(&metadata)
        .unwrap_or_default()
        .hash(&mut hasher);
    (
        object.labels(),
        object.annotations(),
        object.large_annotations(),
    )
        .hash(&mut hasher);
    // The top-level fields as text: the same object always serializes to the same text.
    let json = object.json().unwrap_or_default();
    let fields: std::collections::BTreeMap<&str, &RawValue> =
        serde_json::from_str(&json).unwrap_or_default();
    for (field, value) in fields {
        if field != "status" && field != "metadata" {
            (field, value.get()).hash(&mut hasher);
        }
    }
    hasher.finish()
}

/// Whether an update from `old` to `new` is one the detector acts on (see [`fingerprint`]).
pub fn spec_changed(old: &CompactObject, new: &CompactObject) -> bool {
    fingerprint(old) != fingerprint(new)
}

/// Whether objects in `namespace` are never propagated (so not even cached).
fn ignored_namespace(namespace: Option<&str>, filter: &DetectorFilter) -> bool {
    namespace.is_some_and(|ns| is_reserved_namespace(ns) || filter.skipped_namespaces.matches(ns))
}

/// Whether `object` of `kind` is never propagated because of the namespace it is in — or, for a Namespace
/// object, the namespace it is (`karmada-es-*`, `kube-system`, ... are not propagated either).
fn ignored(metadata: &Meta, kind: &WatchedKind, filter: &DetectorFilter) -> bool {
    if kind.resource.group.is_empty() && kind.resource.kind == "Namespace" {
        return ignored_namespace(metadata.name.as_deref(), filter);
    }
    ignored_namespace(metadata.namespace.as_deref(), filter)
}

struct KindWatch {
    kind: WatchedKind,
    /// The shared cache of this kind; it may hold objects the detector ignores (see [`ignored`]).
    store: Cache,
    filter: DetectorFilter,
    cancel: CancellationToken,
}

/// What a scan over the cached templates sees of each: its type and metadata, without decoding it.
pub struct TemplateMeta<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    /// Without labels and annotations, which are the next two fields (see [`CompactObject::metadata`]).
    pub metadata: &'a Meta,
    pub labels: &'a Pairs,
    pub annotations: &'a Pairs,
}

impl<'a> TemplateMeta<'a> {
    pub fn of(api_version: &'a str, kind: &'a str, object: &'a CompactObject) -> Self {
        Self {
            api_version,
            kind,
            metadata: object.metadata(),
            labels: object.labels(),
            annotations: object.annotations(),
        }
    }
}

/// The cached templates of every watched kind.
#[derive(Clone, Default)]
pub struct Templates {
    kinds: Arc<RwLock<HashMap<GroupVersionKind, KindWatch>>>,
    /// Templates edited since this process first saw them.
    pub edited: Edited,
}

/// Templates whose acted-on content (see [`fingerprint`]) changed after this process first listed or saw
/// them, and whose binding has not been written since. Only these move their binding's
/// `spec.resource.resourceVersion`: the field would otherwise differ after every status write of the template,
/// which the detector ignores while running, and a restarted detector rewrote every binding for it (then the
/// scheduler and the status controllers followed each rewrite).
#[derive(Clone, Default)]
pub struct Edited(Arc<std::sync::Mutex<(u64, HashMap<TemplateKey, u64>)>>);

impl Edited {
    fn mark(&self, key: TemplateKey) {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (sequence, edited) = &mut *guard;
        *sequence += 1;
        edited.insert(key, *sequence);
    }

    /// The mark of `key` (which edit it is), if it was edited since its binding was last written.
    pub fn mark_of(&self, key: &TemplateKey) -> Option<u64> {
        let guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        guard.1.get(key).copied()
    }

    /// Forgets `key`'s edit once its binding reflects it, unless a later edit came in meanwhile.
    pub fn written(&self, key: &TemplateKey, mark: u64) {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.1.get(key) == Some(&mark) {
            guard.1.remove(key);
        }
    }

    fn forget(&self, key: &TemplateKey) {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        guard.1.remove(key);
    }
}

fn gvk_of(resource: &ApiResource) -> GroupVersionKind {
    GroupVersionKind::gvk(&resource.group, &resource.version, &resource.kind)
}

impl Templates {
    /// The cached template of `key`, decoded (with its apiVersion and kind, which list items may lack).
    pub fn get(&self, key: &TemplateKey) -> Result<Option<DynamicObject>, ControllerError> {
        let (cached, resource) = {
            let kinds = self.kinds.read().unwrap_or_else(PoisonError::into_inner);
            let Some(watch) = kinds.get(&key.gvk) else {
                return Ok(None);
            };
            let namespace = (!key.namespace.is_empty()).then_some(key.namespace.as_str());
            match watch.store.get_named(namespace, &key.name) {
                Some(cached) if !ignored(cached.metadata(), &watch.kind, &watch.filter) => {
                    (cached, watch.kind.resource.clone())
                }
                _ => return Ok(None),
            }
        };
        let mut object = cached.to_dynamic()?;
        object.types = Some(TypeMeta {
            api_version: resource.api_version,
            kind: resource.kind,
        });
        Ok(Some(object))
    }

    /// The watched kind of `gvk`.
    pub fn kind(&self, gvk: &GroupVersionKind) -> Option<WatchedKind> {
        let kinds = self.kinds.read().unwrap_or_else(PoisonError::into_inner);
        kinds.get(gvk).map(|w| w.kind.clone())
    }

    /// Keys of the cached templates of `api_version`/`kind` (every kind when `None`) that `keep` accepts.
    pub fn keys_where(
        &self,
        api_version_kind: Option<(&str, &str)>,
        keep: impl Fn(&TemplateMeta<'_>) -> bool,
    ) -> Vec<TemplateKey> {
        let kinds = self.kinds.read().unwrap_or_else(PoisonError::into_inner);
        let mut keys = Vec::new();
        for (gvk, watch) in kinds.iter() {
            if let Some((api_version, kind)) = api_version_kind
                && (watch.kind.resource.api_version != api_version || gvk.kind != kind)
            {
                continue;
            }
            for object in watch.store.state() {
                let metadata = object.metadata();
                if ignored(metadata, &watch.kind, &watch.filter) {
                    continue;
                }
                let view = TemplateMeta::of(
                    &watch.kind.resource.api_version,
                    &watch.kind.resource.kind,
                    &object,
                );
                if keep(&view) {
                    keys.push(key_of(metadata, gvk));
                }
            }
        }
        keys
    }

    /// Watches exactly `wanted`: subscribes to new kinds, drops the subscriptions of kinds that disappeared.
    pub fn reconcile_kinds(
        &self,
        client: &kube::Client,
        informers: &Informers,
        wanted: Vec<WatchedKind>,
        filter: &DetectorFilter,
        queue: &WorkQueue<TemplateKey>,
        cancel: &CancellationToken,
    ) {
        let mut kinds = self.kinds.write().unwrap_or_else(PoisonError::into_inner);
        let wanted: HashMap<GroupVersionKind, WatchedKind> = wanted
            .into_iter()
            .map(|kind| (gvk_of(&kind.resource), kind))
            .collect();
        kinds.retain(|gvk, watch| {
            let keep = wanted.get(gvk) == Some(&watch.kind);
            if !keep {
                tracing::info!(kind = %gvk.kind, group = %gvk.group, "no longer watching templates");
                watch.cancel.cancel();
            }
            keep
        });
        for (gvk, kind) in wanted {
            if kinds.contains_key(&gvk) {
                continue;
            }
            let subscription = informers.subscribe(
                resources::all_raw(client, &kind.resource),
                watcher::Config::default(),
            );
            let child = cancel.child_token();
            tokio::spawn(watch_kind(
                kind.clone(),
                subscription.events,
                filter.clone(),
                queue.clone(),
                self.edited.clone(),
                child.clone(),
            ));
            tracing::debug!(kind = %gvk.kind, group = %gvk.group, "watching templates");
            kinds.insert(
                gvk,
                KindWatch {
                    kind,
                    store: subscription.store,
                    filter: filter.clone(),
                    cancel: child,
                },
            );
        }
    }

    /// Whether every watched kind has finished its first list.
    pub fn all_synced(&self) -> bool {
        let kinds = self.kinds.read().unwrap_or_else(PoisonError::into_inner);
        kinds.values().all(|w| w.store.is_ready_sync())
    }
}

/// `Store::wait_until_ready` is async; this asks without waiting.
trait ReadySync {
    fn is_ready_sync(&self) -> bool;
}

impl ReadySync for Cache {
    fn is_ready_sync(&self) -> bool {
        futures::FutureExt::now_or_never(self.wait_until_ready()).is_some_and(|r| r.is_ok())
    }
}

/// Discovers the API resources (preferred version of each group) the detector should watch.
pub async fn discover(
    client: &kube::Client,
    filter: &DetectorFilter,
) -> Result<Vec<WatchedKind>, kube::Error> {
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut discovered = Vec::new();
    for group in discovery.groups() {
        discovered.extend(group.recommended_resources());
    }
    Ok(watchable(&discovered, filter))
}

fn key_of(metadata: &Meta, gvk: &GroupVersionKind) -> TemplateKey {
    TemplateKey {
        gvk: gvk.clone(),
        namespace: metadata.namespace().unwrap_or_default().to_string(),
        name: metadata.name().to_string(),
    }
}

/// Follows one kind's shared watch until `cancel` fires (dropping the events ends this subscription),
/// queueing keys.
async fn watch_kind(
    kind: WatchedKind,
    mut events: BoxStream<'static, watcher::Event<CompactObject>>,
    filter: DetectorFilter,
    queue: WorkQueue<TemplateKey>,
    edited: Edited,
    cancel: CancellationToken,
) {
    let gvk = gvk_of(&kind.resource);
    // The shared cache already holds the new version when its event arrives, so what the detector last acted
    // on is remembered here, as a fingerprint per object (not a copy of it), keyed by a hash of its namespace
    // and name: two templates whose names hash alike share an entry, which can only queue one needlessly.
    let mut seen: HashMap<u64, u64> = HashMap::new();
    let names = RandomState::new();
    let identity = |object: &CompactObject| {
        let metadata = object.metadata();
        names.hash_one((metadata.namespace(), metadata.name()))
    };
    let mut listed: Vec<TemplateKey> = Vec::new();
    // What was seen before a relist started, to tell the templates edited while the watch was down.
    let mut before_relist: HashMap<u64, u64> = HashMap::new();
    while let Some(event) = crate::execution::queue::next_event(&mut events, &cancel).await {
        let mut ready: Vec<TemplateKey> = Vec::new();
        match &event {
            watcher::Event::Apply(object) => {
                if ignored(object.metadata(), &kind, &filter) {
                    continue;
                }
                let key = key_of(object.metadata(), &gvk);
                let print = fingerprint(object);
                match seen.insert(identity(object), print) {
                    Some(before) if before == print => {}
                    Some(_) => {
                        edited.mark(key.clone());
                        ready.push(key);
                    }
                    None => ready.push(key),
                }
            }
            watcher::Event::InitApply(object) => {
                if ignored(object.metadata(), &kind, &filter) {
                    continue;
                }
                let key = key_of(object.metadata(), &gvk);
                let print = fingerprint(object);
                // Edited while the watch was down (a relist, not the process's first list).
                if before_relist
                    .remove(&identity(object))
                    .is_some_and(|before| before != print)
                {
                    edited.mark(key.clone());
                }
                seen.insert(identity(object), print);
                listed.push(key);
            }
            watcher::Event::InitDone => {
                ready = std::mem::take(&mut listed);
                before_relist.clear();
            }
            watcher::Event::Init => {
                listed.clear();
                // Objects deleted while disconnected are not relisted; forget them.
                before_relist = std::mem::take(&mut seen);
            }
            // The binding goes with its template through the ownerReference; nothing to queue.
            watcher::Event::Delete(object) => {
                seen.remove(&identity(object));
                edited.forget(&key_of(object.metadata(), &gvk));
            }
        }
        for key in ready {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = queue.add(key) => {}
            }
        }
    }
}

/// Discovers and (re)starts watchers now and every `period` until `cancel` fires.
pub async fn run_discovery(
    client: kube::Client,
    informers: Informers,
    templates: Templates,
    filter: DetectorFilter,
    queue: WorkQueue<TemplateKey>,
    period: Duration,
    cancel: CancellationToken,
) {
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        match discover(&client, &filter).await {
            Ok(kinds) => {
                templates.reconcile_kinds(&client, &informers, kinds, &filter, &queue, &cancel);
            }
            Err(err) => tracing::warn!(%err, "discovering API resources for the resource detector"),
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;
    use serde_json::json;

    use super::*;

    fn discovered(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        verbs: &[&str],
        scope: Scope,
    ) -> (ApiResource, ApiCapabilities) {
        (
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural),
            ApiCapabilities {
                scope,
                subresources: Vec::new(),
                operations: verbs.iter().map(|v| (*v).to_string()).collect(),
            },
        )
    }

    #[test]
    fn watchable_kinds() {
        let all = ["get", "list", "watch", "create", "delete"];
        let resources = vec![
            discovered(
                "apps",
                "v1",
                "Deployment",
                "deployments",
                &all,
                Scope::Namespaced,
            ),
            discovered("", "v1", "ConfigMap", "configmaps", &all, Scope::Namespaced),
            discovered(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
                &all,
                Scope::Cluster,
            ),
            discovered("", "v1", "Event", "events", &all, Scope::Namespaced),
            discovered(
                "policy.karmada.io",
                "v1alpha1",
                "PropagationPolicy",
                "propagationpolicies",
                &all,
                Scope::Namespaced,
            ),
            discovered(
                "work.karmada.io",
                "v1alpha2",
                "ResourceBinding",
                "resourcebindings",
                &all,
                Scope::Namespaced,
            ),
            discovered(
                "coordination.k8s.io",
                "v1",
                "Lease",
                "leases",
                &all,
                Scope::Namespaced,
            ),
            discovered(
                "authorization.k8s.io",
                "v1",
                "SubjectAccessReview",
                "subjectaccessreviews",
                &["create"],
                Scope::Cluster,
            ),
            discovered("batch", "v1", "Job", "jobs", &all, Scope::Namespaced),
            discovered(
                "example.com",
                "v1",
                "Widget",
                "widgets",
                &all,
                Scope::Namespaced,
            ),
        ];
        let filter = DetectorFilter {
            skipped_apis: crate::reserved::SkippedApis::parse("batch/v1/Job").expect("flag"),
            ..DetectorFilter::default()
        };
        let kinds: Vec<(String, bool)> = watchable(&resources, &filter)
            .into_iter()
            .map(|k| (k.resource.kind, k.namespaced))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("Deployment".to_string(), true),
                ("ConfigMap".to_string(), true),
                ("ClusterRole".to_string(), false),
                ("Widget".to_string(), true),
            ]
        );
    }

    fn object(labels: serde_json::Value, data: serde_json::Value, rv: &str) -> CompactObject {
        let object = DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                resource_version: Some(rv.into()),
                labels: serde_json::from_value(labels).expect("labels"),
                ..ObjectMeta::default()
            },
            data,
        };
        CompactObject::from_dynamic(&object).expect("compact")
    }

    #[test]
    fn status_only_updates_are_ignored() {
        let base = object(json!({"app": "web"}), json!({"spec": {"replicas": 1}}), "1");
        let cases = [
            (
                "status only",
                object(
                    json!({"app": "web"}),
                    json!({"spec": {"replicas": 1}, "status": {"ready": 1}}),
                    "2",
                ),
                false,
            ),
            (
                "resourceVersion only",
                object(json!({"app": "web"}), json!({"spec": {"replicas": 1}}), "3"),
                false,
            ),
            (
                "spec",
                object(json!({"app": "web"}), json!({"spec": {"replicas": 2}}), "4"),
                true,
            ),
            (
                "labels",
                object(json!({"app": "db"}), json!({"spec": {"replicas": 1}}), "5"),
                true,
            ),
            (
                "configmap data",
                object(
                    json!({"app": "web"}),
                    json!({"spec": {"replicas": 1}, "data": {"k": "v"}}),
                    "6",
                ),
                true,
            ),
        ];
        for (name, new, expected) in cases {
            assert_eq!(spec_changed(&base, &new), expected, "{name}");
        }
    }

    /// Which updates mark a template edited (its binding then takes the new resourceVersion): a changed
    /// spec seen live or across a relist; never the process's first list, a status write, or a repeat.
    #[tokio::test]
    async fn edits_are_marked_live_and_across_relists_but_not_at_the_first_list() {
        use watcher::Event;
        let kind = WatchedKind {
            resource: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apps", "v1", "Deployment"),
                "deployments",
            ),
            namespaced: true,
        };
        let key = key_of(
            object(json!({}), json!({}), "1").metadata(),
            &gvk_of(&kind.resource),
        );
        let replicas = |n: i64, rv: &str| object(json!({}), json!({"spec": {"replicas": n}}), rv);
        let with_status = object(
            json!({}),
            json!({"spec": {"replicas": 1}, "status": {"ready": 1}}),
            "2",
        );
        let steps: Vec<(&str, Vec<Event<CompactObject>>, bool)> = vec![
            (
                "first list",
                vec![
                    Event::Init,
                    Event::InitApply(replicas(1, "1")),
                    Event::InitDone,
                ],
                false,
            ),
            ("status write", vec![Event::Apply(with_status)], false),
            ("spec edit", vec![Event::Apply(replicas(2, "3"))], true),
            (
                "relist, unchanged",
                vec![
                    Event::Init,
                    Event::InitApply(replicas(2, "4")),
                    Event::InitDone,
                ],
                false,
            ),
            (
                "relist, edited while the watch was down",
                vec![
                    Event::Init,
                    Event::InitApply(replicas(3, "5")),
                    Event::InitDone,
                ],
                true,
            ),
            ("deleted", vec![Event::Delete(replicas(3, "5"))], false),
        ];
        // The mark after a watch has followed `events` from its start.
        let mark_after = |events: Vec<Event<CompactObject>>| {
            let kind = kind.clone();
            let key = key.clone();
            async move {
                let edited = Edited::default();
                watch_kind(
                    kind,
                    Box::pin(futures::stream::iter(events)),
                    DetectorFilter::default(),
                    WorkQueue::new(16),
                    edited.clone(),
                    CancellationToken::new(),
                )
                .await;
                edited.mark_of(&key)
            }
        };
        let mut history: Vec<Event<CompactObject>> = Vec::new();
        for (step, events, marks) in steps {
            let before = mark_after(history.clone()).await;
            history.extend(events);
            let after = mark_after(history.clone()).await;
            assert_eq!(after.is_some() && after != before, marks, "{step}");
        }
    }

    #[test]
    fn reserved_and_skipped_namespaces_are_not_cached() {
        let filter = DetectorFilter::default();
        assert!(ignored_namespace(Some("karmada-es-member1"), &filter));
        assert!(ignored_namespace(Some("karmada-system"), &filter));
        assert!(ignored_namespace(Some("kube-system"), &filter));
        assert!(!ignored_namespace(Some("default"), &filter));
        assert!(!ignored_namespace(None, &filter));
        let namespaces = WatchedKind {
            resource: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("", "v1", "Namespace"),
                "namespaces",
            ),
            namespaced: false,
        };
        let named = |name: &str| DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            data: json!({}),
        };
        assert!(ignored(
            CompactObject::from_dynamic(&named("karmada-es-member1"))
                .expect("compact")
                .metadata(),
            &namespaces,
            &filter
        ));
        assert!(ignored(
            CompactObject::from_dynamic(&named("kube-system"))
                .expect("compact")
                .metadata(),
            &namespaces,
            &filter
        ));
        assert!(!ignored(
            CompactObject::from_dynamic(&named("production"))
                .expect("compact")
                .metadata(),
            &namespaces,
            &filter
        ));
    }
}
