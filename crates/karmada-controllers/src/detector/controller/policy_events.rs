//! The detector's policy side: watching (Cluster)PropagationPolicies and (Cluster)OverridePolicies into the
//! policy index, which templates a policy change queues ([`Detector::affected`]), and Karmada's policy finalizer
//! (added to live policies; on deletion, claims released before it is removed).

use std::collections::HashSet;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use karmada_api::policy::{
    ActivationPreference, FINALIZER_CLUSTER_PROPAGATION_POLICY, FINALIZER_PROPAGATION_POLICY,
};
use karmada_api::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Detector;
use crate::detector::claim::{current_claim, policy_id};
use crate::detector::finalizer::{FinalizerAction, PolicyKey, finalizer_action, finalizers_patch};
use crate::detector::matching::{ImplicitPriority, PolicyRef};
use crate::detector::policies::selected_kinds;
use crate::detector::templates::{TemplateKey, TemplateMeta};
use crate::keys::{
    LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID, LABEL_PROPAGATION_POLICY_PERMANENT_ID,
};
use crate::runtime::watch::next_event;
use crate::runtime::{ControllerError, Pairs, resources, typed};

pub(super) async fn finalizer_worker(detector: Arc<Detector>, cancel: CancellationToken) {
    while let Some(key) = detector.finalizing.next(&cancel).await {
        let result = tokio::select! {
            () = cancel.cancelled() => return,
            result = detector.finalize_policy(&key) => result,
        };
        detector.finalizing.done(key.clone()).await;
        match result {
            Ok(()) => detector.finalizing_backoff.forget(&key),
            Err(err) if err.is_conflict() || err.is_not_found() => {
                // A template or the policy changed under us: the caches catch up, then try again.
                detector
                    .finalizing
                    .add_after(key, Duration::from_millis(100));
            }
            Err(err) => {
                let delay = detector.finalizing_backoff.fail(key.clone());
                tracing::warn!(policy = %key, %err, ?delay, "policy finalizer: retrying");
                detector.finalizing.add_after(key, delay);
            }
        }
    }
}

/// The policy kinds the detector watches, and what their events change.
pub(super) trait WatchedPolicy: DeserializeOwned + Send + Sync + 'static {
    /// The finalizer the detector keeps on this kind, and whether it is cluster-scoped.
    const FINALIZER: Option<(&'static str, bool)>;

    /// Stores or removes the policy; returns the template keys to queue.
    fn apply(
        detector: &Detector,
        policy: Option<Self>,
        deleted: Option<(String, String)>,
    ) -> Vec<TemplateKey>;
}

