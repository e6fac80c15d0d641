//! Scheduler profiles: the seed's `SchedulerProfile` (scheduling.karmada.io/v1alpha1) — enabled and disabled
//! plugins, weights and per-plugin args — turned into a runnable [`Framework`]; without a profile, Karmada's
//! default plugin set with weight 1 each.
//!
//! Semantics (as kube-scheduler profiles): `enabled` adds plugins to the default set (or sets the weight of one
//! already there), `disabled` removes them (`*` removes every default), `pluginConfig` passes args. Unknown plugin
//! names anywhere are errors listing the known ones. The plugin order is the default order followed by added
//! plugins in profile order; filters run in that order and the first rejection is the one reported.

use std::collections::BTreeMap;

use karmada_api::scheduling::SchedulerProfileSpec;
use serde_json::Value;

use super::plugin::Plugin;
use super::registry::Registry;
use crate::error::InputError;

/// The scheduler name a policy gets when it names none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// Karmada's default plugins, in the order filters run here.
pub const DEFAULT_PLUGINS: &[&str] = &[
    "APIEnablement",
    "TaintToleration",
    "ClusterAffinity",
    "SpreadConstraint",
    "ClusterEviction",
    "ClusterLocality",
];

const ACCEPTED: &str = "accepted: spec.plugins.schedule.enabled[{name, weight}], spec.plugins.schedule.disabled[{name}], spec.pluginConfig[{name, args}]";

/// The shared type ignores unknown fields; a profile is configuration, so a misspelt key is reported instead.
fn check_fields(value: &Value, path: &str, allowed: &[&str]) -> Result<(), InputError> {
    let Some(object) = value.as_object() else {
        return if value.is_null() {
            Ok(())
        } else {
            Err(InputError::new(
                path,
                format!("must be an object; {ACCEPTED}"),
            ))
        };
    };
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(unknown) => Err(InputError::new(
            path,
            format!("unknown field `{unknown}`; {ACCEPTED}"),
        )),
        None => Ok(()),
    }
}

fn check_profile_fields(spec: &Value, at: &str) -> Result<(), InputError> {
    check_fields(spec, &format!("{at}: spec"), &["plugins", "pluginConfig"])?;
    let plugins = &spec["plugins"];
    check_fields(plugins, &format!("{at}: spec.plugins"), &["schedule"])?;
    check_fields(
        &plugins["schedule"],
        &format!("{at}: spec.plugins.schedule"),
        &["enabled", "disabled"],
    )?;
    for list in ["enabled", "disabled"] {
        for (index, item) in plugins["schedule"][list]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            check_fields(
                item,
                &format!("{at}: spec.plugins.schedule.{list}[{index}]"),
                &["name", "weight"],
            )?;
        }
    }
    for (index, item) in spec["pluginConfig"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        check_fields(
            item,
            &format!("{at}: spec.pluginConfig[{index}]"),
            &["name", "args"],
        )?;
    }
    Ok(())
}

/// A `SchedulerProfile` (the shared `karmada_api::scheduling` type) with its name checked.
#[derive(Debug, Clone)]
pub struct SchedulerProfile {
    pub name: String,
    pub spec: SchedulerProfileSpec,
}

impl SchedulerProfile {
    /// Wraps a typed profile, e.g. one read from the API server.
    pub fn from_typed(
        profile: &karmada_api::scheduling::SchedulerProfile,
    ) -> Result<Self, InputError> {
        let name = profile.metadata.name.clone().filter(|n| !n.is_empty());
        let Some(name) = name else {
            return Err(InputError::new(
                "SchedulerProfile metadata.name",
                "is required",
            ));
        };
        Ok(Self {
            name,
            spec: profile.spec.clone(),
        })
    }

    /// Reads a `SchedulerProfile` document, rejecting unknown fields.
    pub fn from_value(object: &Value) -> Result<Self, InputError> {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let Some(name) = name else {
            return Err(InputError::new(
                "SchedulerProfile metadata.name",
                "is required",
            ));
        };
        let at = format!("SchedulerProfile {name}");
        check_profile_fields(object.get("spec").unwrap_or(&Value::Null), &at)?;
        let typed: karmada_api::scheduling::SchedulerProfile =
            serde_json::from_value(object.clone())
                .map_err(|e| InputError::new(format!("{at}: spec"), format!("{e}; {ACCEPTED}")))?;
        Self::from_typed(&typed)
    }
}

