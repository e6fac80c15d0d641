//! Scheduler profiles: the seed's `SchedulerProfile` (scheduling.karmada.io/v1alpha1) — enabled and disabled
//! plugins, weights and per-plugin args — turned into a runnable [`Framework`]; without a profile, Karmada's
//! default plugin set with weight 1 each.
//!
//! Semantics (as kube-scheduler profiles): `enabled` adds plugins to the default set (or sets the weight of one
//! already there), `disabled` removes them (`*` removes every default), `pluginConfig` passes args. Unknown plugin
//! names anywhere are errors listing the known ones. The plugin order is the default order followed by added
//! plugins in profile order; filters run in that order and the first rejection is the one reported.
//!
//! The defaults a profile starts from are the scheduler's (`--plugins`, [`PluginSelection`]); a plugin that
//! scheduler turned off cannot be enabled or configured by a profile there. [`admission_problems`] is the same
//! check for the API server, against the build's registry, with a field path per problem.

use std::collections::BTreeMap;

use karmada_api::scheduling::SchedulerProfileSpec;
use serde_json::Value;

use super::plugin::Plugin;
use super::registry::Registry;
use super::selection::PluginSelection;
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
    /// `metadata.generation`, when the profile was read from the API server.
    pub generation: Option<i64>,
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
            generation: profile.metadata.generation,
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
    /// The profile's `metadata.generation` (none for the default plugin set or a profile read from a file).
    pub generation: Option<i64>,
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
            .field("generation", &self.generation)
            .field("plugins", &plugins)
            .finish()
    }
}

/// One problem of a profile, for admission: the field, the value found there and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileProblem {
    /// e.g. `spec.pluginConfig[0].args.availablePercentage`.
    pub path: String,
    pub value: Value,
    pub message: String,
}

/// Every problem `spec` has against `registry` and the default plugin set: unknown plugin names (enabled,
/// disabled, pluginConfig), args the plugin refuses (with the path inside them), and args for a plugin the
/// profile does not run. Structural checks (names present, no duplicates, weights ≥ 0) are the API types'
/// admission.
pub fn admission_problems(registry: &Registry, spec: &SchedulerProfileSpec) -> Vec<ProfileProblem> {
    let mut problems = Vec::new();
    let unknown = |path: String, name: &str| ProfileProblem {
        path,
        value: Value::String(name.to_string()),
        message: format!(
            "unknown plugin; known plugins: {}",
            registry.names().join(", ")
        ),
    };
    let schedule = &spec.plugins.schedule;
    let mut running: Vec<&str> = DEFAULT_PLUGINS.to_vec();
    for (index, plugin) in schedule.disabled.iter().enumerate() {
        if plugin.name == "*" {
            running.clear();
        } else if plugin.name.is_empty() || registry.contains(&plugin.name) {
            running.retain(|name| *name != plugin.name);
        } else {
            problems.push(unknown(
                format!("spec.plugins.schedule.disabled[{index}].name"),
                &plugin.name,
            ));
        }
    }
    for (index, plugin) in schedule.enabled.iter().enumerate() {
        if plugin.name.is_empty() || registry.contains(&plugin.name) {
            if !running.contains(&plugin.name.as_str()) {
                running.push(plugin.name.as_str());
            }
        } else {
            problems.push(unknown(
                format!("spec.plugins.schedule.enabled[{index}].name"),
                &plugin.name,
            ));
        }
    }
    for (index, config) in spec.plugin_config.iter().enumerate() {
        let at = format!("spec.pluginConfig[{index}]");
        if config.name.is_empty() {
            continue;
        }
        if !registry.contains(&config.name) {
            problems.push(unknown(format!("{at}.name"), &config.name));
            continue;
        }
        if !running.contains(&config.name.as_str()) {
            problems.push(ProfileProblem {
                path: format!("{at}.name"),
                value: Value::String(config.name.clone()),
                message: format!(
                    "has args for {}, which the profile does not run; enable it under spec.plugins.schedule.enabled",
                    config.name
                ),
            });
            continue;
        }
        if let Err(error) = registry.check_args(&config.name, config.args.as_ref()) {
            let inner = if error.path.is_empty() {
                String::new()
            } else {
                format!(".{}", error.path)
            };
            let value = config
                .args
                .as_ref()
                .and_then(|args| value_at(args, &error.path))
                .cloned()
                .unwrap_or(Value::Null);
            problems.push(ProfileProblem {
                path: format!("{at}.args{inner}"),
                value,
                message: error.message,
            });
        }
    }
    problems
}

/// The value at a dotted serde path (`a.b[0]` style is not needed: plugin args are flat objects).
fn value_at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(value);
    }
    path.split('.').try_fold(value, |value, key| value.get(key))
}

impl Framework {
    /// Karmada's default plugin set, weight 1 each.
    pub fn with_defaults(registry: &Registry) -> Result<Self, InputError> {
        Self::from_selection(registry, &PluginSelection::default())
    }

    /// The plugin set `--plugins` chose, weight 1 each.
    pub fn from_selection(
        registry: &Registry,
        selection: &PluginSelection,
    ) -> Result<Self, InputError> {
        let plugins = selection
            .defaults()
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
            generation: None,
            plugins,
        })
    }

    /// The plugin set a profile describes, starting from Karmada's defaults.
    pub fn from_profile(
        registry: &Registry,
        profile: &SchedulerProfile,
    ) -> Result<Self, InputError> {
        Self::from_profile_in(registry, &PluginSelection::default(), profile)
    }

    /// The plugin set a profile describes in a scheduler whose `--plugins` is `selection`.
    pub fn from_profile_in(
        registry: &Registry,
        selection: &PluginSelection,
        profile: &SchedulerProfile,
    ) -> Result<Self, InputError> {
        let at = format!("SchedulerProfile {}", profile.name);
        let spec = &profile.spec;
        let turned_off = |name: &str, path: &str| {
            InputError::new(
                path,
                format!(
                    "plugin {name:?} is turned off in this scheduler (--plugins has -{name}); the profile cannot run here"
                ),
            )
        };
        let mut chosen: Vec<(String, i64)> = selection
            .defaults()
            .iter()
            .map(|name| (name.clone(), 1))
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
            if selection.is_removed(&enabled.name) {
                return Err(turned_off(&enabled.name, &path));
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
            let path = format!("{at}: spec.pluginConfig[{index}]");
            if !registry.contains(&config.name) {
                return Err(registry.unknown(&config.name).within(&path));
            }
            if selection.is_removed(&config.name) {
                return Err(turned_off(&config.name, &path));
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
            generation: profile.generation,
            plugins,
        })
    }
}