fn namespace_name(object: &DynamicObject) -> (String, String) {
    (
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

impl WatchedPolicy for PropagationPolicy {
    const FINALIZER: Option<(&'static str, bool)> = Some((FINALIZER_PROPAGATION_POLICY, false));
    fn apply(
        detector: &Detector,
        policy: Option<Self>,
        deleted: Option<(String, String)>,
    ) -> Vec<TemplateKey> {
        let (old, new) = {
            let mut index = detector
                .policies
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            match (policy, deleted) {
                (Some(policy), _) => {
                    let new = Arc::new(policy.clone());
                    (index.apply_propagation(policy), Some(new))
                }
                (None, Some(key)) => (index.delete_propagation(&key), None),
                (None, None) => (None, None),
            }
        };
        detector.affected(
            old.as_deref().map(PolicyRef::Namespaced),
            new.as_deref().map(PolicyRef::Namespaced),
        )
    }
}

impl WatchedPolicy for ClusterPropagationPolicy {
    const FINALIZER: Option<(&'static str, bool)> =
        Some((FINALIZER_CLUSTER_PROPAGATION_POLICY, true));
    fn apply(
        detector: &Detector,
        policy: Option<Self>,
        deleted: Option<(String, String)>,
    ) -> Vec<TemplateKey> {
        let (old, new) = {
            let mut index = detector
                .policies
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            match (policy, deleted) {
                (Some(policy), _) => {
                    let new = Arc::new(policy.clone());
                    (index.apply_cluster(policy), Some(new))
                }
                (None, Some((_, name))) => (index.delete_cluster(&name), None),
                (None, None) => (None, None),
            }
        };
        detector.affected(
            old.as_deref().map(PolicyRef::Cluster),
            new.as_deref().map(PolicyRef::Cluster),
        )
    }
}

impl WatchedPolicy for OverridePolicy {
    const FINALIZER: Option<(&'static str, bool)> = None;
    fn apply(
        detector: &Detector,
        policy: Option<Self>,
        deleted: Option<(String, String)>,
    ) -> Vec<TemplateKey> {
        let mut index = detector
            .policies
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match (policy, deleted) {
            (Some(policy), _) => index.set_override(
                policy.metadata.namespace.as_deref().unwrap_or_default(),
                policy.metadata.name.as_deref().unwrap_or_default(),
                true,
            ),
            (None, Some((namespace, name))) => index.set_override(&namespace, &name, false),
            (None, None) => {}
        }
        detector.take_waiting_overrides()
    }
}

impl WatchedPolicy for ClusterOverridePolicy {
    const FINALIZER: Option<(&'static str, bool)> = None;
    fn apply(
        detector: &Detector,
        policy: Option<Self>,
        deleted: Option<(String, String)>,
    ) -> Vec<TemplateKey> {
        let mut index = detector
            .policies
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match (policy, deleted) {
            (Some(policy), _) => index
                .set_cluster_override(policy.metadata.name.as_deref().unwrap_or_default(), true),
            (None, Some((_, name))) => index.set_cluster_override(&name, false),
            (None, None) => {}
        }
        detector.take_waiting_overrides()
    }
}

/// Watches one policy kind until `cancel` fires; `synced` turns true after the first complete list.
pub(super) async fn watch_policies<P: WatchedPolicy>(
    detector: Arc<Detector>,
    resource: ApiResource,
    synced: watch::Sender<bool>,
    cancel: CancellationToken,
) {
    let api: Api<DynamicObject> = resources::all(&detector.client, &resource);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    // Names seen in the current list and in the cache, to notice deletions missed while disconnected.
    let mut known: HashSet<(String, String)> = HashSet::new();
    let mut listed: Vec<DynamicObject> = Vec::new();
    loop {
        let Some(event) = next_event(&mut stream, &cancel, "policy", &resource.kind).await else {
            return;
        };
        let mut keys = Vec::new();
        let mut finalize = Vec::new();
        match event {
            watcher::Event::Apply(object) => {
                known.insert(namespace_name(&object));
                keys = apply_object::<P>(&detector, &resource, &object);
                finalize.extend(finalizer_key::<P>(&object));
            }
            watcher::Event::Delete(object) => {
                let key = namespace_name(&object);
                known.remove(&key);
                keys = P::apply(&detector, None, Some(key));
            }
            watcher::Event::Init => listed.clear(),
            watcher::Event::InitApply(object) => listed.push(object),
            watcher::Event::InitDone => {
                let now: HashSet<(String, String)> = listed.iter().map(namespace_name).collect();
                for gone in known.difference(&now) {
                    keys.extend(P::apply(&detector, None, Some(gone.clone())));
                }
                for object in std::mem::take(&mut listed) {
                    keys.extend(apply_object::<P>(&detector, &resource, &object));
                    finalize.extend(finalizer_key::<P>(&object));
                }
                known = now;
                synced.send_replace(true);
            }
        }
        for key in keys {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = detector.queue.add(key) => {}
            }
        }
        for key in finalize {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = detector.finalizing.add(key) => {}
            }
        }
    }
}

/// The finalizer queue key of `object` when its finalizer needs adding or finalizing.
fn finalizer_key<P: WatchedPolicy>(object: &DynamicObject) -> Option<PolicyKey> {
    let (finalizer, cluster) = P::FINALIZER?;
    if finalizer_action(&object.metadata, finalizer) == FinalizerAction::None {
        return None;
    }
    let (namespace, name) = namespace_name(object);
    Some(PolicyKey {
        cluster,
        namespace,
        name,
    })
}

fn apply_object<P: WatchedPolicy>(
    detector: &Detector,
    resource: &ApiResource,
    object: &DynamicObject,
) -> Vec<TemplateKey> {
    match typed::to_typed::<P>(object) {
        Ok(policy) => P::apply(detector, Some(policy), None),
        Err(err) => {
            let (namespace, name) = namespace_name(object);
            tracing::warn!(%err, kind = %resource.kind, %namespace, %name, "ignoring malformed policy");
            Vec::new()
        }
    }
}

/// A cheap first check before [`PolicyRef::matches`]: whether some selector of `policy` names `object`'s
/// namespace and name or leaves them open (apiVersion and kind were matched by the caller).
fn could_select(policy: PolicyRef<'_>, namespace: &str, name: &str) -> bool {
    if !policy.is_cluster() && policy.namespace() != namespace {
        return false;
    }
    policy.spec().resource_selectors.iter().any(|selector| {
        (selector.namespace.is_empty() || selector.namespace == namespace)
            && (selector.name.is_empty() || selector.name == name)
    })
}

/// The part of a template that selectors look at, without serializing the whole object.
fn selector_view(object: &TemplateMeta<'_>) -> Value {
    json!({
        "apiVersion": object.api_version,
        "kind": object.kind,
        "metadata": {
            "name": object.metadata.name,
            "namespace": object.metadata.namespace,
            "labels": object.labels,
        },
    })
}

impl Detector {
    fn take_waiting_overrides(&self) -> Vec<TemplateKey> {
        let mut waiting = self
            .waiting_overrides
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        waiting.drain().collect()
    }

    /// Templates to queue after a policy changed from `old` to `new` (either may be absent).
    fn affected(&self, old: Option<PolicyRef<'_>>, new: Option<PolicyRef<'_>>) -> Vec<TemplateKey> {
        let Some(any) = new.or(old) else {
            return Vec::new();
        };
        let id_label = if any.is_cluster() {
            LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID
        } else {
            LABEL_PROPAGATION_POLICY_PERMANENT_ID
        };
        let ids: Vec<String> = [old, new]
            .into_iter()
            .flatten()
            .filter_map(|p| policy_id(p).ok().map(str::to_string))
            .collect();
        let lazy_update = old.is_some()
            && new.is_some_and(|p| {
                p.spec().activation_preference == Some(ActivationPreference::Lazy)
            });
        let preempting = self.config.preemption && new.is_some_and(|p| p.preempts());
        let mut kinds = old.map(selected_kinds).unwrap_or_default();
        kinds.extend(new.map(selected_kinds).unwrap_or_default());
        // Templates this policy claims but no longer selects: their claims are released (Karmada does this
        // on policy creation and update, not on template changes).
        let unselected: std::cell::RefCell<HashSet<(String, String)>> =
            std::cell::RefCell::default();
        let mut keys = Vec::new();
        for (api_version, kind) in &kinds {
            keys.extend(
                self.templates
                    .keys_where(Some((api_version, kind)), |object| {
                        let claimed_by_this = object
                            .labels
                            .get(id_label)
                            .is_some_and(|id| ids.iter().any(|own| own == id));
                        let view = || selector_view(object);
                        let selected = new.is_some_and(|p| {
                            p.metadata().deletion_timestamp.is_none()
                                && could_select(
                                    p,
                                    object.metadata.namespace().unwrap_or_default(),
                                    object.metadata.name(),
                                )
                                && p.matches(&view()) != ImplicitPriority::Mismatch
                        });
                        if claimed_by_this {
                            if new.is_some() && !selected {
                                unselected.borrow_mut().insert((
                                    object.metadata.namespace().unwrap_or_default().to_string(),
                                    object.metadata.name().to_string(),
                                ));
                            }
                            // Lazy: a policy change reaches a bound template only when the template changes.
                            !(lazy_update && selected)
                        } else {
                            selected
                                && (preempting
                                    || current_claim(&view_with_claim(object.annotations, &view()))
                                        .is_none())
                        }
                    }),
            );
        }
        keys.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        keys.dedup();
        let unselected = unselected.into_inner();
        if !unselected.is_empty() {
            let mut pending = self
                .release_pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            pending.extend(
                keys.iter()
                    .filter(|k| unselected.contains(&(k.namespace.clone(), k.name.clone())))
                    .cloned(),
            );
        }
        keys
    }

    /// Adds the finalizer to a live policy, or releases a deleted policy's claims and then removes it.
    async fn finalize_policy(&self, key: &PolicyKey) -> Result<(), ControllerError> {
        let (meta, id, finalizer, api) = {
            let index = self.policies.read().unwrap_or_else(PoisonError::into_inner);
            if key.cluster {
                let Some(policy) = index.cluster_policy(&key.name) else {
                    return Ok(());
                };
                (
                    policy.metadata.clone(),
                    policy_id(PolicyRef::Cluster(&policy))
                        .ok()
                        .map(str::to_string),
                    FINALIZER_CLUSTER_PROPAGATION_POLICY,
                    resources::all(&self.client, &resources::cluster_propagation_policy()),
                )
            } else {
                let Some(policy) =
                    index.propagation_policy(&(key.namespace.clone(), key.name.clone()))
                else {
                    return Ok(());
                };
                (
                    policy.metadata.clone(),
                    policy_id(PolicyRef::Namespaced(&policy))
                        .ok()
                        .map(str::to_string),
                    FINALIZER_PROPAGATION_POLICY,
                    resources::namespaced(
                        &self.client,
                        &resources::propagation_policy(),
                        &key.namespace,
                    ),
                )
            }
        };
        match finalizer_action(&meta, finalizer) {
            FinalizerAction::None => return Ok(()),
            FinalizerAction::Add => {
                Self::patch_with_version(
                    &api,
                    &key.name,
                    finalizers_patch(&meta, finalizer, true),
                    None,
                )
                .await?;
                return Ok(());
            }
            FinalizerAction::Finalize => {}
        }
        if let Some(id) = id {
            let id_label = if key.cluster {
                LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID
            } else {
                LABEL_PROPAGATION_POLICY_PERMANENT_ID
            };
            let claimed = self.templates.keys_where(None, |object| {
                object.labels.get(id_label) == Some(id.as_str())
            });
            for template_key in claimed {
                if let Some(object) = self.templates.get(&template_key)? {
                    let template = typed::to_json(&object)?;
                    self.release(&template_key, &object, &template, &id).await?;
                }
            }
        }
        Self::patch_with_version(
            &api,
            &key.name,
            finalizers_patch(&meta, finalizer, false),
            None,
        )
        .await?;
        tracing::info!(policy = %key, "claims released; finalizer removed");
        Ok(())
    }
}

/// `view` with the claim metadata of `object`, so [`current_claim`] can read it.
fn view_with_claim(annotations: &Pairs, view: &Value) -> Value {
    let mut view = view.clone();
    view["metadata"]["annotations"] = json!(annotations);
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::CompactObject;

    #[test]
    fn selector_view_matches_like_the_full_object() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"replicas": 3}
        }))
        .expect("object");
        let policy: PropagationPolicy = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "labelSelector": {"matchLabels": {"app": "web"}}}]}
        }))
        .expect("policy");
        let full = typed::to_json(&object).expect("json");
        let view = selector_view(&TemplateMeta::of(
            "apps/v1",
            "Deployment",
            &CompactObject::from_dynamic(&object).expect("compact"),
        ));
        let policy = PolicyRef::Namespaced(&policy);
        assert_eq!(policy.matches(&view), policy.matches(&full));
        assert_eq!(policy.matches(&view), ImplicitPriority::LabelSelector);
    }

    #[test]
    fn could_select_never_rules_out_a_match() {
        let object = |namespace: &str, name: &str| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}}
            }))
            .expect("object")
        };
        let pp = |selectors: Value| -> PropagationPolicy {
            serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "default"},
                                          "spec": {"resourceSelectors": selectors}}))
            .expect("pp")
        };
        let cases = [
            (
                json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]),
                "default",
                "web",
                true,
            ),
            (
                json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]),
                "default",
                "db",
                false,
            ),
            (
                json!([{"apiVersion": "apps/v1", "kind": "Deployment"}]),
                "other",
                "web",
                false,
            ),
            (
                json!([{"apiVersion": "apps/v1", "kind": "Deployment",
                     "labelSelector": {"matchLabels": {"app": "web"}}}]),
                "default",
                "db",
                true,
            ),
        ];
        for (selectors, namespace, name, expected) in cases {
            let policy = pp(selectors.clone());
            let policy = PolicyRef::Namespaced(&policy);
            let object = object(namespace, name);
            assert_eq!(
                could_select(policy, namespace, name),
                expected,
                "{selectors} {namespace}/{name}"
            );
            let view = selector_view(&TemplateMeta::of(
                "apps/v1",
                "Deployment",
                &CompactObject::from_dynamic(&object).expect("compact"),
            ));
            if policy.matches(&view) != ImplicitPriority::Mismatch {
                assert!(could_select(policy, namespace, name));
            }
        }
    }
}
