//! Karmada's declarative (Lua) interpreter layer: the scripts of ResourceInterpreterCustomization objects
//! (`config.karmada.io/v1alpha1`), run in sandboxed Lua 5.1 VMs with Karmada's entry points and argument shapes,
//! so a customization written for Karmada works unchanged.
//!
//! The layer holds the customizations in force (replaced whole by [`ConfigurableInterpreter::load`] whenever the
//! set changes); a customization whose uid and generation are unchanged keeps its compiled scripts, so a VM
//! compiles each script once per generation. When several customizations target one kind, each operation is
//! taken from the first (by name) that defines it.

mod check;
mod convert;
mod items;
#[cfg(test)]
mod items_tests;
mod kube;
mod lazy;
#[cfg(test)]
mod lazy_tests;
mod luavm;
mod operations;
mod rules;

use std::collections::HashMap;
use std::sync::Arc;

use karmada_api::config::ResourceInterpreterCustomization;
use parking_lot::RwLock;

pub use check::{CheckError, check_customization};
pub use luavm::{Limits, LuaError, LuaVm, Script};
pub use rules::{RULES, Rule, rule_for, rule_named};

use crate::{Operation, Target};

/// The compiled scripts of one customization.
#[derive(Clone, Debug)]
struct Compiled {
    uid: String,
    generation: i64,
    target: Target,
    scripts: Vec<(Operation, Script)>,
}

impl Compiled {
    fn of(customization: &ResourceInterpreterCustomization) -> Self {
        let target = Target::new(
            customization.spec.target.api_version.clone(),
            customization.spec.target.kind.clone(),
        );
        let scripts = RULES
            .iter()
            .filter_map(|rule| {
                rule.script(&customization.spec.customizations)
                    .map(|script| {
                        (
                            rule.operation,
                            Script::new(script.lua_script.as_str(), rule.entry_point, rule.field),
                        )
                    })
            })
            .collect();
        Self {
            uid: customization.metadata.uid.clone().unwrap_or_default(),
            generation: customization.metadata.generation.unwrap_or_default(),
            target,
            scripts,
        }
    }
}

#[derive(Debug, Default)]
struct Registry {
    /// By customization name.
    customizations: HashMap<String, Arc<Compiled>>,
    /// The script answering each (target, operation).
    scripts: HashMap<(Target, Operation), Script>,
}

/// The Lua customization layer.
#[derive(Debug, Default)]
pub struct ConfigurableInterpreter {
    vm: LuaVm,
    registry: RwLock<Arc<Registry>>,
}

impl ConfigurableInterpreter {
    /// A layer running scripts on `vm`, with no customization yet.
    pub fn new(vm: LuaVm) -> Self {
        Self {
            vm,
            registry: RwLock::default(),
        }
    }

    /// The VM pool the layer runs scripts on.
    pub fn vm(&self) -> &LuaVm {
        &self.vm
    }

    /// Makes `customizations` the set in force. Scripts of customizations whose uid and generation did not
    /// change are kept compiled.
    pub fn load(&self, customizations: &[ResourceInterpreterCustomization]) {
        let previous = self.registry.read().clone();
        let mut sorted: Vec<&ResourceInterpreterCustomization> = customizations.iter().collect();
        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut next = Registry::default();
        for customization in sorted {
            let name = customization.metadata.name.clone().unwrap_or_default();
            let uid = customization.metadata.uid.clone().unwrap_or_default();
            let generation = customization.metadata.generation.unwrap_or_default();
            let compiled = match previous.customizations.get(&name) {
                Some(kept)
                    if kept.uid == uid && kept.generation == generation && !uid.is_empty() =>
                {
                    kept.clone()
                }
                _ => Arc::new(Compiled::of(customization)),
            };
            for (operation, script) in &compiled.scripts {
                next.scripts
                    .entry((compiled.target.clone(), *operation))
                    .or_insert_with(|| script.clone());
            }
            next.customizations.insert(name, compiled);
        }
        *self.registry.write() = Arc::new(next);
    }

    /// How many customizations are in force.
    pub fn len(&self) -> usize {
        self.registry.read().customizations.len()
    }

    /// Whether no customization is in force.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn script(&self, target: &Target, operation: Operation) -> Option<Script> {
        self.registry
            .read()
            .scripts
            .get(&(target.clone(), operation))
            .cloned()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod equivalence_tests;