/// A plugin with its weight in a framework.
pub struct WeightedPlugin {
    pub plugin: Box<dyn Plugin>,
    /// The plugin's name, shared by every explanation that cites it.
    pub name: std::sync::Arc<str>,
    pub weight: i64,
}

/// The plugins one scheduling run uses, in order.
pub struct Framework {
    /// "default" or the profile's name.
    pub profile: String,
    pub plugins: Vec<WeightedPlugin>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plugins: Vec<(&str, i64)> = self
            .plugins
            .iter()
            .map(|p| (p.plugin.name(), p.weight))
            .collect();
        f.debug_struct("Framework")
            .field("profile", &self.profile)
            .field("plugins", &plugins)
            .finish()
    }
}

impl Framework {
    /// Karmada's default plugin set, weight 1 each.
    pub fn with_defaults(registry: &Registry) -> Result<Self, InputError> {
        let plugins = DEFAULT_PLUGINS
            .iter()
            .map(|name| {
                let plugin = registry.build(name, None)?;
                Ok(WeightedPlugin {
                    name: plugin.name().into(),
                    plugin,
                    weight: 1,
                })
            })
            .collect::<Result<_, InputError>>()?;
        Ok(Self {
            profile: "default".into(),
            plugins,
        })
    }

    /// The plugin set a profile describes.
    pub fn from_profile(
        registry: &Registry,
        profile: &SchedulerProfile,
    ) -> Result<Self, InputError> {
        let at = format!("SchedulerProfile {}", profile.name);
        let spec = &profile.spec;
        let mut chosen: Vec<(String, i64)> = DEFAULT_PLUGINS
            .iter()
            .map(|name| ((*name).to_string(), 1))
            .collect();
        for (index, disabled) in spec.plugins.schedule.disabled.iter().enumerate() {
            if disabled.name == "*" {
                chosen.clear();
                continue;
            }
            if !registry.contains(&disabled.name) {
                return Err(registry
                    .unknown(&disabled.name)
                    .within(&format!("{at}: spec.plugins.schedule.disabled[{index}]")));
            }
            chosen.retain(|(name, _)| name != &disabled.name);
        }
        for (index, enabled) in spec.plugins.schedule.enabled.iter().enumerate() {
            let path = format!("{at}: spec.plugins.schedule.enabled[{index}]");
            if !registry.contains(&enabled.name) {
                return Err(registry.unknown(&enabled.name).within(&path));
            }
            let weight = i64::from(enabled.weight.unwrap_or(1));
            if weight < 0 {
                return Err(InputError::new(
                    format!("{path}.weight"),
                    format!("must be 0 or more, got {weight}"),
                ));
            }
            match chosen.iter_mut().find(|(name, _)| name == &enabled.name) {
                Some(entry) => entry.1 = weight,
                None => chosen.push((enabled.name.clone(), weight)),
            }
        }
        let mut args: BTreeMap<&str, &Value> = BTreeMap::new();
        for (index, config) in spec.plugin_config.iter().enumerate() {
            if !registry.contains(&config.name) {
                return Err(registry
                    .unknown(&config.name)
                    .within(&format!("{at}: spec.pluginConfig[{index}]")));
            }
            if let Some(value) = &config.args {
                args.insert(config.name.as_str(), value);
            }
        }
        for name in args.keys() {
            if !chosen.iter().any(|(chosen_name, _)| chosen_name == name) {
                return Err(InputError::new(
                    format!("{at}: spec.pluginConfig"),
                    format!(
                        "has args for {name}, which the profile does not enable; enable it under spec.plugins.schedule.enabled"
                    ),
                ));
            }
        }
        let plugins = chosen
            .into_iter()
            .map(|(name, weight)| {
                let plugin = registry
                    .build(&name, args.get(name.as_str()).copied())
                    .map_err(|e| e.within(&at))?;
                Ok(WeightedPlugin {
                    name: plugin.name().into(),
                    plugin,
                    weight,
                })
            })
            .collect::<Result<_, InputError>>()?;
        Ok(Self {
            profile: profile.name.clone(),
            plugins,
        })
    }
}
