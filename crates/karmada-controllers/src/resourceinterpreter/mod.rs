//! The control plane's resource interpreter (Karmada's `resourceinterpreter` package): native, then the
//! bundled third-party customizations, then the cluster's ResourceInterpreterWebhookConfigurations, then its
//! ResourceInterpreterCustomizations; watches keep both sets current so that creating, changing or deleting one
//! applies without a restart.
//!
//! Every controller gets a clone of the same [`Interpreter`]; the customization layer inside it is shared, so
//! one watch serves them all. Each change of the set is announced on [`ResourceInterpreter::changes`] with the
//! targets whose scripts changed, so the detector can interpret their templates again.

mod webhook_caller;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use karmada_api::config::{
    ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration,
};
use karmada_interpreter::declarative::LuaVm;
use karmada_interpreter::webhook::WebhookInterpreter;
use karmada_interpreter::{ConfigurableInterpreter, Interpreter, Target};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use self::webhook_caller::HttpsWebhookCaller;
use crate::runtime::watch::next_event;
use crate::runtime::{resources, typed};

/// The interpreter the controllers share and the announcements of customization changes.
#[derive(Clone)]
pub struct ResourceInterpreter {
    pub interpreter: Interpreter,
    customizations: Arc<ConfigurableInterpreter>,
    webhooks: Arc<WebhookInterpreter>,
    caller: Arc<HttpsWebhookCaller>,
    changes: broadcast::Sender<Vec<Target>>,
}

impl Default for ResourceInterpreter {
    fn default() -> Self {
        Self::new()
    }
}

impl ResourceInterpreter {
    /// Native, bundled third-party, and (empty until [`Self::watch`] runs) webhook and customization layers.
    pub fn new() -> Self {
        let customizations = Arc::new(ConfigurableInterpreter::new(LuaVm::default()));
        let caller = Arc::new(HttpsWebhookCaller::default());
        let webhooks = Arc::new(WebhookInterpreter::new(caller.clone()));
        let interpreter = Interpreter::with_bundled()
            .with_webhooks(webhooks.clone())
            .with_customization(customizations.clone());
        Self {
            interpreter,
            customizations,
            webhooks,
            caller,
            changes: broadcast::channel(64).0,
        }
    }

    /// Targets whose customizations changed, one message per change of the set.
    pub fn changes(&self) -> broadcast::Receiver<Vec<Target>> {
        self.changes.subscribe()
    }

    /// The sender of [`Self::changes`], for configurations that subscribe later.
    pub fn changes_sender(&self) -> broadcast::Sender<Vec<Target>> {
        self.changes.clone()
    }

    /// Makes `customizations` the set in force and announces the targets that changed.
    pub fn load(
        &self,
        previous: &BTreeMap<String, ResourceInterpreterCustomization>,
        current: &BTreeMap<String, ResourceInterpreterCustomization>,
    ) {
        let all: Vec<ResourceInterpreterCustomization> = current.values().cloned().collect();
        self.customizations.load(&all);
        self.announce(previous, current, |c| {
            vec![Target::new(
                c.spec.target.api_version.clone(),
                c.spec.target.kind.clone(),
            )]
        });
    }

    /// Makes `configurations` the webhooks in force and announces the targets their rules name (a rule with
    /// a wildcard names every kind, as the target `*`).
    pub fn load_webhooks(
        &self,
        previous: &BTreeMap<String, ResourceInterpreterWebhookConfiguration>,
        current: &BTreeMap<String, ResourceInterpreterWebhookConfiguration>,
    ) {
        let all: Vec<ResourceInterpreterWebhookConfiguration> = current.values().cloned().collect();
        self.webhooks.load(&all);
        self.announce(previous, current, webhook_targets);
    }

