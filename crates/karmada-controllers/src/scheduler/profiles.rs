//! The live SchedulerProfiles: which plugin set decides a binding, by its `spec.schedulerName`.
//!
//! The scheduler serves its own `--scheduler-name` (the plugins `--plugins` chose) and every SchedulerProfile by
//! name; a profile named like the scheduler replaces its default set. A profile is built into a framework when
//! its event arrives, so a change applies to the next decision without a restart. A profile this scheduler cannot
//! run (it enables or configures a plugin the scheduler does not have or turned off) is kept as invalid with the
//! reason: its bindings are left where they are with a Scheduled=False condition saying why, never scheduled
//! with other plugins.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use karmada_scheduler::error::InputError;
use karmada_scheduler::framework::{Framework, PluginSelection, Registry, SchedulerProfile};

/// The plugin set for one binding.
#[derive(Clone, Debug)]
pub enum Choice {
    Run(Arc<Framework>),
    /// The binding names a profile this scheduler cannot run.
    Invalid {
        profile: String,
        reason: String,
    },
}

/// The profiles this scheduler knows.
pub struct Profiles {
    registry: Registry,
    selection: PluginSelection,
    own_name: String,
    default: Arc<Framework>,
    by_name: RwLock<HashMap<String, Result<Arc<Framework>, String>>>,
}

impl std::fmt::Debug for Profiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiles")
            .field("own_name", &self.own_name)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

impl Profiles {
    /// The scheduler named `own_name` with `registry`'s plugins, `--plugins` being `plugins`.
    pub fn new<S: AsRef<str>>(
        registry: Registry,
        plugins: &[S],
        own_name: &str,
    ) -> Result<Self, InputError> {
        let selection = PluginSelection::parse(plugins, &registry)?;
        let default = Arc::new(Framework::from_selection(&registry, &selection)?);
        Ok(Self {
            registry,
            selection,
            own_name: own_name.to_string(),
            default,
            by_name: RwLock::default(),
        })
    }

    fn build(
        &self,
        profile: &karmada_api::scheduling::SchedulerProfile,
    ) -> Result<Arc<Framework>, String> {
        let profile = SchedulerProfile::from_typed(profile).map_err(|e| e.to_string())?;
        Framework::from_profile_in(&self.registry, &self.selection, &profile)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }

