//! The control plane's resource interpreter (Karmada's `resourceinterpreter` package): native, then the
//! bundled third-party customizations, then the cluster's ResourceInterpreterCustomizations, which a watch keeps
//! current so that creating, changing or deleting one applies without a restart.
//!
//! Every controller gets a clone of the same [`Interpreter`]; the customization layer inside it is shared, so
//! one watch serves them all. Each change of the set is announced on [`ResourceInterpreter::changes`] with the
//! targets whose scripts changed, so the detector can interpret their templates again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use karmada_api::config::ResourceInterpreterCustomization;
use karmada_interpreter::declarative::LuaVm;
use karmada_interpreter::{ConfigurableInterpreter, Interpreter, Target};
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::runtime::watch::next_event;
use crate::runtime::{resources, typed};

/// The interpreter the controllers share and the announcements of customization changes.
#[derive(Clone)]
pub struct ResourceInterpreter {
    pub interpreter: Interpreter,
    customizations: Arc<ConfigurableInterpreter>,
    changes: broadcast::Sender<Vec<Target>>,
}

impl Default for ResourceInterpreter {
    fn default() -> Self {
        Self::new()
    }
}

impl ResourceInterpreter {
    /// Native, bundled third-party and (empty until [`Self::watch`] runs) customization layers.
    pub fn new() -> Self {
        let customizations = Arc::new(ConfigurableInterpreter::new(LuaVm::default()));
        let interpreter = Interpreter::with_bundled().with_customization(customizations.clone());
        Self {
            interpreter,
            customizations,
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
            .map(|c| {
                Target::new(
                    c.spec.target.api_version.clone(),
                    c.spec.target.kind.clone(),
                )
            })
            .collect();
        if !changed.is_empty() {
            // No receiver yet is fine: nothing was interpreted with the old set either.
            let _ = self.changes.send(changed.into_iter().collect());
        }
    }

    /// Keeps the customization layer equal to the cluster's ResourceInterpreterCustomizations until `cancel`.
    pub async fn watch(self, client: kube::Client, cancel: CancellationToken) {
        let resource = resources::resource_interpreter_customization();
        let api: Api<DynamicObject> = resources::all(&client, &resource);
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(stream);
        let mut current: BTreeMap<String, ResourceInterpreterCustomization> = BTreeMap::new();
        let mut listing: BTreeMap<String, ResourceInterpreterCustomization> = BTreeMap::new();
        while let Some(event) = next_event(
            &mut stream,
            &cancel,
            "interpreter customization",
            &resource.kind,
        )
        .await
        {
            let previous = current.clone();
            match event {
                watcher::Event::Apply(object) => {
                    if let Some((name, customization)) = decode(&object) {
                        current.insert(name, customization);
                    }
                }
                watcher::Event::Delete(object) => {
                    current.remove(object.metadata.name.as_deref().unwrap_or_default());
                }
                watcher::Event::Init => listing.clear(),
                watcher::Event::InitApply(object) => listing.extend(decode(&object)),
                watcher::Event::InitDone => current = std::mem::take(&mut listing),
            }
            if previous != current {
                tracing::info!(
                    customizations = current.len(),
                    "resource interpreter customizations changed"
                );
                self.load(&previous, &current);
            }
        }
    }
}

fn decode(object: &DynamicObject) -> Option<(String, ResourceInterpreterCustomization)> {
    match typed::to_typed::<ResourceInterpreterCustomization>(object) {
        Ok(customization) => Some((
            object.metadata.name.clone().unwrap_or_default(),
            customization,
        )),
        Err(err) => {
            tracing::warn!(name = ?object.metadata.name, %err, "skipping an undecodable ResourceInterpreterCustomization");
            None
        }
    }
}