    /// Announces the targets of the entries that differ between `previous` and `current`.
    fn announce<T: PartialEq>(
        &self,
        previous: &BTreeMap<String, T>,
        current: &BTreeMap<String, T>,
        targets: impl Fn(&T) -> Vec<Target>,
    ) {
        let changed: BTreeSet<Target> = previous
            .iter()
            .filter(|(name, old)| current.get(*name) != Some(old))
            .map(|(_, old)| old)
            .chain(
                current
                    .iter()
                    .filter(|(name, new)| previous.get(*name) != Some(new))
                    .map(|(_, new)| new),
            )
            .flat_map(targets)
            .collect();
        if !changed.is_empty() {
            // No receiver yet is fine: nothing was interpreted with the old set either.
            let _ = self.changes.send(changed.into_iter().collect());
        }
    }

    /// Keeps the customization and webhook layers equal to the cluster's ResourceInterpreterCustomizations
    /// and ResourceInterpreterWebhookConfigurations until `cancel`.
    pub async fn watch(self, client: kube::Client, cancel: CancellationToken) {
        self.caller.set_control_plane(client.clone());
        let customizations = watch_set(
            client.clone(),
            resources::resource_interpreter_customization(),
            cancel.clone(),
            |previous, current| self.load(previous, current),
        );
        let webhooks = watch_set(
            client,
            resources::resource_interpreter_webhook_configuration(),
            cancel,
            |previous, current| self.load_webhooks(previous, current),
        );
        tokio::join!(customizations, webhooks);
    }
}

/// The targets a webhook configuration's rules name.
fn webhook_targets(configuration: &ResourceInterpreterWebhookConfiguration) -> Vec<Target> {
    let mut targets = Vec::new();
    for rule in configuration.webhooks.iter().flat_map(|w| &w.rules) {
        let lists = [&rule.api_groups, &rule.api_versions, &rule.kinds];
        if lists.iter().any(|list| list.iter().any(|v| v == "*")) {
            return vec![Target::new("*", "*")];
        }
        for group in &rule.api_groups {
            for version in &rule.api_versions {
                let api_version = if group.is_empty() {
                    version.clone()
                } else {
                    format!("{group}/{version}")
                };
                for kind in &rule.kinds {
                    targets.push(Target::new(api_version.clone(), kind.clone()));
                }
            }
        }
    }
    targets
}

/// Watches every object of `resource`, decoded as `T` by name, and calls `load(previous, current)` whenever
/// the set changes, until `cancel`.
async fn watch_set<T: DeserializeOwned + PartialEq + Clone>(
    client: kube::Client,
    resource: ApiResource,
    cancel: CancellationToken,
    load: impl Fn(&BTreeMap<String, T>, &BTreeMap<String, T>),
) {
    let api: Api<DynamicObject> = resources::all(&client, &resource);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut current: BTreeMap<String, T> = BTreeMap::new();
    let mut listing: BTreeMap<String, T> = BTreeMap::new();
    while let Some(event) = next_event(
        &mut stream,
        &cancel,
        "interpreter configuration",
        &resource.kind,
    )
    .await
    {
        let previous = current.clone();
        match event {
            watcher::Event::Apply(object) => {
                if let Some((name, decoded)) = decode(&object, &resource.kind) {
                    current.insert(name, decoded);
                }
            }
            watcher::Event::Delete(object) => {
                current.remove(object.metadata.name.as_deref().unwrap_or_default());
            }
            watcher::Event::Init => listing.clear(),
            watcher::Event::InitApply(object) => listing.extend(decode(&object, &resource.kind)),
            watcher::Event::InitDone => current = std::mem::take(&mut listing),
        }
        if previous != current {
            tracing::info!(kind = %resource.kind, objects = current.len(), "resource interpreter configuration changed");
            load(&previous, &current);
        }
    }
}

fn decode<T: DeserializeOwned>(object: &DynamicObject, kind: &str) -> Option<(String, T)> {
    match typed::to_typed::<T>(object) {
        Ok(decoded) => Some((object.metadata.name.clone().unwrap_or_default(), decoded)),
        Err(err) => {
            tracing::warn!(name = ?object.metadata.name, %err, "skipping an undecodable {kind}");
            None
        }
    }
}

#[cfg(test)]
mod webhook_caller_tests;
