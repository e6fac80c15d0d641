//! The scheduler's `--plugins` flag (Karmada's syntax): which plugins the default profile runs and which a
//! SchedulerProfile may turn on.
//!
//! `*` stands for the default set ([`DEFAULT_PLUGINS`]), `Name` adds a registered plugin to it, `-Name` removes one;
//! without `*` only the named plugins run. A plugin removed with `-Name` is out of this scheduler altogether: a
//! profile that enables it, or configures it, cannot be used here (its bindings are left unscheduled with a
//! condition saying so). Karmada's `*` means every registered plugin because every one of its in-tree plugins is
//! on by default; here some registered plugins (ClusterLatency, ClusterPorts, AvailableResources) are opt-in, so
//! `*` keeps them off unless named.

use std::collections::BTreeSet;

use super::profile::DEFAULT_PLUGINS;
use super::registry::Registry;
use crate::error::InputError;

/// The plugin choice of one scheduler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSelection {
    /// What the default profile runs, in filter order.
    defaults: Vec<String>,
    /// Turned off with `-Name`.
    removed: BTreeSet<String>,
}

impl Default for PluginSelection {
    /// `--plugins=*`.
    fn default() -> Self {
        Self {
            defaults: DEFAULT_PLUGINS.iter().map(|n| (*n).to_string()).collect(),
            removed: BTreeSet::new(),
        }
    }
}

const ACCEPTED: &str = "accepted: a comma-separated list of `*` (the default plugins), `Name` (add) and `-Name` (remove)";

impl PluginSelection {
    /// Reads the flag's items (already split at commas; blanks ignored) against `registry`.
    pub fn parse<S: AsRef<str>>(items: &[S], registry: &Registry) -> Result<Self, InputError> {
        let mut all = false;
        let mut added: Vec<String> = Vec::new();
        let mut removed = BTreeSet::new();
        for item in items
            .iter()
            .map(|i| i.as_ref().trim())
            .filter(|i| !i.is_empty())
        {
            if item == "*" {
                all = true;
                continue;
            }
            let (negated, name) = match item.strip_prefix('-') {
                Some(name) => (true, name),
                None => (false, item),
            };
            if !registry.contains(name) {
                return Err(InputError::new(
                    format!("--plugins {item}"),
                    format!(
                        "unknown plugin; known plugins: {}; {ACCEPTED}",
                        registry.names().join(", ")
                    ),
                ));
            }
            if negated {
                removed.insert(name.to_string());
            } else if !added.iter().any(|a| a == name) {
                added.push(name.to_string());
            }
        }
        if let Some(both) = added.iter().find(|name| removed.contains(*name)) {
            return Err(InputError::new(
                format!("--plugins {both}"),
                format!("is both added and removed; {ACCEPTED}"),
            ));
        }
        let mut defaults: Vec<String> = if all {
            DEFAULT_PLUGINS.iter().map(|n| (*n).to_string()).collect()
        } else {
            Vec::new()
        };
        for name in added {
            if !defaults.contains(&name) {
                defaults.push(name);
            }
        }
        defaults.retain(|name| !removed.contains(name));
        Ok(Self { defaults, removed })
    }

    /// The plugins the default profile runs, in order.
    pub fn defaults(&self) -> &[String] {
        &self.defaults
    }

    /// Whether `name` was turned off with `-Name`.
    pub fn is_removed(&self, name: &str) -> bool {
        self.removed.contains(name)
    }
}