    /// A profile was created or changed.
    pub fn apply(&self, profile: &karmada_api::scheduling::SchedulerProfile) {
        let Some(name) = profile.metadata.name.clone() else {
            return;
        };
        let built = self.build(profile);
        if let Err(reason) = &built {
            tracing::warn!(profile = %name, %reason, "SchedulerProfile cannot run in this scheduler");
        }
        self.by_name
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name, built);
    }

    /// A profile was deleted.
    pub fn remove(&self, name: &str) {
        self.by_name
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
    }

    /// Every profile, after a relist.
    pub fn replace(&self, profiles: &[karmada_api::scheduling::SchedulerProfile]) {
        let built: HashMap<String, Result<Arc<Framework>, String>> = profiles
            .iter()
            .filter_map(|p| Some((p.metadata.name.clone()?, self.build(p))))
            .collect();
        *self.by_name.write().unwrap_or_else(PoisonError::into_inner) = built;
    }

    /// The plugin set for bindings naming `scheduler_name`, or `None` when this scheduler does not serve it.
    /// Whether the default plugin set or any live profile runs the plugin named `plugin`.
    pub fn any_runs(&self, plugin: &str) -> bool {
        let runs = |framework: &Framework| framework.plugins.iter().any(|p| &*p.name == plugin);
        runs(&self.default)
            || self
                .by_name
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .any(|built| built.as_ref().is_ok_and(|framework| runs(framework)))
    }

    pub fn choose(&self, scheduler_name: &str) -> Option<Choice> {
        let profiles = self.by_name.read().unwrap_or_else(PoisonError::into_inner);
        match profiles.get(scheduler_name) {
            Some(Ok(framework)) => Some(Choice::Run(Arc::clone(framework))),
            Some(Err(reason)) => Some(Choice::Invalid {
                profile: scheduler_name.to_string(),
                reason: reason.clone(),
            }),
            None if scheduler_name == self.own_name => Some(Choice::Run(Arc::clone(&self.default))),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn profile(
        name: &str,
        generation: i64,
        spec: serde_json::Value,
    ) -> karmada_api::scheduling::SchedulerProfile {
        serde_json::from_value(
            json!({"metadata": {"name": name, "generation": generation}, "spec": spec}),
        )
        .expect("profile")
    }

    fn plugins(choice: Option<Choice>) -> Vec<String> {
        match choice {
            Some(Choice::Run(framework)) => framework
                .plugins
                .iter()
                .map(|p| p.name.to_string())
                .collect(),
            other => panic!("expected a framework, got {other:?}"),
        }
    }

    #[test]
    fn profiles_are_chosen_by_name_and_follow_their_changes() {
        let registry = karmada_scheduler::default_registry().expect("registry");
        let profiles = Profiles::new(registry, &["*", "-ClusterEviction"], "default-scheduler")
            .expect("profiles");
        assert!(
            !plugins(profiles.choose("default-scheduler")).contains(&"ClusterEviction".to_string())
        );
        assert!(
            profiles.choose("latency-sensitive").is_none(),
            "not served before the profile exists"
        );

        assert!(
            !profiles.any_runs("ClusterLatency"),
            "opt-in: not in the default set"
        );
        profiles.apply(&profile(
            "latency-sensitive",
            1,
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLatency"}]}}}),
        ));
        assert!(
            profiles.any_runs("ClusterLatency"),
            "a live profile runs it"
        );
        let Some(Choice::Run(framework)) = profiles.choose("latency-sensitive") else {
            panic!("the profile runs");
        };
        assert_eq!(framework.generation, Some(1));
        assert!(
            plugins(profiles.choose("latency-sensitive")).contains(&"ClusterLatency".to_string())
        );

        // An edit applies to the next choice.
        profiles.apply(&profile("latency-sensitive", 2, json!({"plugins": {"schedule": {"disabled": [{"name": "*"}], "enabled": [{"name": "ClusterAffinity"}]}}})));
        assert_eq!(
            plugins(profiles.choose("latency-sensitive")),
            ["ClusterAffinity"]
        );

        // A profile the scheduler cannot run is kept as invalid, with why.
        profiles.apply(&profile(
            "latency-sensitive",
            3,
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterEviction"}]}}}),
        ));
        match profiles.choose("latency-sensitive") {
            Some(Choice::Invalid { profile, reason }) => {
                assert_eq!(profile, "latency-sensitive");
                assert!(reason.contains("turned off in this scheduler"), "{reason}");
            }
            other => panic!("expected invalid, got {other:?}"),
        }

        // A profile named like the scheduler replaces its default set; deleting it restores the default.
        profiles.apply(&profile("default-scheduler", 1, json!({"plugins": {"schedule": {"disabled": [{"name": "*"}], "enabled": [{"name": "TaintToleration"}]}}})));
        assert_eq!(
            plugins(profiles.choose("default-scheduler")),
            ["TaintToleration"]
        );
        profiles.remove("default-scheduler");
        assert!(plugins(profiles.choose("default-scheduler")).len() > 1);
        profiles.replace(&[]);
        assert!(profiles.choose("latency-sensitive").is_none());
    }

    #[test]
    fn an_unknown_plugin_flag_is_refused() {
        let registry = karmada_scheduler::default_registry().expect("registry");
        let err = Profiles::new(registry, &["*", "-Nope"], "default-scheduler")
            .expect_err("unknown plugin");
        assert!(
            err.to_string().contains("--plugins -Nope: unknown plugin"),
            "{err}"
        );
    }
}
